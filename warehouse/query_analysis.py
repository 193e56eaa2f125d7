"""What a query is about, read with sqlglot before it runs: the runs a SELECT can only be about,
so that it is asked of a connection over those runs' files alone."""

import contextlib
import logging

from .library import defines_name


def runs_a_query_names(sql):
    """(the runs a query can only be about, the table or view it reads), or None when that
    cannot be told for sure: one SELECT from one table or library view (no join, subquery,
    CTE or set operation) whose WHERE requires `run = 'x'` or `run IN ('x', 'y')`. Every
    library view's rows of a run come from that run's rows alone, so such a query reads just
    those runs' files."""
    import sqlglot
    from sqlglot import exp

    try:
        with _quiet(logging.getLogger("sqlglot")):
            statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        return None
    select = statements[0]
    sources = list(select.find_all(exp.Table))
    where = select.find(exp.Where)
    if (len(sources) != 1 or not isinstance(sources[0].this, exp.Identifier)  # not a macro
            or select.find(exp.With, exp.Join, exp.Subquery, exp.Union, exp.Intersect,
                           exp.Except) or where is None):
        return None
    runs = None
    for condition in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        named = _runs_of(condition)
        if named is not None:
            runs = named if runs is None else runs & named
    return None if runs is None else (runs, sources[0].name.lower())


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


def _runs_of(condition):
    """{'x'} for `run = 'x'`, {'x', 'y'} for `run IN ('x', 'y')`, else None."""
    from sqlglot import exp

    def is_run(node):
        return isinstance(node, exp.Column) and node.name.lower() == "run"

    def literal(node):
        return isinstance(node, exp.Literal) and node.is_string

    if isinstance(condition, exp.EQ):
        left, right = condition.this, condition.expression
        if is_run(right):
            left, right = right, left
        if is_run(left) and literal(right):
            return {right.this}
    if (isinstance(condition, exp.In) and is_run(condition.this) and condition.expressions
            and all(literal(item) for item in condition.expressions)):
        return {item.this for item in condition.expressions}
    return None


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
