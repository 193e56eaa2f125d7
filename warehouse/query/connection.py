"""DuckDB connections over one snapshot of a warehouse: one view per table over exactly the
snapshot's files (see `catalog`: an ingest committing meanwhile is either wholly in or wholly
out), then the SQL library. The connection is in-memory; nothing is written unless the caller
allows it.

SQL from users is hostile: the connection a read-only query runs on is confined by DuckDB's
own settings (`statements.confine`), so that a statement the check of `statements` lets
through still cannot read or write a file outside the warehouse's tables, reach the network,
load an extension or lift the confinement.
"""

import concurrent.futures

import duckdb

from ..storage.base import ChangedObject
from ..storage.delta_log import changed_problem, size_problem
from ..storage.integrity import (EVENT_TABLES, check_counts, check_listed_sizes, check_sizes,
                                 file_error, missing_file_error)
from ..storage.schema import TABLES
from .define import define_library
from .statements import confine
from .table_sql import files_variable, table_view_sql


def connect(catalog, snapshot, rules, runs=None, tables=None, allow_write=False, peaks=None,
            modules=None, marts=None, copied=()):
    """An in-memory DuckDB connection with every table and library view defined, over
    `snapshot` of the warehouse `catalog` with the kernel `rules`, or over some runs of it only:
    DuckDB reads the Hive partition values of every file a view lists each time the view is
    bound (0.09 s per 8,000 files), so a question about two runs of a thousand is asked of those
    two. With `tables`, only those tables' files are listed (the others look empty): for a query
    that reads no other. The event tables' row counts are checked against the traces' (see
    `integrity.check_counts`) when every run of them is read. The connection is `confine`d to
    the warehouse's tables unless `allow_write` gives it DuckDB's full access (files anywhere,
    the network, extensions, settings). `peaks`: the device peaks (the defaults unless given).
    With `modules`, only those library modules are defined (see `library.modules_read_by`).
    `marts` ({view: files}, see `derived.current_marts`): views answered from their marts (their
    rows of `runs`). The
    caller has checked the warehouse (see `api.Warehouse`). The tables named in `copied` are
    copied into DuckDB's memory instead of read from their files by each question that reads
    them: for a connection that asks many questions of little data (a refresh after an
    ingest), where reading the files again for each question costs more than the questions."""
    root = catalog.root
    with concurrent.futures.ThreadPoolExecutor(1) as beside:
        # delta-rs lists the files, without the GIL, while DuckDB defines the library on
        # stand-ins of the tables (the demo's 8 ranks: 0.06 s of a refresh's 0.18 s connection)
        listed = beside.submit(_files, catalog, snapshot, runs, tables)
        connection = duckdb.connect()
        try:
            connection.execute("SET enable_progress_bar = false")  # it would mix into output
            define_library(connection, snapshot, rules,
                           lambda table: _table_view(connection, root, table, listed.result(),
                                                     copy=table.name in copied),
                           peaks, modules, marts, runs)
            if not allow_write:
                confine(connection, [path for paths in (*listed.result().values(),
                                                        *(marts or {}).values())
                                     for path in paths])
        except BaseException:  # a file gone, counts that differ, Ctrl-C
            connection.close()
            raise
    return connection


def _files(catalog, snapshot, runs, tables):
    """{table: the paths of its files} at `snapshot` (of `runs`, `tables`), their sizes and
    the event tables' row counts checked (see `connect`); of an object store's, the paths of
    their local copies (see `local_copies`)."""
    root = catalog.root
    paths = snapshot.paths(root, runs, tables)
    if catalog.store.local:  # a stat per file; an object store's copies are checked instead
        check_sizes(root, snapshot, paths, runs)
    if tables is None or (runs is None and set(tables) & set(EVENT_TABLES)):
        check_counts(root, snapshot, runs)
    if catalog.store.local:
        return paths
    return local_copies(catalog, paths, snapshot.sizes(root, runs, tables))


def local_copies(catalog, paths, sizes):
    """{table: the local copies of its files} of an object store's `paths` ({table: [url]}),
    each checked against its size in `sizes` (from the Delta log): a missing or changed
    object is named as a local warehouse's file is."""
    copies = {}
    for table, files in paths.items():
        try:
            copies[table] = catalog.store.local_copies(files, sizes[table])
        except FileNotFoundError:
            raise missing_file_error(catalog.root, table, files) from None
        except ChangedObject as changed:
            url, found, recorded = changed.args
            raise file_error(catalog.root, table, url,
                             changed_problem(size_problem(found, recorded))) from None
    return copies


def copy_runs(connection, catalog, snapshot, runs, tables, listed=None, copied=None):
    """Copy the rows of `runs` of `tables` at `snapshot` into TEMP tables of their names on
    `connection`, checked as `connect` checks them: what the views of an attached catalog
    (`prepared.attach_library`) then read instead of the catalog's tables. `listed`: their
    files, {table: [(path, size its commit recorded)]}, when the caller knows them already
    (else they are listed from the tables' logs). The paths of the files read, {table:
    [path]}."""
    if listed is None:
        paths = _files(catalog, snapshot, runs, tables)
    else:
        check_listed_sizes(catalog.root, listed)
        paths = {table: [path for path, _ in found] for table, found in listed.items()}
    for name in tables:
        _table_view(connection, catalog.root, TABLES[name], paths,
                    copy=copied is None or name in copied, temporary=True)
    return paths


def _table_view(connection, root, table, paths, copy, temporary=False):
    """Define `table` over its files of `paths`, or copy their rows into memory."""
    files = paths.get(table.name, [])
    connection.execute(f"SET VARIABLE {files_variable(table)} = ?", [files])
    try:
        connection.execute(table_view_sql(table, bool(files), copy=copy, temporary=temporary))
    except duckdb.IOException:  # binding opens the files: say which one is gone
        missing = missing_file_error(root, table.name, files)
        if missing is None:
            raise
        raise missing from None
