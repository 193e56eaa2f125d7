"""The SQL of the warehouse's tables for DuckDB: their columns typed, the empty stand-ins the
library is defined on, and the views over a snapshot's files, Hive partition columns first."""

_HIVE_TYPES = "{'run': VARCHAR, 'phase': VARCHAR, 'rank': INTEGER}"


def _quote(identifier):
    return '"' + identifier.replace('"', '""') + '"'


def sql_string(text):
    """A DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


# The tables' column types: (the Arrow type as pyarrow prints it, DuckDB's name in DDL, the
# name DuckDB's catalog reports, as `duckdb_columns()` of tracewh.duckdb shows them). Arrow's
# by name: the prepared query path checks the catalog's names without importing pyarrow.
COLUMN_TYPES = (("int64", "BIGINT", "BIGINT"), ("int32", "INTEGER", "INTEGER"),
                ("double", "DOUBLE", "DOUBLE"), ("bool", "BOOLEAN", "BOOLEAN"),
                ("string", "VARCHAR", "VARCHAR"), ("list<item: string>", "VARCHAR[]", "VARCHAR[]"),
                ("timestamp[us, tz=UTC]", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"))
_DDL_TYPES = {arrow: ddl for arrow, ddl, _ in COLUMN_TYPES}
CATALOG_TYPES = frozenset(catalog for _, _, catalog in COLUMN_TYPES)


def typed_columns(table):
    """(name, DuckDB type) of the table's partition and file columns."""
    from ..storage.schema import PARTITION_COLUMNS

    return ([(name, _DDL_TYPES[str(type_)]) for name, type_, _ in PARTITION_COLUMNS]
            + [(c.name, _DDL_TYPES[str(c.type)]) for c in table.columns])


def stand_in_sql(table):
    """An empty table of the table's columns, for the library's views to be defined on (and
    bound, which costs nothing) before the table's real view over its files replaces it."""
    columns = ", ".join(f"{_quote(name)} {type_}" for name, type_ in typed_columns(table))
    return f"CREATE TABLE {table.name} ({columns})"


def table_view_sql(table, has_files, copy=False, temporary=False):
    """The view of a table over the files in variable `files_variable(table)`: a list held
    once, instead of a literal of thousands of paths parsed and copied at every bind. With
    `copy`, a table of their rows in DuckDB's memory instead; `temporary`, a TEMP one (first
    in DuckDB's search path, for the views of an attached catalog too)."""
    select = (scan_select(table, f"getvariable('{files_variable(table)}')") if has_files
              else empty_select(table))
    kind = f"{'TEMP ' if temporary else ''}{'TABLE' if copy else 'VIEW'}"
    return f"CREATE {kind} {table.name} AS {select}"


def empty_select(table):
    """A SELECT of no rows with the table's columns and types."""
    return no_rows(typed_columns(table))


def no_rows(columns):
    typed = [f"CAST(NULL AS {type_}) AS {_quote(name)}" for name, type_ in columns]
    return f"SELECT {', '.join(typed)} WHERE false"


def mart_view_sql(name, columns, has_files, runs=None, temporary=False):
    """The view `name` over its mart's files in variable `mart_files_variable(name)`, with the
    view's (name, DuckDB type) `columns` in its order: the files hold the marts' three
    columns more, which the view leaves out. With `runs`, of their rows only (a connection
    over some runs: the files hold every run's, and their `run` statistics let DuckDB skip
    the others' row groups); `temporary`, a TEMP view (first in DuckDB's search path, for the
    views of an attached catalog too)."""
    kind = f"{'TEMP' if temporary else 'OR REPLACE'} VIEW"
    if not has_files:
        return f"CREATE {kind} {name} AS {no_rows(columns)}"
    select = ", ".join(f"CAST({_quote(column)} AS {type_}) AS {_quote(column)}"
                       for column, type_ in columns)
    where = ("" if runs is None else
             f" WHERE run IN ({', '.join(map(sql_string, sorted(runs))) or 'NULL'})")
    return (f"CREATE {kind} {name} AS SELECT {select} FROM read_parquet("
            f"getvariable('{mart_files_variable(name)}'), hive_partitioning = false){where}")


def scan_select(table, files, options=""):
    """A SELECT of the table's rows from `files` (SQL: a list or a glob), with the Hive
    partition columns first; `options` adds read_parquet options."""
    columns = ", ".join(_quote(c.name) for c in table.columns)
    return (f"SELECT run, phase, rank, {columns} FROM read_parquet({files}, "
            f"hive_partitioning = true, hive_types = {_HIVE_TYPES}{options})")


def files_variable(table):
    return files_variable_name(table.name)


def files_variable_name(name):
    """The variable holding the files the view of the table `name` reads."""
    return f"tracewh_files_{name}"


def mart_files_variable(name):
    return f"tracewh_mart_files_{name}"
