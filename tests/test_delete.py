"""tracewh delete: a run, or one phase of it, out of every table, mart and tracewh.duckdb."""

import json

import duckdb
import pytest

from tracewh.storage import delta
from tracewh.storage.catalog import Catalog
from tracewh.derived import RECOMPUTE_FILE
from tracewh.derived.duckdb_file import FILE_NAME
from tracewh.storage.schema import TABLES
from tracewh.derived.marts import MARTS

from .conftest import (EXAMPLES, FILLED_MARTS, built_once, cli_on, live_files, mart_frame,
                       sorted_frame, view_frame)

DLRM = sorted(EXAMPLES.glob("*.json.gz"))


def ingest_three_runs(tracewh):
    tracewh("ingest", EXAMPLES, "--run", "a", "--phase", "train")
    tracewh("ingest", *DLRM[:3], "--run", "b", "--phase", "train")
    tracewh("ingest", *DLRM[3:5], "--run", "b", "--phase", "eval")
    tracewh("ingest", *DLRM[5:], "--run", "mixed", "--phase", "train")


@pytest.fixture
def three_runs(tracewh, warehouse):
    ingest_three_runs(tracewh)
    return warehouse


@pytest.fixture(scope="module")
def three_runs_kept(tmp_path_factory):
    """three_runs made once for the deletes that must change nothing (checked after them)."""
    yield from built_once(tmp_path_factory, "delete", ingest_three_runs)


def _rows_by_run(warehouse):
    """{run: {table: rows}} over the snapshot, through tracewh.duckdb as BI tools read it."""
    found = {}
    with duckdb.connect(str(warehouse / FILE_NAME), read_only=True) as bi:
        for table in TABLES:
            for run, phase, rows in bi.execute(
                    f"SELECT run, phase, count(*) FROM {table} GROUP BY ALL").fetchall():
                found.setdefault((run, phase), {})[table] = rows
    return found


def test_a_deleted_run_leaves_every_table_and_mart_and_its_files_go_at_vacuum(three_runs,
                                                                                tracewh):
    before = _rows_by_run(three_runs)
    versions = Catalog(three_runs).snapshot().versions
    on_disk = set(live_files(three_runs))
    result = tracewh("delete", "mixed")
    assert result.stdout.startswith("deleted run mixed: 3 captures, ")
    after = _rows_by_run(three_runs)
    assert ("mixed", "train") in before and after == {
        key: rows for key, rows in before.items() if key[0] != "mixed"}
    runs = json.loads(tracewh("runs", "--format", "json").stdout)
    assert [r["run"] for r in runs] == ["a", "b"]
    for name in FILLED_MARTS:
        mart = mart_frame(three_runs, name)
        assert "mixed" not in set(mart["run"]) and len(mart) > 0, name
    # one commit per table holding the run, traces last with the new pointer
    now = Catalog(three_runs).snapshot().versions
    assert all(now[t] - versions[t] in (0, 1) for t in TABLES) and now["traces"] == \
        versions["traces"] + 1
    retired = on_disk - set(live_files(three_runs))
    assert retired and all(path.exists() for path in retired)  # until vacuum
    tracewh("vacuum", "--retain", "0")
    assert not any(path.exists() for path in retired)


def test_deleting_a_phase_keeps_the_others_and_recomputes_the_marts(three_runs, tracewh):
    before = _rows_by_run(three_runs)
    tracewh("delete", "b", "--phase", "eval", "--yes")
    after = _rows_by_run(three_runs)
    assert ("b", "eval") in before and ("b", "eval") not in after
    assert after[("b", "train")] == before[("b", "train")]
    for name in MARTS:  # the marts equal the views again, eval rows gone
        mart, view = mart_frame(three_runs, name), view_frame(three_runs, name)
        assert "eval" not in set(mart["phase"]), name
        assert sorted_frame(mart.select(view.columns)).equals(sorted_frame(view)), name


def test_a_delete_killed_before_its_refresh_is_caught_up(three_runs, tracewh, monkeypatch):
    """The runs to recompute are written before the commits: a refresh that did not happen
    (killed, disk full) is done by the next one."""
    from tracewh.derived import maintenance

    monkeypatch.setattr(maintenance, "refresh_derived", lambda catalog: None)
    tracewh("delete", "b", "--phase", "eval")
    assert json.loads((three_runs / "_tracewh" / RECOMPUTE_FILE).read_text()) == ["b"]
    assert "eval" in set(mart_frame(three_runs, "overlap")["phase"])
    monkeypatch.undo()
    tracewh("refresh")
    assert "eval" not in set(mart_frame(three_runs, "overlap")["phase"])
    assert not (three_runs / "_tracewh" / RECOMPUTE_FILE).exists()
    assert tracewh("refresh").stdout.startswith("up to date")


@pytest.mark.parametrize("arguments, message", [
    (["nope"], "error: unknown run 'nope'"),
    (["b", "--phase", "decode"], "error: run 'b' has no phase 'decode' (its phases: eval, "
                                 "train)"),
    (["../x"], "error: invalid run '../x'"),
])
def test_delete_mistakes_are_one_line_and_change_nothing(arguments, message,
                                                         three_runs_kept):
    versions = Catalog(three_runs_kept).snapshot().versions
    result = cli_on(three_runs_kept)("delete", *arguments, expect=2)
    assert result.output.startswith(message) and result.output.count("\n") == 1
    assert Catalog(three_runs_kept).snapshot().versions == versions


def test_on_a_terminal_delete_asks_first(three_runs_kept, monkeypatch):
    from click.testing import CliRunner

    from tracewh.cli import cli
    from tracewh.commands import maintenance as command

    monkeypatch.setattr(command, "on_terminal", lambda: True)
    answered_no = CliRunner().invoke(cli, ["--warehouse", str(three_runs_kept), "delete", "a"],
                                     input="n\n")
    assert answered_no.exit_code == 1 and "delete run a from" in answered_no.output
    runs = cli_on(three_runs_kept)("runs", "--format", "json").stdout
    assert "a" in {r["run"] for r in json.loads(runs)}
    assert delta.is_table(three_runs_kept / "kernels")
