"""What a query is about, read before it runs: the runs its SELECTs can only be about, so that
it is asked of a connection over those runs' files alone (read from DuckDB's parse), and the
names it reads (sqlglot's), so that a connection defines only what it reads."""

import contextlib
import json
import logging

import duckdb

from .library import defines_name


def runs_a_query_names(sql, connection=None, defines=defines_name):
    """(the runs a query can only be about, the tables and views it reads), or None when that
    cannot be told for sure. Each statement must be a SELECT that reads no table or view, or
    one SELECT from one table or library view (no join, subquery, CTE, set operation, table
    function or library macro) whose WHERE requires `run = 'x'` or `run IN ('x', 'y')`; a
    script of several is about the union of their runs. Every library view's rows of a run
    come from that run's rows alone, so such a query reads just those runs' files.

    Read from DuckDB's own parse of the statements (json_serialize_sql, on `connection` or a
    new in-memory one), not sqlglot's: what runs is what DuckDB parsed, and a command that
    asks no more than this imports no sqlglot (0.2 s). `defines(name)`: whether a name is a
    table, library view or macro."""
    if connection is None:
        with duckdb.connect() as own:
            return runs_a_query_names(sql, own, defines)
    try:
        parsed = json.loads(connection.execute("SELECT json_serialize_sql(?::VARCHAR)",
                                               [sql]).fetchone()[0])
    except duckdb.Error:
        return None
    if parsed.get("error") or not parsed.get("statements"):
        return None  # not SELECTs only: the statement check says why
    runs, names = set(), set()
    for statement in parsed["statements"]:
        found = _runs_of_statement(statement["node"], defines)
        if found is None:
            return None
        runs |= found[0]
        names |= found[1]
    return runs, names


# The kinds of DuckDB's parse nodes that read from more than one table, or from something
# other than a table or view by name.
_NOT_ONE_TABLE = {"JOIN", "SUBQUERY", "TABLE_FUNCTION", "EXPRESSION_LIST", "PIVOT",
                  "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE", "SHOW_REF",
                  "COLUMN_DATA", "DELIM_GET"}


def _runs_of_statement(node, defines):
    """(runs, {name}) of one SELECT's parse tree (see runs_a_query_names), or None."""
    tables, others, ctes = [], [], []

    def walk(value):
        if isinstance(value, dict):
            kind = value.get("type")
            if kind == "BASE_TABLE":
                tables.append(value)
            elif kind in _NOT_ONE_TABLE or value.get("class") == "SUBQUERY" or (
                    value.get("class") == "FUNCTION" and defines(value["function_name"])):
                others.append(kind)
            if value.get("cte_map", {}).get("map"):
                ctes.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(node)
    if others or ctes or node.get("type") != "SELECT_NODE":
        return None
    if not tables:
        return set(), set()  # reads no table: about no run
    table = tables[0]
    name = table["table_name"].lower()
    if (len(tables) > 1 or table is not node.get("from_table") or table["schema_name"]
            or table["catalog_name"] or not defines(name) or node.get("where_clause") is None):
        return None
    runs = None
    for condition in _conjuncts(node["where_clause"]):
        named = _runs_required(condition)
        if named is not None:
            runs = named if runs is None else runs & named
    return None if runs is None else (runs, {name})


def _conjuncts(condition):
    """The conditions an AND (nested or not) requires all of."""
    if condition.get("type") == "CONJUNCTION_AND":
        return [part for child in condition["children"] for part in _conjuncts(child)]
    return [condition]


def _runs_required(condition):
    """{'x'} for `run = 'x'` (either way round), {'x', 'y'} for `run IN ('x', 'y')`, else
    None."""
    def is_run(node):
        return node.get("class") == "COLUMN_REF" and node["column_names"][-1].lower() == "run"

    def text(node):
        literal = node.get("literal") if node.get("type") == "VALUE_CONSTANT" else None
        return literal["text"] if literal and literal.get("kind") == "STRING" else None

    if condition.get("type") == "COMPARE_EQUAL":
        left, right = condition["left"], condition["right"]
        if is_run(right):
            left, right = right, left
        if is_run(left) and text(right) is not None:
            return {text(right)}
    if condition.get("type") == "COMPARE_IN":
        first, *items = condition["children"]
        if is_run(first) and items and all(text(item) is not None for item in items):
            return {text(item) for item in items}
    return None


@contextlib.contextmanager
def _quiet(logger):
    """Without `logger`'s warnings: sqlglot warns on stderr of every statement it parses as a
    mere command (EXPLAIN, PRAGMA...), which is no news to the user and would make a refusal
    or an answer two lines."""
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def names_a_query_reads(sql):
    """The tables, views and macros a query reads by name, or None when that cannot be told
    for sure (SQL sqlglot cannot parse, a qualified or unknown name such as duckdb_views() or
    information_schema, which may list the whole library, a CTE or alias that takes a table's
    or view's name): what a connection for it must define."""
    import sqlglot
    from sqlglot import exp

    try:
        with _quiet(logging.getLogger("sqlglot")):
            statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    names = set()
    for statement in statements:
        if statement is None:
            continue
        ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
        aliases = {alias.name.lower() for alias in statement.find_all(exp.TableAlias)}
        if any(map(defines_name, aliases)):
            # a CTE (or alias) named like a table or view: `FROM kernels` may read either,
            # depending on the scope (a reference outside the CTE's reads the table)
            return None
        for table in statement.find_all(exp.Table):
            if table.db or table.catalog:
                return None
            if isinstance(table.this, exp.Identifier):
                name = table.name
            elif isinstance(table.this, exp.Func):
                name = table.this.name if isinstance(table.this, exp.Anonymous) \
                    else table.this.sql_name()
            else:
                return None
            if name not in ctes:
                names.add(name.lower())
    return names
