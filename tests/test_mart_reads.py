"""A view whose mart is current reads the mart's rows in every connection, pruned to some runs
too (`tracewh query` answered from tracewh.duckdb, `connect_to_runs`), and only while it is
current: the same rows as the view's SQL, and a stale mart never read."""

import pytest
from click.testing import CliRunner

import tracewh
from tracewh.cli import cli
from tracewh.query.prepared import connect_prepared, prepared_connection, prepared_query

from .conftest import EXAMPLES, connect

DLRM = sorted(EXAMPLES.glob("worker*"))
RUNS = ("dlrm", "pair")
VIEWS = ("critical_path", "critical_path_breakdown", "critical_path_by_name",
         "graph_replay_kernels")
RULES = '[[class]]\nclass = "communication"\n'  # other kernel rules: every mart stale


def ingest(root, *args):
    result = CliRunner().invoke(cli, ["--warehouse", str(root), "ingest", *map(str, args)])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """DLRM's 8 ranks as one run, and two of them as another, for the module, whose tests
    only read it."""
    root = tmp_path_factory.mktemp("martreads") / "wh"
    ingest(root, EXAMPLES, "--run", "dlrm")
    ingest(root, *DLRM[:2], "--run", "pair")
    return root


def marts_read(connection):
    """The marts a connection's views read ({mart: its files}), by the variables their views
    read (see table_sql.mart_view_sql)."""
    return {name.removeprefix("tracewh_mart_files_"):
            connection.execute("SELECT getvariable(?)", [name]).fetchone()[0]
            for (name,) in connection.execute(
                "SELECT name FROM duckdb_variables() WHERE name LIKE 'tracewh_mart_files_%'")
            .fetchall()}


def computed(root, sql, rules=None):
    """`sql`'s answer computed by the views' SQL over every run, no mart read."""
    with tracewh.open(root, rules).connect(marts=False) as connection:
        relation = connection.sql(sql)
        return relation.columns, relation.fetchall()


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("run", RUNS)
def test_a_question_about_a_run_reads_its_view_s_mart(warehouse, view, run):
    sql = f"SELECT * FROM {view} WHERE run = '{run}' ORDER BY ALL"
    expected = computed(warehouse, sql)
    if view.startswith("critical_path"):
        assert expected[1], "the path of every step"
    with prepared_connection(warehouse, sql) as prepared:
        read = marts_read(prepared)
    with tracewh.open(warehouse) as wh, wh._connect_for(sql, False) as usual:
        read_usual = marts_read(usual)
    if view.startswith("critical_path"):  # read by the views of it too
        assert read["critical_path"] and read_usual["critical_path"]
    assert prepared_query(warehouse, sql) == [expected]
    with tracewh.open(warehouse) as wh:
        assert wh.query(sql) == [expected]


def test_a_connection_over_some_runs_for_any_question_reads_every_current_mart(warehouse):
    """Without the names a question reads (a notebook's connection over some runs), every
    mart current at the snapshot is read, not the views' SQL."""
    with tracewh.open(warehouse) as wh, wh.connect_to_runs(["pair"]) as connection:
        assert set(marts_read(connection)) >= {"critical_path", "overlap", "kernel_stats"}
        # no run replays a graph: its mart has no file, and its view answers no row at once
        assert connection.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'graph_replay_kernels' "
            "AND temporary").fetchone()[0].rstrip(";").endswith("WHERE false")
        assert connection.execute("SELECT count(*) FROM graph_replay_kernels").fetchone() == (0,)
        assert connection.execute(
            "SELECT * FROM critical_path_breakdown ORDER BY ALL").fetchall() == computed(
                warehouse, "SELECT * FROM critical_path_breakdown WHERE run = 'pair' "
                "ORDER BY ALL")[1]


def test_a_connection_over_some_runs_sees_their_mart_rows_only(warehouse):
    with connect_prepared(warehouse, {"pair"}, ["critical_path"]) as prepared:
        assert marts_read(prepared)["critical_path"]
        assert prepared.execute("SELECT DISTINCT run FROM critical_path").fetchall() == [
            ("pair",)]
    with connect(warehouse, runs={"pair"}) as usual:
        assert marts_read(usual)["critical_path"]
        assert usual.execute("SELECT DISTINCT run FROM critical_path").fetchall() == [
            ("pair",)]


def test_a_stale_mart_is_not_read(warehouse, tmp_path, monkeypatch):
    """After an ingest whose refresh did not run, the marts are of an older snapshot; under
    other kernel rules, of other rules: the views' SQL answers (the new run's path is there)."""
    sql = "SELECT * FROM critical_path_breakdown WHERE run = 'pair' ORDER BY ALL"
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    with tracewh.open(warehouse, rules) as wh, wh._connect_for(sql, False) as other_rules:
        assert marts_read(other_rules) == {}
    copy = tmp_path / "wh"
    ingest(copy, *DLRM[:2], "--run", "pair")
    monkeypatch.setattr("tracewh.api.refresh_derived", lambda catalog: None)
    with tracewh.open(copy) as wh:
        wh.ingest(*DLRM[2:4], run="late")
    late = sql.replace("'pair'", "'late'")
    assert prepared_connection(copy, late) is None  # of the snapshot before the ingest
    with tracewh.open(copy) as wh, wh._connect_for(late, False) as usual:
        assert marts_read(usual) == {}
        expected = computed(copy, late)
        assert expected[1] and wh.query(late) == [expected]
