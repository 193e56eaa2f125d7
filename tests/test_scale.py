"""Queries that stay fast at many runs (#14): a question about a run reads that run's files
only, and gets exactly the rows it would get over the whole warehouse."""

import re

import pytest

from tracewh.diff import trend, trend_in_warehouse
from tracewh.query import connect, library, query_warehouse
from tracewh.scope import runs_a_query_names

from .conftest import EXAMPLES, shared

RUNS = ("a", "b", "c")


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
    names = [name for name, (_, text) in library().items() if "CREATE OR REPLACE VIEW" in text]
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
    answered = 0
    for view in views:
        query = f"SELECT * FROM {view} WHERE run = 'b'"
        expected = sorted(everything.execute(query).fetchall(), key=repr)
        ((_, rows),) = query_warehouse(three_runs, query, rules_file)
        assert sorted(rows, key=repr) == expected, view
        answered += bool(expected)
    assert len(views) >= 20 and answered >= len(views) - 2  # DLRM has no annotations


@pytest.mark.parametrize("view", ["overlap", "kernel_stats", "gpu_idle", "run_metrics",
                                  "rank_skew", "launch_latency_summary", "runs"])
def test_a_run_filter_reaches_every_file_a_view_reads(three_runs, view):
    """Over the whole warehouse too: EXPLAIN ANALYZE shows each scan reading one run's files
    (8 of 24), none all of them (a CTE read twice, a join on trace_id alone, used to)."""
    plan = connect(three_runs).execute(f"EXPLAIN ANALYZE SELECT * FROM {view} "
                                       "WHERE run = 'b'").fetchall()[0][1]
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
    assert trend_in_warehouse(three_runs, "overlap_ratio", last=last, **options) == expected
    assert expected[1], options


def test_trend_widens_past_runs_without_the_metric(tracewh, warehouse):
    """The newest runs lack the kernel (CPU-only traces): the window of the last run grows
    until it holds one with the kernel."""
    tracewh("ingest", sorted(EXAMPLES.glob("worker0_*"))[0], "--run", "gpu")
    for run in ("cpu1", "cpu2", "cpu3"):
        tracewh("ingest", shared("hta/call_stack/backward_thread.json"), "--run", run)
    kernel = "kernel:" + connect(warehouse).execute(
        "SELECT short_name FROM kernel_stats ORDER BY total_ns DESC LIMIT 1").fetchall()[0][0]
    columns, rows = trend_in_warehouse(warehouse, kernel, last=1)
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
