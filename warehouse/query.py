"""DuckDB connections over a warehouse: one view per table, then the SQL library in `sql/`.

Table views read exactly the files of the warehouse's newest snapshot (see `catalog`: an
ingest committing meanwhile is either wholly in or wholly out), with the Hive partition
columns first. The
connection is in-memory; nothing is written unless the caller allows it.

SQL from users is hostile: a read-only query is checked statement by statement
(`check_read_only`), and the connection it runs on is confined by DuckDB's own settings
(`confine`), so that a statement the check lets through still cannot read or write a file
outside the warehouse's tables, reach the network, load an extension or lift the confinement.
"""

import functools
import hashlib
import importlib.resources
import itertools
import json
import os
import re
import tempfile
import uuid
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from tracewh.ingest.schema import PARTITION_COLUMNS, TABLES

from .catalog import EMPTY_SNAPSHOT, TRACES, Catalog
from .errors import QueryError
from .integrity import check_counts, missing_file_error
from .scope import check_runs, runs_a_query_names
from .rules import create_rules_table, default_rules, effective_rules, rules_fingerprint

_DUCKDB_TYPES = {
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.float64(): "DOUBLE",
    pa.string(): "VARCHAR",
    pa.list_(pa.string()): "VARCHAR[]",
    pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
}
_HIVE_TYPES = "{'run': VARCHAR, 'phase': VARCHAR, 'rank': INTEGER}"
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}
_HEADER_COMMENT = re.compile(r"\A((?:--[^\n]*\n|\s*\n)+)")


def _quote(identifier):
    return '"' + identifier.replace('"', '""') + '"'


def sql_string(text):
    """A DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


def typed_columns(table):
    """(name, DuckDB type) of the table's partition and file columns."""
    return ([(name, _DUCKDB_TYPES[type_]) for name, type_, _ in PARTITION_COLUMNS]
            + [(c.name, _DUCKDB_TYPES[c.type]) for c in table.columns])


def stand_in_sql(table):
    """An empty table of the table's columns, for the library's views to be defined on (and
    bound, which costs nothing) before the table's real view over its files replaces it."""
    columns = ", ".join(f"{_quote(name)} {type_}" for name, type_ in typed_columns(table))
    return f"CREATE TABLE {table.name} ({columns})"


def table_view_sql(table, has_files):
    """The view of a table over the files in variable `files_variable(table)`: a list held
    once, instead of a literal of thousands of paths parsed and copied at every bind."""
    select = (scan_select(table, f"getvariable('{files_variable(table)}')") if has_files
              else empty_select(table))
    return f"CREATE VIEW {table.name} AS {select}"


def empty_select(table):
    """A SELECT of no rows with the table's columns and types."""
    typed = [f"CAST(NULL AS {type_}) AS {_quote(name)}" for name, type_ in typed_columns(table)]
    return f"SELECT {', '.join(typed)} WHERE false"


def scan_select(table, files, options=""):
    """A SELECT of the table's rows from `files` (SQL: a list or a glob), with the Hive
    partition columns first; `options` adds read_parquet options."""
    columns = ", ".join(_quote(c.name) for c in table.columns)
    return (f"SELECT run, phase, rank, {columns} FROM read_parquet({files}, "
            f"hive_partitioning = true, hive_types = {_HIVE_TYPES}{options})")


def files_variable(table):
    return f"tracewh_files_{table.name}"


def library():
    """The SQL library: {view name: (description, SQL text)}, from the `sql` package."""
    views = {}
    resources = importlib.resources.files("tracewh.sql").iterdir()
    for resource in sorted(resources, key=lambda r: r.name):
        if resource.name.endswith(".sql"):
            text = resource.read_text()
            views[resource.name[:-4]] = (describe(text), text)
    return views


_DEFINES = re.compile(r"CREATE OR REPLACE (?:VIEW|MACRO) (\w+)")
_COMMENT = re.compile(r"--[^\n]*")
_WORD = re.compile(r"\w+")


@functools.cache
def _modules_and_needs():
    """({module: SQL text}, {module: [the modules whose views or macros it reads]})."""
    modules = {name: text for name, (_, text) in library().items()}
    needs = {name: sorted({_defined_by()[word] for word in _words(text)
                           if _defined_by().get(word, name) != name})
             for name, text in modules.items()}
    return modules, needs


@functools.cache
def _defined_by():
    """{view or macro name: the library module that defines it}."""
    return {defined: name for name, (_, text) in library().items()
            for defined in _DEFINES.findall(text)}


def _words(sql_text):
    return set(_WORD.findall(_COMMENT.sub("", sql_text)))


def tables_read_by(*names):
    """The tables that tables, library views or macros read, through every view they read:
    what a connection for a query of them must list files of. The live modules' reading
    counts too (custom rules swap them in)."""
    modules, needs = _modules_and_needs()
    live = {resource_name: text for resource_name, text in _live_texts()}
    seen, pending, tables = set(), [_defined_by().get(name, name) for name in names], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in TABLES:
            tables.add(current)
            continue
        text = modules.get(current, "") + live.get(current, "")
        tables |= _words(text) & set(TABLES)
        pending += needs.get(current, []) + [word for word in _words(live.get(current, ""))
                                             if word in modules]
    return tables


@functools.cache
def library_modules_in_order():
    """{module name: SQL text}, each module after those whose views or macros it uses, so that
    a connection defines every view once (defining in file order took 56 attempts for 25
    modules, each failed one binding its inputs for nothing)."""
    modules, needs = _modules_and_needs()
    ordered, visiting = {}, set()

    def place(name):
        if name in ordered:
            return
        if name in visiting:
            raise RuntimeError(f"the SQL library's views depend on each other in a cycle "
                               f"through {name}")
        visiting.add(name)
        for needed in needs[name]:
            place(needed)
        ordered[name] = modules[name]

    for name in sorted(modules):
        place(name)
    return ordered


def library_in_order():
    """The library's SQL texts in the order `library_modules_in_order` defines them."""
    return tuple(library_modules_in_order().values())


def library_fingerprint(rules):
    """A digest of what derived answers follow from besides the data: the SQL library (its
    live modules too) and the kernel rules."""
    text = json.dumps([library_in_order(), _live_texts(), rules])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(sql_text):
    """The first sentence of a module's header comment."""
    match = _HEADER_COMMENT.match(sql_text)
    if not match:
        return ""
    lines = [line.lstrip("-").strip() for line in match.group(1).splitlines()]
    paragraph = " ".join(itertools.takewhile(bool, itertools.dropwhile(lambda x: not x, lines)))
    sentence, dot, _ = paragraph.partition(". ")
    return sentence.rstrip(":") + ("." if dot and not sentence.endswith(".") else "")


def library_connection(rules=None):
    """An in-memory connection with the library defined over empty tables: for describing
    what views and macros return."""
    connection = duckdb.connect()
    define_library(connection, EMPTY_SNAPSHOT, rules or default_rules(),
                   lambda table: connection.execute(stand_in_sql(table)))
    return connection


def connect(root, rules_file=None, runs=None, tables=None, allow_write=False):
    """An in-memory DuckDB connection with every table and library view defined, over one
    snapshot of the warehouse, or over some runs of it only: DuckDB reads the Hive partition
    values of every file a view lists each time the view is bound (0.09 s per 8,000 files),
    so a question about two runs of a thousand is asked of those two. With `tables`, only
    those tables' files are listed (the others look empty): for a query that reads no
    other. The connection is `confine`d to the warehouse's tables unless `allow_write`
    gives it DuckDB's full access (files anywhere, the network, extensions, settings)."""
    catalog = Catalog(root)
    catalog.check_readable()
    snapshot = catalog.snapshot()
    paths = snapshot.paths(root, runs, tables)
    if tables is None:  # every table listed: counting their rows costs no more reading
        check_counts(root, snapshot, runs)
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")  # it would mix into the output
    if not allow_write:
        confine(connection, root)

    def table_view(table):
        files = paths.get(table.name, [])
        connection.execute(f"SET VARIABLE {files_variable(table)} = ?", [files])
        try:
            connection.execute(table_view_sql(table, bool(files)))
        except duckdb.IOException:  # binding opens the files: say which one is gone
            missing = missing_file_error(root, table.name, files)
            if missing is None:
                raise
            raise missing from None

    define_library(connection, snapshot, effective_rules(root, rules_file), table_view)
    return connection


def confine(connection, root):
    """Let DuckDB itself refuse what a read-only query must not do, whatever its SQL: with
    external access off, it opens no file but under the warehouse's table directories (the
    files the snapshot names), so read_text('/etc/passwd'), glob('/*'), COPY TO, ATTACH and
    URLs fail; it installs and loads no extension; and the locked configuration cannot be
    SET back. Python objects are not scanned by name either. DuckDB's allow-list serves
    reading and writing alike (it has no read-only one): only COPY writes into it, and the
    statement check refuses COPY. Spilling goes to a private directory that DuckDB creates
    when needed and removes at close (the default, .tmp in the working directory, would be
    allowed as well)."""
    tables = [f"{Path(root) / name}/" for name in TABLES]
    spill = Path(tempfile.gettempdir()) / f"tracewh-{uuid.uuid4().hex}"
    for setting, value in (("temp_directory", str(spill)), ("allowed_directories", tables),
                           ("autoinstall_known_extensions", False),
                           ("autoload_known_extensions", False),
                           ("enable_external_access", False), ("lock_configuration", True)):
        connection.execute(f"SET {setting} = ?", [value])


def define_library(connection, snapshot, rules, table_view):
    """Define the rules table, every library view and macro, and each table by
    `table_view(table)`, on `connection`. Binding a view over N files reads N Hive paths
    (0.09 s at 8,000), and defining the library binds its tables ~50 times: the library is
    defined on empty stand-ins, which the tables' views then replace (DuckDB binds a view
    again where a query uses it)."""
    for table in TABLES.values():
        connection.execute(stand_in_sql(table))
    create_rules_table(connection, rules)
    for text in library_in_order():
        connection.execute(text)
    for text in live_replacements(snapshot, rules).values():
        connection.execute(text)
    for table in TABLES.values():
        connection.execute(f"DROP TABLE {table.name}")
        table_view(table)


def connect_to_runs(root, runs, rules_file=None, reads=None):
    """A connection over `runs` only, each checked to be in the warehouse first (an unknown
    one is refused with close names); with `reads` (names of views, macros or tables), over
    the tables they read only."""
    catalog = Catalog(root)
    catalog.check_readable()
    check_runs([info.run for info in catalog.runs()], *runs)
    tables = tables_read_by(*reads) if reads else None
    return connect(root, rules_file, runs=set(runs), tables=tables)


def list_runs(root):
    """(columns, rows) of the `runs` view, in commit order, computed over the `traces` log
    alone: each traces file's statistics hold its row's values, so 1,000 runs (8,000 files)
    take no data file read. A file without them (written by another engine) means the
    view is asked of the table itself."""
    catalog = Catalog(root)
    catalog.check_readable()
    traces = catalog.trace_rows()
    if traces is None:
        return query_warehouse(root, "SELECT * FROM runs ORDER BY first_seq")[0]
    connection = duckdb.connect()
    connection.register(TRACES, traces)
    connection.execute(library()["runs"][1])
    return run_query(connection, "SELECT * FROM runs ORDER BY first_seq")


def _cached_classes_apply(snapshot, rules):
    """The class intervals and lengths measured at ingest (gpu_intervals, gpu_time) hold when
    the rules are the defaults they were computed with; otherwise the views classify kernels
    live (sql/live/)."""
    return rules == default_rules() and set(snapshot.class_rules) <= {rules_fingerprint(rules)}


def live_replacements(snapshot, rules):
    """{module: SQL} of the sql/live/ modules that replace the views reading class figures
    merged at ingest, when those figures do not hold; else {}."""
    return {} if _cached_classes_apply(snapshot, rules) else dict(_live_texts())


@functools.cache
def _live_texts():
    live = importlib.resources.files("tracewh.sql").joinpath("live")
    return tuple((resource.name[:-4], resource.read_text())
                 for resource in sorted(live.iterdir(), key=lambda r: r.name)
                 if resource.name.endswith(".sql"))


def check_read_only(connection, sql):
    """Refuse statements that write, copy out, attach, install or change settings, also under
    an EXPLAIN (EXPLAIN ANALYZE runs its statement); return the statements."""
    statements = _statements(connection, sql)
    for statement in statements:
        kind = _refused_kind(connection, statement)
        if kind is not None:
            raise QueryError(f"{kind} statements are refused: queries are read-only "
                             "(use --allow-write to run them)")
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
        raise QueryError(_one_line(error)) from None
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
        raise QueryError(_one_line(error)) from None


def run_statements(connection, sql, allow_write=False):
    """Execute every statement of `sql`; return the (column names, rows) of each one that
    returns rows, in order (or the single empty result of statements that return none)."""
    statements = _statements(connection, sql) if allow_write else check_read_only(connection, sql)
    results = []
    try:
        for statement in statements:
            results.append(_result(connection.execute(statement)))
    except duckdb.Error as error:
        raise QueryError(_one_line(error)) from None
    return [result for result in results if result[0]] or results[-1:]


def query_to_parquet(root, sql, path, rules_file=None, allow_write=False):
    """Run every statement of `sql` and write the last one's result to `path` as Parquet,
    its types kept (DuckDB's Arrow result; zstd); return the number of rows. The file
    appears whole or not at all."""
    with connect(root, rules_file, *_scope_of(sql, allow_write),
                 allow_write=allow_write) as connection:
        statements = (_statements(connection, sql) if allow_write
                      else check_read_only(connection, sql))
        if statements[-1].type.name != "SELECT":
            raise QueryError(f"the last statement is a {statements[-1].type.name}, not a "
                             "SELECT: it has no rows to write")
        try:
            for statement in statements[:-1]:
                _result(connection.execute(statement))  # fetched: the connection is free again
            table = connection.sql(statements[-1].query).to_arrow_table()
        except duckdb.Error as error:
            raise QueryError(_one_line(error)) from None
    target = Path(path)
    temporary = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, temporary, compression="zstd")
    os.replace(temporary, target)
    return table.num_rows


def query_warehouse(root, sql, rules_file=None, allow_write=False):
    """Connect and run every statement of `sql`: a list of (columns, rows). A read-only query
    about given runs (see `runs_a_query_names`) is asked of a connection over those runs."""
    runs, tables = _scope_of(sql, allow_write)
    with connect(root, rules_file, runs, tables, allow_write=allow_write) as connection:
        return run_statements(connection, sql, allow_write=allow_write)


def _scope_of(sql, allow_write):
    """(runs, tables) a read-only query about given runs needs listed, else (None, None)."""
    source = None if allow_write else runs_a_query_names(sql)
    if source is None:
        return None, None
    runs, name = source
    return runs, tables_read_by(name)


def _one_line(error):
    text = " ".join(str(error).split())
    if isinstance(error, duckdb.PermissionException):  # the confinement: say what it is
        text = (" ".join(str(error).split("\nLINE ")[0].split())
                + " (a query reads the warehouse's tables only; --allow-write gives full access)")
    return text
