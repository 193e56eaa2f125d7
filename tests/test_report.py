"""tracewh report: the HTML report, its numbers, and how it looks in a real browser."""

import gzip
import json
import re
import shutil
import subprocess

import pytest

from .conftest import EXAMPLES, ROOT

CHROMIUM = shutil.which("chromium")
SECTIONS = ("overlap", "exposed", "gpu-time", "top-kernels", "kernel-histograms",
            "class-histograms", "rank-skew", "launch-latency", "steps")
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
    for key in (*SECTIONS, "diff-kernels", "diff-metrics"):
        assert f'<section id="{key}">' in text, key
    assert text.count('<figure class="chart"') == len(SECTIONS) + 1  # + the kernels diff
    assert not re.search(r'(src|href)="(?!#)|<link|@import|url\((?!#)', text)  # nothing to fetch
    # the overlap table under the chart holds the overlap view's figures
    table = text.split('<section id="overlap">')[1].split("</section>")[0]
    cells = re.findall(r'<td class="n">([^<]*)</td>', table)
    overlap = sql("SELECT rank, comm_ns, overlap_ns FROM overlap WHERE run = 'new' ORDER BY rank")
    assert cells[0::4] == [str(r["rank"]) for r in overlap]
    assert cells[1::4] == [f"{r['comm_ns'] / 1e6:,.3f}" for r in overlap]
    diff = text.split('<section id="diff-kernels">')[1].split("</section>")[0]
    assert "A regression by the nightly gate&#x27;s rules: threshold 5.0%" in diff
    assert f"<td>regressed</td><td>{ALLREDUCE}(ncclDevComm*" in diff


def test_a_64_rank_report_stays_under_5_mb(warehouse, tmp_path):
    from click.testing import CliRunner

    from tracewh.cli import cli
    runner = CliRunner()
    files = sorted(EXAMPLES.glob("*.json.gz"))
    for rank in range(64):
        result = runner.invoke(cli, ["--warehouse", str(warehouse), "ingest",
                                     str(files[rank % 8]), "--run", "big", "--phase", "train",
                                     "--rank", str(rank)])
        assert result.exit_code == 0, result.output
    out = tmp_path / "big.html"
    result = runner.invoke(cli, ["--warehouse", str(warehouse), "report", "big", "--out",
                                 str(out)])
    assert result.exit_code == 0, result.output
    assert 100_000 < out.stat().st_size < 5_000_000
    assert out.read_text().count("<tr><td class=\"n\">63</td>") >= 4  # rank 63 in the tables


def chromium(*arguments, timeout=120):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", *arguments], capture_output=True, text=True, timeout=timeout)


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
    assert re.search(r'<body data-charts="10" data-drawn="\d+">', dom.stdout)
    drawn = dict(re.findall(r'<figure class="chart" id="chart-([a-z-]+)" data-drawn="(\d+)"',
                            dom.stdout))
    assert set(drawn) == {*SECTIONS, "diff-kernels"}
    # at least a shape per bar: 8 ranks, 15 top kernels, the buckets of 6 histograms...
    least = {"overlap": 8, "exposed": 8, "gpu-time": 40, "top-kernels": 15,
             "kernel-histograms": 25, "class-histograms": 15, "rank-skew": 9,
             "launch-latency": 8, "steps": 8, "diff-kernels": 1}
    assert {key: int(n) >= least[key] for key, n in drawn.items()} == \
        {key: True for key in drawn}, drawn
    screenshot = ROOT / "build" / "report-screenshot.png"
    screenshot.parent.mkdir(exist_ok=True)
    shot = chromium(f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1280,7000",
                    f"--screenshot={screenshot}", page)
    assert shot.returncode == 0 and screenshot.stat().st_size > 100_000
