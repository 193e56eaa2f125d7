"""`tracewh ingest --engine ray`: files decoded by Ray tasks that write straight into the
warehouse (a local directory, SeaweedFS's S3), committed at once by the driver with a Delta
transaction. Compared with the in-process ingest of the same files, table by table; a worker
killed mid-task is retried and nothing is stored twice; a driver run again with the same
transaction commits nothing. A large file is cut into chunks, each a task, then one task
measures its per-trace tables: the same rows as the in-process ingest, on a local and an S3
warehouse. The commit's own checks (a missing file, a file of another schema, an old
transaction version), and the chunked path's cuts to confirm and failures, run on the
in-process engine, without Ray."""

import gzip
import json
import os
import socket
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tracewh
from tracewh import storage
from tracewh.cli import cli
from tracewh.errors import WarehouseError
from tracewh.ingest import distributed, reader
from tracewh.ingest.distributed import (KILL_FIRST_CHUNK, KILL_FIRST_JOB, decode_job,
                                        new_transaction)
from tracewh.ingest.engines import InProcess
from tracewh.ingest.pipeline import ingest_options
from tracewh.storage import delta
from tracewh.storage.batch import Transaction, commit_written
from tracewh.storage.catalog import Catalog
from tracewh.storage.directory import TRACES
from tracewh.storage.local import LocalStorage

from .conftest import EXAMPLES, error_lines, shared, table_contents
from .object_store import make_bucket, seaweedfs

RANKS = sorted(EXAMPLES.glob("*.json*"))
FEW = RANKS[:4]
BUCKET = "tracewh-ray"
# The tests' large-file size, and chunk size: DeepSeek's train.json (3 MB) is cut into ~65
# chunks, a DLRM rank (53 KB gzipped, 0.9 MB of JSON) into ~20 that carry their bytes.
SMALL_BLOCK = 48 << 10


def _cli(warehouse, *args, expect=0):
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), *map(str, args)])
    if expect is not None:
        assert result.exit_code == expect, (result.output, result.exception)
    return result


def _traces_version(warehouse):
    return delta.latest_version(storage.location(str(warehouse)) / TRACES)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The in-process ingest of every rank, and of the first four, as runs r and f."""
    warehouse = tmp_path_factory.mktemp("reference") / "wh"
    _cli(warehouse, "ingest", *RANKS, "--run", "r", "--phase", "train")
    _cli(warehouse, "ingest", *FEW, "--run", "f", "--phase", "train")
    return warehouse


@pytest.fixture(scope="module")
def expected(reference):
    return table_contents(reference)


def _large_files():
    return [shared("deepseek-profile-data/train.json"), RANKS[0]]


@pytest.fixture(scope="module")
def large_reference(tmp_path_factory):
    """The in-process ingest of the large files, each one chunk (the default block size)."""
    warehouse = tmp_path_factory.mktemp("large") / "wh"
    _cli(warehouse, "ingest", *_large_files(), "--run", "big", "--phase", "train")
    return warehouse


@pytest.fixture(scope="module")
def large_expected(large_reference):
    return table_contents(large_reference)


@pytest.fixture
def small_blocks(monkeypatch):
    """Files over SMALL_BLOCK are large, cut into chunks of it (by this process: the
    driver), whose part files, however small, are written into the warehouse by their
    jobs."""
    monkeypatch.setattr(reader, "BLOCK_SIZE", SMALL_BLOCK)
    monkeypatch.setattr(distributed, "SENT_BELOW_BYTES", 0)


def _chunk_files(warehouse, table="cpu_ops"):
    """How many files the snapshot's `table` has: one per chunk that holds its rows, where a
    trace is cut (the in-process ingest of the large files stores 2)."""
    return len(Catalog(warehouse).snapshot().paths(storage.location(str(warehouse)),
                                                  tables=[table])[table])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """SeaweedFS, its AWS variables set in this process, then a local Ray of 2 CPUs on
    127.0.0.1 (its workers inherit them): started once, shut down at the end. Ray's servers
    add a listener on every interface, so these tests run only in a network namespace that
    holds loopback alone (tests/loopback_only.py, as `make test` runs them)."""
    ray = pytest.importorskip("ray")
    if not os.environ.get("TRACEWH_TEST_LOOPBACK_ONLY"):
        pytest.skip("Ray's servers listen on every interface: run these tests under "
                    "tests/loopback_only.py (as `make test` does)")
    assert [name for _, name in socket.if_nameindex()] == ["lo"], "not loopback only"
    with seaweedfs() as env, pytest.MonkeyPatch.context() as patch:
        make_bucket(env, BUCKET)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setenv("TRACEWH_CACHE", str(tmp_path_factory.mktemp("cache")))
        storage._STORES.clear()  # clients made under another environment
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, logging_level="WARNING")
        try:
            yield env
        finally:
            ray.shutdown()
            storage._STORES.clear()


@pytest.mark.ray
def test_ray_ingest_stores_what_the_in_process_one_does(cluster, expected, tmp_path):
    warehouse = tmp_path / "wh"
    result = _cli(warehouse, "ingest", *RANKS, "--run", "r", "--phase", "train",
                  "--engine", "ray", "--txn-id", "nightly:7")
    assert "run r: 8 files ingested, 26,538 events" in result.stdout
    _cli(warehouse, "ingest", *FEW, "--run", "f", "--phase", "train", "--engine", "ray")
    assert table_contents(warehouse) == expected
    # The driver run again (it died before it could say it committed): --replace, so that
    # the stored files do not make it a no-op by themselves; the transaction does.
    version = _traces_version(warehouse)
    for txn_id in ("nightly:7", "nightly:6"):
        _cli(warehouse, "ingest", *RANKS, "--run", "r", "--phase", "train", "--engine", "ray",
             "--txn-id", txn_id, "--replace")
        assert _traces_version(warehouse) == version
    assert table_contents(warehouse) == expected
    # every file under the partitions is named by the snapshot: the re-run's are deleted
    catalog = Catalog(warehouse)
    live = {path for paths in catalog.snapshot().paths(warehouse).values() for path in paths}
    on_disk = {str(p) for p in warehouse.glob("*/run=*/*/*/*.parquet")}
    assert on_disk == live


@pytest.mark.ray
@pytest.mark.s3
def test_ray_into_s3_with_a_worker_killed(cluster, expected, tmp_path, monkeypatch):
    """The first task's worker kills itself after writing its files: Ray runs the task again,
    and the run is whole, every row once (the dead attempt's files are named by no commit)."""
    monkeypatch.setenv(KILL_FIRST_JOB, str(tmp_path))
    warehouse = f"s3://{BUCKET}/killed"
    result = _cli(warehouse, "ingest", *RANKS, "--run", "r", "--phase", "train",
                  "--engine", "ray")
    assert (tmp_path / "killed").exists()
    assert "run r: 8 files ingested, 26,538 events" in result.stdout
    monkeypatch.delenv(KILL_FIRST_JOB)
    _cli(warehouse, "ingest", *FEW, "--run", "f", "--phase", "train", "--engine", "ray")
    assert table_contents(warehouse) == expected


@pytest.mark.ray
@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_a_large_file_is_decoded_chunk_by_chunk(cluster, large_expected, small_blocks,
                                                 tmp_path, monkeypatch, where):
    """Each chunk a Ray task, then one task for the trace: row for row what the in-process
    ingest stores; on S3, the trace's task killed after writing its files is run again (the
    same names written again) and nothing is stored twice."""
    warehouse = tmp_path / "wh"
    if where == "s3":
        warehouse = f"s3://{BUCKET}/large"
        monkeypatch.setenv(KILL_FIRST_JOB, str(tmp_path))
    result = _cli(warehouse, "ingest", *_large_files(), "--run", "big", "--phase", "train",
                  "--engine", "ray")
    assert "run big: 2 files ingested" in result.stdout
    assert (tmp_path / "killed").exists() == (where == "s3")
    assert table_contents(warehouse) == large_expected
    assert _chunk_files(warehouse) > 20


@pytest.mark.ray
def test_a_chunk_task_killed_mid_chunk(cluster, large_expected, small_blocks, tmp_path,
                                       monkeypatch):
    """The first chunk task's worker is killed (SIGKILL) after writing its part files, before
    it returns: Ray runs that chunk again, and the run is whole, every row once, committed in
    one commit per table (no version holds part of it), no file left in the partitions that
    the snapshot does not name."""
    monkeypatch.setenv(KILL_FIRST_CHUNK, str(tmp_path))
    warehouse = tmp_path / "wh"
    result = _cli(warehouse, "ingest", *_large_files(), "--run", "big", "--phase", "train",
                  "--engine", "ray")
    assert (tmp_path / "killed").exists()
    assert "run big: 2 files ingested" in result.stdout
    assert table_contents(warehouse) == large_expected
    assert _chunk_files(warehouse) > 20
    # created (version 0), then one commit per table that holds rows; `traces` has its pointer
    versions = Catalog(warehouse).snapshot().versions
    assert _traces_version(warehouse) == 2 and versions["cpu_ops"] == 1
    assert {version for table, version in versions.items() if table != TRACES} == {0, 1}
    live = {path for paths in Catalog(warehouse).snapshot().paths(warehouse).values()
            for path in paths}
    assert {str(p) for p in warehouse.glob("*/run=*/*/*/*.parquet")} == live


@pytest.mark.ray
@pytest.mark.s3
def test_ray_workers_read_trace_objects_themselves(cluster, large_reference, small_blocks,
                                                   tmp_path):
    """Traces on S3, ingested by Ray into an S3 warehouse: the driver streams each large
    object once to cut and hash it, the workers read their chunks by ranged GETs (no local
    path in common); the rows are the in-process ingest's of the local files."""
    inputs = storage.location(f"s3://{BUCKET}/inputs")
    for path in _large_files():
        storage.of(inputs).put_file(path, inputs / "big" / path.name)
    warehouse = f"s3://{BUCKET}/from-objects"
    result = _cli(warehouse, "ingest", f"{inputs}/big/", "--run", "big", "--phase", "train",
                  "--engine", "ray")
    assert "run big: 2 files ingested" in result.stdout
    assert (table_contents(warehouse, drop=["source_path"])
            == table_contents(large_reference, drop=["source_path"]))
    sources = _cli(warehouse, "query", "--format", "csv",
                   "SELECT source_path FROM traces ORDER BY 1").stdout.split()[1:]
    assert sources == sorted(f"{inputs}/big/{path.name}" for path in _large_files())
    assert _chunk_files(warehouse) > 20


@pytest.mark.ray
def test_a_tracewh_error_in_a_task_is_raised_as_it_was(cluster):
    """A worker the warehouse refuses (no permission there) is one line, not Ray's error
    with the worker's traceback."""
    from tracewh.ingest.engines import Ray

    def refuse(text):
        raise WarehouseError(f"refused: {text}")

    with Ray() as engine, pytest.raises(WarehouseError) as raised:
        engine.result(engine.submit(refuse, "x"))
    assert type(raised.value) is WarehouseError and str(raised.value) == "refused: x"


def _written(warehouse, paths, run="w"):
    options = ingest_options(run=run, phase="train")
    catalog = Catalog(warehouse)
    with catalog.locked():
        pass
    return catalog, [decode_job(catalog.root, path, options)[1] for path in paths]


def test_in_process_engine_commits_once_per_table(tmp_path, reference):
    warehouse = tmp_path / "wh"
    with tracewh.open(warehouse) as opened:
        outcomes = opened.ingest_files(RANKS, ingest_options(run="r", phase="train"),
                                       engine=InProcess())
    assert [o.status for o in outcomes] == ["ingested"] * len(RANKS)
    catalog = Catalog(warehouse)
    # created (version 0), its pointer (1), then one commit of all eight ranks
    assert catalog.snapshot().versions["kernels"] == 1 and _traces_version(warehouse) == 2
    assert table_contents(warehouse)["kernels"] == _contents_of_run(reference, "r")


def _contents_of_run(warehouse, run):
    return _cli(warehouse, "query", "--format", "json",
                f"SELECT * EXCLUDE (trace_id) FROM kernels WHERE run = '{run}' "
                "ORDER BY ALL").stdout


def _large_files_in_process(tmp_path, large_expected):
    """The warehouse the large files are ingested into by the chunked path without Ray,
    each ingested, with the in-process ingest's rows."""
    warehouse = tmp_path / "wh"
    with tracewh.open(warehouse) as opened:
        outcomes = opened.ingest_files(_large_files(), ingest_options(run="big", phase="train"),
                                       engine=InProcess())
    assert [o.status for o in outcomes] == ["ingested"] * 2
    assert table_contents(warehouse) == large_expected
    return warehouse


def test_a_large_file_on_the_in_process_engine(tmp_path, large_expected, small_blocks):
    """The chunked path without Ray: the same rows as the in-process ingest."""
    warehouse = _large_files_in_process(tmp_path, large_expected)
    assert _chunk_files(warehouse) > 20


def _puts(monkeypatch):
    """The paths every file is put at, in order, by any job of this process."""
    puts = []
    put_file = LocalStorage.put_file
    monkeypatch.setattr(LocalStorage, "put_file",
                        lambda store, source, where: (puts.append(str(where)),
                                                      put_file(store, source, where)))
    return puts


def _partition_files(warehouse):
    """(the data files under the tables' partitions, those the snapshot names)."""
    live = {path for paths in Catalog(warehouse).snapshot().paths(warehouse).values()
            for path in paths}
    return {str(p) for p in warehouse.glob("*/run=*/*/*/*.parquet")}, live


def test_chunk_files_are_committed_as_their_jobs_wrote_them(tmp_path, large_expected,
                                                            small_blocks, monkeypatch):
    """A large file's chunks are written into their partitions by their jobs, once, and
    committed as they are: the trace's job writes only the per-trace tables and the small
    parts it merges (neither file has a baseTimeNanoseconds to rebase by), and the chunks'
    files merged are deleted once committed."""
    puts = _puts(monkeypatch)
    warehouse = _large_files_in_process(tmp_path, large_expected)
    on_disk, live = _partition_files(warehouse)
    assert on_disk == live
    data_puts = [path for path in puts if "/run=" in path and "/traces/" not in path]
    assert len(data_puts) == len(set(data_puts))  # no file written twice
    for trace_id in {Path(path).name.split("-")[0] for path in data_puts}:
        written = [path for path in data_puts if trace_id in path]
        committed = [path for path in written if path in live]
        # train.json: 184 files written, 182 committed (two merged); the DLRM rank 59, 57
        assert len(written) > 50 and len(written) - len(committed) in (1, 2, 3)


def test_small_chunk_files_are_sent_back(tmp_path, small_blocks, monkeypatch):
    """A chunk's part files below SENT_BELOW_BYTES are sent back with its summary, not
    written into the warehouse: train.json's chunks of 48 KB make none larger than 32 KB,
    so every data file written is one its trace's job wrote, and is committed."""
    monkeypatch.setattr(distributed, "SENT_BELOW_BYTES", 32 << 10)
    trace = shared("deepseek-profile-data/train.json")
    tables = _ingest_both(tmp_path, trace, _puts(monkeypatch))
    assert len(tables["written"]) > 100
    assert set(tables["written"]) == {path for path in tables["live"] if "/traces/" not in path}


def test_chunk_files_never_committed_are_vacuumed(tmp_path, small_blocks):
    """A driver killed after its jobs wrote a large file's chunks' files and its trace's,
    before it committed them: `vacuum` keeps them while they may be an ingest's in flight
    (younger than --retain-uncommitted), and deletes them once older."""
    warehouse = tmp_path / "wh"
    catalog = Catalog(warehouse)
    with catalog.locked():  # the tables
        pass
    outcome, _ = distributed.submit_large(
        InProcess(), catalog, shared("deepseek-profile-data/train.json"),
        ingest_options(run="big", phase="train")).value
    stray = _partition_files(warehouse)[0]
    assert outcome.status == "staged" and len(stray) > 150
    _cli(warehouse, "vacuum", "--retain", "0")
    assert _partition_files(warehouse)[0] == stray
    _cli(warehouse, "vacuum", "--retain", "0", "--retain-uncommitted", "0")
    assert not _partition_files(warehouse)[0]


def test_chunk_files_rebased(tmp_path, small_blocks, monkeypatch):
    """A gzipped trace's base time is not guessed: its chunks' files, written with the times
    as they are, are rebased by the trace's job, which writes every part under a new number
    (never over a chunk's file, which a job run again reads), and the chunks' files are
    deleted once it is committed. The rows are the in-process ingest's."""
    trace = json.loads(shared("deepseek-profile-data/train.json").read_text())
    trace["baseTimeNanoseconds"] = 1_700_000_000_000_000_000
    zipped = tmp_path / "based.json.gz"
    zipped.write_bytes(gzip.compress(json.dumps(trace).encode()))
    assert zipped.stat().st_size > SMALL_BLOCK  # large: cut into chunks
    tables = _ingest_both(tmp_path, zipped, _puts(monkeypatch))
    chunks = {int(Path(path).stem.rsplit("-", 1)[1]) for path in tables["written"]
              if path not in tables["live"]}
    assert len(chunks) > 20
    committed = [int(Path(path).stem.rsplit("-", 1)[1]) for path in tables["live"]
                 if "/cpu_ops/" in path]
    assert len(committed) > 10 and min(committed) > max(chunks)


def test_chunk_files_of_a_trace_found_in_another_partition(tmp_path, small_blocks, monkeypatch):
    """A trace whose distributedInfo follows its events is expected at rank 0 while its
    chunks are written (its name gives none): its trace's job writes every part again under
    its rank, 3, and nothing is left at rank 0. The rows are the in-process ingest's."""
    trace = json.loads(shared("deepseek-profile-data/train.json").read_text())
    trace["distributedInfo"] = {**trace.pop("distributedInfo"), "rank": 3}
    late = tmp_path / "late.json"
    late.write_text(json.dumps(trace))  # after traceEvents, as json.loads keeps the order
    assert late.read_text().index('"distributedInfo"') > late.read_text().index('"traceEvents"')
    tables = _ingest_both(tmp_path, late, _puts(monkeypatch))
    assert len([path for path in tables["written"] if "/rank=0/" in path]) > 100
    assert all("/rank=3/" in path for path in tables["live"])


def _ingest_both(tmp_path, trace, puts):
    """Ingest `trace` in-process and on the InProcess engine (into tmp_path/reference and
    engine): check both store the same rows, and the engine's warehouse holds no file its
    snapshot does not name; {"written": the engine's data files as put, "live": those its
    snapshot names}."""
    options = ingest_options(run="odd", phase="train")
    for name, engine in (("reference", None), ("engine", InProcess())):
        del puts[:]
        with tracewh.open(tmp_path / name) as opened:
            assert [o.status for o in opened.ingest_files([trace], options, engine=engine)] \
                == ["ingested"]
    assert table_contents(tmp_path / "engine") == table_contents(tmp_path / "reference")
    on_disk, live = _partition_files(tmp_path / "engine")
    assert on_disk == live
    return {"written": [path for path in puts if "/run=" in path and "/traces/" not in path],
            "live": live}


def _odd_trace(path, broken=False):
    """A trace whose events' args hold `"ph"` strings (an unconfirmed cut's event count is
    wrong: its file is cut again, confirming each cut) or, `broken`, one malformed event
    in the middle."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": 10 * i, "dur": 5,
               "pid": 1, "tid": 1, "args": {"note": "ph"} if i % 7 == 3 else {}}
              for i in range(3000)]
    text = json.dumps({"traceEvents": events}, indent=1)
    if broken:
        middle = text.index('"op1500"')
        text = text[:middle] + '"op1500" "x"' + text[middle + len('"op1500"'):]
    path.write_text(text)
    return path


def test_cuts_to_confirm_and_a_bad_chunk_as_in_process(tmp_path, monkeypatch):
    """A file whose unconfirmed cuts are wrong is read again the careful way, and a malformed
    one fails with the in-process ingest's error, on the in-process engine as through Ray."""
    monkeypatch.setattr(reader, "BLOCK_SIZE", 16 << 10)
    files = [_odd_trace(tmp_path / "odd.json"), _odd_trace(tmp_path / "bad.json", True)]
    assert all(reader.BLOCK_SIZE * 8 < f.stat().st_size for f in files)
    options = ingest_options(run="odd", phase="train")
    outcomes = {}
    for name, engine in (("reference", None), ("engine", InProcess())):
        with tracewh.open(tmp_path / name) as opened:
            outcomes[name] = opened.ingest_files(files, options, engine=engine)
    assert [o.status for o in outcomes["engine"]] == ["ingested", "failed"]
    assert ([(o.status, o.events, o.error) for o in outcomes["engine"]]
            == [(o.status, o.events, o.error) for o in outcomes["reference"]])
    assert "bad.json" in outcomes["engine"][1].error
    assert table_contents(tmp_path / "engine") == table_contents(tmp_path / "reference")


def test_no_chunk_file_is_left_by_a_failed_or_strict_ingest(tmp_path, monkeypatch):
    """The chunks' files of a file whose cuts were wrong (cut again under a new trace id),
    of a file that fails, and under --strict of a file staged whole, are all deleted: no
    file is left in the partitions."""
    monkeypatch.setattr(reader, "BLOCK_SIZE", 16 << 10)
    monkeypatch.setattr(distributed, "SENT_BELOW_BYTES", 0)
    files = [_odd_trace(tmp_path / "odd.json"), _odd_trace(tmp_path / "bad.json", True)]
    with tracewh.open(tmp_path / "wh") as opened:
        outcomes = opened.ingest_files(files, ingest_options(run="odd", phase="train",
                                                             strict=True), engine=InProcess())
    assert [o.status for o in outcomes] == ["skipped", "failed"]
    assert not list((tmp_path / "wh").glob("*/run=*/*/*/*.parquet"))


def test_a_transaction_is_committed_once(tmp_path):
    catalog, written = _written(tmp_path / "wh", FEW[:2])
    results, before = commit_written(catalog, written, Transaction("app", 3))
    assert not before and {r.status for r in results.values()} == {"ingested"}
    version = _traces_version(tmp_path / "wh")
    for again in (Transaction("app", 3), Transaction("app", 2)):  # a retry; an older batch
        _, rewritten = _written(tmp_path / "wh", FEW[:2])
        results, before = commit_written(catalog, rewritten, again, replace=True)
        assert before and {r.status for r in results.values()} == {"unchanged"}
        assert _traces_version(tmp_path / "wh") == version
        assert not any(catalog.store.exists(where) for trace in rewritten
                       for where in trace.locations(catalog))
    _, newer = _written(tmp_path / "wh", FEW[:2])
    results, _ = commit_written(catalog, newer, Transaction("app", 4), replace=True)
    assert {r.status for r in results.values()} == {"replaced"}
    assert delta.open_table(catalog.table_path(TRACES)).transaction_version("app") == 4


def test_a_missing_file_is_not_committed(tmp_path):
    catalog, written = _written(tmp_path / "wh", FEW[:2])
    lost = written[1].locations(catalog)[0]
    lost.unlink()
    version = _traces_version(tmp_path / "wh")
    with pytest.raises(WarehouseError, match="a worker's file is missing"):
        commit_written(catalog, written, new_transaction())
    assert _traces_version(tmp_path / "wh") == version


def test_a_file_of_another_schema_is_not_committed(tmp_path):
    catalog, written = _written(tmp_path / "wh", FEW[:1])
    trace = written[0]
    where = catalog.table_path("kernels") / trace.files["kernels"][0].path
    table = pq.read_table(where)
    wider = table.append_column("extra", pa.array([1] * table.num_rows))
    pq.write_table(wider, where)
    trace.schemas["kernels"] = wider.schema.serialize().to_pybytes()
    with pytest.raises(WarehouseError, match="not the table's"):
        commit_written(catalog, written, new_transaction())
    trace.schemas["kernels"] = table.schema.serialize().to_pybytes()  # a worker that lies
    with pytest.raises(WarehouseError, match="bytes, not"):
        commit_written(catalog, written, new_transaction())
    assert catalog.snapshot().seq == 0


def test_no_link_followed_into_a_partition(tmp_path):
    """The driver writes the `traces` rows into their partitions: not through a link."""
    catalog, written = _written(tmp_path / "wh", FEW[:1])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "wh" / TRACES / "run=w").symlink_to(elsewhere)
    with pytest.raises(WarehouseError, match="is a symbolic link"):
        commit_written(catalog, written, new_transaction())
    assert not any(elsewhere.iterdir())


def test_without_ray_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    result = _cli(tmp_path / "wh", "ingest", FEW[0], "--engine", "ray", expect=2)
    assert error_lines(result.output) == [
        "error: --engine ray needs Ray: pip install 'tracewh[ray]'"]
    assert "Traceback" not in result.output


def test_engine_options_need_an_engine(tmp_path):
    result = _cli(tmp_path / "wh", "ingest", FEW[0], "--txn-id", "x", expect=2)
    assert "--address and --txn-id go with --engine ray" in result.output
    assert not (tmp_path / "wh").exists()


def test_txn_id_versions():
    assert new_transaction("nightly:12") == Transaction("tracewh-ingest:nightly", 12)
    assert new_transaction("job-7") == Transaction("tracewh-ingest:job-7", 0)
    assert new_transaction().app_id != new_transaction().app_id
