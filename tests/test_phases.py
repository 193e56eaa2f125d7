"""Phases side by side: `tracewh diff RUN:PHASE RUN:PHASE`, the `phase_summary` view, and the
report's phases section and timeline, against references written without SQL."""

import json

import pytest

from .conftest import ROOT
from .test_diff import SGEMM, WORKER0, WORKER1, diff_json, slower_sgemm, variant
from .test_report import CHROMIUM, chromium


@pytest.fixture(scope="module")
def phases(tmp_path_factory):
    """DLRM rank 0 as phase prefill of run 'job' and, with its sgemm 25% slower, as phase
    decode of the same run; the same two files as runs 'base' and 'new' (phase train).
    Returns the CLI over that warehouse, as the `tracewh` fixture (ingested once: read-only
    tests share it)."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    root = tmp_path_factory.mktemp("phases")
    warehouse, runner = root / "wh", CliRunner()

    def run(*args, expect=0):
        result = runner.invoke(cli, ["--warehouse", str(warehouse), *map(str, args)])
        if expect is not None:
            assert result.exit_code == expect, (result.output, result.exception)
        return result

    run.warehouse = warehouse
    slow = variant(root, "slow", slower_sgemm)
    run("ingest", WORKER0, "--run", "job", "--phase", "prefill")
    run("ingest", slow, "--run", "job", "--phase", "decode")
    run("ingest", WORKER0, "--run", "base", "--phase", "train")
    run("ingest", slow, "--run", "new", "--phase", "train")
    return run


def rows_of(cli, text):
    return json.loads(cli("query", "--format", "json", text).stdout)


def test_two_phases_of_one_run_diff_as_two_runs_do(phases):
    report = diff_json(phases, "job:prefill", "job:decode", "--fail-on-regression", expect=1)
    runs = diff_json(phases, "base", "new", "--fail-on-regression", expect=1)
    assert (report["base"], report["base_phase"], report["new"], report["new_phase"]) == \
        ("job", "prefill", "job", "decode")
    assert report["kernels"] == runs["kernels"]
    (slow,) = [k for k in report["kernels"] if k["status"] == "regressed"]
    assert slow["name"].startswith(SGEMM)
    assert (slow["base_total_ns"], slow["new_total_ns"]) == (47000, 58750)
    # metrics: the same figures, their phase naming both sides
    assert [{**m, "phase": None} for m in report["metrics"]] == \
        [{**m, "phase": None} for m in runs["metrics"]]
    assert {m["phase"] for m in report["metrics"]} == {"prefill->decode"}
    # the same summary but for the sides it names
    assert {**report["summary"], "sides": None} == {**runs["summary"], "sides": None}
    assert report["summary"]["sides"]["new"]["phase"] == "decode"
    # the other way round: an improvement, exit 0 with --fail-on-regression
    back = diff_json(phases, "job:decode", "job:prefill", "--fail-on-regression", expect=0)
    assert [k["status"] for k in back["kernels"] if k["name"] == slow["name"]] == ["improved"]
    # the text and Markdown outputs name both sides
    text = phases("diff", "job:prefill", "job:decode").stdout
    assert text.startswith("job:prefill -> job:decode: REGRESSION: kernels 1 regressed")
    markdown = phases("diff", "job:prefill", "job:decode", "--format", "markdown").stdout
    assert markdown.startswith("### tracewh diff: `job:prefill` → `job:decode`\n")


def test_a_side_without_a_phase_takes_the_option_or_the_other_sides(phases):
    # base:train against new: the phase of new is train as well
    one = diff_json(phases, "base:train", "new", "--fail-on-regression", expect=1)
    assert (one["base_phase"], one["new_phase"]) == ("train", "train")
    assert {m["phase"] for m in one["metrics"]} == {"train"}
    # --phase fills the side that names none: job:prefill against job's decode
    two = diff_json(phases, "job:prefill", "job", "--phase", "decode", expect=0)
    assert (two["base_phase"], two["new_phase"]) == ("prefill", "decode")
    # a phase of one run against a phase of another
    three = diff_json(phases, "new:train", "job:prefill", "--fail-on-regression", expect=0)
    assert {m["phase"] for m in three["metrics"]} == {"train->prefill"}
    assert [k["status"] for k in three["kernels"] if k["name"].startswith(SGEMM)] == \
        ["improved"]


@pytest.mark.parametrize("arguments, message", [
    (("job", "job"), "error: base and new are the same run: to compare two phases of it, "
                     "name them as job:PHASE job:PHASE\n"),
    (("job", "job", "--phase", "prefill"),
     "error: base and new are the same run and phase (job:prefill)\n"),
    (("job:prefill", "job"), "error: base and new are the same run and phase (job:prefill)\n"),
    (("job:", "job:decode"), "error: invalid side 'job:': expected RUN or RUN:PHASE (one colon, "
                             "a run and a phase, as prefill and decode of one run: "
                             "infer:prefill infer:decode)\n"),
    (("job:prefill", "job:a:b"), "error: invalid side 'job:a:b': expected RUN or RUN:PHASE "
                                 "(one colon, a run and a phase, as prefill and decode of one "
                                 "run: infer:prefill infer:decode)\n"),
    ((":prefill", "job:decode"), "error: invalid side ':prefill': expected RUN or RUN:PHASE "
                                 "(one colon, a run and a phase, as prefill and decode of one "
                                 "run: infer:prefill infer:decode)\n"),
    (("job:pre fill", "job:decode"), "error: invalid phase 'pre fill': use 1-128 letters, "
                                     "digits, '.', '_' or '-', starting with a letter or digit\n"),
    (("job:train", "job:decode"), "error: run 'job' has no phase 'train'\n"),
    (("jobs:prefill", "job:decode"), "error: unknown run 'jobs'; did you mean 'job'? (`tracewh "
                                     "runs` lists the 3 runs)\n"),
    (("job:prefill", "job:decode", "--rank", "4"),
     "error: run 'job' has no rank 4 in phase 'prefill' (its ranks: 0)\n"),
])
def test_bad_sides_are_one_line_and_exit_2(phases, arguments, message):
    result = phases("diff", *arguments, expect=2)
    assert result.output == message


def test_phase_names_in_a_side_are_case_folded(phases):
    report = diff_json(phases, "job:PREFILL", "job:Decode", expect=0)
    assert (report["base_phase"], report["new_phase"]) == ("prefill", "decode")


def test_the_macros_compare_phases_in_sql(phases):
    def sql(text):
        return rows_of(phases, text)

    rows = sql("SELECT name, status FROM run_phase_diff_with('job', 'prefill', 'job', "
               "'decode', 5, 10000, 'name', NULL) WHERE status <> 'unchanged'")
    assert [r["status"] for r in rows] == ["regressed"] and rows[0]["name"].startswith(SGEMM)
    # the same run and phase on both sides compares nothing (as the same run did)
    assert sql("SELECT count(*) AS n FROM run_phase_diff_with('job', 'prefill', 'job', NULL, "
               "5, 10000, 'name', NULL)") == [{"n": 0}]
    assert sql("SELECT count(*) AS n FROM run_phase_metric_diff_with('job', NULL, 'job', "
               "NULL, 5, 10000, NULL)") == [{"n": 0}]
    # run_diff_with is the phase macro with one phase on both sides
    assert sql("SELECT * FROM run_diff_with('base', 'new', 5, 10000, 'name', 'train', NULL)") \
        == sql("SELECT * FROM run_phase_diff_with('base', 'train', 'new', 'train', 5, 10000, "
               "'name', NULL)")


def test_the_python_api_takes_sides(phases):
    import tracewh

    report = tracewh.open(phases.warehouse).diff("job:prefill", "job:decode")
    assert report["summary"]["regressed_kernels"] == 1
    assert json.dumps(report, default=str)


# -- phase_summary against a reference read from the JSON -----------------------------------------

VLLM = "tracelens/inference/vllm_decode_full_graph_execution.json.gz"
H100 = "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz"
CPU_CATEGORIES = ("cpu_op", "user_annotation")


def lower_median(values):
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def phase_reference(paths):
    """phase_summary's figures for a phase whose ranks are these traces (one each), from
    their JSON: unions by merging (reference.py), steps and kernel time by summing events."""
    from . import reference
    from .conftest import load_reference

    figures = {"ranks": len(paths), "span_ns": 0, "busy_ns": 0, "comm_ns": 0,
               "compute_ns": 0, "overlap_ns": 0}
    steps, kernel_time, by_name, memory = [], {}, {}, []
    for path in paths:
        document = load_reference(path)
        sets = reference.gpu_intervals(document)
        comm, compute, overlap = reference.overlap_of(sets)
        figures["span_ns"] += max(e for _, e in sets["busy"]) - min(s for s, _ in sets["busy"])
        figures["busy_ns"] += reference.union_length(sets["busy"])
        figures["comm_ns"] += comm
        figures["compute_ns"] += compute
        figures["overlap_ns"] += overlap
        for event in document["traceEvents"]:
            category = event.get("cat", "").lower()
            if (event.get("ph") == "X" and category in CPU_CATEGORIES and "dur" in event
                    and event.get("name", "").startswith("ProfilerStep#")):
                steps.append(reference.ns(event["dur"]))
            if event.get("ph") == "X" and category in reference.GPU_WORK and "dur" in event:
                kind = (reference.kernel_class(event.get("name")) if category == "kernel" else
                        "memory" if category in ("gpu_memcpy", "gpu_memset") else "other")
                kernel_time[kind] = kernel_time.get(kind, 0) + reference.ns(event["dur"])
                by_name[event["name"]] = by_name.get(event["name"], 0) + reference.ns(
                    event["dur"])
            if event.get("name") == "[memory]" and event["args"].get("Device Type") != 0:
                memory.append((event["args"]["Total Allocated"],
                               event["args"]["Total Reserved"]))
    total = sum(kernel_time.values())
    figures.update(
        steps=len(steps), step_time_ns=lower_median(steps) if steps else None,
        exposed_comm_ns=figures["comm_ns"] - figures["overlap_ns"],
        idle_ns=figures["span_ns"] - figures["busy_ns"], kernel_ns=total,
        **{f"{kind}_share": pytest.approx(kernel_time.get(kind, 0) / total, abs=1e-12)
           for kind in ("communication", "computation", "memory", "other")},
        peak_allocated_bytes=max((a for a, _ in memory), default=None),
        peak_reserved_bytes=max((r for _, r in memory), default=None))
    return figures, max(by_name.values()) / total


def test_phase_summary_matches_a_reference_per_phase(tracewh, sql):
    from .conftest import shared

    traces = {"prefill": [WORKER0, WORKER1], "decode": [shared(VLLM)], "eval": [shared(H100)]}
    for phase, paths in traces.items():
        for rank, path in enumerate(paths):
            tracewh("ingest", path, "--run", "mix", "--phase", phase, "--rank", rank)
    rows = {r["phase"]: r for r in sql("SELECT * FROM phase_summary WHERE run = 'mix'")}
    assert set(rows) == set(traces)
    for phase, paths in traces.items():
        expected, largest_name_share = phase_reference(paths)
        row = rows[phase]
        assert {key: row[key] for key in expected} == expected, phase
        assert row["busy_ratio"] == pytest.approx(row["busy_ns"] / row["span_ns"])
        # the top short name holds at least the largest full name's time
        assert row["top_kernel_share"] >= largest_name_share - 1e-12
    assert rows["prefill"]["comm_ns"] > 0 and rows["prefill"]["steps"] == 2
    assert rows["eval"]["peak_allocated_bytes"] > 0
    assert rows["decode"]["peak_allocated_bytes"] is None  # no memory events
    # two phases without communication: overlap_ratio has no value on either side, unchanged
    assert rows["decode"]["comm_ns"] == rows["eval"]["comm_ns"] == 0
    metrics = {m["metric"]: m for m in diff_json(tracewh, "mix:decode", "mix:eval")["metrics"]}
    assert (metrics["overlap_ratio"]["base_value"], metrics["overlap_ratio"]["new_value"],
            metrics["overlap_ratio"]["status"]) == (None, None, "unchanged")


# -- the timeline's bins ---------------------------------------------------------------------------

def test_kernels_a_column_wide_are_drawn_shorter_ones_binned_by_class():
    from tracewh.output.charts import bin_kernels

    # a window of 1,000 ns in 10 columns of 100 ns
    kernels = [
        (0, 0, 100, "computation"),      # exactly a column wide: drawn as itself
        (0, 150, 180, "communication"),  # column 1: 30 ns of communication...
        (0, 160, 200, "computation"),    # ...and 40 ns of computation: computation wins
        (0, 199, 260, "memory"),         # starts in column 1 (its start decides), 61 ns
        (1, 150, 160, "other"),          # another lane: its own column 1
        (0, 990, 999, "communication"),  # the last column
        (0, 420, 440, "communication"),  # a tie: 20 ns each, communication comes first
        (0, 430, 450, "computation"),
    ]
    bars = bin_kernels(kernels, 0, 1000, bins=10)
    drawn = [(b.lane, b.start_ns, b.end_ns, b.timeline_class) for b in bars if not b.binned]
    assert drawn == [(0, 0, 100, "computation")]
    binned = {(b.lane, b.start_ns): (b.timeline_class, b.kernels, b.busy_ns, b.fill)
              for b in bars if b.binned}
    assert binned == {(0, 100): ("memory", 3, 131, 1.0),
                      (1, 100): ("other", 1, 10, 0.1),
                      (0, 400): ("communication", 2, 40, 0.4),
                      (0, 900): ("communication", 1, 9, 0.09)}
    assert all(b.end_ns - b.start_ns == 100 for b in bars if b.binned)


def test_every_kernel_lands_in_one_bar():
    from fractions import Fraction

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tracewh.output.charts import TIMELINE_CLASSES, bin_kernels

    kernel = st.tuples(st.integers(0, 2), st.integers(0, 10**6), st.integers(0, 5000),
                       st.sampled_from(TIMELINE_CLASSES))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(kernel, max_size=200), st.integers(1, 500))
    def check(specs, bins):
        kernels = [(lane, start, start + length, kind) for lane, start, length, kind in specs]
        left = min((k[1] for k in kernels), default=0)
        right = max((k[2] for k in kernels), default=1)
        span = max(right - left, 1)
        bars = bin_kernels(kernels, left, right, bins)
        bins = min(bins, span)  # a column is 1 ns at least
        assert sum(b.kernels for b in bars) == len(kernels)
        assert sum(b.busy_ns for b in bars) == sum(k[2] - k[1] for k in kernels)
        wide = sorted(k for k in kernels if Fraction(k[2] - k[1]) >= Fraction(span, bins))
        assert sorted((b.lane, b.start_ns, b.end_ns, b.timeline_class)
                      for b in bars if not b.binned) == wide
        expected = {}
        for lane, start, end, kind in kernels:
            if Fraction(end - start) < Fraction(span, bins):
                column = min(int(Fraction(start - left) / Fraction(span, bins)), bins - 1)
                expected.setdefault((lane, left + column * span // bins), []).append(kind)
        assert {(b.lane, b.start_ns): b.kernels for b in bars if b.binned} == \
            {key: len(v) for key, v in expected.items()}

    check()


def test_annotations_are_packed_into_rows_first_fit():
    from tracewh.output.charts import pack_levels

    # an outer range, two children side by side, one overlapping the second child
    spans = [(0, 100), (0, 40), (50, 90), (60, 95), (100, 120)]
    assert pack_levels(spans) == [0, 1, 1, 2, 0]


# -- the report of a run with two phases -----------------------------------------------------------

@pytest.fixture(scope="module")
def job_report(phases, tmp_path_factory):
    """The report of run 'job' (phases decode and prefill), written once."""
    out = tmp_path_factory.mktemp("report") / "job.html"
    phases("report", "job", "--out", out)
    return out


def test_the_report_covers_every_phase_side_by_side(phases, job_report, tmp_path):
    import html
    import re

    text = job_report.read_text()
    assert "<h1>Run job, phases decode, prefill</h1>" in text
    for key in ("phases", "decode-overlap", "decode-timeline", "prefill-overlap",
                "prefill-timeline", "prefill-steps"):
        assert f'<section id="{key}">' in text, key
    side = text.split('<section id="phases">')[1].split("</section>")[0]
    cells = {row[0]: row[1:] for row in (
        [html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", side.split("<tbody>")[1]))}
    summary = {r["phase"]: r for r in rows_of(phases, "SELECT * FROM phase_summary "
                                                      "WHERE run = 'job'")}
    assert cells["communication (ms)"] == [f"{summary[p]['comm_ns'] / 1e6:,.3f}"
                                           for p in ("decode", "prefill")]
    assert cells["median step (ms)"] == [f"{summary[p]['step_time_ns'] / 1e6:,.3f}"
                                         for p in ("decode", "prefill")]
    # a timeline step or rank the phase lacks is one line, before anything is drawn
    out = tmp_path / "bad.html"
    result = phases("report", "job", "--phase", "decode", "--timeline-step", "ProfilerStep#99",
                    "--out", out, expect=2)
    assert result.output == ("error: run 'job', phase 'decode', rank 0 has no step "
                             "'ProfilerStep#99' (its steps: ProfilerStep#10)\n")
    result = phases("report", "job", "--timeline-rank", "5", "--out", out, expect=2)
    assert result.output == ("error: run 'job', phase 'decode' has no rank 5 to draw (its "
                             "ranks: 0)\n")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs it)")
def test_the_two_phase_report_draws_in_chromium(job_report, tmp_path):
    """Headless Chromium: no console message (a chart that drew nothing, tick labels that
    overlap), each phase's timeline drew its bars; screenshots go to build/ to look at."""
    import re

    out = job_report
    dom = chromium("--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'p1'}",
                   "--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert ":CONSOLE" not in dom.stderr, [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
    drawn = dict(re.findall(r'<figure class="chart" id="chart-([a-z-]+)" data-drawn="(\d+)"',
                            dom.stdout))
    # the phases chart (2 stacks of 5 parts) and a timeline per phase (its step's kernels)
    assert int(drawn["phases"]) >= 10
    assert int(drawn["decode-timeline"]) >= 30 and int(drawn["prefill-timeline"]) >= 30
    screenshot = ROOT / "build" / "phases-report-screenshot.png"
    screenshot.parent.mkdir(exist_ok=True)
    shot = chromium(f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1280,4000",
                    f"--screenshot={screenshot}", out.as_uri())
    assert shot.returncode == 0 and screenshot.stat().st_size > 50_000


def test_the_timeline_shows_hostile_annotation_names_as_text(tracewh, tmp_path):
    """Annotation names are the traced program's text: drawn in the SVG as text (escaped,
    `$...$` not read as TeX), no element or handler made of them."""
    import gzip

    from .test_hostile_output import Page

    name = "<b onload=x>$\\no$&amp;"
    document = json.loads(gzip.decompress(WORKER0.read_bytes()))
    for event in document["traceEvents"]:
        if event.get("cat") == "user_annotation" and event["name"] == "## forward ##":
            event["name"] = name
    path = tmp_path / "hostile" / "worker0.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    tracewh("ingest", path, "--run", "bad", "--phase", "train")
    out = tmp_path / "bad.html"
    tracewh("report", "bad", "--out", out)
    text = out.read_text()
    page = Page(text)
    assert page.scripts == 1 and not page.handlers
    timeline = Page(text.split('<section id="timeline">')[1].split("</section>")[0])
    assert name in timeline.text
