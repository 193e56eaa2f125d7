"""The library defined in a DuckDB file of no warehouse, kept in the user's cache: what a new
warehouse's `tracewh.duckdb` starts from, and what its first refresh's marts attach.

Defining the library binds ~70 views (0.45-0.55 s of CPU, whatever the data), which a new
warehouse's file paid at its first refresh, and its marts again (~0.15 s) while that file was
being written. The definition follows only from the library's shape (its SQL, rules, peaks and
live helpers, DuckDB's version, the tables' columns: `template_shape`), not from the warehouse:
its tables are views over scan macros that list no file, given their files by the copy (see
duckdb_file). So it is made once per shape and machine, in the cache beside the library's
inlined modules (`library.cache_directory`), and copied (~3 MB) by each new warehouse.

A template that cannot be read, or records another shape, is made again; a cache that cannot
be written costs the definition, nothing else (the file is then written whole, as before).
At most KEPT templates stay: a new one removes the oldest others (and a killed maker's
temporary).
"""

import contextlib
import hashlib
import json
import os
import time

import duckdb

from ..query.library import cache_directory
from ..query.prepared import SNAPSHOT_TABLE, file_shape
from ..storage.schema import TABLES

FORMAT = 1  # of what a template holds, beyond file_shape: bumped when that changes
KEPT = 8  # templates (of other rules, live helpers or versions) left in the cache


def template_shape(rules, live):
    """The shape a template records: a warehouse's (`prepared.file_shape`) with no root, and
    what the file's own definition follows from (the tables' columns, FORMAT)."""
    columns = [(name, str(table.schema)) for name, table in TABLES.items()]
    return json.dumps({"shape": json.loads(file_shape("", rules, live)), "format": FORMAT,
                       "tables": hashlib.sha256(json.dumps(columns).encode()).hexdigest()[:16]})


def template_path(shape):
    digest = hashlib.sha256(shape.encode()).hexdigest()[:16]
    return cache_directory() / f"library-{digest}.duckdb"


def cached_template(shape):
    """The cached template of `shape`, or None when there is none."""
    path = template_path(shape)
    return path if path.is_file() else None


def make_template(shape, connect, define):
    """The template of `shape` made now in the cache: `connect(path)` opens a new DuckDB file,
    `define(connection)` defines the library on it. None where the cache cannot be written."""
    path = template_path(shape)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.unlink(missing_ok=True)
        with contextlib.closing(connect(temporary)) as connection:
            define(connection)
            connection.execute(f"INSERT INTO {SNAPSHOT_TABLE} VALUES (0, '{{}}', now(), ?)",
                               [shape])
        os.replace(temporary, path)
    except (OSError, duckdb.Error):  # the cache's disk: the caller defines the library itself
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        return None
    _remove_oldest(path)
    return path


def is_template_of(connection, shape):
    """True when the file open on `connection` records `shape` (a template of it)."""
    try:
        recorded = connection.execute(f"SELECT shape FROM {SNAPSHOT_TABLE}").fetchall()
    except duckdb.Error:
        return False
    return recorded == [(shape,)]


def _remove_oldest(made):
    """Leave KEPT templates in the cache: `made` and the newest others; and remove what a
    killed maker left (a temporary of over an hour ago: making one takes about a second)."""
    others = []
    for path in made.parent.glob("library-*.duckdb"):
        with contextlib.suppress(OSError):
            if path != made:
                others.append((path.stat().st_mtime, path))
    for _, path in sorted(others, reverse=True)[KEPT - 1:]:
        path.unlink(missing_ok=True)
    for path in made.parent.glob(".library-*.duckdb.*.tmp*"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < time.time() - 3600:
                path.unlink()
