"""Running SQL on a connection: a read-only query is checked statement by statement
(`check_read_only`) before it runs, and DuckDB's errors become one-line QueryErrors. The
connection's own confinement (see `connection`) stands behind the check."""

import tempfile
import uuid
from pathlib import Path

import duckdb

from ..errors import HINT, QueryError


def check_read_only(connection, sql):
    """Refuse statements that write, copy out, attach, install or change settings, also under
    an EXPLAIN (EXPLAIN ANALYZE runs its statement); return the statements to run: each
    EXPLAIN rebuilt from what was checked (see `_checked_explain`)."""
    checked = []
    for statement in _statements(connection, sql):
        kind = statement.type.name
        if kind == "EXPLAIN":
            statement = _checked_explain(connection, statement.query)
        elif kind != "SELECT":
            _refuse(kind)
        checked.append(statement)
    return checked


def _refuse(kind):
    raise QueryError(f"{kind} statements are refused: queries are read-only",
                     cli_hint=" (use --allow-write to run them)")


_OPTION_TOKENS = {duckdb.token_type.identifier, duckdb.token_type.keyword,
                  duckdb.token_type.string_const, duckdb.token_type.numeric_const}


def _checked_explain(connection, text):
    """The EXPLAIN statement `text`, refused unless what it explains is one SELECT, as DuckDB
    parses it, and rebuilt from what was checked: EXPLAIN, ANALYZE and the option list's
    words as the tokenizer gave them, then DuckDB's own text of that SELECT. DuckDB reports
    an EXPLAIN's type only, so where its statement starts is read with DuckDB's tokenizer,
    whose offsets are of UTF-8 bytes; and should that ever be read wrong, what runs is still
    an EXPLAIN of a SELECT, never the text that was not checked."""
    data = text.encode()
    tokens = duckdb.tokenize(text)
    ends = [offset for offset, _ in tokens[1:]] + [len(data)]
    words = [(offset, data[offset:end].decode().strip(), kind)
             for (offset, kind), end in zip(tokens, ends) if kind != duckdb.token_type.comment]
    prefix, position = ["EXPLAIN"], 1  # words[0] is EXPLAIN
    if position < len(words) and words[position][1].lower() in ("analyze", "analyse"):
        prefix.append("ANALYZE")
        position += 1
    rest = data[words[position][0]:].decode() if position < len(words) else ""
    explained = _parsed(connection, rest) if rest.startswith("(") else None
    if explained is None and rest.startswith("("):  # not a statement: an option list
        options, position = _option_list(words, position)
        prefix += options
        rest = data[words[position][0]:].decode() if position < len(words) else ""
    explained = explained or _statements(connection, rest)
    if len(explained) != 1 or explained[0].type.name != "SELECT":
        _refuse("EXPLAIN " + " ".join(e.type.name for e in explained))
    rebuilt = _statements(connection, f"{' '.join(prefix)} {explained[0].query}")
    if len(rebuilt) != 1 or rebuilt[0].type.name != "EXPLAIN":
        _refuse("EXPLAIN")
    return rebuilt[0]


def _parsed(connection, sql):
    """DuckDB's statements of `sql`, or None where it does not parse."""
    try:
        return connection.extract_statements(sql)
    except duckdb.Error:
        return None


def _option_list(words, position):
    """The words of the option list that starts at `words[position]` (names, values, commas,
    parentheses only), and the position after it."""
    depth, start = 0, position
    for position in range(start, len(words)):
        _, word, kind = words[position]
        if word not in ("(", ")", ",") and kind not in _OPTION_TOKENS:
            _refuse("EXPLAIN (with such options)")
        depth += {"(": 1, ")": -1}.get(word, 0)
        if depth == 0:
            return [word for _, word, _ in words[start:position + 1]], position + 1
    _refuse("EXPLAIN (with such options)")


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
    try:
        if allow_write:
            return _result(connection.execute(sql, params) if params else connection.execute(sql))
        *first, last = check_read_only(connection, sql)
        for statement in first:
            _result(connection.execute(statement))
        return _result(connection.execute(last, params) if params else connection.execute(last))
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


def confine(connection, files):
    """Let DuckDB itself refuse what a read-only query must not do, whatever its SQL: with
    external access off, it opens no file but the `files` the connection's views read (the
    snapshot's, its current marts'; no directory), so read_text('/etc/passwd'), glob('/*'),
    URLs, and a COPY, ATTACH or EXPORT into the warehouse (a new mart file, a commit of a
    Delta log) or anywhere else fail; it installs and loads no extension; and the locked
    configuration cannot be SET back. Python objects are not scanned by name either.

    DuckDB has no read-only allow-list, and a read-only database does not stop COPY TO: the
    allowed files themselves are guarded by DuckDB writing an existing file through a `tmp_`
    sibling it may not open, and by the statement check (`statements`), which lets no
    statement but a SELECT run, nor an EXPLAIN of anything else. Spilling goes to a private
    directory that DuckDB creates when needed and removes at close (the default, .tmp in the
    working directory, would be allowed as well)."""
    spill = Path(tempfile.gettempdir()) / f"tracewh-{uuid.uuid4().hex}"
    for setting, value in (("temp_directory", str(spill)), ("allowed_paths", list(files)),
                           ("autoinstall_known_extensions", False),
                           ("autoload_known_extensions", False),
                           ("enable_external_access", False), ("lock_configuration", True)):
        connection.execute(f"SET {setting} = ?", [value])
