"""Cross-run diffs and trends on real traces: the nightly regression gate."""

import csv
import gzip
import io
import json
import re

import pytest

from .conftest import EXAMPLES

WORKER0 = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
SGEMM = "volta_sgemm_128x32_nt"


def variant(tmp_path, name, change, source=WORKER0):
    """A copy of DLRM rank 0 (or of another gzipped trace) with `change(event)` applied to
    every kernel event."""
    document = json.loads(gzip.decompress(source.read_bytes()))
    for event in document["traceEvents"]:
        if event.get("cat") == "kernel":
            change(event)
    path = tmp_path / name / "worker0.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    return path


def slower_sgemm(event):
    if event["name"].startswith(SGEMM):
        event["dur"] = event["dur"] * 1.25  # exact: integer µs times 5/4


def diff_json(tracewh, *args, expect=0):
    return json.loads(tracewh("diff", *args, "--format", "json", expect=expect).stdout)


def test_identical_runs_are_unchanged(tracewh, tmp_path):
    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    tracewh("ingest", WORKER0, "--run", "new", "--phase", "train")
    report = diff_json(tracewh, "base", "new", "--fail-on-regression")
    assert {k["status"] for k in report["kernels"]} == {"unchanged"}
    assert {m["status"] for m in report["metrics"]} == {"unchanged"}
    assert report["summary"]["regression"] is False
    assert {"name", "class", "status", "base_count", "new_count", "base_total_ns",
            "new_total_ns", "delta_ns", "delta_pct"} <= set(report["kernels"][0])
    assert set(report) >= {"base", "new", "thresholds", "kernels", "metrics", "summary"}


def test_one_kernel_25_percent_slower_is_the_only_regression(tracewh, tmp_path):
    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    tracewh("ingest", variant(tmp_path, "slow", slower_sgemm), "--run", "new", "--phase",
            "train")
    report = diff_json(tracewh, "base", "new", "--fail-on-regression", expect=1)
    regressed = [k for k in report["kernels"] if k["status"] == "regressed"]
    assert [k["name"] for k in regressed] == [next(k["name"] for k in report["kernels"]
                                                   if k["name"].startswith(SGEMM))]
    (row,) = regressed
    assert (row["base_total_ns"], row["new_total_ns"], row["delta_ns"]) == (47000, 58750, 11750)
    assert row["delta_pct"] == pytest.approx(25.0)
    assert report["kernels"][0] is not None and report["kernels"][0]["status"] == "regressed"
    assert {k["status"] for k in report["kernels"][1:]} == {"unchanged"}
    # without the flag the gate does not fail; the SQL macro gives the same rows
    tracewh("diff", "base", "new")
    rows = json.loads(tracewh("query", "--format", "json",
                              "SELECT name, status, delta_ns FROM run_diff('base', 'new')").stdout)
    assert rows == [{k: r[k] for k in ("name", "status", "delta_ns")} for r in report["kernels"]]


def tiny_kernel():
    """A kernel whose total time in worker 0 is under 10 µs: doubling it stays in the noise."""
    totals = {}
    for event in json.loads(gzip.decompress(WORKER0.read_bytes()))["traceEvents"]:
        if event.get("cat") == "kernel":
            totals[event["name"]] = totals.get(event["name"], 0) + event["dur"]
    return min(name for name, total in totals.items() if 0 < total < 10)


def test_added_removed_and_noise_floor(tracewh, tmp_path):
    tiny = tiny_kernel()

    def change(event):
        if event["name"].startswith(SGEMM):
            event["name"] = "renamed_gemm_kernel"
        elif event["name"] == tiny:
            event["dur"] = event["dur"] * 2  # +100 %, but under 10 µs in total
    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    tracewh("ingest", variant(tmp_path, "changed", change), "--run", "new", "--phase", "train")
    report = diff_json(tracewh, "base", "new", "--fail-on-regression")
    status = {k["name"]: k["status"] for k in report["kernels"]}
    assert status["renamed_gemm_kernel"] == "added"
    assert [s for n, s in status.items() if n.startswith(SGEMM)] == ["removed"]
    small = next(k for k in report["kernels"] if k["name"] == tiny)
    assert small["delta_pct"] == pytest.approx(100.0) and 0 < small["delta_ns"] < 10000
    assert small["status"] == "unchanged"
    tight = diff_json(tracewh, "base", "new", "--min-ns", "0", "--fail-on-regression", expect=1)
    assert {k["name"]: k["status"] for k in tight["kernels"]}[tiny] == "regressed"


def test_by_class_and_different_rank_counts(tracewh):
    tracewh("ingest", EXAMPLES, "--run", "eight", "--phase", "train")
    tracewh("ingest", WORKER0, "--run", "one", "--phase", "train", "--rank", "0")
    report = diff_json(tracewh, "eight", "one", "--by", "class")
    assert {k["name"] for k in report["kernels"]} == {"communication", "computation", "memory"}
    # 8 ranks against 1: per-rank medians, metrics per phase (rank NULL)
    communication = next(k for k in report["kernels"] if k["name"] == "communication")
    assert communication["base_total_ns"] == 5798000  # median of the 8 ranks' totals
    assert {m["rank"] for m in report["metrics"]} == {None}


def test_unknown_run_points_to_the_runs_command(tracewh):
    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    result = tracewh("diff", "base", "nope", expect=2)
    assert result.output == "error: unknown run 'nope' (`tracewh runs` lists the 1 run)\n"


def test_markdown_report(tracewh, tmp_path):
    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    tracewh("ingest", variant(tmp_path, "slow", slower_sgemm), "--run", "new", "--phase",
            "train")
    markdown = tracewh("diff", "base", "new", "--format", "markdown").stdout
    assert markdown.startswith("### tracewh diff: `base` → `new`")
    assert "| regressed | volta\\_sgemm\\_128x32\\_nt | 47,000 | 58,750 | 11,750 | 25 |" in markdown


def test_trend_over_tagged_runs(tracewh, tmp_path):
    for day, path in (("2026-11-29", variant(tmp_path, "d2", slower_sgemm)),
                      ("2026-11-28", WORKER0)):
        tracewh("ingest", path, "--run", f"nightly-{day}", "--phase", "train",
                "--tag", f"date={day}", "--tag", "job=nightly")
    out = json.loads(tracewh("trend", f"kernel:{SGEMM}", "--order-by-tag", "date",
                             "--tag", "job=nightly", "--format", "json").stdout)
    assert [(r["run"], r["value"]) for r in out] == [("nightly-2026-11-28", 47000.0),
                                                     ("nightly-2026-11-29", 58750.0)]
    last = json.loads(tracewh("trend", "overlap_ratio", "--last", "1", "--format",
                              "json").stdout)
    assert [r["run"] for r in last] == ["nightly-2026-11-28"]  # ingest order: the last one
    assert tracewh("trend", "bogus", expect=2).output.startswith("error: unknown metric")


STATUSES = {"added", "removed", "regressed", "improved", "unchanged"}
WORKER1 = EXAMPLES / "worker1_step_12.1694128201556.pt.trace.json.gz"
WORKER3 = EXAMPLES / "worker3_step_12.1694128201557.pt.trace.json.gz"


def test_runs_of_other_ranks_compare_medians_not_missing_rows(tracewh, sql):
    """Rank 3 against rank 1: the metrics are compared (rank NULL), none is 'missing'."""
    tracewh("ingest", WORKER3, "--run", "a", "--phase", "train")
    tracewh("ingest", WORKER1, "--run", "b", "--phase", "train")
    report = diff_json(tracewh, "a", "b")
    overlap = {r["run"]: r for r in sql("SELECT * FROM overlap")}
    metrics = {m["metric"]: m for m in report["metrics"]}
    assert set(metrics) == {"overlap_ratio", "exposed_comm_ns", "step_time_ns", "gpu_idle_ns"}
    assert {m["rank"] for m in report["metrics"]} == {None}
    assert {m["status"] for m in report["metrics"]} <= STATUSES
    assert (metrics["exposed_comm_ns"]["base_value"], metrics["exposed_comm_ns"]["new_value"]) \
        == (overlap["a"]["exposed_comm_ns"], overlap["b"]["exposed_comm_ns"]) == (9450000, 11056000)
    assert metrics["exposed_comm_ns"]["status"] == "regressed"
    assert report["summary"]["regressed_metrics"] == 1


def test_metrics_only_on_one_side_are_added_or_removed(tracewh):
    tracewh("ingest", WORKER0, "--run", "a", "--phase", "train")
    tracewh("ingest", WORKER0, "--run", "b", "--phase", "train")
    tracewh("ingest", WORKER1, "--run", "b", "--phase", "eval")
    report = diff_json(tracewh, "a", "b")
    statuses = {(m["phase"], m["status"]) for m in report["metrics"]}
    assert statuses == {("train", "unchanged"), ("eval", "added")}
    assert {k["status"] for k in diff_json(tracewh, "b", "a")["kernels"]} <= STATUSES


def test_a_rank_or_phase_a_run_lacks_is_an_error(tracewh):
    tracewh("ingest", WORKER3, "--run", "a", "--phase", "train")
    tracewh("ingest", WORKER1, "--run", "b", "--phase", "train")
    result = tracewh("diff", "a", "b", "--rank", "3", expect=2)
    assert result.output == "error: run 'b' has no rank 3 (its ranks: 1)\n"
    result = tracewh("diff", "a", "b", "--phase", "decode", expect=2)
    assert result.output == "error: run 'a' has no phase 'decode'\n"


def test_kernels_of_few_ranks_with_median_zero_on_both_sides_are_left_out(tracewh):
    """Eight ranks against one: per-rank medians; a kernel that runs on fewer than half the
    ranks has median 0 and would show as 'removed' 0 -> 0."""
    tracewh("ingest", EXAMPLES, "--run", "all", "--phase", "train")
    tracewh("ingest", WORKER0, "--run", "one", "--phase", "train")
    kernels = diff_json(tracewh, "all", "one")["kernels"]
    assert kernels and not [k for k in kernels if k["base_count"] == 0 == k["new_count"]]
    assert not [k for k in kernels if k["base_total_ns"] == 0 == k["new_total_ns"]
                and k["status"] in ("added", "removed")]


def test_diff_csv_holds_every_kernel_and_metric(tracewh, tmp_path):
    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    tracewh("ingest", variant(tmp_path, "slow", slower_sgemm), "--run", "new", "--phase",
            "train")
    report = diff_json(tracewh, "base", "new", expect=0)
    rows = list(csv.DictReader(io.StringIO(tracewh("diff", "base", "new", "--format", "csv")
                                           .stdout)))
    assert len(rows) == len(report["kernels"]) + len(report["metrics"])
    (slow,) = [r for r in rows if r["status"] == "regressed" and r["kind"] == "kernel"]
    assert (slow["name"], slow["base_value"], slow["new_value"], slow["delta"]) == \
        (next(k["name"] for k in report["kernels"] if k["status"] == "regressed"), "47000",
         "58750", "11750")
    assert {r["kind"] for r in rows} == {"kernel", "metric"}


def test_unknown_run_suggests_close_names(tracewh):
    for run in ("nightly-2026-11-28", "nightly-2026-11-29", "weekly"):
        tracewh("ingest", WORKER0, "--run", run, "--phase", "train")
    result = tracewh("diff", "nightly-2026-11-28", "nightly-2026-11-30", expect=2)
    assert result.output == ("error: unknown run 'nightly-2026-11-30'; did you mean "
                             "'nightly-2026-11-29', 'nightly-2026-11-28'? (`tracewh runs` lists "
                             "the 3 runs)\n")


def test_phase_names_are_case_folded(tracewh, sql):
    tracewh("ingest", WORKER0, "--run", "a", "--phase", "Train")
    tracewh("ingest", WORKER0, "--run", "b", "--phase", "train")
    assert sql("SELECT DISTINCT phase FROM traces") == [{"phase": "train"}]
    assert diff_json(tracewh, "a", "b", "--phase", "TRAIN")["phase"] == "train"
    assert [r[1] for r in (line.split() for line in tracewh(
        "trend", "overlap_ratio", "--phase", "TRAIN").stdout.splitlines()[2:4])] == \
        ["train", "train"]


def test_trend_of_an_unknown_kernel_says_so(tracewh):
    tracewh("ingest", WORKER0, "--run", "a", "--phase", "train")
    result = tracewh("trend", "kernel:volta_sgemm_128x32", expect=2)
    assert result.output.startswith("error: no kernel named 'volta_sgemm_128x32' in any run "
                                    "(by full or short name); did you mean 'volta_sgemm_128x32_")


def test_units_show_diff_and_trend_times_in_tables_only(tracewh):
    """`--units ms`: a table's or Markdown's times in ms, kernels' *_ns columns and metrics in
    ns alike (exposed_comm_ns as exposed_comm_ms); json and csv keep exact ns."""
    for run, path in (("base", WORKER0), ("new", WORKER1)):  # DLRM's rank 0 against rank 1
        tracewh("ingest", path, "--run", run, "--phase", "train", "--rank", "0")
    table = tracewh("diff", "base", "new", "--units", "ms").stdout
    kernels, metrics = table.split("\n\n")[-2:]
    assert "delta_ms" in kernels and "_ns" not in kernels
    assert re.search(r"exposed_comm_ms +5\.54 +11\.06 +5\.519 +99\.67", metrics)
    assert "_ns" not in metrics
    markdown = tracewh("diff", "base", "new", "--units", "ms", "--format", "markdown").stdout
    assert "| delta\\_ms |" in markdown and "exposed\\_comm\\_ms | 5.54 | 11.06 |" in markdown
    (exposed,) = [m for m in diff_json(tracewh, "base", "new", "--units", "ms")["metrics"]
                  if m["metric"] == "exposed_comm_ns"]
    assert (exposed["base_value"], exposed["new_value"]) == (5537000, 11056000)
    csv_text = tracewh("diff", "base", "new", "--units", "ms", "--format", "csv").stdout
    assert "metric,regressed,exposed_comm_ns,,train,0,5537000,11056000,5519000," in csv_text
    trend = tracewh("trend", "exposed_comm_ns", "--units", "ms").stdout
    assert trend.splitlines()[0].split()[3:5] == ["value_ms", "delta_ms"]
    assert re.search(r"new +train +1 +11\.06 +5\.519 +99\.67", trend)
    ratio = tracewh("trend", "overlap_ratio", "--units", "ms").stdout
    assert "value" in ratio.split() and "value_ms" not in ratio  # not a time
    out = json.loads(tracewh("trend", "exposed_comm_ns", "--units", "ms", "--format",
                             "json").stdout)
    assert [r["value"] for r in out] == [5537000, 11056000]
