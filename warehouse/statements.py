"""Running SQL on a connection: a read-only query is checked statement by statement
(`check_read_only`) before it runs, and DuckDB's errors become one-line QueryErrors. The
connection's own confinement (see `connection`) stands behind the check."""

import duckdb

from .errors import HINT, QueryError

READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}


def check_read_only(connection, sql):
    """Refuse statements that write, copy out, attach, install or change settings, also under
    an EXPLAIN (EXPLAIN ANALYZE runs its statement); return the statements."""
    statements = _statements(connection, sql)
    for statement in statements:
        kind = _refused_kind(connection, statement)
        if kind is not None:
            raise QueryError(f"{kind} statements are refused: queries are read-only",
                             cli_hint=" (use --allow-write to run them)")
    return statements


def _refused_kind(connection, statement):
    """None for a statement that only reads; else its kind, as the refusal names it."""
    kind = statement.type.name
    if kind not in READ_ONLY_STATEMENTS:
        return kind
    if kind == "EXPLAIN":
        for explained in _statements(connection, _explained_sql(statement.query)):
            if explained.type.name != "SELECT":
                return f"EXPLAIN {explained.type.name}"
    return None


def _explained_sql(text):
    """The statement an EXPLAIN statement's `text` explains: what follows EXPLAIN, ANALYZE
    and a parenthesised option list, read with DuckDB's own tokenizer (comments may stand
    between the words; DuckDB reports the statement as EXPLAIN only)."""
    tokens = duckdb.tokenize(text)
    ends = [offset for offset, _ in tokens[1:]] + [len(text)]
    words = [(offset, text[offset:end].strip().lower())
             for (offset, kind), end in zip(tokens, ends) if kind != duckdb.token_type.comment]
    position = 1  # words[0] is EXPLAIN
    if position < len(words) and words[position][1] in ("analyze", "analyse"):
        position += 1
    if position < len(words) and words[position][1] == "(":
        depth = 0
        for position in range(position, len(words)):
            depth += {"(": 1, ")": -1}.get(words[position][1], 0)
            if depth == 0:
                break
        position += 1
    return text[words[position][0]:] if position < len(words) else ""


def _statements(connection, sql):
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as error:
        raise _query_error(error) from None
    if not statements:
        raise QueryError("no SQL statement given")
    return statements


def _result(relation):
    """(column names, rows) of an executed statement; none for one that returns no rows."""
    if not relation.description:
        return [], []
    return [d[0] for d in relation.description], relation.fetchall()


def run_query(connection, sql, allow_write=False, params=None):
    """Execute `sql` (with bound `params`); return (column names, rows) of its last statement."""
    if not allow_write:
        check_read_only(connection, sql)
    try:
        return _result(connection.execute(sql, params) if params else connection.execute(sql))
    except duckdb.Error as error:
        raise _query_error(error) from None


def run_statements(connection, sql, allow_write=False):
    """Execute every statement of `sql`; return the (column names, rows) of each one that
    returns rows, in order (or the single empty result of statements that return none)."""
    statements = _statements(connection, sql) if allow_write else check_read_only(connection, sql)
    results = []
    try:
        for statement in statements:
            results.append(_result(connection.execute(statement)))
    except duckdb.Error as error:
        raise _query_error(error) from None
    return [result for result in results if result[0]] or results[-1:]


def _query_error(error):
    """A QueryError of DuckDB's `error`, on one line."""
    if isinstance(error, duckdb.PermissionException):  # the confinement: say what it is
        return QueryError(" ".join(str(error).split("\nLINE ")[0].split())
                          + f" (a query reads the warehouse's tables only{HINT})",
                          cli_hint="; --allow-write gives full access")
    return QueryError(" ".join(str(error).split()))


def last_result_table(connection, sql, allow_write=False):
    """Execute every statement of `sql`; return the last one's result, a SELECT, as an Arrow
    table (DuckDB's types kept)."""
    statements = _statements(connection, sql) if allow_write else check_read_only(connection, sql)
    if statements[-1].type.name != "SELECT":
        raise QueryError(f"the last statement is a {statements[-1].type.name}, not a "
                         "SELECT: it has no rows to write")
    try:
        for statement in statements[:-1]:
            _result(connection.execute(statement))  # fetched: the connection is free again
        return connection.sql(statements[-1].query).to_arrow_table()
    except duckdb.Error as error:
        raise _query_error(error) from None
