"""Damage from outside: a warehouse whose files something other than tracewh emptied, cut,
deleted or made read-only. Every case gives one error line naming the file and the way out,
exit status 2 and no traceback; what tracewh can repair with certainty, it repairs."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from tracewh.storage import delta

from .conftest import EXAMPLES, ROOT, connect

RANKS = sorted(EXAMPLES.glob("worker*"))[:2]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Two DLRM ranks, ingested once per module as two runs (r0, then r1), and its figures."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    root = tmp_path_factory.mktemp("pristine") / "wh"
    for run, path in zip(("r0", "r1"), RANKS):
        result = CliRunner().invoke(cli, ["--warehouse", str(root), "ingest", str(path),
                                          "--run", run, "--phase", "train"])
        assert result.exit_code == 0, result.output
    with connect(root) as connection:
        kernels = dict(connection.execute("SELECT run, count(*) FROM kernels GROUP BY run")
                       .fetchall())
        (trace_id, events, rank), = connection.execute(
            "SELECT trace_id, events, rank FROM traces WHERE run = 'r1'").fetchall()
    return root, {
        "kernels": kernels, "r1": {"trace_id": trace_id, "events": events, "rank": rank},
        "where": f"(run r1, phase train, rank {rank})",  # r1's trace, as errors name it
        "repair": f"ingest {RANKS[1]} (--run r1 --phase train --rank {rank}) again with "
                  "--replace"}


@pytest.fixture
def damaged(pristine, warehouse):
    """A copy of the pristine warehouse (its modification times kept) to damage, and its
    figures (read from the pristine one: this process has not loaded the copy's logs)."""
    shutil.copytree(pristine[0], warehouse)
    return pristine[1]


def commit_file(table_path, version):
    return table_path / "_delta_log" / f"{version:020d}.json"


def newest_commit(warehouse, table):
    return commit_file(warehouse / table, delta.latest_version(warehouse / table))


def one_line_error(result, *words):
    """The error of a command that failed as a user mistake: one line, no traceback."""
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit)  # not an exception the CLI let through
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ")
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    return result.stderr


def test_an_emptied_newest_commit_is_named_and_no_writer_builds_on_it(tracewh, warehouse,
                                                                      damaged):
    commit = newest_commit(warehouse, "kernels")  # r1's kernels
    commit.write_text("")
    traces_version = delta.latest_version(warehouse / "traces")
    for command in (("query", "SELECT count(*) FROM kernels"),
                    ("query", "SELECT count(*) FROM kernels WHERE run = 'r0'"),
                    ("ingest", RANKS[0], "--run", "r2")):
        one_line_error(tracewh(*command, expect=None), f"{commit}: empty",
                       "restore the file from a backup")
    assert delta.latest_version(warehouse / "traces") == traces_version  # nothing written


def test_an_emptied_newest_traces_commit_is_named(tracewh, warehouse, damaged):
    commit = newest_commit(warehouse, "traces")
    commit.write_text("")
    for command in (("runs",), ("snapshot",), ("ingest", RANKS[0], "--run", "r2")):
        one_line_error(tracewh(*command, expect=None), f"{commit}: empty")


def test_a_cut_commit_is_one_line_not_a_rust_backtrace(tracewh, warehouse, damaged):
    commit = newest_commit(warehouse, "cpu_ops")
    text = commit.read_bytes()
    commit.write_bytes(text[:len(text) // 2])
    for command in (("query", "SELECT count(*) FROM cpu_ops"), ("refresh",),
                    ("ingest", RANKS[0], "--run", "r2")):
        error = one_line_error(tracewh(*command, expect=None),
                               f"{commit}: cut")
        assert "Kernel error" not in error and "start_thread" not in error


def test_a_commit_that_lost_whole_lines_is_found_by_counting(tracewh, warehouse, damaged,
                                                             sql):
    """Cut after its first line, the commit is still JSON lines: delta-rs reads it as a
    commit that added no kernels file, and only the counts tell."""
    commit = newest_commit(warehouse, "kernels")
    commit.write_text(commit.read_text().splitlines()[0] + "\n")
    events, held = damaged["r1"]["events"], damaged["r1"]["events"] - damaged["kernels"]["r1"]
    for command in (("query", "SELECT count(*) FROM kernels"), ("refresh",)):
        one_line_error(tracewh(*command, expect=None),
                       f"trace {damaged['r1']['trace_id']} {damaged['where']} counts "
                       f"{events:,} events, but the tables' Delta logs hold {held:,} rows",
                       damaged["repair"])
    tracewh("ingest", RANKS[1], "--run", "r1", "--phase", "train", "--rank",
            damaged["r1"]["rank"], "--replace")
    assert sql("SELECT count(*) AS n FROM kernels WHERE run = 'r1'") == [
        {"n": damaged["kernels"]["r1"]}]
    tracewh("refresh")  # the counts agree again


def test_a_damaged_commit_of_a_killed_writer_is_rolled_back(tracewh, warehouse, damaged, sql):
    """A commit after the snapshot's version (its writer died before the pointer) that is
    cut: no snapshot reads it, so the next writer sets it aside, as a rollback would."""
    path = warehouse / "kernels"
    committed = delta.latest_version(path)
    text = commit_file(path, committed).read_text()
    commit_file(path, committed + 1).write_text(text[:len(text) // 2])
    assert sql("SELECT count(*) AS n FROM kernels") == [{"n": sum(damaged["kernels"].values())}]
    tracewh("ingest", RANKS[0], "--run", "r2", "--phase", "train")
    assert (warehouse / "_tracewh" / "damaged" / f"kernels-{committed + 1:020d}.json").exists()
    assert sql("SELECT run, count(*) AS n FROM kernels GROUP BY run ORDER BY run") == [
        {"run": "r0", "n": damaged["kernels"]["r0"]}, {"run": "r1", "n": damaged["kernels"]["r1"]},
        {"run": "r2", "n": damaged["kernels"]["r0"]}]


def test_a_deleted_data_file_is_named_with_its_trace_and_the_repair(tracewh, warehouse,
                                                                   damaged, sql):
    (gone,) = (warehouse / "kernels" / "run=r1").rglob("*.parquet")
    gone.unlink()
    error = one_line_error(tracewh("query", "SELECT count(*) FROM kernels", expect=None),
                           f"{gone}: missing: a file of trace {damaged['r1']['trace_id']} "
                           f"{damaged['where']}", damaged["repair"])
    assert "IO Error" not in error
    assert sql("SELECT count(*) AS n FROM kernels WHERE run = 'r0'") == [
        {"n": damaged["kernels"]["r0"]}]  # a query of another run reads no missing file
    assert sql("SELECT count(*) AS n FROM traces") == [{"n": 2}]  # nor one of another table
    tracewh("ingest", RANKS[1], "--run", "r1", "--phase", "train", "--rank",
            damaged["r1"]["rank"], "--replace")
    assert sql("SELECT count(*) AS n FROM kernels WHERE run = 'r1'") == [
        {"n": damaged["kernels"]["r1"]}]


def test_a_garbage_duckdb_file_is_written_again(tracewh, warehouse, damaged):
    file = warehouse / "tracewh.duckdb"
    file.write_text("not a database\n")
    assert not tracewh("refresh").stdout.startswith("up to date")
    with duckdb.connect(str(file), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM kernels").fetchone() == (
            sum(damaged["kernels"].values()),)
    assert tracewh("refresh").stdout.startswith("up to date")
    file.write_text("not a database\n")
    tracewh("optimize")  # a writer, which refreshes: not stuck on the file
    with duckdb.connect(str(file), read_only=True) as connection:
        assert connection.execute("SELECT count(DISTINCT run) FROM kernels").fetchone() == (2,)


def test_a_read_only_warehouse_refuses_writers_in_one_line_and_serves_readers(pristine):
    """Read-only for real: a copy with no write permission, used as an unprivileged user
    when the tests run as root (whom file modes do not stop)."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root, and no setpriv to run as another user")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    directory = Path(tempfile.mkdtemp())
    try:
        directory.chmod(0o755)
        warehouse = directory / "wh"
        shutil.copytree(pristine[0], warehouse)
        subprocess.run(["chmod", "-R", "a-w", str(warehouse)], check=True)

        def run(*args):
            return subprocess.run([*prefix, sys.executable, "-m", "tracewh",
                                   "--warehouse", str(warehouse), *map(str, args)],
                                  capture_output=True, text=True, cwd=directory,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})

        for command in (("ingest", RANKS[0], "--run", "r2"), ("refresh",)):
            result = run(*command)
            assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
            assert result.stderr.startswith(f"error: cannot write to the warehouse {warehouse}: "
                                            "read-only (Permission denied")
        result = run("query", "--format", "json", "SELECT count(DISTINCT run) AS n FROM kernels")
        assert result.returncode == 0 and json.loads(result.stdout) == [{"n": 2}], result.stderr
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(directory)], check=True)
        shutil.rmtree(directory)


def test_a_deleted_state_directory_says_how_and_refresh_recreates_it(tracewh, warehouse,
                                                                     damaged, sql):
    shutil.rmtree(warehouse / "_tracewh")
    for command in (("query", "SELECT 1"), ("ingest", RANKS[0], "--run", "r2")):
        one_line_error(tracewh(*command, expect=None), "its _tracewh/ is gone",
                       "`tracewh refresh` recreates _tracewh/")
    assert "recreated _tracewh/" in tracewh("refresh").stderr
    assert sql("SELECT count(*) AS n FROM kernels") == [{"n": sum(damaged["kernels"].values())}]


def test_a_directory_of_other_files_is_still_not_a_warehouse(tracewh, warehouse):
    warehouse.mkdir()
    (warehouse / "notes.txt").write_text("hello")
    one_line_error(tracewh("query", "SELECT 1", expect=None), "is not a tracewh warehouse")
    assert tracewh("refresh", expect=2).stderr.count("\n") == 1
    assert not (warehouse / "_tracewh").exists()


def test_rows_of_a_trace_whose_traces_row_was_lost_are_found_by_counting(tracewh, warehouse,
                                                                        damaged):
    commit = newest_commit(warehouse, "traces")  # r1's traces row and the pointer
    commit.write_text(commit.read_text().splitlines()[0] + "\n")
    one_line_error(tracewh("query", "SELECT count(*) FROM kernels", expect=None),
                   f"the event tables hold {damaged['r1']['events']:,} rows of trace "
                   f"{damaged['r1']['trace_id']}, which has no traces row")
