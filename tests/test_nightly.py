"""The nightly job as a CI log shows it: `diff` and `trend` read without a terminal, say what
they compare, and explain what they leave blank, on real traces."""

import gzip
import json
import re

import pytest

from .conftest import EXAMPLES, cli_on, shared, unchanged
from .test_diff import SGEMM, WORKER0, slower_sgemm, variant

HTA_RANK0 = "hta/trace_filter/sampled_rank-0.json.gz"
HTA_RANK1 = "hta/trace_filter/sampled_rank-1.json.gz"
B200 = "tracelens/b200/eager_trace.json.gz"


def slower_gemms(event):
    if "gemm" in event["name"]:
        event["dur"] = event["dur"] * 1.25


def table_cells(lines):
    """The cells of a terminal table (header, dashes, rows...) cut where the dashes are."""
    spans = [m.span() for m in re.finditer(r"-+", lines[1])]
    return [[line[a:b].strip() for a, b in spans] for line in lines
            if not line.startswith("-")]


@pytest.fixture(scope="module")
def nightlies(tmp_path_factory):
    """Two nights of HTA's rank 0 of 128 (names of up to 1,956 characters), the second's
    GEMM kernels 5/4 as long: (the CLI on their warehouse, `diff`'s JSON report). Made once
    for the tests that only read it (checked unchanged after them)."""
    source = shared(HTA_RANK0)
    directory = tmp_path_factory.mktemp("nightlies")
    tracewh = cli_on(directory / "wh")
    tracewh("ingest", source, "--run", "nightly-1201", "--phase", "train")
    tracewh("ingest", variant(directory, "n2", slower_gemms, source),
            "--run", "nightly-1202", "--phase", "train")
    with unchanged(directory / "wh"):
        yield tracewh, json.loads(tracewh("diff", "nightly-1201", "nightly-1202", "--format",
                                          "json").stdout)


@pytest.mark.parametrize("columns", [None, "80", "200"])
def test_diff_in_a_ci_log_shows_names_deltas_and_counts(nightlies, monkeypatch, columns):
    """stdout not a terminal, COLUMNS unset (120) or set: every row shows its name, cut in
    the middle, beside delta_ns, delta_pct and both counts, within the width."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    width = int(columns or 120)
    tracewh, report = nightlies
    out = tracewh("diff", "nightly-1201", "nightly-1202").stdout.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("status"))
    table = out[start:next(i for i in range(start, len(out)) if out[i].startswith("("))]
    assert all(len(line) <= width for line in table)
    header, *rows = table_cells(table)
    assert header[:6] == ["status", "name", "delta_ns", "delta_pct", "base_count", "new_count"]
    changed = [k for k in report["kernels"] if k["status"] != "unchanged"][:len(rows)]
    assert len(rows) == 25 and len(changed) == 25
    for row, kernel in zip(rows, changed):
        name = kernel["name"]
        assert row[0] == kernel["status"] and row[2] == f"{kernel['delta_ns']:,}"
        assert row[4:6] == [f"{kernel['base_count']:,}", f"{kernel['new_count']:,}"]
        if len(name) > len(row[1]):
            head, tail = row[1].split("…")
            assert name.startswith(head) and name.endswith(tail) and len(head) >= 8
        else:
            assert row[1] == name


def unescaped(markdown):
    text = re.sub(r"\\(.)", r"\1", markdown.replace("\u2060", ""))
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_diff_markdown_and_csv_keep_whole_names(nightlies):
    tracewh, report = nightlies
    changed = [k["name"] for k in report["kernels"] if k["status"] != "unchanged"]
    assert max(map(len, changed)) > 1000
    markdown = unescaped(tracewh("diff", "nightly-1201", "nightly-1202", "--format",
                                 "markdown").stdout)
    assert all(f"| {name} |" in markdown for name in changed)
    csv_text = tracewh("diff", "nightly-1201", "nightly-1202", "--format", "csv").stdout
    assert all(name in csv_text for name in changed)


def test_trend_by_date_leaves_out_untagged_runs_and_shows_the_change(tracewh, tmp_path):
    """Nightly runs tagged with their date among ad hoc runs without it: the trend by date
    holds the nightly runs only (stderr says how many it left out), each with its change from
    the previous night, and a table ends with a sparkline."""
    slow = variant(tmp_path, "slow", slower_sgemm)  # SGEMM 47,000 -> 58,750 ns
    for path, run, tags in ((WORKER0, "nightly-1201", ["--tag", "date=2026-12-01"]),
                            (slow, "adhoc-1", []),
                            (slow, "nightly-1202", ["--tag", "date=2026-12-02"]),
                            (WORKER0, "adhoc-2", [])):
        tracewh("ingest", path, "--run", run, "--phase", "train", *tags)
    metric = f"kernel:{SGEMM}"
    for last in ([], ["--last", "3"]):
        result = tracewh("trend", metric, "--order-by-tag", "date", *last, "--format", "json")
        assert [(r["run"], r["value"], r["delta"], r["delta_pct"])
                for r in json.loads(result.stdout)] == [
            ("nightly-1201", 47000.0, None, None), ("nightly-1202", 58750.0, 11750.0, 25.0)]
        assert result.stderr == "trend: 2 runs without the tag 'date' left out\n"
    # the first run shown keeps its change from the night before it
    (row,) = json.loads(tracewh("trend", metric, "--order-by-tag", "date", "--last", "1",
                                "--format", "json").stdout)
    assert (row["run"], row["delta"], row["delta_pct"]) == ("nightly-1202", 11750.0, 25.0)
    table = tracewh("trend", metric, "--order-by-tag", "date").stdout.splitlines()
    assert table[0].split()[:6] == ["run", "phase", "ranks", "value", "delta", "delta_pct"]
    assert table[-1] == "train: ▁█ (oldest to newest)"
    # in ingest order every run is there, without a word on stderr
    result = tracewh("trend", metric, "--format", "csv")
    assert [line.split(",")[:3] for line in result.stdout.splitlines()] == [
        ["run", "phase", "ranks"], ["nightly-1201", "train", "1"], ["adhoc-1", "train", "1"],
        ["nightly-1202", "train", "1"], ["adhoc-2", "train", "1"]]
    assert result.stderr == "" and "▁" not in result.stdout


def test_diff_names_what_it_compares_and_warns_when_the_sides_differ(tracewh):
    """HTA's rank 1 of 128 (no deviceProperties) against TraceLens' B200 rank 0 of 8: the
    header and the JSON summary name each side's devices, world size and ranks, and warn."""
    tracewh("ingest", shared(HTA_RANK1), "--run", "hta", "--phase", "train")
    tracewh("ingest", shared(B200), "--run", "b200", "--phase", "train")
    report = json.loads(tracewh("diff", "hta", "b200", "--format", "json").stdout)
    summary = report["summary"]
    assert summary["sides"] == {
        "base": {"run": "hta", "phase": None, "devices": [], "world_sizes": [128],
                 "ranks": [1]},
        "new": {"run": "b200", "phase": None, "devices": ["NVIDIA B200"], "world_sizes": [8],
                "ranks": [0]}}
    assert summary["warnings"] == ["devices differ: base none recorded, new NVIDIA B200",
                                   "world sizes differ: base 128, new 8",
                                   "ranks present differ: base 1, new 0"]
    out = tracewh("diff", "hta", "b200").stdout.splitlines()
    assert out[1:6] == [
        "base hta: rank 1 of world size 128; devices none recorded",
        "new b200: rank 0 of world size 8; devices NVIDIA B200",
        "warning: devices differ: base none recorded, new NVIDIA B200",
        "warning: world sizes differ: base 128, new 8",
        "warning: ranks present differ: base 1, new 0"]
    markdown = tracewh("diff", "hta", "b200", "--format", "markdown").stdout
    assert "\nwarning: world sizes differ: base 128, new 8\n\n" in markdown
    result = tracewh("diff", "hta", "b200", "--format", "csv")
    assert result.stderr.splitlines()[0] == ("warning: devices differ: base none recorded, "
                                             "new NVIDIA B200")


def test_the_gate_decides_on_the_figures_not_on_the_devices(tracewh, tmp_path):
    """DLRM's rank 0 against the same trace claiming an A100: the same figures, a warning,
    no regression."""
    document = json.loads(gzip.decompress(WORKER0.read_bytes()))
    for device in document["deviceProperties"]:
        device["name"] = "NVIDIA A100-SXM4-80GB"
    path = tmp_path / "a100" / "worker0.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    tracewh("ingest", WORKER0, "--run", "v100", "--phase", "train")
    tracewh("ingest", path, "--run", "a100", "--phase", "train")
    result = tracewh("diff", "v100", "a100", "--fail-on-regression", "--format", "json")
    summary = json.loads(result.stdout)["summary"]
    assert summary["warnings"] == ["devices differ: base Tesla V100-SXM2-32GB, new NVIDIA "
                                   "A100-SXM4-80GB"]
    assert summary["regression"] is False and summary["sides"]["new"]["world_sizes"] == [8]


def size_bucket(msg_bytes):
    """A size's power-of-two bucket as `diff --by collective` names it, computed apart."""
    if msg_bytes is None:
        return "unsized"
    if msg_bytes == 0:
        return "0 B"
    lower = 1 << (msg_bytes.bit_length() - 1)
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB"), (0, "B")):
        if lower >= 1 << shift or shift == 0:
            return f"{lower >> shift}-{(2 * lower) >> shift} {unit}"


def all_to_all_v(event):
    """Every all-to-all of the step moves one element more: sizes that vary a little."""
    if event.get("name") == "record_param_comms" and (event["args"].get("Input Dims")
                                                     or [[]])[0]:
        event["args"]["Input Dims"][0][0] += 1


def test_diff_by_collective_keys_kind_group_and_size_bucket(tracewh, tmp_path, sql):
    """DLRM's 8 ranks against the same step whose all-to-all sizes grew by one element: by
    power-of-two bucket the collectives match; by exact size they are removed + added."""
    tracewh("ingest", EXAMPLES, "--run", "a", "--phase", "train")
    folder = tmp_path / "b"
    folder.mkdir()
    for path in sorted(EXAMPLES.glob("worker*.json.gz")):
        document = json.loads(gzip.decompress(path.read_bytes()))
        for event in document["traceEvents"]:
            all_to_all_v(event)
        (folder / path.name[:-3]).write_text(json.dumps(document))
    tracewh("ingest", folder, "--run", "b", "--phase", "train")
    calls = sql("SELECT run, collective, process_group, msg_bytes FROM collective_calls")
    moved = {(c["collective"], c["msg_bytes"]) for c in calls if c["run"] == "b"} - \
        {(c["collective"], c["msg_bytes"]) for c in calls if c["run"] == "a"}
    assert {c for c, _ in moved} == {"all_to_all"}
    kernels = json.loads(tracewh("diff", "a", "b", "--by", "collective", "--format",
                                 "json").stdout)["kernels"]
    assert {k["name"] for k in kernels} == {
        f"{c['collective']} group {c['process_group']} {size_bucket(c['msg_bytes'])}"
        for c in calls}
    assert "all_to_all group unknown 16-32 KiB" in {k["name"] for k in kernels}
    assert not {k["status"] for k in kernels} & {"added", "removed"}
    exact = json.loads(tracewh("diff", "a", "b", "--by", "collective", "--collective-size",
                               "exact", "--format", "json").stdout)
    assert exact["collective_size"] == "exact"
    statuses = {k["name"]: k["status"] for k in exact["kernels"]}
    assert statuses["all_to_all group unknown 24576 B"] == "removed"
    assert statuses["all_to_all group unknown 24580 B"] == "added"
    assert {statuses[f"all_to_all group unknown {size} B"] for _, size in moved} == {"added"}


def test_one_rank_of_each_group_gives_algorithm_bandwidth_and_says_why(tracewh, sql):
    """DLRM's rank 0 of 8 alone: bus bandwidth needs the group's ranks; trend and diff say so
    in one line and give each rank's algorithm bandwidth from its own durations."""
    from fractions import Fraction
    from statistics import median_low

    tracewh("ingest", WORKER0, "--run", "one", "--phase", "train")
    tracewh("ingest", WORKER0, "--run", "two", "--phase", "train")
    result = tracewh("trend", "busbw_gbps")
    assert result.stdout.endswith("(0 rows)\n")
    assert result.stderr == (
        "trend: no bus bandwidth: it needs every rank of a collective's group, and 1 of the 8 "
        "ranks of a group were captured; `tracewh trend algbw_gbps` gives each rank's "
        "algorithm bandwidth from its own kernel durations (its waits included)\n")
    calls = sql("SELECT collective, process_group, msg_bytes, dur_ns FROM collective_calls "
                "WHERE run = 'one'")
    mean = sum(Fraction(c["msg_bytes"], c["dur_ns"]) for c in calls) / len(calls)
    rows = json.loads(tracewh("trend", "algbw_gbps", "--format", "json").stdout)
    assert [r["run"] for r in rows] == ["one", "two"]
    assert rows[0]["value"] == pytest.approx(float(mean), rel=1e-9) and rows[1]["delta"] == 0
    report = json.loads(tracewh("diff", "one", "two", "--by", "collective", "--format",
                                "json").stdout)
    for kernel in report["kernels"]:
        assert kernel["base_busbw_gbps"] is None is kernel["new_busbw_gbps"]
        rates = sorted(c["msg_bytes"] / c["dur_ns"] for c in calls
                       if f"{c['collective']} group {c['process_group']} "
                          f"{size_bucket(c['msg_bytes'])}" == kernel["name"])
        assert kernel["base_algbw_gbps"] == pytest.approx(median_low(rates), rel=1e-12)
    assert report["summary"]["notes"] == [
        f"{side} {run}: no bus bandwidth: it needs every rank of a collective's group, and 1 "
        f"of its 8 ranks were captured; {side}_algbw_gbps holds each rank's algorithm "
        "bandwidth from its own kernel durations (its waits included)"
        for side, run in (("base", "one"), ("new", "two"))]
    table = tracewh("diff", "one", "two", "--by", "collective").stdout
    assert f"note: {report['summary']['notes'][0]}\n" in table
