"""What the warehouse derives after every commit: the marts (Delta tables of seven views) and
tracewh.duckdb, read as BI tools and other engines read them."""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.query import connection
from tracewh.storage import delta
from tracewh.derived import marts
from tracewh.storage.catalog import Catalog
from tracewh.derived import DONE_FILE, mark_for_recompute, refresh_derived
from tracewh.storage.layout import MARTS_DIR
from tracewh.query.library import modules_read_by
from tracewh.derived.duckdb_file import FILE_NAME
from tracewh.derived.marts import MARTS, mart_path

from .conftest import (EXAMPLES, FILLED_MARTS, built_once, cli_on, connect, mart_frame,
                       sorted_frame, view_frame)

DLRM = sorted(EXAMPLES.glob("*.json.gz"))
EXTRA_COLUMNS = ["start_ns", "start_time", "relative_time"]


def ingest_two_runs(tracewh):
    """Run a, the 8-rank DLRM step; run b, its first 3 ranks."""
    tracewh("ingest", EXAMPLES, "--run", "a", "--phase", "train")
    tracewh("ingest", *DLRM[:3], "--run", "b", "--phase", "train")


@pytest.fixture
def two_runs(tracewh, warehouse):
    ingest_two_runs(tracewh)
    return warehouse


@pytest.fixture(scope="module")
def two_runs_to_read(tmp_path_factory):
    """two_runs made once for the tests that only read it (checked unchanged after them)."""
    yield from built_once(tmp_path_factory, "derived", ingest_two_runs)


def test_marts_equal_their_views_row_for_row(two_runs, monkeypatch):
    """Every way a refresh reads the runs it derives: from a copy of their rows in memory
    (small runs, as these), or from their files but the summaries' (large ones, here a
    connection a run, as for runs beyond RUNS_AT_ONCE, and both runs on one connection, a
    bulk derive), each under the library of tracewh.duckdb, attached, or defined anew (no
    such file), beside the views' query, which reads the files."""
    catalog, copies = Catalog(two_runs), []

    def connect_spy(*args, copied, **options):
        copies.append(set(copied))
        return connection.connect(*args, copied=copied, **options)

    def copy_spy(connection_, catalog_, snapshot, runs, tables, listed=None, copied=None):
        copies.append(("attached", set(tables if copied is None else copied)))
        return connection.copy_runs(connection_, catalog_, snapshot, runs, tables, listed,
                                    copied)

    monkeypatch.setattr(marts, "connect", connect_spy)
    monkeypatch.setattr(marts, "copy_runs", copy_spy)
    attach = marts.attach_library
    # the views read the tables alone, which the refreshes below leave as they are
    views = {name: view_frame(two_runs, name) for name in MARTS}
    for in_memory_events, runs_at_once, attached in ((100_000, 64, True), (100_000, 64, False),
                                                     (0, 1, True), (0, 1, False),
                                                     (0, 64, True), (0, 64, False)):
        monkeypatch.setattr(marts, "IN_MEMORY_EVENTS", in_memory_events)
        monkeypatch.setattr(marts, "RUNS_AT_ONCE", runs_at_once)
        monkeypatch.setattr(marts, "attach_library",
                            attach if attached else lambda root, shape: None)
        for run in ("a", "b"):
            mark_for_recompute(catalog, run)
        refresh_derived(catalog)
        for name in MARTS:
            mart, view = mart_frame(two_runs, name), views[name]
            # critical_path has a start_ns of its own (each edge's), which the mart keeps
            assert mart.columns == view.columns + [
                column for column in EXTRA_COLUMNS if column not in view.columns], name
            assert len(view) > 0 or name not in FILLED_MARTS, name
            assert sorted_frame(mart.select(view.columns)).equals(sorted_frame(view)), name
    small = {*marts.SUMMARIES, "cpu_ops", "kernels", "runtime", "critical_path_edges"}
    summaries = set(marts.SUMMARIES)
    assert copies == [("attached", small), small, ("attached", summaries),
                      ("attached", summaries), summaries, summaries, ("attached", summaries),
                      summaries]
    overlap = mart_frame(two_runs, "overlap")
    assert sorted(set(overlap["run"])) == ["a", "b"] and overlap["relative_time"].sum() == 0
    first = overlap.filter((pl.col("run") == "a") & (pl.col("rank") == 0)).row(0, named=True)
    assert first["start_time"].year == 2023  # the DLRM step was captured on 2023-09-07
    assert first["start_ns"] // 1000 == int(first["start_time"].timestamp() * 1e6)


def test_the_views_computed_once_are_modules_the_marts_read():
    """A refresh computes SHARED once into tables: a name the library no longer defines
    would be skipped without a word. A helper there is computed by its own SELECT (no
    connection defines it), and a view reading only such helpers by its SELECT as written,
    reading them by name: collective_waits reads the _collective_matches computed once."""
    read = set(modules_read_by(*MARTS))
    assert set(marts.SHARED) <= read - set(MARTS)
    assert marts._shared_select("collective_waits", marts.SHARED, ()).endswith(
        "FROM _collective_matches")
    assert marts._shared_select("capture_spans", marts.SHARED, ()) == (
        "SELECT * FROM capture_spans")


def _files_read(warehouse, sql, **options):
    """The files each scan of `sql`'s plan reads, over every run of the warehouse."""
    plan = connect(warehouse, **options).execute(f"EXPLAIN ANALYZE {sql}").fetchall()[0][1]
    return [int(count) for count in re.findall(r"Total Files Read: (\d+)", plan)]


def test_questions_over_every_run_read_the_marts_while_they_are_current(two_runs_to_read):
    """The same rows as the views computed, from the marts' few files (two here: one per
    refresh until they are merged) instead of every file of the tables they read."""
    import tracewh as library

    tracewh = cli_on(two_runs_to_read)
    for name in FILLED_MARTS:
        assert sorted_frame(pl.from_arrow(connect(two_runs_to_read).sql(
            f"SELECT * FROM {name}").to_arrow_table())).equals(
            sorted_frame(view_frame(two_runs_to_read, name))), name
        assert _files_read(two_runs_to_read, f"SELECT * FROM {name}") == [2], name
    assert sum(_files_read(two_runs_to_read, "SELECT * FROM overlap", marts=False)) > 2
    mixed = ("SELECT k.run, count(*), min(o.overlap_ratio) FROM kernels AS k "
             "JOIN overlap AS o USING (run, phase, rank) GROUP BY ALL ORDER BY 1")
    computed = connect(two_runs_to_read, marts=False).execute(mixed).fetchall()
    assert library.open(two_runs_to_read).query(mixed)[0][1] == computed and len(computed) == 2
    assert tracewh("query", "SELECT run, count(*) AS ranks FROM overlap GROUP BY run "
                   "ORDER BY run", "--format", "csv").stdout == "run,ranks\na,8\nb,3\n"


def test_a_question_of_marts_alone_lists_no_table_s_files(two_runs_to_read, monkeypatch):
    """Listing the tables' files (8,000 each at 1,000 runs) and binding their views took 3.6 s
    of the 4.9 s of an all-runs question of `overlap`: its mart alone is read. A question of
    a mart and a table lists that table only; and of the marts, those it reads (each log
    loaded cost ~0.1 s at 1,000 runs)."""
    import tracewh as library

    listed, marts, live_paths = [], [], delta.live_paths

    def listing(path, version, *only):
        (marts if path.parent.name == MARTS_DIR else listed).append(path.name)
        return live_paths(path, version, *only)

    monkeypatch.setattr(delta, "live_paths", listing)
    rows = library.open(two_runs_to_read).query("SELECT run, avg(overlap_ratio) FROM overlap "
                                                "GROUP BY run ORDER BY run")[0][1]
    assert [run for run, _ in rows] == ["a", "b"] and listed == [] and marts == ["overlap"]
    library.open(two_runs_to_read).query("SELECT count(*) FROM kernels JOIN overlap USING (run)")
    assert listed == ["kernels"]
    library.open(two_runs_to_read).query("SELECT count(*) FROM kernels")
    assert marts == ["overlap", "overlap"]


def test_a_query_does_not_import_pandas(two_runs_to_read):
    """pa.table() of delta-rs's add actions imported pandas (0.4-0.6 s of every command) to
    ask whether they were a DataFrame."""
    code = ("import sys\nfrom tracewh.cli import cli\n"
            "try:\n    cli(sys.argv[1:], prog_name='tracewh')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'pandas' not in sys.modules, 'pandas was imported'\n")
    done = subprocess.run([sys.executable, "-c", code, "--warehouse", str(two_runs_to_read),
                           "query", "SELECT count(*) FROM kernels JOIN overlap USING (run)"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("stale", ["other rules", "rules edited", "refresh failed",
                                   "run to recompute"])
def test_stale_marts_are_not_read(tracewh, two_runs, tmp_path, stale):
    """Until a refresh derives them from the snapshot and the rules asked with, the views
    are computed."""
    import tracewh as library
    from tracewh.derived import mark_for_recompute

    rules = None
    if stale == "other rules":
        rules = tmp_path / "rules.toml"
        rules.write_text('[[class]]\nclass = "communication"\n')
    elif stale == "rules edited":
        (two_runs / "_tracewh" / "kernel_rules.toml").write_text(
            '[[class]]\nclass = "communication"\n')
    elif stale == "refresh failed":  # the commit stands, its refresh did not happen
        _ingest_killed_before_its_refresh(two_runs, DLRM[5], "b")
    else:
        mark_for_recompute(Catalog(two_runs), "b")
    assert library.open(two_runs, rules).current_marts() == {}
    assert sum(_files_read(two_runs, "SELECT * FROM overlap", rules_file=rules)) > 2
    tracewh("refresh")
    assert len(library.open(two_runs).current_marts()) == len(MARTS)


def _mart_files(warehouse, name):
    path = mart_path(warehouse, name)
    return delta.live_files(path, delta.latest_version(path))


def test_a_commit_recomputes_the_runs_it_touched_only(tracewh, two_runs):
    """Run a's file is left as it is; run b's is replaced by one of run b alone."""
    files = _mart_files(two_runs, "kernel_stats")
    assert sorted(f.runs for f in files) == [("a", "a"), ("b", "b")]
    tracewh("ingest", DLRM[3], "--run", "b", "--phase", "train")
    after = _mart_files(two_runs, "kernel_stats")
    assert {f.path for f in after if f.runs == ("a", "a")} == {
        f.path for f in files if f.runs == ("a", "a")}
    assert sorted(f.runs for f in after) == [("a", "a"), ("b", "b")]
    assert not {f.path for f in after} & {f.path for f in files if f.runs == ("b", "b")}
    assert mart_frame(two_runs, "overlap").filter(pl.col("run") == "b").height == 4  # ranks 0-3


def test_a_file_of_the_recomputed_run_alone_is_replaced_without_being_read(
        tracewh, two_runs, monkeypatch):
    """Run b's files (by their bounds, b alone) are replaced whole: no mart reads them back
    to drop run b's rows. The marts then hold what the views give."""
    read = []

    def read_spy(path, data_file, schema, without=None):
        read.append(data_file.runs)
        return reading(path, data_file, schema, without)

    reading = marts._read
    monkeypatch.setattr(marts, "_read", read_spy)
    tracewh("ingest", *DLRM[:3], "--run", "b", "--phase", "train", "--replace")
    assert read == []
    for name in MARTS:
        view = view_frame(two_runs, name)
        mart = mart_frame(two_runs, name).select(view.columns)
        assert sorted_frame(mart).equals(sorted_frame(view)), name
    assert mart_frame(two_runs, "overlap").filter(pl.col("run") == "b").height == 3


def test_a_second_run_leaves_the_first_run_s_mart_files_and_equals_a_full_recompute(
        tracewh, warehouse):
    """The refresh after run b computes b alone: every file of run a's in every mart stays
    as it was written (its path, rows and sha256; its bytes on disk), and the marts hold
    what computing both runs again gives."""
    tracewh("ingest", *DLRM[:2], "--run", "a", "--phase", "train")
    first = {name: _mart_files(warehouse, name) for name in MARTS}
    written = {f: (mart_path(warehouse, name) / f.path).stat().st_mtime_ns
               for name in MARTS for f in first[name]}
    tracewh("ingest", *DLRM[2:4], "--run", "b", "--phase", "train")
    for name in MARTS:
        assert set(first[name]) <= set(_mart_files(warehouse, name)), name
    assert all((mart_path(warehouse, name) / f.path).stat().st_mtime_ns == written[f]
               for name in MARTS for f in first[name])
    incremental = {name: sorted_frame(mart_frame(warehouse, name)) for name in MARTS}
    assert sorted(set(incremental["overlap"]["run"])) == ["a", "b"]
    catalog = Catalog(warehouse)
    for run in ("a", "b"):
        mark_for_recompute(catalog, run)
    assert refresh_derived(catalog).runs == ["a", "b"]
    for name in MARTS:
        assert sorted_frame(mart_frame(warehouse, name)).equals(incremental[name]), name


def test_a_new_run_s_files_are_those_the_commits_since_the_last_refresh_added(
        tracewh, two_runs, monkeypatch):
    """The refresh after a new run reads its files from the Delta commits since the last
    refresh, not from the tables' logs loaded whole: the same files the logs list. A run
    held before (a rank replaced) is listed from the logs."""
    listings = []

    def copy_spy(connection_, catalog_, snapshot, runs, tables, listed=None, copied=None):
        listings.append((snapshot, set(runs), listed))
        return connection.copy_runs(connection_, catalog_, snapshot, runs, tables, listed,
                                    copied)

    monkeypatch.setattr(marts, "copy_runs", copy_spy)
    tracewh("ingest", *DLRM[4:6], "--run", "c", "--phase", "train")
    ((snapshot, runs, listed),) = listings
    assert runs == {"c"} and listed is not None
    expected = snapshot.paths(two_runs, {"c"}, list(listed))
    assert {table: sorted(path for path, _ in found) for table, found in listed.items()} == {
        table: sorted(found) for table, found in expected.items()}
    assert sum(map(len, expected.values())) >= 2 * len(marts.SUMMARIES)  # two ranks' files
    tracewh("ingest", DLRM[0], "--run", "c", "--phase", "train", "--rank", "5", "--replace")
    assert listings[1][1] == {"c"} and listings[1][2] is None


def test_a_new_run_s_file_changed_before_its_refresh_is_named(tracewh, two_runs):
    """The files of a new run, listed from the commits since the last refresh, are checked
    against the sizes those commits recorded, as the logs' listing is."""
    _ingest_killed_before_its_refresh(two_runs, DLRM[5], "late")
    (changed,) = (two_runs / "kernels").glob("run=late/*/*/*.parquet")
    with open(changed, "ab") as handle:
        handle.write(b"x")
    result = tracewh("refresh", expect=None)
    assert result.exit_code != 0 and str(changed) in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_mart_made_again_alone_leaves_the_others_rows_single(tracewh, two_runs):
    """One mart removed from outside is derived again for every run, while the others
    compute the new run only: those take the new run's rows alone, not every run's again."""
    shutil.rmtree(mart_path(two_runs, "overlap"))
    tracewh("ingest", DLRM[6], "--run", "c", "--phase", "train")
    for name in FILLED_MARTS:
        view = view_frame(two_runs, name)
        assert sorted(set(view["run"])) == ["a", "b", "c"], name
        assert sorted_frame(mart_frame(two_runs, name).select(view.columns)).equals(
            sorted_frame(view)), name


@pytest.mark.parametrize("small_files, counts, largest_rows", [(2, [1, 1, 2, 1, 2, 2], 4),
                                                               (3, [1, 2, 1, 2, 3, 2], 3)])
def test_the_marts_files_do_not_grow_with_runs(tracewh, warehouse, monkeypatch, small_files,
                                               counts, largest_rows):
    """Each refresh writes one file, merging the small ones of its tier when they would be
    MAX_SMALL_FILES (overlap: a row per run here, so with 2 the files count in binary); a
    larger file is left alone by merges of smaller ones; a run replaced or deleted is taken
    out of the file that holds it with others. The marts equal their views at every step."""
    monkeypatch.setattr(marts, "MAX_SMALL_FILES", small_files)
    seen = []
    for number, trace in enumerate(DLRM[:6]):
        tracewh("ingest", trace, "--run", f"r{number}", "--phase", "train")
        seen.append(_mart_files(warehouse, "overlap"))
    assert [len(files) for files in seen] == counts
    largest = max(seen[3], key=lambda f: f.rows)
    assert largest.rows == largest_rows  # r0-r3 merged (with 3: r0-r2)
    assert largest in seen[5]  # not rewritten since
    files = _mart_files(warehouse, "kernel_stats")
    assert sum(f.rows for f in files) == view_frame(warehouse, "kernel_stats").height
    shared = next(f for f in files if f.runs[0] != f.runs[1])  # a file of several runs
    tracewh("ingest", DLRM[6], "--run", shared.runs[0], "--phase", "train")  # one more rank
    tracewh("delete", shared.runs[1], "--yes")
    for name in FILLED_MARTS:
        mart, view = mart_frame(warehouse, name), view_frame(warehouse, name)
        assert sorted_frame(mart.select(view.columns)).equals(sorted_frame(view)), name
        for data_file in _mart_files(warehouse, name):  # rewritten through dictionaries
            stored = pq.read_schema(mart_path(warehouse, name) / data_file.path)
            assert not any(pa.types.is_dictionary(field.type) for field in stored), name
    overlap = mart_frame(warehouse, "overlap")
    assert shared.runs[1] not in set(overlap["run"])
    assert overlap.filter(pl.col("run") == shared.runs[0]).height == 2  # its two ranks


def test_a_new_run_sorting_inside_a_file_s_bounds_leaves_it_alone(tracewh, warehouse,
                                                                 monkeypatch):
    """Run b sorts between a and c, which share a file: that file does not hold b, and is
    not rewritten for it."""
    monkeypatch.setattr(marts, "MAX_SMALL_FILES", 2)  # a new run's file merges with one
    for run in ("a", "c"):
        tracewh("ingest", DLRM[0], "--run", run, "--phase", "train")
    (shared,) = _mart_files(warehouse, "overlap")
    assert shared.runs == ("a", "c")
    monkeypatch.setattr(marts, "MAX_SMALL_FILES", 8)
    tracewh("ingest", DLRM[1], "--run", "b", "--phase", "train")
    after = _mart_files(warehouse, "overlap")
    assert sorted((f.path == shared.path, f.runs) for f in after) == [
        (False, ("b", "b")), (True, ("a", "c"))]
    assert sorted(mart_frame(warehouse, "overlap")["run"]) == ["a", "b", "c"]


@settings(max_examples=300, deadline=None)
@given(small_files=st.integers(2, 9),
       new_rows=st.lists(st.integers(1, 500), min_size=50, max_size=300))
def test_merging_by_tiers_bounds_the_files_and_the_rows_rewritten(small_files, new_rows):
    """Refreshes that each write a file of some rows: no tier ever holds MAX_SMALL_FILES
    files, so the count is logarithmic in the rows; and a row is rewritten only to climb a
    tier, so no more often than the tiers below the whole mart's."""
    files, rewritten = [], 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(marts, "MAX_SMALL_FILES", small_files)
        for number, rows in enumerate(new_rows):
            merging = marts.files_to_merge(files, rows)
            rewritten += sum(f.rows for f in merging)
            files = [f for f in files if f not in merging] + [delta.DataFile(
                str(number), None, None, None, rows + sum(f.rows for f in merging), 0)]
            per_tier = collections.Counter(marts.tier(f.rows) for f in files)
            assert max(per_tier.values()) < small_files, per_tier
        total = sum(new_rows)
        assert sum(f.rows for f in files) == total
        assert rewritten <= total * marts.tier(total)
        assert len(files) <= (small_files - 1) * (marts.tier(total) + 1)


def test_editing_the_rules_and_refreshing_rebuilds_the_marts(tracewh, two_runs):
    (two_runs / "_tracewh" / "kernel_rules.toml").write_text(
        '[[class]]\nclass = "communication"\n')  # every GPU activity
    assert "recomputed the marts of 2 runs" in tracewh("refresh").stdout
    histogram = mart_frame(two_runs, "kernel_class_histogram")
    assert set(histogram["class"]) == {"communication"}
    assert sorted_frame(histogram.drop(EXTRA_COLUMNS)).equals(
        sorted_frame(view_frame(two_runs, "kernel_class_histogram")))
    assert tracewh("refresh").stdout.startswith("up to date")


def test_a_trace_in_relative_time_is_flagged(tracewh, warehouse, tmp_path):
    trace = tmp_path / "relative.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
         "args": {"stream": 7, "correlation": 1, "device": 0}}]}))
    tracewh("ingest", trace, "--run", "rel", "--phase", "train")
    (row,) = mart_frame(warehouse, "overlap").rows(named=True)
    assert row["start_ns"] == 10000 and row["relative_time"] is True
    assert row["start_time"] is None


def test_bi_tools_open_the_duckdb_file_read_only_through_sqlalchemy(two_runs_to_read):
    """duckdb-engine, as Superset and Metabase connect: every library view is there."""
    engine = sqlalchemy.create_engine(  # the URI the README gives for Superset
        f"duckdb:///{two_runs_to_read.resolve() / FILE_NAME}?access_mode=read_only")
    with engine.connect() as bi:
        rows = bi.execute(sqlalchemy.text(
            "SELECT run, rank, overlap_ns FROM overlap ORDER BY run, rank")).fetchall()
        names = set(sqlalchemy.inspect(bi).get_table_names()) | set(
            sqlalchemy.inspect(bi).get_view_names())
    expected = connect(two_runs_to_read).execute(
        "SELECT run, rank, overlap_ns FROM overlap ORDER BY run, rank").fetchall()
    assert [tuple(r) for r in rows] == expected and len(expected) == 11
    assert {"overlap", "kernel_stats", "run_metrics", "kernels", "traces",
            "kernel_class_rules"} <= names
    with engine.connect() as bi, pytest.raises(sqlalchemy.exc.DBAPIError, match="read-only"):
        bi.execute(sqlalchemy.text("CREATE TABLE x (a INTEGER)"))
    engine.dispose()


def _answers_as_ours(two_runs, answers):
    """Every mart's view and a few others give our counts, and overlap our rows, when asked
    through `answers([sql, ...])` -> [[[text of each value]] for each sql] (another DuckDB
    reading the file, one process asked them all: starting one a query took most of the
    time)."""
    ours = connect(two_runs)
    views = sorted(FILLED_MARTS) + ["runs", "kernel_classes", "capture_spans"]
    query = "SELECT run, rank, overlap_ns FROM overlap ORDER BY run, rank"
    *counts, rows = answers([f"SELECT count(*) FROM {view}" for view in views] + [query])
    for view, [[count]] in zip(views, counts, strict=True):
        assert int(count) == ours.execute(f"SELECT count(*) FROM {view}").fetchone()[0] > 0, view
    assert rows == [[str(v) for v in row] for row in ours.execute(query).fetchall()]


def test_the_duckdb_shell_of_an_older_duckdb_opens_the_file(two_runs_to_read):
    """The DuckDB CLI (from PyPI's duckdb-cli, a 1.x DuckDB older than the library's, as BI
    tools bundle their own) reads the file read-only and every view answers as ours."""
    shell = Path(sys.executable).with_name("duckdb")
    if not shell.exists():
        pytest.skip("the duckdb shell is not installed (make test installs duckdb-cli)")

    def answers(queries):
        """The shell's CSV lines of each query, a line between them that no CSV row is."""
        script = "".join(f"{sql};\n.print --\n" for sql in queries)
        out = subprocess.run([str(shell), "-readonly", str(two_runs_to_read / FILE_NAME), "-csv",
                              "-noheader"], input=script, capture_output=True, text=True,
                             check=True).stdout
        return [[line.split(",") for line in block.split()] for block in out.split("--\n")[:-1]]

    _answers_as_ours(two_runs_to_read, answers)


def test_duckdb_1_0_the_oldest_the_readme_promises_reads_the_file(two_runs_to_read):
    """DuckDB 1.0.0 (installed by make beside the venv's own DuckDB, in .venv/duckdb-1.0)
    queries every view: it refused `filename = 'column'` in read_parquet, which 1.1 added."""
    old = Path(sys.prefix) / "duckdb-1.0"
    if not old.exists():
        pytest.skip("DuckDB 1.0.0 is not installed (make test installs it in .venv/duckdb-1.0)")
    reader = ("import duckdb, json, sys; assert duckdb.__version__ == '1.0.0';"
              "c = duckdb.connect(sys.argv[1], read_only=True);"
              # a query over 2 s (a busy machine) would print a progress bar on stdout
              "c.execute('SET enable_progress_bar = false');"
              "print(json.dumps([[[str(v) for v in r] for r in c.sql(q).fetchall()]"
              " for q in sys.argv[2:]]))")
    _answers_as_ours(two_runs_to_read, lambda queries: json.loads(subprocess.run(
        [sys.executable, "-c", reader, str(two_runs_to_read / FILE_NAME), *queries], check=True,
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(old)}).stdout))


def test_the_duckdb_file_follows_every_commit_and_its_snapshot(tracewh, two_runs):
    """Replaced whole at each command; its tables read the snapshot's files only (a
    --replace leaves the old files on disk until vacuum: not counted twice)."""
    def count():
        """The file's kernels, once its file list is checked to be the snapshot's."""
        root = two_runs.resolve()
        listed = {(table, path) for table, paths in Catalog(root).snapshot().paths(root).items()
                  for path in paths}
        with duckdb.connect(str(two_runs / FILE_NAME), read_only=True) as bi:
            assert set(bi.execute("SELECT table_name, path FROM tracewh_files")
                       .fetchall()) == listed
            return bi.execute("SELECT count(*) FROM kernels").fetchone()[0]

    kernels = count()
    assert kernels == connect(two_runs).execute("SELECT count(*) FROM kernels").fetchone()[0]
    tracewh("ingest", *DLRM[:3], "--run", "b", "--phase", "train", "--replace")
    assert count() == kernels  # the replaced files are still on disk, and not read
    tracewh("optimize")
    tracewh("vacuum", "--retain", "0")
    assert count() == kernels
    with duckdb.connect(str(two_runs / FILE_NAME), read_only=True) as bi:
        (seq,) = bi.execute("SELECT seq FROM tracewh_snapshot").fetchone()
    assert seq == Catalog(two_runs).snapshot().seq
    assert not list((two_runs / "_tracewh").glob(f".{FILE_NAME}*"))  # no temporary left


def test_the_first_run_fills_the_duckdb_file_of_an_empty_warehouse_without_rewriting_it(
        tracewh, warehouse, monkeypatch):
    """The tables a first run makes non-empty get their scans; the library, defined already,
    is not defined again (the file of an 8-rank first run: its refresh's largest cost). The
    file answers as a connection does."""
    from tracewh.derived import duckdb_file

    refresh_derived(Catalog(warehouse))  # the empty warehouse's file
    monkeypatch.setattr(duckdb_file, "_with_library", None)  # calling it would fail
    tracewh("ingest", *DLRM[:2], "--run", "a", "--phase", "train")
    with duckdb.connect(str(warehouse / FILE_NAME), read_only=True) as bi:
        for table in ("kernels", "cpu_ops", "traces"):
            expected = connect(warehouse).execute(f"SELECT count(*) FROM {table}").fetchone()
            assert bi.execute(f"SELECT count(*) FROM {table}").fetchone() == expected != (0,)
        assert bi.execute("SELECT count(*) FROM overlap").fetchone() == (2,)


def test_the_duckdb_cli_script_defines_the_whole_warehouse(two_runs_to_read):
    """`views --dialect duckdb --script` runs as one script in a bare DuckDB."""
    tracewh = cli_on(two_runs_to_read)
    script = tracewh("views", "--dialect", "duckdb", "--script").stdout
    query = "SELECT * FROM run_metrics ORDER BY ALL"
    with duckdb.connect() as bare:
        bare.execute(script)
        assert bare.execute(query).fetchall() == \
            connect(two_runs_to_read).execute(query).fetchall()
    assert tracewh("views", "--script", expect=2).output.startswith("error: --script")
    assert "Trino reads" in tracewh("views", "--dialect", "trino", "--script", expect=2).output


def test_other_engines_read_the_marts(two_runs_to_read):
    """polars (skipping files by the run bounds of their statistics) and DuckDB's Parquet
    reader."""
    by_polars = pl.read_delta(str(mart_path(two_runs_to_read, "run_metrics")))
    files = [str(mart_path(two_runs_to_read, "run_metrics") / f.path)
             for f in _mart_files(two_runs_to_read, "run_metrics")]
    with duckdb.connect() as reader:
        by_duckdb = reader.execute(f"SELECT count(*), count(DISTINCT run) FROM read_parquet("
                                   f"{files})").fetchone()
    assert by_duckdb == (len(by_polars), 2)
    of_b = pl.scan_delta(str(mart_path(two_runs_to_read, "run_metrics"))).filter(
        pl.col("run") == "b")
    assert of_b.collect().height == by_polars.filter(pl.col("run") == "b").height > 0


def test_a_refresh_that_fails_names_the_way_out(tracewh, two_runs, monkeypatch):
    """The traces stay committed: the summary says what was, one line then says what was
    not brought up to date, and `refresh` recovers."""
    from tracewh import derived

    def disk_full(catalog, snapshot, rules, target=None, marts=dict):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(derived, "write_duckdb_file", disk_full)
    result = tracewh("ingest", DLRM[4], "--run", "c", "--phase", "train", expect=2)
    lines = result.output.splitlines()
    assert lines[0].startswith("run c: 1 file ingested, ")
    assert lines[-1].startswith(f"error: {two_runs}: the marts and {FILE_NAME} were not "
                                "brought up to date (") and "tracewh refresh" in lines[-1]
    assert "Traceback" not in result.output
    monkeypatch.undo()
    assert not (two_runs / "_tracewh" / DONE_FILE).read_text().count('"c"')
    assert "recomputed the marts of 0 runs" in tracewh("refresh").stdout  # marts were done
    assert "c" in set(mart_frame(two_runs, "overlap")["run"])


def test_ctrl_c_during_the_refresh_says_the_commits_stand(tracewh, two_runs, monkeypatch):
    def interrupted(catalog, snapshot):
        raise KeyboardInterrupt

    monkeypatch.setattr(marts, "_runs_held", interrupted)
    result = tracewh("ingest", DLRM[6], "--run", "d", "--phase", "train", expect=130)
    assert "what was committed stays" in result.output and "Traceback" not in result.output
    assert "d" in {info.run for info in Catalog(two_runs).runs()}


def test_ctrl_c_while_the_marts_views_are_asked_commits_no_mart(tracewh, two_runs, monkeypatch):
    """An interrupt in one of the marts' questions ends the command as interrupted, and no
    mart takes the new run."""
    asked = marts._rows

    def rows(cursor, name, live):
        if name == "overlap":
            raise KeyboardInterrupt
        return asked(cursor, name, live)

    monkeypatch.setattr(marts, "_rows", rows)
    versions = {name: delta.latest_version(mart_path(two_runs, name)) for name in MARTS}
    result = tracewh("ingest", DLRM[6], "--run", "d", "--phase", "train", expect=130)
    assert "what was committed stays" in result.output and "Traceback" not in result.output
    assert versions == {name: delta.latest_version(mart_path(two_runs, name)) for name in MARTS}


def test_a_killed_refresh_is_caught_up_by_the_next_command(tracewh, two_runs):
    """Ingest killed after its commits, before the marts: `refresh` derives the missing run."""
    _ingest_killed_before_its_refresh(two_runs, DLRM[5], "late")
    assert "late" not in set(mart_frame(two_runs, "overlap")["run"])
    leftover = two_runs / "_tracewh" / f".{FILE_NAME}.999999.tmp.wal"  # of a killed refresh
    leftover.write_text("x")
    assert "recomputed the marts of 1 run " in tracewh("refresh").stdout
    assert "late" in set(mart_frame(two_runs, "overlap")["run"])
    assert not leftover.exists()


def _ingest_killed_before_its_refresh(warehouse, trace, run):
    code = ("import sys\nfrom tracewh import api\n"
            "api.refresh_derived = lambda catalog: sys.exit(9)\n"
            "from tracewh.cli import cli\n"
            f"cli(['--warehouse', {str(warehouse)!r}, 'ingest', {str(trace)!r}, "
            f"'--run', {run!r}, '--phase', 'train'])\n")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
