"""The warehouse as Delta Lake tables, read by other engines: deltalake, polars, pyarrow and
DuckDB over the snapshot's files agree with `tracewh query`, also while --replace and killed
ingests run beside them."""

import collections
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable

from tracewh.storage.schema import TABLES
from tracewh.storage import delta, delta_schema
from tracewh.storage.catalog import Catalog

from .conftest import EXAMPLES, ROOT, connect

DLRM0 = sorted(EXAMPLES.glob("worker0_*"))[0]


def counts_by_reader(warehouse, versions, table, run=None):
    """{reader: rows of `table` (of `run`)} read at `versions` by each engine."""
    path = str(warehouse / table)
    version = versions[table]
    dataset = DeltaTable(path, version=version).to_pyarrow_dataset()
    files = [str(warehouse / table / f.path) for f in delta.live_files(
        warehouse / table, version, None if run is None else [run])]
    lazy = pl.scan_delta(path, version=version)
    if run is not None:
        lazy = lazy.filter(pl.col("run") == run)
        dataset = dataset.filter(ds.field("run") == run)
    return {
        "deltalake": dataset.count_rows(),
        "polars": lazy.select(pl.len()).collect().item(),
        "pyarrow": ds.dataset(files, format="parquet").count_rows() if files else 0,
        "duckdb": duckdb.connect().execute(f"SELECT count(*) FROM read_parquet({files!r})")
                  .fetchall()[0][0]
                  if files else 0,
    }


def test_every_table_is_a_delta_table_with_fixed_partition_types(tracewh, warehouse):
    tracewh("ingest", DLRM0, "--run", "2026-11-29", "--phase", "train")
    tracewh("ingest", DLRM0, "--run", "0930", "--phase", "train")
    for name in TABLES:  # counters and other_events are empty, and exist all the same
        table = DeltaTable(str(warehouse / name))
        assert table.metadata().partition_columns == ["run", "phase", "rank"]
        types = {f.name: f.type.type for f in table.schema().fields[:3]}
        assert types == {"run": "string", "phase": "string", "rank": "integer"}
        frame = pl.scan_delta(str(warehouse / name)).select("run", "rank").collect()
        assert frame.schema == {"run": pl.String, "rank": pl.Int32}
    runs = pl.scan_delta(str(warehouse / "traces")).select("run").collect()["run"].to_list()
    assert sorted(runs) == ["0930", "2026-11-29"]  # strings, not a date and an int
    assert pl.scan_delta(str(warehouse / "counters")).collect().height == 0


def test_readers_agree_with_tracewh(tracewh, warehouse, sql):
    tracewh("ingest", EXAMPLES, "--run", "a", "--phase", "train", "--jobs", "2")
    tracewh("ingest", DLRM0, "--run", "b", "--phase", "train")
    versions = json.loads(tracewh("snapshot").stdout)["versions"]
    for table in TABLES:
        expected = sql(f"SELECT count(*) AS n FROM {table}")[0]["n"]
        assert set(counts_by_reader(warehouse, versions, table).values()) == {expected}, table
    assert sql("SELECT count(*) AS n FROM kernels WHERE run = 'b'")[0]["n"] == 261
    assert set(counts_by_reader(warehouse, versions, "kernels", "b").values()) == {261}


def test_a_query_about_one_run_reads_only_its_files(tracewh, warehouse):
    for run in ("a", "b", "c"):
        tracewh("ingest", EXAMPLES, "--run", run, "--phase", "train", "--jobs", "2")
    plan = connect(warehouse).execute("EXPLAIN ANALYZE SELECT count(*) FROM kernels "
                                      "WHERE run = 'b'").fetchall()[0][1]
    assert "Scanning Files: 8/24" in plan and "Total Files Read: 8" in plan


def test_a_trace_that_fits_writes_one_file_per_table(tracewh, warehouse):
    """DLRM rank 0 is read in two chunks, and instants has rows in both: one file all the
    same."""
    tracewh("ingest", DLRM0, "--run", "r")
    files = Catalog(warehouse).snapshot().files(warehouse)
    assert {table: len(found) for table, found in files.items() if found} == {
        table: 1 for table in TABLES if table not in ("counters", "other_events")}


def test_replace_with_several_files_keeps_them_all(tracewh, sql, tmp_path):
    other = tmp_path / "other.json.gz"
    other.write_bytes(sorted(EXAMPLES.glob("worker1_*"))[0].read_bytes())
    tracewh("ingest", DLRM0, "--run", "r", "--rank", "0")
    tracewh("ingest", DLRM0, other, "--run", "r", "--rank", "0", "--replace")
    assert sql("SELECT count(*) AS n, count(DISTINCT sha256) AS files FROM traces") == [
        {"n": 2, "files": 2}]
    tracewh("ingest", other, "--run", "r", "--rank", "0", "--replace")
    assert sql("SELECT count(*) AS n FROM traces")[0]["n"] == 1


def test_replace_is_one_commit_per_table_and_retires_files_until_vacuum(tracewh, warehouse):
    tracewh("ingest", DLRM0, "--run", "r", "--phase", "train")
    first = delta.live_files(warehouse / "kernels", delta.latest_version(warehouse / "kernels"))
    tree = [(table, f) for table in ("call_tree", "kernel_ops", "kernel_attribution",
                                     "call_ancestors", "backward_links")
            for f in delta.live_files(warehouse / table, delta.latest_version(warehouse / table))]
    tracewh("ingest", DLRM0, "--run", "r", "--phase", "train", "--replace")
    log = warehouse / "kernels" / "_delta_log"
    newest = [json.loads(line) for line in
              (log / f"{delta.latest_version(warehouse / 'kernels'):020d}.json").open()]
    assert [next(iter(a)) for a in newest] == ["commitInfo", "remove", "add"]
    assert (warehouse / "kernels" / first[0].path).exists()
    result = tracewh("vacuum", "--retain", "0")
    # one per table the old trace has rows in (21: critical_path_edges, op_call_time,
    # window_time and the five of the call tree among them), one per mart the run was
    # recomputed in (8)
    assert result.stdout.startswith("deleted 29 files")
    assert not (warehouse / "kernels" / first[0].path).exists()
    assert len(tree) == 5 and not any((warehouse / t / f.path).exists() for t, f in tree)


def test_replacing_a_run_of_many_ranks_reads_each_table_s_files_once(tracewh, warehouse, sql,
                                                                      monkeypatch):
    """Each rank's commit removes its old files from every table: the run's files are read
    from a table's log once and followed through the command's own commits, not read again
    at every rank (~45 ms a table at 8,000 files). Every old file goes all the same."""
    tracewh("ingest", EXAMPLES, "--run", "r", "--phase", "train")
    before = sql("SELECT count(*) AS n FROM kernels")
    old = {table: {f.path for f in delta.live_files(warehouse / table,
                                                   delta.latest_version(warehouse / table))}
           for table in TABLES}
    read = []
    live_files = Catalog.live_files

    def counted(catalog, table, version, runs=None):
        read.append(table)
        return live_files(catalog, table, version, runs)

    monkeypatch.setattr(Catalog, "live_files", counted)
    tracewh("ingest", EXAMPLES, "--run", "r", "--phase", "train", "--replace")
    # once each for 8 ranks' commits; traces once more first, for the run's stored traces
    assert collections.Counter(read) == {**{table: 1 for table in TABLES}, "traces": 2}
    for table in TABLES:
        new = {f.path for f in delta.live_files(warehouse / table,
                                                delta.latest_version(warehouse / table))}
        assert not new & old[table], table
    assert sql("SELECT count(*) AS n FROM kernels") == before
    assert sql("SELECT count(DISTINCT rank) AS n FROM traces") == [{"n": 8}]


def test_a_killed_commit_is_removed_by_the_next_writer(tracewh, warehouse, sql, monkeypatch):
    """Rows that reached a table but never `traces` go with a Delta remove, not an unlink."""
    tracewh("ingest", DLRM0, "--run", "kept", "--phase", "train")
    real_commit = delta.commit

    def die_before_traces(path, *args, **kwargs):
        if path.name == "traces":
            raise RuntimeError("killed")  # as a SIGKILL would: nothing runs after it
        return real_commit(path, *args, **kwargs)

    monkeypatch.setattr(delta, "commit", die_before_traces)
    tracewh("ingest", DLRM0, "--run", "lost", expect=1)
    monkeypatch.setattr(delta, "commit", real_commit)
    raw = pl.scan_delta(str(warehouse / "kernels")).group_by("run").len().collect()
    assert sorted(raw.rows()) == [("kept", 261), ("lost", 261)]  # the raw table, meanwhile
    assert sql("SELECT DISTINCT run FROM kernels") == [{"run": "kept"}]  # never in tracewh
    tracewh("ingest", DLRM0, "--run", "kept", "--phase", "train")  # the next writer
    raw = pl.scan_delta(str(warehouse / "kernels")).group_by("run").len().collect()
    assert raw.rows() == [("kept", 261)]
    newest = (warehouse / "kernels" / "_delta_log" /
              f"{delta.latest_version(warehouse / 'kernels'):020d}.json").read_text()
    assert '"operation":"ROLLBACK"' in newest and '"remove"' in newest
    assert list((warehouse / "kernels").glob("run=lost/*/*/*.parquet"))  # until vacuum


def test_optimize_merges_a_traces_files_and_keeps_every_row(tracewh, warehouse, tmp_path,
                                                            monkeypatch):
    from tracewh.ingest import reader, writer
    monkeypatch.setattr(writer, "MERGE_BELOW_ROWS", 0)  # as a trace too large to merge
    monkeypatch.setattr(reader, "BLOCK_SIZE", 1 << 16)  # ~150 chunks for 2 workers
    big = tmp_path / "big_train.json"  # a file per table and worker: several per table
    document = json.loads(DLRM0.read_bytes() if DLRM0.suffix == ".json" else
                          __import__("gzip").decompress(DLRM0.read_bytes()))
    document["traceEvents"] = document["traceEvents"] * 12
    big.write_text(json.dumps(document))
    tracewh("ingest", big, "--run", "r", "--jobs", "2")
    before = connect(warehouse)
    files_before = sum(len(v) for v in Catalog(warehouse).snapshot().files(warehouse).values())
    result = tracewh("optimize", "--run", "r")
    after = connect(warehouse)
    files_after = sum(len(v) for v in Catalog(warehouse).snapshot().files(warehouse).values())
    assert files_after < files_before and result.stdout.startswith("merged ")
    for table in TABLES:
        old = before.execute(f"SELECT * FROM {table}").fetchall()
        assert after.execute(f"SELECT * FROM {table}").fetchall() == old, table  # in order
    log = (warehouse / "cpu_ops" / "_delta_log" /
           f"{delta.latest_version(warehouse / 'cpu_ops'):020d}.json").read_text()
    assert '"dataChange":false' in log and '"operation":"OPTIMIZE"' in log


def test_a_warehouse_of_an_earlier_tracewh_asks_for_a_new_ingest(tracewh, warehouse):
    (warehouse / "_tracewh").mkdir(parents=True)
    (warehouse / "_tracewh" / "manifest.json").write_text('{"format": 4, "traces": []}')
    for command in (("runs",), ("ingest", DLRM0)):
        result = tracewh(*command, expect=2)
        assert result.stderr.count("\n") == 1 and "earlier tracewh" in result.stderr
        assert "ingest the traces again into a new warehouse" in result.stderr


CHURN = r"""
import os, random, signal, subprocess, sys, time
warehouse, stable, examples, seconds = sys.argv[1:5]
command = [sys.executable, "-m", "tracewh", "--warehouse", warehouse, "ingest"]
deadline = time.monotonic() + float(seconds)
while time.monotonic() < deadline:
    subprocess.run(command + [stable, "--run", "stable", "--phase", "train", "--replace"],
                   check=True, capture_output=True)
    killed = subprocess.Popen(command + [examples, "--run", "killed", "--jobs", "1",
                                         "--replace"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(random.uniform(0.05, 1.0))
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
"""


def test_readers_see_whole_snapshots_during_replaces_and_killed_ingests(tracewh, warehouse,
                                                                       sql):
    tracewh("ingest", DLRM0, "--run", "stable", "--phase", "train")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(warehouse), str(DLRM0),
                              str(EXAMPLES), "25"], env=env, stderr=subprocess.PIPE, text=True)
    reads = 0
    try:
        while churn.poll() is None:
            versions = Catalog(warehouse).snapshot().versions
            for table, expected in (("kernels", 261), ("traces", 1)):
                counts = counts_by_reader(warehouse, versions, table, "stable")
                assert set(counts.values()) == {expected}, (table, counts)
            (counts,) = sql("SELECT (SELECT count(*) FROM kernels JOIN traces USING (trace_id))"
                            " AS whole, (SELECT count(*) FROM kernels) AS every")  # one snapshot
            assert counts["whole"] == counts["every"]  # no kernel of a trace that is not whole
            assert sql("SELECT count(*) AS n FROM kernels WHERE run = 'stable'") == [{"n": 261}]
            reads += 1
    finally:
        churn.kill()
    assert churn.wait() in (0, -signal.SIGKILL), churn.stderr.read()
    assert reads >= 10


def test_a_warehouse_being_created_reads_as_empty(warehouse):
    """A reader between the first table's creation and the first pointer (a race CI found)."""
    (warehouse / "_tracewh").mkdir(parents=True)
    delta.create(warehouse / "kernels", TABLES["kernels"])
    assert connect(warehouse).execute("SELECT count(*) FROM kernels").fetchall() == [(0,)]


def test_a_table_is_created_as_delta_rs_creates_it(tmp_path):
    """Version 0 written by tracewh holds what delta-rs writes for the same schema (the
    protocol, and a metaData of the same schema string, partition columns, format and
    configuration) but the table's id and time; the marts' types (a timestamp, a boolean)
    included. Every reader reads it: deltalake, polars, and pyarrow's dataset of it."""
    mart = pa.schema([("run", pa.string()), ("n", pa.int64()), ("share", pa.float64()),
                      ("start_time", pa.timestamp("us", tz="UTC")),
                      ("relative_time", pa.bool_())])
    cases = [(name, delta.table_schema(table), delta.PARTITION_NAMES)
             for name, table in TABLES.items()] + [("mart", mart, [])]
    for name, schema, partitions in cases:
        ours, theirs = tmp_path / "ours" / name, tmp_path / "theirs" / name
        assert delta.create_table(ours, schema, partitions) == 0
        DeltaTable.create(str(theirs), schema=schema, partition_by=partitions or None)
        actions = [_log_actions(path, 0) for path in (ours, theirs)]
        for each in actions:
            for changing in ("id", "createdTime"):
                each["metaData"].pop(changing)
        assert actions[0]["protocol"] == actions[1]["protocol"] == {
            "minReaderVersion": 1, "minWriterVersion": 2}
        assert actions[0]["metaData"] == actions[1]["metaData"], name
        assert DeltaTable(str(ours)).schema() == DeltaTable(str(theirs)).schema()
        assert pl.scan_delta(str(ours)).collect().schema == pl.scan_delta(
            str(theirs)).collect().schema
        assert DeltaTable(str(ours)).to_pyarrow_dataset().count_rows() == 0


def test_a_column_delta_cannot_read_at_reader_version_1_is_refused(tmp_path):
    """A timestamp without a time zone (or not in microseconds) would need a table feature,
    or be read at another scale: no table is created."""
    for type_ in (pa.timestamp("us"), pa.timestamp("ns", tz="UTC")):
        with pytest.raises(delta_schema.UnsupportedType, match="column t: no Delta type"):
            delta.create_table(tmp_path / "t", pa.schema([("run", pa.string()), ("t", type_)]))
        assert not (tmp_path / "t").exists()


def test_two_writers_creating_a_table_at_once_share_it(tmp_path):
    """Of writers creating the same table at once, one writes version 0 and the others take
    its table, of the same schema; a table of another schema there is an error."""
    path, schema = tmp_path / "kernels", delta.table_schema(TABLES["kernels"])
    start = threading.Barrier(6)

    def create(_):
        start.wait()
        return delta.create_table(path, schema, delta.PARTITION_NAMES)

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert list(pool.map(create, range(6))) == [0] * 6
    assert sorted(os.listdir(path / "_delta_log")) == [f"{0:020d}.json"]
    with pytest.raises(delta.TableExists, match="another schema"):
        delta.create_table(path, delta.table_schema(TABLES["cpu_ops"]), delta.PARTITION_NAMES)
    with pytest.raises(delta.TableExists, match="another schema"):
        delta.create_table(path, schema)  # not partitioned
    assert delta.create_table(path, schema, delta.PARTITION_NAMES) == 0


def test_a_schema_replaced_removes_every_live_file(tracewh, warehouse):
    """A mart made again: its new schema and a remove of each of its files, as one commit,
    read by delta-rs as an empty table of the new schema; the live files found from the
    JSON commits, or from a checkpoint and those after it."""
    tracewh("ingest", DLRM0, "--run", "a", "--phase", "train")
    tracewh("ingest", DLRM0, "--run", "b", "--phase", "train")
    schema = pa.schema([("run", pa.string()), ("x", pa.int64())])
    for name, checkpointed in (("overlap", False), ("kernel_stats", True)):
        path = warehouse / "marts" / name
        version = delta.latest_version(path)
        if checkpointed:
            DeltaTable(str(path), version=version - 1).create_checkpoint()
        live = {f.path: f.size for f in delta.live_files(path, version)}
        assert len(live) == 2
        assert delta.replace_schema(path, version, schema) == version + 1
        removed = {action["remove"]["path"]: action["remove"]["size"]
                   for action in _log_lines(path, version + 1) if "remove" in action}
        assert removed == live
        table = DeltaTable(str(path))
        assert table.version() == version + 1 and table.to_pyarrow_table().num_rows == 0
        assert [f.name for f in table.schema().fields] == ["run", "x"]


def _log_lines(path, version):
    return [json.loads(line) for line in (path / "_delta_log" / f"{version:020d}.json")
            .read_text().splitlines()]


def _log_actions(path, version):
    """{kind: action} of a commit of one action of each kind."""
    return {kind: body for action in _log_lines(path, version)
            for kind, body in action.items()}
