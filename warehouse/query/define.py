"""The SQL library (see `library`) defined on a connection over the tables (see `connection`),
or over empty stand-ins of them for describing what the views and macros return.
"""

import duckdb

from ..storage.catalog import EMPTY_SNAPSHOT
from .library import library_for
from ..peaks import create_peaks_table, default_peaks
from ..rules import create_rules_table, default_rules
from ..storage.schema import TABLES
from .table_sql import mart_files_variable, mart_view_sql, stand_in_sql


def library_connection(rules=None):
    """An in-memory connection with the library defined over empty tables: for describing
    what views and macros return."""
    connection = duckdb.connect()
    define_library(connection, EMPTY_SNAPSHOT, rules or default_rules(),
                   lambda table: connection.execute(stand_in_sql(table)))
    return connection


def define_library(connection, snapshot, rules, table_view, peaks=None, modules=None,
                   marts=None, runs=None):
    """Define the rules and device peaks tables (`peaks`: the defaults unless given), every
    public library view and macro (or those of `modules` only), and each table by
    `table_view(table)`, on `connection`. Binding a view over N files reads N Hive paths
    (0.09 s at 8,000), and defining the library binds its tables ~50 times: the library is
    defined on empty stand-ins, which the tables' views then replace (DuckDB binds a view
    again where a query uses it). `marts` ({view: its mart's files}, see
    `derived.current_marts`): those views read their marts' rows instead, the same rows
    without computing them (the views that read them then do too); with `runs`, their rows
    of those runs only (a connection over some runs sees no other's)."""
    for table in TABLES.values():
        connection.execute(stand_in_sql(table))
    create_rules_table(connection, rules)
    create_peaks_table(connection, default_peaks() if peaks is None else peaks)
    for name, text in library_for(snapshot, rules).items():
        if modules is None or name in modules:
            connection.execute(text)
    for name, files in (marts or {}).items():
        if modules is None or name in modules:
            _read_from_mart(connection, name, files, runs)
    for table in TABLES.values():
        connection.execute(f"DROP TABLE {table.name}")
        table_view(table)


def _read_from_mart(connection, name, files, runs):
    """Replace the view `name` by a scan of its mart's `files` (of `runs`' rows, when given),
    with the view's columns and types (described here, on the empty stand-ins, at no cost)."""
    columns = [(row[0], row[1]) for row in connection.execute(f"DESCRIBE {name}").fetchall()]
    connection.execute(f"SET VARIABLE {mart_files_variable(name)} = ?", [files])
    connection.execute(mart_view_sql(name, columns, bool(files), runs))
