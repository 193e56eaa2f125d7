"""tracewh report: the HTML report, its numbers, and how it looks in a real browser."""

import gzip
import html
import json
import re
import shutil
import subprocess

import pytest

from tracewh.ingest.workers import die_with

from .conftest import EXAMPLES, ROOT, shared

DLRM0_NAME = "worker0_step_12.1694128201545.pt.trace.json.gz"

CHROMIUM = shutil.which("chromium")
CHARTED = ("overlap", "exposed", "gpu-time", "timeline", "critical-path", "top-kernels",
           "top-ops", "top-gemms", "kernel-histograms", "class-histograms", "rank-skew", "bus-bandwidth",
           "waits", "launch-latency", "steps")  # the sections with a chart
TABLED = ("module-tree", "stragglers")  # and those with a table alone
# What DeepSeek's one-rank trace has nothing to draw for: ranks to compare, shapes of GEMM
# operators (it records none), NCCL calls (its all-to-all is DeepEP's own kernels).
NOT_IN_DEEPSEEK = {"rank-skew", "steps", "waits", "top-gemms", "bus-bandwidth"}
ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float"


@pytest.fixture
def two_runs(tracewh, tmp_path):
    """The 8-rank DLRM step as run 'base', and as run 'new' with AllReduce 25% slower."""
    tracewh("ingest", EXAMPLES, "--run", "base", "--phase", "train")
    slower = tmp_path / "slower"
    slower.mkdir()
    for path in EXAMPLES.glob("*.json.gz"):
        document = json.loads(gzip.decompress(path.read_bytes()))
        for event in document["traceEvents"]:
            if event.get("cat") == "kernel" and event["name"].startswith(ALLREDUCE):
                event["dur"] = event["dur"] * 1.25
        (slower / path.name.removesuffix(".gz")).write_text(json.dumps(document))
    tracewh("ingest", slower, "--run", "new", "--phase", "train")


def report(tracewh, tmp_path, *arguments):
    out = tmp_path / "report.html"
    result = tracewh("report", *arguments, "--out", out)
    assert result.stdout.startswith(f"wrote {out} (")
    return out.read_text()


def test_the_report_holds_every_section_with_its_numbers(tracewh, sql, two_runs, tmp_path):
    text = report(tracewh, tmp_path, "new", "--base", "base")
    for key in (*CHARTED, *TABLED, "diff-kernels", "diff-metrics"):
        assert f'<section id="{key}">' in text, key
    assert text.count('<figure class="chart"') == len(CHARTED) + 1  # + the kernels diff
    assert not re.search(r'(src|href)="(?!#)|<link|@import|url\((?!#)', text)  # nothing to fetch
    # the overlap table under the chart holds the overlap view's figures
    table = text.split('<section id="overlap">')[1].split("</section>")[0]
    cells = re.findall(r'<td class="n">([^<]*)</td>', table)
    overlap = sql("SELECT rank, comm_ns, overlap_ns FROM overlap WHERE run = 'new' ORDER BY rank")
    assert cells[0::4] == [str(r["rank"]) for r in overlap]
    assert cells[1::4] == [f"{r['comm_ns'] / 1e6:,.3f}" for r in overlap]
    diff = text.split('<section id="diff-kernels">')[1].split("</section>")[0]
    assert "A regression by the nightly gate&#x27;s rules: threshold 5.0%" in diff
    assert f'<td>regressed</td><td title="{ALLREDUCE}(ncclDevComm*' in diff
    # the job's path of the timeline's step, drawn over it: its sum is the breakdown's
    path = text.split('<section id="critical-path">')[1].split("</section>")[0]
    step = re.search(r"The job&#x27;s critical path of (ProfilerStep#\d+)", path).group(1)
    total = sql("SELECT sum(ns) AS ns FROM critical_path_breakdown WHERE run = 'new' "
                f"AND step = '{step}'")[0]["ns"]
    assert f"over the timeline above: {total / 1e6:,.3f} ms on " in path
    ranks = sql("SELECT DISTINCT rank FROM critical_path WHERE run = 'new' "
                f"AND step = '{step}' AND ns > 0")
    assert {int(r) for r in re.findall(r">path on rank (\d+)</text>", path)} == {
        r["rank"] for r in ranks}
    classes = sql("SELECT bound_by FROM critical_path_breakdown WHERE run = 'new' "
                  f"AND step = '{step}' AND ns > 0")
    assert {c["bound_by"] for c in classes} <= set(re.findall(r">([a-z_]+)</text>", path))
    # a color per rank in the steps chart (a palette of 6 gave ranks 0 and 6 the same teal)
    steps = text.split('<section id="steps">')[1].split("</section>")[0]
    colors = set(re.findall(r"stroke: (#[0-9a-f]{6})", steps)) - {"#000000", "#ffffff"}
    assert len(colors) == 8, colors


def test_the_report_says_which_ranks_are_missing(tracewh, tmp_path):
    """Rank 0 of DLRM's 8-rank job: the report's header says 7 of the world's ranks are
    missing, and which; all 8 ingested, it says none is."""
    tracewh("ingest", EXAMPLES / DLRM0_NAME, "--run", "one", "--phase", "train")
    text = report(tracewh, tmp_path, "one")
    assert "1 of 8 ranks (world size 8; missing: 1-7)" in text
    tracewh("ingest", EXAMPLES, "--run", "all", "--phase", "train")
    assert "8 of 8 ranks (world size 8)," in report(tracewh, tmp_path, "all")


def dlrm_as_ranks(directory, ranks):
    """The 8-rank DLRM step as a job of `ranks` ranks, written under `directory`: rank r is
    worker r % 8's trace, its distributedInfo naming rank r of `ranks`. One ingest of the
    directory commits them all (an ingest a rank, each with its refresh, took 8x as long)."""
    files = sorted(EXAMPLES.glob("*.json.gz"))
    directory.mkdir()
    for rank in range(ranks):
        text, found = re.subn(rb'"rank": \d+, "world_size": 8\}',
                              b'"rank": %d, "world_size": %d}' % (rank, ranks),
                              gzip.decompress(files[rank % 8].read_bytes()))
        assert found == 1, files[rank % 8]
        (directory / f"rank-{rank}.json.gz").write_bytes(gzip.compress(text, 1))
    return directory


def test_a_64_rank_report_stays_under_5_mb(tracewh, tmp_path):
    tracewh("ingest", dlrm_as_ranks(tmp_path / "big", 64), "--run", "big", "--phase", "train")
    out = tmp_path / "big.html"
    tracewh("report", "big", "--out", out)
    assert 100_000 < out.stat().st_size < 5_000_000
    text = out.read_text()
    assert text.count("<tr><td class=\"n\">63</td>") >= 4  # rank 63 in the tables
    # 64 ranks' steps: a heat map of rank by step, not 64 lines in a dozen colors
    steps = text.split('<section id="steps">')[1].split("</section>")[0]
    assert '<g id="QuadMesh_1">' in steps
    assert "Each ProfilerStep#N of each of the 64 ranks" in steps


def chromium(*arguments, timeout=120):
    """Headless Chromium's run, ended with this process even when it is SIGKILLed."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", *arguments], capture_output=True, text=True, timeout=timeout,
        preexec_fn=die_with)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs it)")
def test_the_report_draws_every_chart_in_chromium(tracewh, two_runs, tmp_path):
    """Headless Chromium (Debian's) loads the report from disk: no console message, every
    chart drew its shapes; a screenshot is written to build/ for a person to look at."""
    report(tracewh, tmp_path, "new", "--base", "base")
    page = (tmp_path / "report.html").as_uri()
    dom = chromium("--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'p1'}",
                   "--dump-dom", page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert ":CONSOLE" not in dom.stderr, [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
    assert re.search(rf'<body data-charts="{len(CHARTED) + 1}" data-drawn="\d+">', dom.stdout)
    drawn = dict(re.findall(r'<figure class="chart" id="chart-([a-z-]+)" data-drawn="(\d+)"',
                            dom.stdout))
    assert set(drawn) == {*CHARTED, "diff-kernels"}
    # at least a shape per bar: 8 ranks, 15 top kernels, the buckets of 6 histograms...
    least = {"overlap": 8, "exposed": 8, "gpu-time": 40, "timeline": 20, "critical-path": 20,
             "top-kernels": 15,
             "top-ops": 15, "top-gemms": 10, "kernel-histograms": 25, "class-histograms": 15,
             "rank-skew": 9, "bus-bandwidth": 1, "waits": 8,
             "launch-latency": 8, "steps": 8, "diff-kernels": 1}
    assert {key: int(n) >= least[key] for key, n in drawn.items()} == \
        {key: True for key in drawn}, drawn
    screenshot = ROOT / "build" / "report-screenshot.png"
    screenshot.parent.mkdir(exist_ok=True)
    shot = chromium(f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1280,7000",
                    f"--screenshot={screenshot}", page)
    assert shot.returncode == 0 and screenshot.stat().st_size > 100_000


# -- what a new user tripped over (real traces of ../shared) ------------------------------------

DEEPSEEK = "deepseek-profile-data/train.json"
VLLM = "tracelens/inference/vllm_decode_full_graph_execution.json.gz"
MI250 = "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A warehouse with DeepSeek's training step (one rank, twice: 'deepseek' and
    'deepseek-again'), vLLM's decode on MI300X (no communication; mangled and Tensile names)
    and a toy training run on MI250 (two steps, one long gap); `cli(...)` runs the CLI on it,
    `reports[run]` is a run's report."""
    from click.testing import CliRunner

    from tracewh.cli import cli as command
    traces = {"deepseek": shared(DEEPSEEK), "deepseek-again": shared(DEEPSEEK),
              "vllm": shared(VLLM), "mi250": shared(MI250)}
    warehouse = tmp_path_factory.mktemp("runs") / "wh"
    runner = CliRunner()

    def cli(*arguments):
        result = runner.invoke(command, ["--warehouse", str(warehouse), *map(str, arguments)])
        assert result.exit_code == 0, (result.output, result.exception)
        return result.stdout

    for run, path in traces.items():
        cli("ingest", path, "--run", run, "--phase", "train")
    reports = {}
    for run in ("deepseek", "vllm", "mi250"):
        out = warehouse.parent / f"{run}.html"
        cli("report", run, "--out", out)
        reports[run] = out
    return cli, reports


def section(text, key):
    return text.split(f'<section id="{key}">')[1].split("</section>")[0]


def query(cli, sql):
    return json.loads(cli("query", "--format", "json", sql))


def axes_of(svg):
    """The SVG text of each panel (axes) of a chart."""
    return re.split(r'<g id="axes_\d+">', svg)[1:]


def bar_spans(panel):
    """(left, right) x of each bar of a panel (bars are the clipped rectangles)."""
    return sorted((float(a), float(b)) for a, b in re.findall(
        r'<path d="M ([\d.]+) [\d.]+ \s*L ([\d.]+) [\d.]+ \s*L [^"]*z\s*" clip-path', panel))


def tick_labels(panel):
    return [html.unescape(t) for t in re.findall(
        r'<g id="xtick_\d+">.*?<text[^>]*>([^<]*)</text>', panel, re.DOTALL)]


def test_zero_durations_get_a_bucket_of_their_own(runs):
    """DeepSeek's 7 zero-length memsets (bucket -1) sit in a bar labelled 0, left of the
    0.5-1 µs bar instead of over it; tick labels are decades with units, not one per power of
    two ('4,09616,384')."""
    cli, reports = runs
    text = reports["deepseek"].read_text()
    (zero,) = query(cli, "SELECT sum(kernels) AS n FROM kernel_class_histogram "
                         "WHERE run = 'deepseek' AND class = 'memory' AND bucket = -1")
    assert zero["n"] > 0
    classes = section(text, "class-histograms")
    assert (f'<tr><td>memory</td><td class="n">0.000</td><td class="n">0.001</td>'
            f'<td class="n">{zero["n"]}</td>') in classes
    (memory,) = [panel for panel in axes_of(classes) if ">memory</text>" in panel]
    spans = bar_spans(memory)
    assert len(spans) == len(re.findall(r"<tr><td>memory</td>", classes))
    assert all(left >= right_before for (_, right_before), (left, _) in zip(spans, spans[1:]))
    assert tick_labels(memory)[0] == "0"
    for key in ("class-histograms", "kernel-histograms", "launch-latency"):
        for panel in axes_of(section(text, key)):
            labels = tick_labels(panel)
            assert 2 <= len(labels) <= 6, labels
            assert all(re.fullmatch(r"0|≤ 0|\d+ (ns|µs|ms|s)", label)
                       for label in labels), labels


def test_a_run_without_communication_says_so(runs):
    _, reports = runs
    text = reports["vllm"].read_text()
    for key in ("overlap", "exposed"):
        part = section(text, key)
        assert "<figure" not in part and "<table>" not in part
        assert "This run has no communication kernels" in part


def test_a_single_rank_gets_no_rank_skew_or_steps_chart(runs):
    _, reports = runs
    text = reports["deepseek"].read_text()
    skew = section(text, "rank-skew")
    assert "<figure" not in skew and "needs two or more" in skew
    steps = section(text, "steps")
    assert "<figure" not in steps and "One step of one rank" in steps
    assert steps.count("<td>ProfilerStep#") == 1  # its figures stay


def test_kernel_names_are_shortened_and_demangled_the_exact_name_kept(runs):
    """vLLM on MI300X: Tensile's `Cijk_...` names are cut to 60 characters and `_ZN...` names
    demangled, each cell's title holding the exact stored short name."""
    cli, reports = runs
    table = section(reports["vllm"].read_text(), "top-kernels")
    cells = [(html.unescape(title), html.unescape(text)) for title, text in
             re.findall(r'<td title="([^"]*)">([^<]*)</td>', table)]
    stored = {r["short_name"] for r in query(
        cli, "SELECT DISTINCT short_name FROM kernel_stats WHERE run = 'vllm'")}
    assert len(cells) == 15 and {title for title, _ in cells} <= stored
    assert all(len(text) <= 60 for _, text in cells)
    tensile = [(title, text) for title, text in cells if title.startswith("Cijk_")]
    assert tensile and all(len(title) > 60 and text == title[:59] + "…"
                           for title, text in tensile)
    mangled = [(title, text) for title, text in cells if title.startswith("_Z")]
    assert mangled
    if shutil.which("c++filt"):
        for title, text in mangled:
            readable = subprocess.run(["c++filt", title], capture_output=True, text=True,
                                      check=True).stdout.strip()
            assert readable != title and text == (readable if len(readable) <= 60
                                                   else readable[:59] + "…")


def test_short_names_are_the_same_labels_everywhere(runs):
    """DeepSeek's four cutlass::device_kernel GEMMs and FlashAttention kernels keep apart
    under one label each, in the top kernels, the histograms and `diff --by short_name`."""
    cli, reports = runs
    text = reports["deepseek"].read_text()
    cutlass = query(cli, "SELECT short_name, count(DISTINCT name) AS names FROM kernel_stats "
                         "WHERE run = 'deepseek' AND name LIKE '%cutlass::device_kernel<%' "
                         "GROUP BY short_name")
    assert len(cutlass) == 6 and all(r["names"] == 1 for r in cutlass)
    top = re.findall(r'<td title="([^"]*)">', section(text, "top-kernels"))
    histograms = section(text, "kernel-histograms")
    shown = re.findall(r'<td title="([^"]*)">', histograms)
    assert set(shown) <= set(top) and len(set(shown)) == 6
    assert " (2)" not in histograms
    diff = json.loads(cli("diff", "deepseek", "deepseek-again", "--by", "short_name",
                          "--format", "json"))
    assert set(map(html.unescape, top)) <= {k["name"] for k in diff["kernels"]}
    assert {r["short_name"] for r in cutlass} <= {k["name"] for k in diff["kernels"]}
    # the terminal table does not cut distinct names into the same 48 characters
    listed = cli("query", "SELECT DISTINCT name FROM kernel_stats WHERE run = 'deepseek' "
                          "AND name LIKE '%cutlass::device_kernel<dpsk%'").splitlines()[2:-1]
    assert len(listed) == len(set(listed)) == 3


def step_idle(cli, run):
    """Idle time inside the rank's ProfilerStep windows, from the raw rows: the step minus
    the union of the GPU activity inside it."""
    steps = query(cli, f"SELECT ts_ns, dur_ns FROM cpu_ops WHERE run = '{run}' "
                       "AND name LIKE 'ProfilerStep#%'")
    kernels = query(cli, f"SELECT ts_ns, dur_ns FROM kernels WHERE run = '{run}' "
                         "AND category <> 'gpu_user_annotation' AND dur_ns IS NOT NULL "
                         "ORDER BY ts_ns")
    idle = 0
    for step in steps:
        start, end = step["ts_ns"], step["ts_ns"] + step["dur_ns"]
        covered, reach = 0, start
        for k in kernels:
            a, b = max(k["ts_ns"], reach), min(k["ts_ns"] + k["dur_ns"], end)
            if b > a:
                covered += b - a
                reach = b
        idle += end - start - covered
    return idle


def test_idle_within_steps_beside_the_span_and_a_gap_that_dominates(runs):
    cli, reports = runs
    (rank,) = query(cli, "SELECT * FROM rank_idle WHERE run = 'mi250'")
    (busy,) = query(cli, "SELECT span_ns - busy_ns AS idle FROM gpu_busy WHERE run = 'mi250'")
    assert rank["idle_ns"] == busy["idle"] and rank["steps"] == 2
    assert rank["step_idle_ns"] == step_idle(cli, "mi250")
    assert rank["gap_dominated"] and 2 * rank["largest_gap_ns"] > rank["idle_ns"]
    part = section(reports["mi250"].read_text(), "gpu-time")
    assert "<th>idle within steps (ms)</th><th>largest gap (ms)</th>" in part
    assert f'<td class="n">{rank["step_idle_ns"] / 1e6:,.3f}</td>' in part
    assert (f'<p class="warning">Rank 0: one gap of {rank["largest_gap_ns"] / 1e6:,.3f} ms '
            f'makes {100 * rank["largest_gap_ns"] / rank["idle_ns"]:.1f}% of the idle time') in part
    (deepseek,) = query(cli, "SELECT gap_dominated FROM rank_idle WHERE run = 'deepseek'")
    assert not deepseek["gap_dominated"]
    assert '<p class="warning">' not in section(reports["deepseek"].read_text(), "gpu-time")


def test_launch_latencies_that_measure_a_queue_are_flagged(runs):
    cli, reports = runs
    (vllm,) = query(cli, "SELECT p50_ns, first_ns FROM launch_latency_summary "
                         "WHERE run = 'vllm'")
    (first,) = query(cli, "SELECT launch_latency_ns FROM launch_latency WHERE run = 'vllm' "
                          "ORDER BY launch_ts_ns LIMIT 1")
    assert vllm["first_ns"] == first["launch_latency_ns"] >= vllm["p50_ns"] / 2 > 500_000
    part = section(reports["vllm"].read_text(), "launch-latency")
    assert (f'<p class="warning">Rank 0: the first launch already waited '
            f'{vllm["first_ns"] / 1e6:,.3f} ms') in part
    (mi250,) = query(cli, "SELECT p50_ns, max_ns FROM launch_latency_summary "
                          "WHERE run = 'mi250'")
    assert mi250["max_ns"] > 100 * mi250["p50_ns"]
    part = section(reports["mi250"].read_text(), "launch-latency")
    assert (f'the longest launch latency is {mi250["max_ns"] / mi250["p50_ns"]:,.0f}x the '
            'median') in part
    assert '<p class="warning">' not in section(reports["deepseek"].read_text(),
                                                "class-histograms")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs it)")
def test_no_tick_labels_overlap_in_chromium(runs, tmp_path):
    """DeepSeek's report in a real browser: no chart's x tick labels run into each other (the
    page's script measures them) and no console message."""
    _, reports = runs
    dom = chromium("--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'p'}",
                   "--dump-dom", reports["deepseek"].as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert ":CONSOLE" not in dom.stderr, [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
    overlaps = dict(re.findall(r'<figure class="chart" id="chart-([a-z-]+)" data-drawn="\d+" '
                               r'data-overlaps="(\d+)"', dom.stdout))
    assert overlaps == {key: "0" for key in CHARTED if key not in NOT_IN_DEEPSEEK}


def test_the_timeline_of_deepseeks_step_matches_a_reference(runs):
    """DeepSeek's one step (rank 0): the GPU work launched in ProfilerStep#1, per stream, from
    the JSON (launch times by correlation), drawn as itself when at least 1/400 of the window
    wide, else in a column; DualPipe's annotations above the streams."""
    from . import reference
    from .conftest import load_reference

    cli, reports = runs
    document = load_reference(shared(DEEPSEEK))
    events = document["traceEvents"]
    (step,) = [e for e in events if e.get("name", "").startswith("ProfilerStep#")
               and e.get("cat") == "user_annotation"]
    start, end = reference.ns(step["ts"]), reference.ns(step["ts"]) + reference.ns(step["dur"])
    launched = {e["args"]["correlation"]: reference.ns(e["ts"]) for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e.get("args", {}).get("correlation")}
    work = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in reference.GPU_WORK and "dur" in e:
            begin = reference.ns(e["ts"])
            launch = launched.get(e["args"].get("correlation"), begin)
            if start <= launch < end:
                work.append((e["args"]["stream"], begin, begin + reference.ns(e["dur"]), e))
    left = min([start] + [w[1] for w in work])
    right = max([end] + [w[2] for w in work])
    expected = {}
    for stream, begin, finish, event in work:
        drawn, binned, _ = expected.get(stream, (0, 0, None))
        wide = (finish - begin) * 400 >= right - left
        expected[stream] = (drawn + wide, binned + (not wide), None)
    text = reports["deepseek"].read_text()
    timeline = section(text, "timeline")
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row)
             for row in re.findall(r"<tr>(.*?)</tr>", timeline.split("<tbody>")[1])]
    assert {int(c[0]): (int(c[1]), int(c[2])) for c in cells} == \
        {stream: (drawn, binned) for stream, (drawn, binned, _) in expected.items()}
    assert f"{(right - left) / 1e6:,.3f} ms from its first activity to its last" in \
        html.unescape(timeline)
    assert "ProfilerStep#1 of rank 0 (the median step of the slowest rank" in timeline
    # the annotations are drawn above the streams, labelled where they fit
    assert "annotations" in timeline and ">attn(B)<" in timeline.replace("</text>", "<")


HOSTILE = '<img src=x onerror="alert(1)">&amp;'


def test_the_critical_path_section_escapes_every_name(tracewh, sql, tmp_path):
    """DeepSeek's step with every cpu op and kernel named as markup: the critical path
    section lists them as text, never as markup."""
    document = json.loads(shared(DEEPSEEK).read_text())
    for event in document["traceEvents"]:
        if event.get("cat") in ("cpu_op", "kernel") and "ProfilerStep" not in event["name"]:
            event["name"] += HOSTILE
    trace = tmp_path / "hostile.json"
    trace.write_text(json.dumps(document))
    tracewh("ingest", trace, "--run", "hostile")
    text = section(report(tracewh, tmp_path, "hostile"), "critical-path")
    on_path = sql("SELECT count(*) AS n FROM critical_path WHERE name LIKE '%<img%'")[0]["n"]
    assert on_path > 0 and "<img" not in text
    assert text.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;amp;") >= 12
