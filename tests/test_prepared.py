"""`tracewh query` answered from the warehouse's prepared catalog, tracewh.duckdb (see
`tracewh.query.prepared`): without importing pyarrow, delta-rs or the ingest, over the files of the
runs its statements name only (a script's: the union), with the answers of the whole
warehouse, and with the read-only guard's checks."""

import json
import os
import subprocess
import sys

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracewh
from tracewh.cli import cli
from tracewh.errors import WarehouseError
from tracewh.query.prepared import prepared_connection, prepared_query
from tracewh.query.query_analysis import runs_a_query_names

from .conftest import EXAMPLES, ROOT, SHARED, require

H100 = SHARED / "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz"
DLRM = sorted(EXAMPLES.glob("worker*"))[:2]
RUNS = ("h100", "dlrm0", "dlrm1")
HEAVY = ("pyarrow", "deltalake", "sqlglot", "tracewh.ingest", "tracewh.api")
# views over the host call tree, the kernels, the memory events and the collectives
VIEWS = ["kernels", "cpu_ops", "overlap", "kernel_stats", "op_stats", "op_kernels",
         "memory_events", "collective_calls", "gemm_shapes", "step_bottleneck"]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """TraceLens's H100 trace and two DLRM ranks, each a run, for the module, whose tests only
    read it (but the one that damages a copy)."""
    require(H100)
    root = tmp_path_factory.mktemp("prepared") / "wh"
    for run, path in zip(RUNS, (H100, *DLRM)):
        result = CliRunner().invoke(cli, ["--warehouse", str(root), "ingest", str(path),
                                          "--run", run, "--phase", "infer"])
        assert result.exit_code == 0, result.output
    return root


def run_cli(warehouse, *args):
    """(exit status, stdout, stderr, the heavy modules the process imported) of the `tracewh`
    command in a process of its own, as the console script runs it."""
    probe = ("import json, sys\nfrom tracewh.entry import main\n"
             "sys.argv[1:] = sys.argv[2:]\ntry:\n    main()\nexcept SystemExit as e:\n"
             "    code = e.code\nelse:\n    code = 0\n"
             f"heavy = sorted({{m.split('.')[0] if m.startswith(('pyarrow', 'deltalake', "
             f"'sqlglot')) else m for m in sys.modules if m.startswith({HEAVY!r})}})\n"
             "print(json.dumps([code, heavy]), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, "-", "--warehouse", str(warehouse),
                           *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    *errors, last = done.stderr.splitlines()
    code, heavy = json.loads(last)
    return code, done.stdout, "\n".join(errors), heavy


@pytest.mark.parametrize("sql", [
    "SELECT 1",
    "SELECT count(*) FROM overlap WHERE run = 'h100'",
    "SELECT count(*) FROM kernels WHERE run = 'dlrm0'; SELECT count(*) FROM op_stats "
    "WHERE run IN ('h100', 'dlrm1')"])
def test_a_query_imports_neither_pyarrow_nor_delta_rs_nor_the_ingest(warehouse, sql):
    code, out, errors, heavy = run_cli(warehouse, "query", "--format", "json", sql)
    assert code == 0, errors
    assert heavy == []
    with tracewh.open(warehouse) as wh:
        relation = wh.sql(sql.split(";")[-1])
        expected = [dict(zip(relation.columns, row)) for row in relation.fetchall()]
    assert json.loads(out) == expected


def test_a_question_about_every_run_is_asked_the_usual_way(warehouse):
    """Its views with marts read them, and the logs' row counts are checked: pyarrow and
    delta-rs are needed, and the answer is every run's."""
    assert prepared_query(warehouse, "SELECT count(*) FROM kernels") is None
    code, out, errors, heavy = run_cli(warehouse, "query", "--format", "csv",
                                       "SELECT count(DISTINCT run) AS n FROM kernels")
    assert (code, out.split()) == (0, ["n", "3"]), errors
    assert "pyarrow" in heavy


@pytest.mark.parametrize("sql, runs", [
    ("SELECT 1; SELECT 2", set()),
    ("SELECT * FROM overlap WHERE run = 'a'; SELECT * FROM kernels WHERE run IN ('b', 'c')",
     {"a", "b", "c"}),
    ("SELECT 1; SELECT * FROM kernels WHERE run = 'a'", {"a"}),
    ("SELECT * FROM kernels WHERE run = 'a'; SELECT * FROM kernels", None),
    ("SELECT * FROM kernels WHERE run = 'a'; SELECT (SELECT 1 FROM traces)", None),
    ("SELECT * FROM kernels WHERE run = 'a'; CREATE TABLE x (y INT)", None),
    ("SELECT * FROM run_diff('a', 'b')", None),
    ("SELECT * FROM kernels WHERE run = 'a'; SELECT * FROM read_text('/etc/passwd')", None),
])
def test_a_script_is_about_the_union_of_its_statements_runs(sql, runs):
    named = runs_a_query_names(sql)
    assert (named and named[0]) == runs


SCRIPTS = st.lists(st.tuples(st.sampled_from(VIEWS),
                             st.lists(st.sampled_from(RUNS), min_size=1, max_size=2)),
                   min_size=1, max_size=3)


@settings(max_examples=12, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(script=SCRIPTS)
def test_a_pruned_script_answers_as_over_the_whole_warehouse(warehouse, script):
    statements = [f"SELECT run, count(*) AS n FROM {view} WHERE run IN "
                  f"({', '.join(repr(run) for run in runs)}) GROUP BY run ORDER BY run"
                  for view, runs in script]
    sql = "; ".join(statements)
    with prepared_connection(warehouse, sql) as connection:
        read = {path.split("/run=")[1].split("/")[0]
                for (name,) in connection.execute(
                    "SELECT name FROM duckdb_variables() WHERE name LIKE 'tracewh_files_%'")
                .fetchall()
                for path in connection.execute("SELECT getvariable(?)", [name]).fetchone()[0]}
    assert read <= {run for _, runs in script for run in runs}  # pruned to the union
    with tracewh.open(warehouse) as wh:
        whole = [(wh.sql(s).columns, wh.sql(s).fetchall()) for s in statements]
        assert wh.query(sql) == whole  # the usual way prunes scripts too
    assert prepared_query(warehouse, sql) == whole


def copy_of(warehouse, tmp_path):
    """A copy of `warehouse`, its tracewh.duckdb written again (it names the files by the
    warehouse's path)."""
    copy = tmp_path / "wh"
    subprocess.run(["cp", "-a", str(warehouse), str(copy)], check=True)
    (copy / "tracewh.duckdb").unlink()
    result = CliRunner().invoke(cli, ["--warehouse", str(copy), "refresh"])
    assert result.exit_code == 0, result.output
    return copy


def test_a_changed_file_of_a_run_read_is_refused(warehouse, tmp_path):
    copy = copy_of(warehouse, tmp_path)
    with duckdb.connect(str(copy / "tracewh.duckdb"), read_only=True) as listed:
        (path,), = listed.execute("SELECT path FROM tracewh_files WHERE table_name = 'kernels' "
                                  "AND run = 'dlrm0'").fetchall()
    assert path.startswith(f"{copy.resolve()}/")
    with open(path, "ab") as handle:
        handle.write(b"x")
    sql = "SELECT count(*) FROM kernels WHERE run = 'dlrm0'"
    with pytest.raises(WarehouseError, match="changed outside tracewh since its commit"):
        prepared_query(copy, sql)  # not left to the usual way
    code, _, errors, _ = run_cli(copy, "query", sql)
    assert code == 2
    assert f"error: {path}: changed outside tracewh since its commit (" in errors
    code, out, errors, _ = run_cli(copy, "query", "--format", "csv",
                                   "SELECT count(*) AS n FROM kernels WHERE run = 'h100'")
    assert code == 0, errors


def test_a_file_of_another_snapshot_is_not_answered_from(warehouse, tmp_path):
    """An ingest whose refresh did not run (killed): tracewh.duckdb shows the older snapshot,
    and the question is asked the usual way, of the newest."""
    copy = copy_of(warehouse, tmp_path)
    sql = "SELECT count(*) FROM kernels WHERE run = 'h100'"
    assert prepared_query(copy, sql) is not None
    with duckdb.connect(str(copy / "tracewh.duckdb")) as written:
        written.execute("UPDATE tracewh_snapshot SET versions = '{}'")
    assert prepared_query(copy, sql) is None
    code, out, errors, heavy = run_cli(copy, "query", "--format", "csv", sql)
    assert code == 0 and "pyarrow" in heavy, errors


@pytest.mark.parametrize("args", [
    ("diff", "dlrm0", "dlrm1", "--format", "json"),
    ("diff", "dlrm0", "dlrm1", "--by", "op", "--format", "json"),
    ("trend", "overlap_ratio", "--format", "json"),
    ("trend", "step_time_ns", "--last", "1", "--format", "json")])
def test_diff_and_trend_answer_from_the_file_as_the_library_does(warehouse, args):
    """Without the catalog, pyarrow or delta-rs (trend over every run too: run_metrics' mart
    answers, no event table is scanned), the answer the library's Warehouse gives."""
    code, out, errors, heavy = run_cli(warehouse, *args)
    assert code == 0, errors
    assert heavy == []
    with tracewh.open(warehouse) as wh:
        if args[0] == "diff":
            expected = wh.diff(args[1], args[2], by="op" if "op" in args else "name")
        else:
            expected = wh.trend(args[1], last=1 if "--last" in args else None)
    assert json.loads(out) == json.loads(json.dumps(expected))


def test_report_and_an_unknown_run_need_no_catalog(warehouse, tmp_path):
    """The report's connection comes from the file; a run it does not record is refused with
    the close names, as the catalog's list refuses it."""
    out = tmp_path / "report.html"
    code, _, errors, heavy = run_cli(warehouse, "report", "dlrm1", "--base", "dlrm0",
                                     "--out", str(out))
    assert (code, heavy) == (0, []), errors
    assert "Against dlrm0: kernels" in out.read_text()
    code, _, errors, heavy = run_cli(warehouse, "diff", "dlrm0", "dlrm2")
    assert (code, heavy) == (2, [])
    assert errors.splitlines()[-1].startswith("error: unknown run 'dlrm2'") and "dlrm1" in errors


def test_a_file_without_the_runs_is_not_answered_from(warehouse, tmp_path):
    """A file written before it recorded the runs: diff is asked the usual way, and the next
    refresh writes the file again in the current format."""
    copy = copy_of(warehouse, tmp_path)
    with duckdb.connect(str(copy / "tracewh.duckdb")) as written:
        written.execute("DROP TABLE tracewh_runs")
    code, out, errors, heavy = run_cli(copy, "diff", "dlrm0", "dlrm1", "--format", "json")
    assert code == 0 and "pyarrow" in heavy, errors
    assert json.loads(out)["summary"]["sides"]["new"]
    assert run_cli(copy, "refresh")[0] == 0
    code, _, errors, heavy = run_cli(copy, "diff", "dlrm0", "dlrm1")
    assert (code, heavy) == (0, []), errors


def test_trend_of_the_last_runs_reads_only_their_window(warehouse, monkeypatch):
    """--last 1 reads the last run and the one before it (its delta), on one connection: the
    window was doubled until it held every run, as the runs were counted after all but the
    last were left out."""
    opened = []
    with tracewh.open(warehouse) as wh:
        connect = wh.connect_over_runs
        monkeypatch.setattr(wh, "connect_over_runs",
                            lambda runs, reads=None: opened.append(runs) or connect(runs, reads))
        monkeypatch.setattr(wh, "connect", lambda *a, **k: opened.append("every run"))
        rows = wh.trend("step_time_ns", last=1)
    assert opened == [{"dlrm0", "dlrm1"}]
    assert [row["run"] for row in rows] == ["dlrm1"]


def test_one_list_of_column_types_names_them_as_arrow_ddl_and_the_catalog_do():
    """COLUMN_TYPES serves both the DDL of the tables and the check of the file's catalog:
    each Arrow name is what pyarrow prints for a type the tables use, and each DDL name is
    reported by DuckDB's catalog as its catalog name."""
    from tracewh.query.table_sql import CATALOG_TYPES, COLUMN_TYPES
    from tracewh.storage.schema import PARTITION_COLUMNS, TABLES

    used = {str(type_) for _, type_, _ in PARTITION_COLUMNS} | {
        str(column.type) for table in TABLES.values() for column in table.columns}
    assert used == {arrow for arrow, _, _ in COLUMN_TYPES}
    connection = duckdb.connect()
    for number, (_, ddl, catalog) in enumerate(COLUMN_TYPES):
        connection.execute(f"CREATE TABLE t{number} (c {ddl})")
        assert connection.execute("SELECT data_type FROM duckdb_columns() WHERE table_name = ?",
                                  [f"t{number}"]).fetchone() == (catalog,)
    assert CATALOG_TYPES == {catalog for _, _, catalog in COLUMN_TYPES}
