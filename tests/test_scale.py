"""Queries that stay fast at many runs (#14): a question about a run reads that run's files
only, and gets exactly the rows it would get over the whole warehouse."""

import math
import re

import pytest

from tracewh.api import Warehouse
from tracewh.query.library import public_library
from tracewh.query.query_analysis import runs_a_query_names
from tracewh.analyses.trend import trend

from .conftest import EXAMPLES, connect, shared

RUNS = ("a", "b", "c")
# The views DLRM's step has no rows for: it records no GPU annotations and no memory events.
NOTHING_IN_DLRM = {"gpu_annotation_stats", "memory_allocations", "memory_events",
                   "memory_peaks", "memory_peaks_by_step", "memory_timeline",
                   "graph_replay_kernels"}  # no CUDA graph launch in DLRM


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """The 8-rank DLRM step as runs a, b and c (tagged night=3, 1, 2)."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    warehouse = tmp_path_factory.mktemp("scale") / "wh"
    for night, run in zip((3, 1, 2), RUNS):
        result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "ingest",
                                          str(EXAMPLES), "--run", run, "--phase", "train",
                                          "--tag", f"night={night}", "--jobs", "2"])
        assert result.exit_code == 0, result.output
    return warehouse


def views_with_a_run_column(connection):
    names = [name for name, (_, text) in public_library().items()
             if "CREATE OR REPLACE VIEW" in text]
    return [name for name in names
            if "run" in [d[0] for d in connection.execute(f"SELECT * FROM {name} LIMIT 0")
                         .description]]


@pytest.mark.parametrize("rules", [None, "custom"])
def test_every_view_of_one_run_is_the_same_over_that_run_alone(three_runs, rules, tmp_path):
    """What asking a query about a run of the files of that run (and of the tables its view
    reads) alone relies on; with custom rules too, which swap in the live views."""
    rules_file = None
    if rules:
        rules_file = tmp_path / "rules.toml"
        rules_file.write_text('[[class]]\npattern = "gemm"\nclass = "communication"\n')
    everything = connect(three_runs, rules_file)
    views = views_with_a_run_column(everything) + ["kernels", "gpu_time", "traces"]
    empty = set()
    for view in views:
        query = f"SELECT * FROM {view} WHERE run = 'b'"
        expected = sorted(everything.execute(query).fetchall(), key=repr)
        ((_, rows),) = Warehouse(three_runs, rules_file).query(query)
        assert _same_rows(sorted(rows, key=repr), expected), view
        if not expected:
            empty.add(view)
    assert len(views) >= 50 and empty == NOTHING_IN_DLRM


def _same_rows(rows, expected):
    """Equal rows, integers and text exactly; a DOUBLE to its last bits only, as DuckDB's
    parallel avg() sums in an order that varies from run to run (run_metrics' busbw_gbps came
    out ...2655 once and ...265 the next)."""
    return len(rows) == len(expected) and all(
        len(row) == len(other) and all(
            math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) and isinstance(b, float)
            else a == b for a, b in zip(row, other))
        for row, other in zip(rows, expected))


@pytest.mark.parametrize("view", ["overlap", "kernel_stats", "gpu_idle", "run_metrics",
                                  "rank_skew", "launch_latency_summary", "runs",
                                  "graph_replay_kernels", "overlap_by_annotation",
                                  "timeline_windows", "timeline_kernels",
                                  "timeline_annotations"])
def test_a_run_filter_reaches_every_file_a_view_reads(three_runs, view):
    """Over the whole warehouse too: EXPLAIN ANALYZE shows each scan reading one run's files
    (8 of 24), none all of them (a CTE read twice, a join on trace_id alone, used to). The
    views computed, not read from their marts (a few files of many runs)."""
    plan = connect(three_runs, marts=False).execute(
        f"EXPLAIN ANALYZE SELECT * FROM {view} WHERE run = 'b'").fetchall()[0][1]
    reads = re.findall(r"Total Files Read: (\d+)", plan)
    assert reads and set(reads) == {"8"}, reads


@pytest.mark.parametrize("sql, runs", [
    ("SELECT * FROM overlap WHERE run = 'r1'", {"r1"}),
    ("select run, avg(overlap_ratio) from overlap where rank = 0 and run in ('x', 'y') "
     "group by run", {"x", "y"}),
    ("SELECT * FROM runs WHERE 'r1' = run", {"r1"}),
    ("SELECT * FROM overlap WHERE run = 'a' AND run = 'b'", set()),
    ("SELECT * FROM overlap WHERE run = 'a' OR run = 'b'", None),
    ("SELECT * FROM overlap o JOIN kernels k USING (run) WHERE run = 'a'", None),
    ("SELECT * FROM overlap, kernels WHERE run = 'a'", None),
    ("SELECT * FROM run_diff('a', 'b') WHERE run = 'a'", None),
    ("SELECT * FROM overlap WHERE run = (SELECT max(run) FROM runs)", None),
    ("WITH x AS (SELECT * FROM overlap) SELECT * FROM x WHERE run = 'a'", None),
    ("SELECT * FROM overlap WHERE run = 'a' UNION ALL SELECT * FROM overlap", None),
    ("SELECT * FROM overlap WHERE run = 'a'; SELECT * FROM kernels", None),
    ("SELECT * FROM overlap", None),
    ("SELECT * FROM overlap WHERE lower(run) = 'a'", None),
    ("not sql at all (", None),
])
def test_which_runs_a_query_names(sql, runs):
    named = runs_a_query_names(sql)
    assert (named and named[0]) == runs


@pytest.mark.parametrize("options", [
    {}, {"phase": "train"}, {"tag": ("night", "2")}, {"order_by_tag": "night"}])
@pytest.mark.parametrize("last", [1, 2])
def test_trend_of_the_last_runs_reads_those_and_answers_the_same(three_runs, last, options):
    expected = trend(connect(three_runs), "overlap_ratio", last=last, **options)
    assert Warehouse(three_runs).trend_rows("overlap_ratio", last=last, **options) == expected
    assert expected[1], options


def test_trend_widens_past_runs_without_the_metric(tracewh, warehouse):
    """The newest runs lack the kernel (CPU-only traces): the window of the last run grows
    until it holds one with the kernel."""
    tracewh("ingest", sorted(EXAMPLES.glob("worker0_*"))[0], "--run", "gpu")
    for run in ("cpu1", "cpu2", "cpu3"):
        tracewh("ingest", shared("hta/call_stack/backward_thread.json"), "--run", run)
    kernel = "kernel:" + connect(warehouse).execute(
        "SELECT short_name FROM kernel_stats ORDER BY total_ns DESC LIMIT 1").fetchall()[0][0]
    columns, rows = Warehouse(warehouse).trend_rows(kernel, last=1)
    assert [row[0] for row in rows] == ["gpu"]
    assert (columns, rows) == trend(connect(warehouse), kernel, last=1)


def test_runs_from_the_log_are_the_runs_view(three_runs):
    """`tracewh runs` reads the traces log's statistics, not 8,000 files: same rows."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    def run(*args):
        result = CliRunner().invoke(cli, ["--warehouse", str(three_runs), *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    listed = run("runs", "--format", "json")
    assert listed == run("query", "--format", "json", "SELECT * FROM runs ORDER BY first_seq")
    assert [row["run"] for row in __import__("json").loads(listed)] == list(RUNS)
