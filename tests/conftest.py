"""Shared fixtures: the real traces in ../shared/traces, a fresh warehouse, a CLI runner."""

import contextlib
import fcntl
import gzip
import json
import os
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracewh.storage.catalog import Catalog
from tracewh.cli import cli
from tracewh.derived.marts import MARTS

# The marts with rows on the DLRM runs most tests build: DLRM has no CUDA graph launch, so
# graph_replay_kernels is empty there (tests/test_graph_replay.py compares it on a replay).
FILLED_MARTS = [name for name in MARTS if name != "graph_replay_kernels"]

ROOT = Path(__file__).resolve().parents[1]
# TRACEWH_TEST_SHARED moves ../shared (a test checks that the suite collects without it).
SHARED = Path(os.environ.get("TRACEWH_TEST_SHARED") or ROOT.parent / "shared") / "traces"
EXAMPLES = ROOT / "examples" / "dlrm-8rank"


def shared(relative):
    """A trace from ../shared/traces; the test is skipped when it is not there. Call it inside
    a test, not at collection (parametrize with `SHARED / relative` and `require` it)."""
    return require(SHARED / relative)


def require(path):
    """`path`, or skip the test when it does not exist (a trace of ../shared)."""
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


def load_reference(path):
    """The trace decoded by the standard library, numbers exact (floats as Decimal)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    document = json.loads(raw, parse_float=Decimal)
    return document if isinstance(document, dict) else {"traceEvents": document}


def live_files(warehouse):
    """The absolute paths of every file the warehouse's snapshot reads."""
    catalog = Catalog(warehouse)
    return [warehouse / table / f.path
            for table, files in catalog.snapshot().files(warehouse).items() for f in files]


def mart_frame(warehouse, name):
    """A mart as DeltaTable reads it (its own snapshot, no tracewh code), as polars."""
    import polars as pl
    from deltalake import DeltaTable

    from tracewh.derived.marts import mart_path

    return pl.from_arrow(DeltaTable(str(mart_path(warehouse, name))).to_pyarrow_dataset()
                         .to_table())


def connect(warehouse, rules_file=None, **options):
    """A confined DuckDB connection over the warehouse's newest snapshot, as `tracewh query`
    has (`options`: runs, tables, allow_write, marts: see `Warehouse.connect`)."""
    import tracewh

    return tracewh.open(warehouse, rules_file).connect(**options)


def define_helpers(connection, *names):
    """Define on `connection` the internal helpers `names` (and the helpers they read), which
    the library publishes only inlined into its views: for tests comparing a helper with a
    reference."""
    from tracewh.query.library import is_internal, library_modules_in_order, modules_read_by

    needed = modules_read_by(*names)
    for name, text in library_modules_in_order().items():
        if name in needed and is_internal(name):
            connection.execute(text)


def written_library_connection():
    """An in-memory connection over empty tables with every library module defined as
    written (helpers as views of their own), each once, in the order connections define them."""
    import duckdb

    from tracewh.query.library import library_in_order
    from tracewh.peaks import create_peaks_table, default_peaks
    from tracewh.rules import create_rules_table, default_rules
    from tracewh.storage.schema import TABLES
    from tracewh.query.table_sql import stand_in_sql

    connection = duckdb.connect()
    for table in TABLES.values():
        connection.execute(stand_in_sql(table))
    create_rules_table(connection, default_rules())
    create_peaks_table(connection, default_peaks())
    for text in library_in_order():
        connection.execute(text)
    return connection


def view_frame(warehouse, name):
    """A library view's rows over the warehouse's snapshot, computed by its SQL (never read
    from its mart), as polars."""
    import polars as pl

    return pl.from_arrow(connect(warehouse, marts=False).sql(f"SELECT * FROM {name}")
                         .to_arrow_table())


def table_contents(warehouse, drop=()):
    """Every table's rows, as JSON text, sorted, without what differs from one ingest of the
    same files to the next (trace ids, commit times, the order of commits) nor the `traces`
    columns in `drop`: what two ways of ingesting the same traces must agree on."""
    def rows(sql):
        result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "query", "--format",
                                          "json", sql])
        assert result.exit_code == 0, (result.output, result.exception)
        return result.stdout

    from tracewh.storage.directory import TRACES
    from tracewh.storage.schema import TABLES

    found = {"seqs": rows("SELECT ingest_seq FROM traces ORDER BY ALL")}
    for name in TABLES:
        dropped = ["trace_id", *(["ingested_at", "ingest_seq", *drop] if name == TRACES else [])]
        found[name] = rows(f"SELECT * EXCLUDE ({', '.join(dropped)}) FROM {name} ORDER BY ALL")
    return found


def error_lines(text):
    """The `error: ` lines of a command's output."""
    return [line for line in text.splitlines() if line.startswith("error: ")]


def sorted_frame(frame):
    return frame.sort(frame.columns, nulls_last=True)


@contextlib.contextmanager
def other_writer(warehouse, seconds=10):
    """Hold the warehouse's writers' lock as another writer committing would, for `seconds` at
    most: a writer that should give up but waits on commits then, and its test fails instead
    of hanging."""
    path = Catalog(warehouse).state / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        release = threading.Timer(seconds, fcntl.flock, (handle, fcntl.LOCK_UN))
        release.start()
        try:
            yield
        finally:
            release.cancel()


@pytest.fixture
def warehouse(tmp_path):
    return tmp_path / "wh"


def cli_on(warehouse):
    """The CLI against `warehouse`: run("ingest", path, ..., expect=0) -> Result."""
    runner = CliRunner()

    def run(*args, expect=0):
        result = runner.invoke(cli, ["--warehouse", str(warehouse), *map(str, args)])
        if expect is not None:
            assert result.exit_code == expect, (result.output, result.exception)
        return result

    return run


@contextlib.contextmanager
def unchanged(warehouse):
    """Fails when a file under `warehouse` was added, removed or written inside the block: a
    warehouse built once for the tests of a module that only read it stays as built."""
    def files():
        return {path: (path.stat().st_size, path.stat().st_mtime_ns)
                for path in warehouse.rglob("*") if path.is_file()}

    before = files()
    yield
    assert files() == before, f"{warehouse}, shared by tests that only read it, was changed"


def built_once(tmp_path_factory, name, ingest):
    """A module-scoped fixture's body: a warehouse under a fresh folder `name`, filled by
    `ingest(tracewh)` (the CLI on it) once for the module's tests that only read it; yields
    its path and fails the module if they changed it (see `unchanged`)."""
    warehouse = tmp_path_factory.mktemp(name) / "wh"
    ingest(cli_on(warehouse))
    with unchanged(warehouse):
        yield warehouse


@pytest.fixture
def tracewh(warehouse):
    """Run the CLI against the test's warehouse: tracewh("ingest", path, ...) -> Result."""
    return cli_on(warehouse)


def sql_on(tracewh):
    """Rows of a query as a list of dicts, through the JSON output of the CLI `tracewh`."""

    def query(text):
        return json.loads(tracewh("query", "--format", "json", text).stdout)

    return query


@pytest.fixture
def sql(tracewh):
    """Rows of a query as a list of dicts (through the CLI's JSON output)."""
    return sql_on(tracewh)
