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

import duckdb
import pyarrow as pa

from tracewh.ingest.schema import TABLES

from .query import define_library, empty_select, scan_select
from .rules import effective_rules

FILE_NAME = "tracewh.duckdb"
FILES_TABLE = "tracewh_files"
SNAPSHOT_TABLE = "tracewh_snapshot"


def write_duckdb_file(catalog, snapshot):
    """Write `<warehouse>/tracewh.duckdb` over `snapshot`, replacing the previous one whole."""
    root = catalog.root.resolve()
    paths = snapshot.paths(root)
    temporary = catalog.state / f".{FILE_NAME}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)
    connection = duckdb.connect(str(temporary))
    try:
        files = pa.table({"table_name": [name for name, found in paths.items() for _ in found],
                          "path": [path for found in paths.values() for path in found]})
        connection.execute(f"CREATE TABLE {FILES_TABLE} AS SELECT * FROM files")

        def table_view(table):
            macro = f"tracewh_scan_{table.name}"
            connection.execute(f"CREATE MACRO {macro}() AS TABLE {empty_select(table)}")
            connection.execute(f"CREATE VIEW {table.name} AS SELECT * FROM {macro}()")
            if paths.get(table.name):
                pattern = _literal(f"{root}/{table.name}/*/*/*/*.parquet")
                connection.execute(f"CREATE OR REPLACE MACRO {macro}(files := {pattern}) "
                                   f"AS TABLE {_snapshot_scan(table)}")

        define_library(connection, snapshot, effective_rules(root), table_view)
        connection.execute(f"CREATE TABLE {SNAPSHOT_TABLE} (seq BIGINT, versions VARCHAR, "
                           "written_at TIMESTAMPTZ)")
        connection.execute(f"INSERT INTO {SNAPSHOT_TABLE} VALUES (?, ?, ?)", [
            snapshot.seq, json.dumps(snapshot.versions, sort_keys=True),
            datetime.datetime.now(datetime.timezone.utc)])
    finally:
        connection.close()
    os.replace(temporary, root / FILE_NAME)


def _snapshot_scan(table):
    """The table's rows from the files matching `files` that the snapshot lists."""
    return (f"{scan_select(table, 'files', options=', filename = tracewh_file')} "
            f"WHERE tracewh_file IN (SELECT path FROM {FILES_TABLE} "
            f"WHERE table_name = {_literal(table.name)})")


def _literal(text):
    return "'" + text.replace("'", "''") + "'"
