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
"""

import datetime
import json
import os
import shutil

import duckdb
import pyarrow as pa

from tracewh.ingest.schema import TABLES

from .query import (define_library, empty_select, library_fingerprint, scan_select,
                    sql_string)
from .rules import effective_rules

FILE_NAME = "tracewh.duckdb"
FILES_TABLE = "tracewh_files"
SNAPSHOT_TABLE = "tracewh_snapshot"
STORAGE_VERSION = "v1.0.0"


def write_duckdb_file(catalog, snapshot):
    """Write `<warehouse>/tracewh.duckdb` over `snapshot`, replacing the previous one whole
    (under the writers' lock).
    When only the file lists changed (the usual commit), the previous file is copied and its
    lists replaced: defining the library again costs ~0.1 s."""
    root = catalog.root.resolve()
    paths = snapshot.paths(root)
    rules = effective_rules(root)
    shape = json.dumps({"library": library_fingerprint(rules), "root": str(root),
                        "duckdb": duckdb.__version__,
                        "tables": sorted(name for name, found in paths.items() if found)})
    for stale in catalog.state.glob(f".{FILE_NAME}.*"):  # of killed writers: we hold the lock
        stale.unlink(missing_ok=True)
    temporary = catalog.state / f".{FILE_NAME}.{os.getpid()}.tmp"
    target = root / FILE_NAME
    if target.exists():
        shutil.copyfile(target, temporary)
    connection = _connect(temporary)
    try:
        if not _has_shape(connection, shape):
            connection.close()
            temporary.unlink(missing_ok=True)
            connection = _connect(temporary)
            _define(connection, root, snapshot, rules, paths)
        files = pa.table({"table_name": [name for name, found in paths.items() for _ in found],
                          "path": [path for found in paths.values() for path in found]})
        connection.execute(f"DELETE FROM {FILES_TABLE}")
        connection.execute(f"INSERT INTO {FILES_TABLE} SELECT * FROM files")
        connection.execute(f"DELETE FROM {SNAPSHOT_TABLE}")
        connection.execute(f"INSERT INTO {SNAPSHOT_TABLE} VALUES (?, ?, ?, ?)", [
            snapshot.seq, json.dumps(snapshot.versions, sort_keys=True),
            datetime.datetime.now(datetime.timezone.utc), shape])
    finally:
        connection.close()
    os.replace(temporary, target)


def _connect(path):
    """The file in the oldest storage format DuckDB 1.x reads: BI tools bundle their own
    DuckDB (DBeaver's JDBC driver, Metabase's and Grafana's plugins), often older than ours,
    and a 1.x DuckDB refuses a file of a newer storage version."""
    return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})


def _has_shape(connection, shape):
    """Whether a copied file was written for the same library, rules, root, DuckDB version
    and set of non-empty tables (so only its file lists need replacing)."""
    try:
        return connection.execute(f"SELECT shape FROM {SNAPSHOT_TABLE}").fetchall() == [(shape,)]
    except duckdb.Error:  # a new file, or one from before this column
        return False


def _define(connection, root, snapshot, rules, paths):
    """Create the file's tables, views and macros, its file lists empty."""
    connection.execute(f"CREATE TABLE {FILES_TABLE} (table_name VARCHAR, path VARCHAR)")
    connection.execute(f"CREATE TABLE {SNAPSHOT_TABLE} (seq BIGINT, versions VARCHAR, "
                       "written_at TIMESTAMPTZ, shape VARCHAR)")

    def table_view(table):
        macro = f"tracewh_scan_{table.name}"
        connection.execute(f"CREATE MACRO {macro}() AS TABLE {empty_select(table)}")
        connection.execute(f"CREATE VIEW {table.name} AS SELECT * FROM {macro}()")
        if paths.get(table.name):
            pattern = sql_string(f"{root}/{table.name}/*/*/*/*.parquet")
            connection.execute(f"CREATE OR REPLACE MACRO {macro}(files := {pattern}) "
                               f"AS TABLE {_snapshot_scan(table)}")

    define_library(connection, snapshot, rules, table_view)


def _snapshot_scan(table):
    """The table's rows from the files matching `files` that the snapshot lists."""
    return (f"{scan_select(table, 'files', options=', filename = tracewh_file')} "
            f"WHERE tracewh_file IN (SELECT path FROM {FILES_TABLE} "
            f"WHERE table_name = {sql_string(table.name)})")

