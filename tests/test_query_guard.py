"""`tracewh query` cannot write, reach out or read files outside the warehouse: refused by the
statement check (EXPLAIN ANALYZE runs its statement) and, for what the check lets through,
by DuckDB's own confinement. The warehouse's path holds a space and both quotes throughout."""

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracewh.query import statements, table_sql
from tracewh.cli import cli
from tracewh.errors import QueryError

from .conftest import EXAMPLES, connect

DLRM0 = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
WAREHOUSE = "w h'q\"x"
SCRIPT = "SELECT '#!/bin/sh' || chr(10) || 'echo pwned' AS x"


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    """One warehouse (of one trace) for the module, whose tests only read it, and a secret
    file beside it."""
    base = tmp_path_factory.mktemp("guard")
    result = CliRunner().invoke(cli, ["--warehouse", str(base / WAREHOUSE), "ingest",
                                      str(DLRM0), "--run", "d", "--phase", "train"])
    assert result.exit_code == 0, result.output
    (base / "secret.txt").write_text("s3cret\n")
    return base


@pytest.fixture
def warehouse(shared_dir):
    return shared_dir / WAREHOUSE


@pytest.fixture
def outside(shared_dir, tmp_path, monkeypatch):
    """The secret file; the working directory is the test's, where relative paths such as
    'evil.sh' land."""
    monkeypatch.chdir(tmp_path)
    return shared_dir / "secret.txt"


@pytest.fixture
def unchanged(shared_dir, tmp_path):
    """Checks, after the test, that no file appeared or went in the warehouse, beside it or
    in the working directory."""
    before = tree(shared_dir), tree(tmp_path)
    yield
    assert (tree(shared_dir), tree(tmp_path)) == before


def tree(path):
    return sorted(p.relative_to(path) for p in path.rglob("*"))


def quoted(path):
    return table_sql.sql_string(str(path))


def refused(result):
    """The refusal is one error line with exit status 2."""
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output


@pytest.mark.parametrize("sql", [
    f"EXPLAIN ANALYZE COPY ({SCRIPT}) TO 'evil.sh' (HEADER false, QUOTE '')",
    f"explain analyze copy ({SCRIPT.lower()}) to 'evil.sh' (header false, quote '')",
    f"EXPLAIN /* a */ ANALYZE -- b\n COPY ({SCRIPT}) TO 'evil.sh' (HEADER false, QUOTE '')",
    f"EXPLAIN (ANALYZE, FORMAT json) COPY ({SCRIPT}) TO 'evil.sh'",
    "EXPLAIN COPY (SELECT 1) TO 'evil.sh'",
    "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
    "EXPLAIN ANALYZE INSTALL httpfs",
])
def test_explain_of_a_statement_that_is_not_a_select_is_refused(tracewh, outside, unchanged,
                                                                 sql):
    result = tracewh("query", sql, expect=None)
    refused(result)
    assert "statements are refused: queries are read-only" in result.output


def test_explain_analyze_copy_as_the_second_statement_from_stdin(warehouse, outside, unchanged):
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "query", "-"], input=(
        f"SELECT 1;\nEXPLAIN ANALYZE COPY ({SCRIPT}) TO 'evil.sh' (HEADER false, QUOTE '');"))
    refused(result)
    assert "EXPLAIN COPY statements are refused" in result.output


@pytest.mark.parametrize("reader", ["read_text", "read_csv", "read_blob", "read_json",
                                    "read_parquet"])
def test_files_outside_the_warehouse_cannot_be_read(tracewh, outside, unchanged, reader):
    result = tracewh("query", f"SELECT * FROM {reader}({quoted(outside)})", expect=None)
    refused(result)
    assert "Permission Error" in result.output and "s3cret" not in result.output


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM glob('*')",
    "SELECT * FROM read_parquet('https://example.com/x.parquet')",
])
def test_system_files_listings_and_urls_are_refused(tracewh, outside, sql):
    result = tracewh("query", sql, expect=None)
    refused(result)
    assert "Permission Error" in result.output and "root:" not in result.output


def test_a_path_cannot_climb_out_of_a_table_directory(tracewh, outside, warehouse):
    climbing = warehouse / "kernels" / ".." / ".." / outside.name
    refused(tracewh("query", f"SELECT * FROM read_text({quoted(climbing)})", expect=None))
    # the warehouse's own state is not a table either
    refused(tracewh("query", f"SELECT * FROM glob({quoted(warehouse / '_tracewh' / '*')})",
                    expect=None))


@pytest.mark.parametrize("sql", [
    "COPY (SELECT 1) TO 'evil.sh'",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO 'evil.sh'",
    "EXPORT DATABASE 'evil'",
    "ATTACH 'evil.db'",
    "INSTALL httpfs",
    "LOAD httpfs",
])
def test_duckdb_refuses_writes_and_extensions_without_the_statement_check(
        warehouse, outside, unchanged, sql):
    """The statement check is bypassed (allow_write=True on a confined connection): DuckDB
    itself refuses."""
    with connect(warehouse) as connection:
        with pytest.raises(QueryError, match="Permission Error"):
            statements.run_statements(connection, sql, allow_write=True)


@pytest.mark.parametrize("sql", ["SET enable_external_access = true",
                                 "RESET lock_configuration", "SET allowed_directories = ['/']",
                                 "SET temp_directory = '.'"])
def test_the_confinement_cannot_be_lifted(warehouse, outside, sql):
    with connect(warehouse) as connection:
        with pytest.raises(QueryError, match="the configuration has been locked"):
            statements.run_statements(connection, sql, allow_write=True)
        with pytest.raises(QueryError, match="Permission Error"):
            statements.run_statements(connection, f"SELECT * FROM read_text({quoted(outside)})")


def test_queries_over_tables_and_views_still_work(tracewh, outside, warehouse, tmp_path):
    def rows(sql):
        return json.loads(tracewh("query", "--format", "json", sql).stdout)

    assert rows("SELECT count(*) AS n FROM kernels") == [{"n": 261}]
    assert rows("SELECT count(*) AS n FROM kernels WHERE run = 'd'") == [{"n": 261}]  # scoped
    assert [row["rank"] for row in rows("SELECT rank, overlap_ns FROM overlap")] == [0]
    plan = rows("EXPLAIN ANALYZE SELECT count(*) FROM kernels")
    assert plan[0]["explain_key"] == "analyzed_plan"
    # the snapshot's own files, named by their path, are the warehouse's
    kernels = next((warehouse / "kernels").rglob("*.parquet"))
    assert rows(f"SELECT count(*) AS n FROM read_parquet({quoted(kernels)})") == [{"n": 261}]
    out = tmp_path / "kernels.parquet"  # written by pyarrow, not by DuckDB
    assert tracewh("query", "SELECT * FROM kernels", "--out", out).stderr == \
        f"wrote 261 rows to {out}\n"


def test_allow_write_opens_every_file(tracewh, outside, tmp_path):
    result = tracewh("query", "--allow-write", "--format", "json",
                     f"SELECT content FROM read_text({quoted(outside)})")
    assert json.loads(result.stdout) == [{"content": "s3cret\n"}]
    tracewh("query", "--allow-write", "EXPLAIN ANALYZE COPY (SELECT 1 AS one) TO 'one.csv'")
    assert (tmp_path / "one.csv").read_text() == "one\n1\n"


def test_the_python_api_has_full_access(warehouse, outside):
    """Documented: wh.sql runs in the user's own process, as DuckDB would."""
    import tracewh

    with tracewh.open(warehouse) as wh:
        assert wh.sql(f"SELECT content FROM read_text({quoted(outside)})").fetchall() == \
            [("s3cret\n",)]


def tree_hashes(path):
    """{relative path: sha256} of every file under `path`: what a write would change."""
    import hashlib

    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def shifted_explain(statement):
    """EXPLAIN ANALYZE of `statement` (one line, holding the text 'SELECT 1 --' in a string)
    behind a comment of as many two-byte characters as there are characters before that text:
    a guard that slices the SQL at DuckDB's tokenizer offsets (bytes) as if they were
    characters sees `SELECT 1 --...` and lets the COPY run."""
    return f"EXPLAIN ANALYZE /*{'é' * statement.index('SELECT 1 --')}*/ {statement}"


def live_file(warehouse, directory):
    return quoted(next((warehouse / directory).rglob("*.parquet")))


ATTACKS = {
    "a csv in marts/": lambda wh: f"COPY (SELECT 'x SELECT 1 --') TO {quoted(wh / 'marts' / 'pwn.csv')}",
    "a commit of the log": lambda wh: (
        "COPY (SELECT 'x SELECT 1 --') TO "
        f"{quoted(wh / 'traces' / '_delta_log' / '00000000000000000000.json')}"),
    "over a live table file": lambda wh: (
        "COPY (SELECT * REPLACE (dur_ns * 1000 AS dur_ns) FROM read_parquet("
        f"{live_file(wh, 'kernels')}) WHERE 'x SELECT 1 --' <> '') TO {live_file(wh, 'kernels')}"),
    "over a live mart file": lambda wh: (
        f"COPY (SELECT * FROM read_parquet({live_file(wh, 'marts/kernel_stats')}) "
        f"WHERE 'x SELECT 1 --' = '') TO {live_file(wh, 'marts/kernel_stats')}"),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_multi_byte_characters_do_not_shift_the_explain_check(shared_dir, warehouse, outside,
                                                              attack):
    """Issue 42: 16 `é` in a comment made the check of EXPLAIN see a SELECT inside a string
    literal, and DuckDB ran the COPY: through the CLI and the API, nothing is written."""
    import tracewh

    sql = shifted_explain(ATTACKS[attack](warehouse))
    before = tree_hashes(shared_dir)
    refused(CliRunner().invoke(cli, ["--warehouse", str(warehouse), "query", sql]))
    with tracewh.open(warehouse) as wh, pytest.raises(QueryError, match="refused"):
        wh.query(sql)
    assert tree_hashes(shared_dir) == before
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "query",
                                      "SELECT count(*) FROM kernels"])
    assert result.exit_code == 0 and "261" in result.output, result.output


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_confinement_alone_writes_no_file_of_the_warehouse(shared_dir, warehouse, outside,
                                                               attack):
    """The statement check bypassed (allow_write=True on a confined connection): DuckDB opens
    no directory, only the snapshot's own files, so nothing new appears in the warehouse and
    an existing file is not replaced (DuckDB writes it through a sibling first)."""
    before = tree_hashes(shared_dir)
    with connect(warehouse) as connection:
        with pytest.raises(QueryError, match="Permission Error"):
            statements.run_statements(connection, ATTACKS[attack](warehouse), allow_write=True)
    assert tree_hashes(shared_dir) == before


# Hostile text around forbidden statements: any Unicode but surrogates (which no command line
# carries), so that characters of 1 to 4 bytes shift any offset read from the SQL text.
UNICODE = st.text(st.characters(exclude_categories=("Cs",)), max_size=24)
FORBIDDEN = [
    "COPY (SELECT {s} AS {i}) TO {marts}",
    "COPY (SELECT * FROM read_parquet({live}) WHERE {s} <> '') TO {live} (USE_TMP_FILE false)",
    "COPY (SELECT {s}) TO {log}",
    "INSERT INTO kernels (name) VALUES ({s})",
    "CREATE TABLE {i} AS SELECT {s}",
    "ATTACH {marts} AS {i}",
    "EXPORT DATABASE {marts}",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET allowed_directories = [{s}, '/']",
    "PRAGMA enable_profiling",
    "CALL checkpoint()",
]
WRAPPERS = ["{c} {stmt}", "EXPLAIN ANALYZE {c} {stmt}", "EXPLAIN {c} ANALYZE {stmt}",
            "EXPLAIN (ANALYZE) {c} {stmt}", "SELECT {s};\nEXPLAIN ANALYZE {c} {stmt}",
            "EXPLAIN ANALYZE /*{shift}*/ {stmt}"]
# bounded, so that CI runs it in well under a minute
GUARD_PROFILE = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow])


def sql_comment(text):
    return "/*" + text.replace("*/", "* /") + "*/"


def sql_identifier(text):
    return '"' + text.replace('"', '""') + '"'


@GUARD_PROFILE
@given(forbidden=st.sampled_from(FORBIDDEN), wrapper=st.sampled_from(WRAPPERS),
       comment=UNICODE, string=UNICODE, identifier=UNICODE)
def test_forbidden_statements_in_random_unicode_write_nothing(shared_dir, forbidden, wrapper,
                                                              comment, string, identifier):
    """A forbidden statement, wrapped in comments, strings and identifiers of any Unicode and
    behind EXPLAIN [ANALYZE] (also with the comment that shifted the old check's byte
    offsets), is refused on one line through the CLI and the API, and no file of the
    warehouse changes."""
    import tracewh

    warehouse = shared_dir / WAREHOUSE
    literal = quoted("x SELECT 1 --" + string)
    statement = forbidden.format(
        s=literal, i=sql_identifier(identifier or "t"), live=live_file(warehouse, "kernels"),
        marts=quoted(warehouse / "marts" / f"{identifier}pwn"),
        log=quoted(warehouse / "traces" / "_delta_log" / "00000000000000000000.json"))
    sql = wrapper.format(c=sql_comment(comment), s=literal, stmt=statement,
                         shift="é" * max(statement.find("SELECT 1 --"), 0))
    before = tree_hashes(shared_dir)
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "query", sql])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    with tracewh.open(warehouse) as wh, pytest.raises(QueryError):
        wh.query(sql)
    assert tree_hashes(shared_dir) == before


@pytest.mark.parametrize("sql", [
    "EXPLAIN ANALYZE (SELECT count(*) FROM kernels) UNION ALL (SELECT 1)",
    "EXPLAIN (ANALYZE) (SELECT count(*) FROM kernels)",
    "EXPLAIN ANALYZE /* é */ (FORMAT json) SELECT 'é' AS é",
    "EXPLAIN (FORMAT 'json', ANALYZE) FROM kernels",
])
def test_explain_of_a_select_runs_as_rebuilt(tracewh, outside, unchanged, sql):
    """What runs is the EXPLAIN rebuilt from its checked parts: every form DuckDB accepts
    still runs (a parenthesis opens an option list or the statement)."""
    rows = json.loads(tracewh("query", "--format", "json", sql).stdout)
    assert rows[0]["explain_key"] == "analyzed_plan"
