"""Read-only queries answered from the warehouse's prepared catalog, `tracewh.duckdb` (see
`duckdb_file`): it already defines every table, the rules and peaks tables and every library
view, so a command attaches it (~30 ms) instead of defining the library on a new connection and
listing the snapshot's files from the Delta logs, and imports neither pyarrow nor delta-rs
(~0.45 s of a command that does).

The guarantees are those of `connection.connect`:
- the file is used only when it is the newest snapshot's (its versions are the newest
  pointer's) and was written by this library, these rules and this DuckDB, for this root;
  otherwise the caller asks the question the usual way;
- a query is answered only when the runs its statements read can be told (see
  `query_analysis.runs_a_query_names`: the union of a script's): each table is replaced, for
  this connection, by a TEMP view over those runs' files alone, which the file's views read
  (temporary objects come first in DuckDB's search path, for the views too). A question about
  every run is asked the usual way, where the views with marts read them and the logs' row
  counts are checked;
- a view whose mart the file records is read from the mart, its rows of those runs (a TEMP
  view too): the refresh records the marts' files once it has brought them to the file's
  snapshot under its rules (a file of an older snapshot is not answered from; a refresh that
  failed records none), each checked to be of the size its commit recorded (else the view's
  SQL answers);
- the files read are those the file lists, each of the size its Delta commit recorded (a
  stat each), and the snapshot's commit files are whole (not emptied, not cut);
- the connection is confined to those files (`statements.confine`) before any statement of
  the user's runs, which the statement check has let through.
"""

import contextlib
import json
import os
from pathlib import Path

import duckdb

from .. import storage
from ..storage.delta_log import changed_problem, check_commits, first_replayed, size_problem
from ..storage.directory import STATE_DIR, TRACES, check_readable, newest_pointer
from ..errors import WarehouseError
from ..storage.layout import DUCKDB_FILE, EVENT_TABLES
from ..storage.run_info import RunInfo
from .library import defines_public, library_fingerprint, names_reached, names_reached_past
from .query_analysis import runs_a_query_names
from ..rules import effective_rules
from .scope import check_runs
from .statements import confine, run_statements
from .table_sql import (CATALOG_TYPES, files_variable_name, mart_files_variable, mart_view_sql,
                        no_rows, sql_string)

FILES_TABLE = "tracewh_files"  # table_name, path (absolute), run, size (its commit's)
SNAPSHOT_TABLE = "tracewh_snapshot"
MARTS_TABLE = "tracewh_marts"  # mart, path (absolute), size: the marts current at the snapshot
RUNS_TABLE = "tracewh_runs"  # run, first_seq, phases, tags (JSON): the snapshot's runs
FILES_FORMAT = 4  # 2: FILES_TABLE holds each file's run and size; 3: MARTS_TABLE; 4: RUNS_TABLE
# The file is attached to an in-memory database of the command's own, not opened: DuckDB
# shares a database opened twice in a process, and its settings with it (`confine`'s).
CATALOG = "tracewh"
SCAN_MACRO = "tracewh_scan_{}"  # a table's scan in the file, given its files (see duckdb_file)


def file_shape(root, rules, live):
    """What the file's views follow from besides the snapshot: the library with `rules` and
    its `live` helpers, the warehouse's (resolved) `root`, DuckDB's version, the format of
    FILES_TABLE. A file of another shape is written whole again, and not answered from."""
    return json.dumps({**_fixed_shape(root, rules), "live": list(live)})


def _fixed_shape(root, rules):
    """file_shape but for the live helpers, which follow from the snapshot and the rules."""
    return {"library": library_fingerprint(rules), "root": str(root),
            "duckdb": duckdb.__version__, "files": FILES_FORMAT}


def prepared_query(root, sql):
    """The results of the read-only `sql` (as `statements.run_statements`), answered from
    `root`/tracewh.duckdb with the warehouse's own kernel rules and the default device peaks;
    None where the file cannot answer it (see the module's docstring)."""
    connection = prepared_connection(root, sql)
    if connection is None:
        return None
    with connection:
        return run_statements(connection, sql)


def prepared_connection(root, sql):
    """A confined connection to `root`/tracewh.duckdb whose tables read the files of the runs
    `sql` is about, and only those; None where the file cannot answer it."""
    root = _local_root(root)
    opened = None if root is None else _open_current(root)
    if opened is None:
        return None
    connection, versions = opened
    with _closed_on_error(connection):
        found = runs_a_query_names(sql, connection,
                                   lambda name: name in versions or defines_public(name))
        if found is None:
            connection.close()
            return None
        return _over_runs(connection, root, versions, *found)


def _local_root(root):
    """The warehouse's directory; None for an object store's, where no tracewh.duckdb is
    kept (see docs/object-storage.md): its questions are asked the usual way."""
    return None if storage.is_url(root) else Path(root)


def connect_prepared(root, runs, reads=None, versions=None):
    """A confined connection to `root`/tracewh.duckdb over the files of `runs` only, of the
    tables that the tables, views and macros `reads` read (all, when None): what a command
    about some runs asks its questions of (`diff`, `trend`, `report`). With `versions`, only
    where the file is of that snapshot (the one a Warehouse answers from). None where the
    file cannot serve."""
    root = _local_root(root)
    opened = None if root is None else _open_current(root, versions)
    if opened is None:
        return None
    connection, versions = opened
    with _closed_on_error(connection):
        return _over_runs(connection, root, versions, set(runs),
                          None if reads is None else set(reads))


class PreparedWarehouse:
    """What a command about some runs (`diff`, `trend`, `report`) asks of a warehouse, answered
    from tracewh.duckdb where it can be: the runs the file records, and confined connections
    over some of them (see the module's docstring), without the catalog, pyarrow or delta-rs
    (~0.5 s of such a command's start). A connection the file cannot give is asked of the
    Warehouse `fallback()` returns, the usual way. `open` is None where the file is not
    current (see `_open_current`)."""

    def __init__(self, root, opened, runs, fallback):
        self.root = root
        self._opened = opened  # (connection, versions), until the first connection uses it
        self._versions = opened[1]
        self._runs = runs
        self._fallback = fallback

    @classmethod
    def open(cls, root, fallback):
        root = _local_root(root)
        opened = None if root is None else _open_current(root)
        if opened is None:
            return None
        connection = opened[0]
        with _closed_on_error(connection):
            try:
                rows = connection.execute(f"SELECT run, first_seq, phases, tags FROM {RUNS_TABLE} "
                                          "ORDER BY first_seq").fetchall()
            except duckdb.CatalogException:  # a file of an earlier format is not current
                connection.close()
                return None
        runs = [RunInfo(run, seq, set(phases), json.loads(tags)) for run, seq, phases, tags in rows]
        return cls(root, opened, runs, fallback)

    def run_infos(self):
        """The runs, in the order of their first commit: [RunInfo]."""
        return self._runs

    def connect_to_runs(self, runs, reads=None):
        """As `api.Warehouse.connect_to_runs`."""
        check_runs([info.run for info in self._runs], *runs)
        return self.connect_over_runs(set(runs), reads)

    def connect_over_runs(self, runs, reads=None):
        """As `api.Warehouse.connect_over_runs`."""
        opened = self._open()
        if opened is None:
            return self._fallback().connect_over_runs(runs, reads)
        connection = opened[0]
        with _closed_on_error(connection):
            return _over_runs(connection, self.root, self._versions, set(runs),
                              None if reads is None else set(reads))

    def connect_over_every_run(self, reads):
        """As `api.Warehouse.connect_over_every_run`: from the file where no event table is
        scanned (the views whose marts are current read them); else the usual way, where the
        event tables' row counts are checked first."""
        opened = self._open()
        if opened is None:
            return self._fallback().connect_over_every_run(reads)
        connection = opened[0]
        with _closed_on_error(connection):
            marts = _checked_marts(connection, self.root.resolve(), names_reached(*reads))
            if names_reached_past(reads, marts) & set(EVENT_TABLES):
                connection.close()
                return self._fallback().connect_over_every_run(reads)
            return _over_runs(connection, self.root, self._versions,
                              {info.run for info in self._runs}, set(reads))

    def connect(self):
        """A connection over every run, the whole library defined: the usual way."""
        return self._fallback().connect()

    def _open(self):
        """The file's connection, opened again after the first use, while it is of the same
        snapshot (else None)."""
        opened, self._opened = self._opened, None
        return opened or _open_current(self.root, self._versions)


@contextlib.contextmanager
def _closed_on_error(connection):
    try:
        yield
    except BaseException:
        connection.close()
        raise


def _open_current(root, versions=None):
    """(a connection with tracewh.duckdb attached read-only, the snapshot's versions) when the
    file is current: of the newest snapshot (or of `versions`), and of the shape of this library,
    rules, root and DuckDB; the warehouse checked as every command checks it. Else None."""
    database = root / DUCKDB_FILE
    if not (root / STATE_DIR).is_dir() or not database.is_file():
        return None  # asked the usual way, which says what is wrong
    if versions is None:
        newest = newest_pointer(root)
        if newest is None:
            return None
        versions = {**newest[1]["versions"], TRACES: newest[0]}
    check_readable(root, list(versions), lost_state=lambda: False)
    for table, version in versions.items():  # what loading the tables' logs would find
        check_commits(root / table, first_replayed(root / table, version), version, read="end")
    opened = _attached(database)
    if opened is None:
        return None
    connection, recorded = opened
    expected = _fixed_shape(root.resolve(), effective_rules(root))
    if (len(recorded) != 1 or json.loads(recorded[0][0]) != versions
            or {key: json.loads(recorded[0][1]).get(key) for key in expected} != expected):
        connection.close()
        return None
    return connection, versions


def attach_library(database, shape):
    """A connection with the DuckDB file `database` (a warehouse's tracewh.duckdb, or a
    template of the library) attached read-only and in use when the file is of `shape` (see
    `file_shape`), of whatever snapshot: its views are the library's, defined already, for a
    caller that gives them tables of its own (TEMP tables of the tables' names, see
    `connection.copy_runs`). None otherwise."""
    opened = _attached(database)
    if opened is None:
        return None
    connection, recorded = opened
    if len(recorded) != 1 or recorded[0][1] != shape:
        connection.close()
        return None
    return connection


def _attached(database):
    """(a connection with `database` attached read-only and in use, the rows of its
    SNAPSHOT_TABLE: [(versions, shape)]), or None where it is not a DuckDB file."""
    connection = duckdb.connect()
    with _closed_on_error(connection):
        try:
            connection.execute(f"ATTACH {sql_string(str(database))} AS {CATALOG} (READ_ONLY)")
            connection.execute(f"USE {CATALOG}")
        except duckdb.Error:  # not a DuckDB file (damaged from outside), or none: the next
            connection.close()  # writer writes it again
            return None
        try:
            recorded = connection.execute(
                f"SELECT versions, shape FROM {SNAPSHOT_TABLE}").fetchall()
        except duckdb.Error:  # a file of another tracewh
            recorded = []
    return connection, recorded


def _over_runs(connection, root, versions, runs, names):
    """`connection`, its tables reading the files of `runs` only (of the tables `names`
    read; None: every table, and every mart), confined to them."""
    root = root.resolve()
    files = _checked_files(connection, root, runs)
    connection.execute("SET enable_progress_bar = false")  # it would mix into output
    # the tables the statements read, through every view (binding one costs ~6 ms); a view
    # of the file left as it is reads no file: only those allowed can be opened
    reached = None if names is None else names_reached(*names)
    _define_tables(connection, root,
                   [table for table in versions if reached is None or table in reached], files)
    marts = _checked_marts(connection, root, reached)
    _define_marts(connection, marts, runs)
    confine(connection, [path for paths in (*files.values(), *marts.values()) for path in paths])
    return connection


def _checked_marts(connection, root, reached):
    """{mart: [path]} of the marts the file records as current at its snapshot whose views
    are among `reached` (None: all), each file checked to be on disk with the size its commit
    recorded (a mart with a file gone or changed is not read: its view's SQL answers; one
    recorded with a NULL path has no file: no row)."""
    marts = {}
    for mart, path, size in connection.execute(
            f"SELECT mart, path, size FROM {MARTS_TABLE} "
            "WHERE ? IS NULL OR list_contains(?, mart) ORDER BY mart, path",
            [None if reached is None else True, sorted(reached or ())]).fetchall():
        files = marts.setdefault(mart, [])
        if path is not None:
            files.append((path, size))
    return {mart: [path for path, _ in files] for mart, files in marts.items()
            if mart.isidentifier() and all(storage.has_size(path, size) for path, size in files)}


def _define_marts(connection, marts, runs):
    """Replace the file's view of each mart, for this connection, by a TEMP view over its
    mart's rows of `runs`: the views reading it read them too (TEMP views come first)."""
    columns = {}
    for view, column, type_ in connection.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE "
            "database_name = current_database() AND schema_name = 'main' "
            "AND list_contains(?, table_name) ORDER BY column_index", [sorted(marts)]).fetchall():
        columns.setdefault(view, []).append((column, type_))
    for mart, paths in marts.items():
        if paths:
            connection.execute(f"SET VARIABLE {mart_files_variable(mart)} = ?", [paths])
        connection.execute(mart_view_sql(mart, columns[mart], bool(paths), runs,
                                         temporary=True))


def _checked_files(connection, root, runs):
    """{table: [path]} of the files of `runs` the file lists, each checked to be on disk with
    the size its commit recorded."""
    files = {}
    for table, path, size in connection.execute(
            f"SELECT table_name, path, size FROM {FILES_TABLE} WHERE list_contains(?, run) "
            "ORDER BY table_name, path", [sorted(runs)]).fetchall():
        try:
            found = os.stat(path).st_size
        except FileNotFoundError:
            from ..storage.integrity import missing_file_error  # errors only: it imports pyarrow

            raise missing_file_error(root, table, [path]) from None
        if found != size:
            from ..storage.integrity import file_error

            raise file_error(root, table, path, changed_problem(size_problem(found, size)))
        files.setdefault(table, []).append(path)
    return files


def _define_tables(connection, root, tables, files):
    """Replace the file's view of each table, for this connection, by a TEMP view over its
    `files` (through the file's scan macro), or over no rows (of the view's columns and
    types) where there are none."""
    columns = {}
    for table, column, type_ in connection.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE "
            "database_name = current_database() AND schema_name = 'main' "
            "AND list_contains(?, table_name) ORDER BY column_index", [tables]).fetchall():
        columns.setdefault(table, []).append((column, type_))
    for table in tables:
        if not table.isidentifier():
            raise WarehouseError(f"{root}: a table named {table!r} in the newest pointer")
        paths = files.get(table, [])
        if paths:
            variable = files_variable_name(table)
            connection.execute(f"SET VARIABLE {variable} = ?", [paths])
            select = (f"SELECT * FROM {CATALOG}.main.{SCAN_MACRO.format(table)}"
                      f"(files := getvariable('{variable}'))")
        else:
            if any(type_ not in CATALOG_TYPES for _, type_ in columns.get(table, [None])):
                raise WarehouseError(f"{root}/{DUCKDB_FILE}: its view {table} is not the "
                                     "table's")
            select = no_rows(columns[table])
        _create_view(connection, root, table, select, paths)


def _create_view(connection, root, table, select, paths):
    """CREATE TEMP VIEW `table` AS `select`, which reads `paths`."""
    try:
        connection.execute(f"CREATE TEMP VIEW {table} AS {select}")
    except duckdb.IOException:  # binding opens the files: say which one is gone
        from ..storage.integrity import missing_file_error

        missing = missing_file_error(root, table, paths)
        if missing is None:
            raise
        raise missing from None
