"""The warehouse's DuckDB database file, `<warehouse>/tracewh.duckdb`: what BI tools open.

The DuckDB CLI, DBeaver, and SQLAlchemy with duckdb-engine (Superset, Metabase) open it
read-only and find every table, the rules table and every library view, over the snapshot of
the last commit. Every writing command rewrites it, and it is replaced atomically: a reader
that has the old file open keeps reading the old one.

Each table is a view over the files its Delta table holds at the snapshot. Their paths are a
table in the file (`tracewh_files`); a table's view reads the Parquet files of its directory
and keeps the listed ones (a file that a replacement or `optimize` removed stays on disk until
`vacuum`, and a commit under way moves its files in before committing them). Binding a view
over thousands of files costs ~0.5 s, which a query pays, but writing the file should not:
the views read table macros (`tracewh_scan_<table>`), given their real body once the views
are defined, whose glob is a parameter's default value: DuckDB binds a macro's body when it
is created, unless a parameter leaves it unknown.

A file written whole (a new warehouse's, or one of another library) starts from a copy of the
library's template in the user's cache (see library_template) rather than binding the
library's ~70 views again.
"""

import datetime
import json
import os
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa

from ..storage import delta
from ..storage.layout import DUCKDB_FILE as FILE_NAME
from ..storage.layout import FILES_GLOB
from ..query.library import live_helpers
from ..query.prepared import (FILES_TABLE, MARTS_TABLE, RUNS_TABLE, SCAN_MACRO, SNAPSHOT_TABLE,
                              file_shape)
from ..query.define import define_library
from ..storage.schema import TABLES
from ..query.table_sql import empty_select, scan_select, sql_string
from .library_template import cached_template, is_template_of, make_template, template_shape

STORAGE_VERSION = "v1.0.0"


def write_duckdb_file(catalog, snapshot, rules, target=None, marts=dict):
    """Write `<warehouse>/tracewh.duckdb` over `snapshot`, with the kernel `rules` (under the
    writers' lock), replacing the previous one whole. Usually only the file lists change: the
    previous file is copied and its lists brought forward by the Delta commits since the
    snapshot it shows, instead of listing every file of 13 tables (~0.15 s and ~200 MB at
    1,000 runs).

    With `target`, the file is written there instead (a local path: `tracewh refresh
    --duckdb-file`). An object store's warehouse keeps none in its bucket: the file a user
    asks for lists the local copies of the snapshot's files (downloaded now into the cache,
    see storage.objects), which any DuckDB reads offline, with no credentials stored.

    `marts()`, called last (the refresh derives them beside): {mart: [(path, size)]} of the
    marts current for `snapshot` and `rules`, which the queries answered from the file read
    instead of computing their views (see `prepared`). The snapshot's runs are recorded too
    (from the `traces` log's statistics, no data read): what a command answered from the file
    checks its run names against and orders runs by, without reading the log itself."""
    if not catalog.store.local:
        _write_over_copies(catalog, snapshot, rules, target)
        return
    root = catalog.root.resolve()
    shape = file_shape(root, rules, live_helpers(snapshot, rules))
    runs = catalog.runs(snapshot)
    for stale in catalog.state.glob(f".{FILE_NAME}.*") if target is None else ():
        stale.unlink(missing_ok=True)  # of killed writers: we hold the lock
    temporary = (catalog.state if target is None else Path(target).parent) / \
        f".{FILE_NAME}.{os.getpid()}.tmp"
    target = root / FILE_NAME if target is None else Path(target)
    if target.exists():
        shutil.copyfile(target, temporary)
    try:
        connection = _connect(temporary)
    except duckdb.Error:  # not a DuckDB file (damaged from outside): written whole instead
        temporary.unlink()
        connection = _connect(temporary)
    try:
        if not _follow_commits(connection, root, snapshot, shape):
            connection.close()
            temporary.unlink(missing_ok=True)
            connection = _with_library(temporary, snapshot, rules)
            _list_files(connection, root, snapshot.files(root))
        _record_snapshot(connection, snapshot, shape, runs, marts())
    finally:
        connection.close()
    os.replace(temporary, target)


def _write_over_copies(catalog, snapshot, rules, target):
    """write_duckdb_file of an object store's warehouse, at the local path `target`, written
    whole over the local copies of the snapshot's files (their root: the warehouse's in the
    cache)."""
    listed = snapshot.files(catalog.root)
    for name, found in listed.items():  # downloaded now, each checked against its size
        catalog.store.local_copies([f"{catalog.root}/{name}/{f.path}" for f in found],
                                   [f.size for f in found])
    root = catalog.store.copy_of(catalog.root)
    target = Path(target)
    temporary = target.parent / f".{FILE_NAME}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)
    connection = _with_library(temporary, snapshot, rules)
    try:
        _list_files(connection, root, listed)
        _record_snapshot(connection, snapshot,
                         file_shape(root, rules, live_helpers(snapshot, rules)),
                         catalog.runs(snapshot), {})
    finally:
        connection.close()
    os.replace(temporary, target)


def _record_snapshot(connection, snapshot, shape, runs, marts):
    """Record the snapshot the file is of, its `runs` ([RunInfo]) and the files of its
    current `marts` ({mart: [(path, size)]}: those of the file it was copied from are of an
    older snapshot). A mart without files (no run has its rows: no graph replay anywhere) is
    recorded by a row of NULL path, so its view answers no row at once rather than its SQL
    finding none."""
    listed = pa.table({"run": [info.run for info in runs],
                       "first_seq": [info.first_seq for info in runs],
                       "phases": [sorted(info.phases) for info in runs],
                       "tags": [json.dumps(info.tags) for info in runs]},
                      schema=pa.schema([("run", pa.string()), ("first_seq", pa.int64()),
                                        ("phases", pa.list_(pa.string())),
                                        ("tags", pa.string())]))
    connection.execute(f"CREATE OR REPLACE TABLE {RUNS_TABLE} AS SELECT * FROM listed")
    rows = [(mart, path, size) for mart, files in marts.items()
            for path, size in files or [(None, None)]]
    recorded = pa.table({name: list(column) for name, column in
                         zip(("mart", "path", "size"), zip(*rows) if rows else ((), (), ()))},
                        schema=pa.schema([("mart", pa.string()), ("path", pa.string()),
                                          ("size", pa.int64())]))
    connection.execute(f"CREATE OR REPLACE TABLE {MARTS_TABLE} AS SELECT * FROM recorded")
    connection.execute(f"DELETE FROM {SNAPSHOT_TABLE}")
    connection.execute(f"INSERT INTO {SNAPSHOT_TABLE} VALUES (?, ?, ?, ?)", [
        snapshot.seq, json.dumps(snapshot.versions, sort_keys=True),
        datetime.datetime.now(datetime.timezone.utc), shape])


def _follow_commits(connection, root, snapshot, shape):
    """Bring a copied file's lists to `snapshot` by the Delta commits since the snapshot it
    shows, and give the tables that became non-empty their scans (a first run's: the file
    of an empty warehouse is not written whole again, defining the library, most of its
    cost). False when it must be written whole: no file, another library, rules, root or
    DuckDB, a commit file gone, or a table that became empty (its scan's glob may then
    match no file)."""
    try:
        recorded = connection.execute(f"SELECT shape, versions FROM {SNAPSHOT_TABLE}").fetchall()
    except duckdb.Error:  # a new file
        return False
    if len(recorded) != 1 or recorded[0][0] != shape:
        return False
    before = json.loads(recorded[0][1])
    added = {"table_name": [], "path": [], "run": [], "size": []}
    removed = {"table_name": [], "path": []}
    for name in TABLES:
        if name not in before or name not in snapshot.versions:
            return False
        changes = delta.changes(root / name, before[name], snapshot.versions[name])
        if changes is None:
            return False
        for path, run, size in changes[0]:
            _add_row(added, root, name, path, run, size)
        removed["table_name"] += [name] * len(changes[1])
        removed["path"] += [f"{root}/{name}/{path}" for path in changes[1]]
    non_empty = f"SELECT DISTINCT table_name FROM {FILES_TABLE} ORDER BY 1"
    had = connection.execute(non_empty).fetchall()
    removed, added = pa.table(removed), pa.table(added)
    connection.execute(f"DELETE FROM {FILES_TABLE} USING removed WHERE "
                       f"{FILES_TABLE}.table_name = removed.table_name AND "
                       f"{FILES_TABLE}.path = removed.path")
    connection.execute(f"INSERT INTO {FILES_TABLE} SELECT * FROM added")
    now = connection.execute(non_empty).fetchall()
    if not set(had) <= set(now):
        return False
    for (name,) in sorted(set(now) - set(had)):
        _define_scan(connection, root, TABLES[name])
    return True


def _with_library(path, snapshot, rules):
    """A connection to a new file at `path` with the tables (listing no file) and the library
    defined: a copy of the library's template (see library_template), made first where the
    cache has none of this shape (or a damaged one); defined here where the cache cannot be
    written."""
    shape = template_shape(rules, live_helpers(snapshot, rules))
    connection = _copy_of_template(cached_template(shape), path, shape)
    if connection is None:
        made = make_template(shape, _connect,
                             lambda connection: _define(connection, snapshot, rules))
        connection = _copy_of_template(made, path, shape)
    if connection is None:
        connection = _connect(path)
        _define(connection, snapshot, rules)
    return connection


def _copy_of_template(template, path, shape):
    """A connection to a copy at `path` of the file `template` when it is a template of
    `shape`; None otherwise (no template, or one changed from outside)."""
    if template is None:
        return None
    try:
        shutil.copyfile(template, path)
        connection = _connect(path)
    except (OSError, duckdb.Error):
        path.unlink(missing_ok=True)
        return None
    if is_template_of(connection, shape):
        return connection
    connection.close()
    path.unlink()
    return None


def _define(connection, snapshot, rules):
    """Define the file's tables (each a view of a scan macro listing no file), the library's
    views and macros, and the tables it keeps of its own."""
    connection.execute(f"CREATE TABLE {FILES_TABLE} (table_name VARCHAR, path VARCHAR, "
                       "run VARCHAR, size BIGINT)")
    connection.execute(f"CREATE TABLE {SNAPSHOT_TABLE} (seq BIGINT, versions VARCHAR, "
                       "written_at TIMESTAMPTZ, shape VARCHAR)")

    def table_view(table):
        macro = SCAN_MACRO.format(table.name)
        connection.execute(f"CREATE MACRO {macro}() AS TABLE {empty_select(table)}")
        connection.execute(f"CREATE VIEW {table.name} AS SELECT * FROM {macro}()")

    define_library(connection, snapshot, rules, table_view)


def _list_files(connection, root, listed):
    """List the snapshot's files (`listed`, {table: [DataFile]}, under `root`) in the file
    of no file yet, and give each table with files its scan."""
    rows = {"table_name": [], "path": [], "run": [], "size": []}
    for name, found in listed.items():
        for data_file in found:
            _add_row(rows, root, name, data_file.path, data_file.run, data_file.size)
    files = pa.table(rows)
    connection.execute(f"INSERT INTO {FILES_TABLE} SELECT * FROM files")
    for name, found in listed.items():
        if found:
            _define_scan(connection, root, TABLES[name])


def _define_scan(connection, root, table):
    """Give the table's scan macro its body over the files of its directory that
    FILES_TABLE lists (defined only for a table with files: a glob that matches no file
    fails)."""
    pattern = sql_string(f"{root}/{table.name}/{FILES_GLOB}")
    connection.execute(f"CREATE OR REPLACE MACRO {SCAN_MACRO.format(table.name)}"
                       f"(files := {pattern}) AS TABLE {_snapshot_scan(table)}")


def _add_row(rows, root, table, path, run, size):
    """Add a file of `table` (its path relative to the table) to the columns of FILES_TABLE:
    its absolute path, its run and its size as its commit recorded it (what a query answered
    from the file checks, see `prepared`)."""
    rows["table_name"].append(table)
    rows["path"].append(f"{root}/{table}/{path}")
    rows["run"].append(run)
    rows["size"].append(size)


def _connect(path):
    """The file in the oldest storage format DuckDB 1.x reads: BI tools bundle their own
    DuckDB (DBeaver's JDBC driver, Metabase's and Grafana's plugins), often older than ours,
    and a 1.x DuckDB refuses a file of a newer storage version."""
    return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})


def _snapshot_scan(table):
    """The table's rows from the files matching `files` that the snapshot lists. The file's
    path is read_parquet's `filename = true` column: DuckDB 1.0 takes only a boolean there
    (naming the column, `filename = 'x'`, came in 1.1), and no table has a column of that
    name."""
    return (f"{scan_select(table, 'files', options=', filename = true')} "
            f"WHERE filename IN (SELECT path FROM {FILES_TABLE} "
            f"WHERE table_name = {sql_string(table.name)})")

