"""The SQL library's contracts: each module's `-- Reads:` line against the names its SQL
reads (parsed with sqlglot, CTE names left out), each public view's `-- Columns:` block
against what DuckDB says it returns, helpers (`_` names) published nowhere."""

import re

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from tracewh.storage.catalog import EMPTY_SNAPSHOT
from tracewh.query.dialects import describe_macros, script
from tracewh.query.library import (_live_texts, declared_reads, defines, header, is_internal,
                                   library, parameter_types, public_library, published_modules,
                                   tables_read_by)
from tracewh.query.define import library_connection
from tracewh.rules import default_rules

_MACRO = re.compile(r"CREATE OR REPLACE MACRO \w+\((.*?)\) AS TABLE\s*(.*?;)", re.DOTALL)
_NAMES_LINE = re.compile(r"^--   (\S.*)$")
MODULES = {**{name: text for name, (_, text) in library().items()},
           **{f"live/{name}": text for name, text in _live_texts()}}


def _table_name(table):
    """A table's name, or a table macro's (`FROM run_diff_with(...)`)."""
    return table.this.name if isinstance(table.this, exp.Anonymous) else table.name


def referenced_names(sql_text):
    """Every table, view or table macro the SQL reads, but its own CTEs and definitions."""
    macros = _MACRO.findall(sql_text)
    bodies = [body for _, body in macros] if macros else [sql_text]
    found = set()
    for body in bodies:
        for tree in sqlglot.parse(body, read="duckdb"):
            ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
            found |= {_table_name(table) for table in tree.find_all(exp.Table)} - ctes
    return found - set(defines(sql_text))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_reads_line_names_what_the_sql_reads(module):
    text = MODULES[module]
    declared = declared_reads(text)
    assert len(declared) == len(set(declared)), "a name declared twice"
    assert set(declared) == referenced_names(text)


def test_reads_checker_sees_a_missing_declaration():
    """The checker is not blind: a module reading more than it declares is caught."""
    text = ("-- x\n--\n-- Reads: kernels\n--\nCREATE OR REPLACE VIEW v AS WITH k AS "
            "(SELECT * FROM kernels) SELECT * FROM k JOIN runtime USING (run)")
    assert referenced_names(text) == {"kernels", "runtime"} != set(declared_reads(text))


def documented_columns(sql_text):
    """The column names of a header's `-- Columns:` block, in order: lines `--   a, b   what
    they are`, a names list ending in a comma continued on the next line; deeper-indented
    lines continue the description."""
    lines = header(sql_text).splitlines()
    starts = [i for i, line in enumerate(lines) if line.rstrip() == "-- Columns:"]
    assert len(starts) == 1, "no (or more than one) '-- Columns:' line"
    names, continued = [], False
    for line in lines[starts[0] + 1:]:
        if not line.startswith("--  "):
            break
        match = _NAMES_LINE.match(line)
        if match is None and not continued:
            continue
        text = match.group(1) if match else line[2:].strip()
        listed = re.split(r"\s{2,}", text, maxsplit=1)[0]
        names += [name.strip() for name in listed.split(",") if name.strip()]
        continued = listed.endswith(",")
    return names


def test_columns_parser_reads_the_documented_formats():
    text = ("-- x\n--\n-- Columns:\n--   run, phase, rank   partition\n--   a_ns   what,\n"
            "--          more of it\n--   b, c\n--   d,\n--   e      last\n-- Rows: ...\n")
    assert documented_columns(text) == ["run", "phase", "rank", "a_ns", "b", "c", "d", "e"]


@pytest.fixture(scope="module")
def described_types():
    """{view or macro: [(column, DuckDB type)]} of the public library."""
    connection = library_connection()
    found = {name: [row[:2] for row in connection.execute(f"DESCRIBE {name}").fetchall()]
             for name, (_, text) in public_library().items() if "MACRO" not in text}
    found.update(describe_macros())
    return found


@pytest.fixture(scope="module")
def described(described_types):
    return {name: [column for column, _ in columns] for name, columns in described_types.items()}


# What Parquet, Spark and the other readers have no exact type for: a sum of BIGINTs is a
# HUGEINT in DuckDB, which its Parquet writer stores as a DOUBLE (ns past 2^53 rounded).
NOT_PORTABLE = re.compile(r"^(HUGEINT|UHUGEINT|UBIGINT|UINTEGER|USMALLINT|UTINYINT|INTERVAL)$")


def test_no_column_has_a_type_other_engines_lack(described_types):
    found = [f"{name}.{column} {type_}" for name, columns in described_types.items()
             for column, type_ in columns if NOT_PORTABLE.match(type_)]
    assert not found, found


@pytest.mark.parametrize("module", sorted(public_library()))
def test_documented_columns_are_what_the_view_returns(module, described):
    """Names and order, for views and for the module's first macro (the one documented)."""
    text = library()[module][1]
    assert "as in " not in header(text).split("-- Columns:")[1], "columns by reference"
    first = re.search(r"CREATE OR REPLACE (?:VIEW|MACRO) (\w+)", text).group(1)
    assert documented_columns(text) == described[first]


def test_helpers_are_not_published():
    helpers = {name for name in library() if is_internal(name)}
    assert {"_overlap_intervals", "_overlap_windows", "_trace_class_time",
            "_rank_class_intervals"} <= helpers
    for live in ((), ("_op_time",), tuple(name for name, _ in _live_texts())):
        published = published_modules(live)
        assert not helpers & set(published)
        for text in published.values():  # nothing published reads a helper
            assert not any(is_internal(name) for name in referenced_names(text))
    listed = set(public_library())
    assert not helpers & listed and "overlap" in listed
    for dialect in ("duckdb", "spark"):
        statements = script(dialect, EMPTY_SNAPSHOT, "/nowhere", default_rules())
        assert not any(f"VIEW {helper} " in s for s in statements for helper in helpers)


def test_a_connection_has_no_helper_views():
    connection = library_connection()
    names = {row[0] for row in connection.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert "overlap_by_step" in names and not any(is_internal(name) for name in names)


def test_tables_read_by_follow_the_declarations():
    """Through helpers and the live modules: overlap_by_step reads the windows measured at
    ingest and, live, the kernels' classes (and so kernel_names), their launches and the
    steps."""
    assert tables_read_by("overlap_by_step") == {"window_time", "kernels", "kernel_names",
                                                 "runtime", "cpu_ops"}
    assert tables_read_by("overlap") == {"traces", "gpu_time", "gpu_intervals", "kernels",
                                         "kernel_names"}
    assert tables_read_by("runs") == {"traces"}


def test_macro_parameter_types_come_from_the_macro_files():
    text = library()["run_diff"][1]
    assert parameter_types(text) == {"base": "VARCHAR", "new": "VARCHAR",
                                     "threshold_pct": "DOUBLE", "min_ns": "BIGINT",
                                     "key_by": "VARCHAR", "phase_filter": "VARCHAR",
                                     "rank_filter": "INTEGER", "base_phase": "VARCHAR",
                                     "new_phase": "VARCHAR"}
    for name, (_, text) in library().items():
        for params, _ in _MACRO.findall(text):
            assert {p.strip() for p in params.split(",")} <= set(parameter_types(text)), name


def test_log2_buckets_are_exact_next_to_powers_of_two():
    """`_log2_buckets` (kernel_histogram's and launch_latency_histogram's one bucket rule)
    against integer arithmetic (bit_length), where floor(log2(v)) in floating point is one
    off: 2^49 - 1 comes out as bucket 49. The report's own launch latency buckets were that
    floating-point guess."""
    connection = duckdb.connect()
    connection.execute("CREATE TABLE kernel_classes (run VARCHAR, phase VARCHAR, rank INT, "
                       "category VARCHAR, name VARCHAR, class VARCHAR, dur_ns BIGINT)")
    connection.execute("CREATE TABLE launch_latency (run VARCHAR, phase VARCHAR, rank INT, "
                       "category VARCHAR, name VARCHAR, class VARCHAR, "
                       "launch_latency_ns BIGINT)")
    values = sorted({0, 1, 2, 3, 1000} | {2 ** k + d for k in range(1, 61) for d in (-1, 0, 1)})
    connection.executemany("INSERT INTO kernel_classes VALUES ('r', 'p', 0, 'kernel', 'k', "
                           "'other', ?)", [(v,) for v in values])
    connection.executemany("INSERT INTO launch_latency VALUES ('r', 'p', 0, 'kernel', 'k', "
                           "'other', ?)", [(-v,) for v in values[:3]] + [(v,) for v in values])
    connection.execute(library()["_log2_buckets"][1])
    rows = connection.execute("SELECT source, value_ns, bucket, lower_ns, upper_ns "
                              "FROM _log2_buckets").fetchall()

    def expected(value):
        if value <= 0:
            return -1, 0, 1
        bucket = value.bit_length() - 1
        return bucket, 2 ** bucket, 2 ** (bucket + 1)

    assert len(rows) == 2 * len(values) + 3
    for source, value, *bucket in rows:
        assert tuple(bucket) == expected(value), (source, value)
