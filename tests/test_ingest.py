"""Ingesting real traces: every event lands in exactly one table, exactly, in every format."""

import gzip
import hashlib
import json
import re
import shutil
from collections import Counter

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.ingest.normalize import LEGACY_CATEGORIES, TABLE_OF_CATEGORY, TABLE_OF_PHASE, _ids
from tracewh.ingest.summaries import merge

from .conftest import EXAMPLES, load_reference, shared
from .reference import EVENT_TABLES, kept_keys, union_length


def reference_table(event):
    """Pure-Python statement of the routing rules, for comparison."""
    ph = event.get("ph")
    if ph == "X":
        category = event.get("cat")
        category = LEGACY_CATEGORIES.get(category, category.lower() if category else None)
        return TABLE_OF_CATEGORY.get(category, "other_events")
    return TABLE_OF_PHASE.get(ph, "other_events")


def expected_counts(path):
    return Counter(reference_table(e) for e in load_reference(path)["traceEvents"])


def table_counts(sql, run):
    rows = sql(f"SELECT relation, sum(events) AS n FROM event_counts WHERE run = '{run}' "
               "GROUP BY relation")
    return Counter({r["relation"]: r["n"] for r in rows})


FORMATS = [
    "deepseek-profile-data/train.json",                         # integer µs, DeepEP, EP64
    "hta/trace_file_list/inference_rank_1.json.gz",             # old schema, capitalised cats
    "hta/nccl_parser_config/nccl_data.json.gz",                 # baseTimeNanoseconds, float ts
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",  # ROCm
    "tracelens/mi300/resnet_act_checkpoint.json.gz",            # RCCL, hip under cuda_runtime
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",  # CPU-only gloo
    "tracelens/mi210/gpu_only_trace.json.gz",                   # GPU-only
    "hta/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",  # > int64 arg
    "hta/call_stack/backward_thread.json",                      # no schemaVersion
    "tracelens/b200/eager_trace.json.gz",                       # newest schema, python_function
    "hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
    "hta/triton_example/triton_example.json.gz",
]


@pytest.mark.parametrize("relative", FORMATS)
def test_every_event_lands_in_exactly_one_table(relative, tracewh, sql):
    path = shared(relative)
    tracewh("ingest", path, "--run", "r", "--phase", "p")
    counts = table_counts(sql, "r")
    assert counts == expected_counts(path)
    (trace,) = sql("SELECT events FROM traces")
    assert trace["events"] == sum(counts.values()) == len(load_reference(path)["traceEvents"])


def exact_ns(value):
    from fractions import Fraction
    from decimal import Decimal
    return int(Fraction(Decimal(str(value))) * 1000)


@pytest.mark.parametrize("relative", [
    "tracelens/b200/eager_trace.json.gz", "deepseek-profile-data/train.json",
    "hta/trace_file_list/inference_rank_1.json.gz"])
def test_kernel_times_are_exact_nanoseconds(relative, tracewh, sql):
    path = shared(relative)
    reference = load_reference(path)
    base = int(reference.get("baseTimeNanoseconds", 0))
    expected = sorted((base + exact_ns(e["ts"]), exact_ns(e["dur"]))
                      for e in reference["traceEvents"]
                      if e.get("ph") == "X" and reference_table(e) == "kernels")
    tracewh("ingest", path, "--run", "r")
    rows = sql("SELECT ts_ns, dur_ns FROM kernels ORDER BY ts_ns, dur_ns")
    assert [(r["ts_ns"], r["dur_ns"]) for r in rows] == expected


def test_new_kineto_times_are_absolute(tracewh, sql):
    tracewh("ingest", shared("tracelens/b200/eager_trace.json.gz"), "--run", "b200")
    (row,) = sql("SELECT min(ts_ns) AS first FROM kernels")
    # baseTimeNanoseconds 1767189312000000000 (2025-12-31) plus float µs offsets of ~16 days
    assert row["first"] == 1767189312000000000 + 1365627865398727


def test_old_kineto_categories_are_mapped(tracewh, sql):
    tracewh("ingest", shared("hta/trace_file_list/inference_rank_1.json.gz"), "--run", "old")
    assert {r["category"] for r in sql("SELECT DISTINCT category FROM kernels")} == {"kernel"}
    assert {r["category"] for r in sql("SELECT DISTINCT category FROM runtime")} == \
        {"cuda_runtime"}
    flows = sql("SELECT category, count(*) AS n FROM flows GROUP BY 1")
    assert flows == [{"category": "async_gpu", "n": 8}]
    (kernel,) = sql("SELECT correlation, external_id, grid_x, block_x, registers_per_thread "
                    "FROM kernels WHERE correlation = 538860")
    assert kernel == {"correlation": 538860, "external_id": 0, "grid_x": 64, "block_x": 128,
                      "registers_per_thread": 16}


def test_mtia_device_activity_is_kernels(tracewh, sql, tmp_path):
    """MTIA activity (Kineto's mtia_ccp_events, launched by mtia_runtime calls) counts like
    CUDA kernels: DLRM rank 0 with its categories renamed gives the same overlap and launches."""
    document = load_reference(EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz")
    renamed = {"kernel": "mtia_ccp_events", "cuda_runtime": "mtia_runtime"}
    for event in document["traceEvents"]:
        event["cat"] = renamed.get(event.get("cat"), event.get("cat"))
    path = tmp_path / "mtia_rank0.json"
    path.write_text(json.dumps(document, default=float))
    result = tracewh("ingest", path, "--run", "mtia", "--phase", "train")
    assert "unknown category" not in result.output
    assert sql("SELECT count(*) AS n FROM other_events") == [{"n": 0}]
    assert sql("SELECT comm_ns, compute_ns, overlap_ns FROM overlap") == \
        [{"comm_ns": 5798000, "compute_ns": 1034000, "overlap_ns": 261000}]
    assert sql("SELECT launches FROM launch_latency_summary") == [{"launches": 261}]
    device = sum(event.get("cat") == "mtia_ccp_events" for event in document["traceEvents"])
    assert sql("SELECT count(*) AS n FROM kernels WHERE category = 'mtia_ccp_events'") == \
        [{"n": device}] == [{"n": 245}]


def test_argument_above_int64_is_kept_exactly(tracewh, sql):
    path = shared("hta/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz")
    big = next(v for e in load_reference(path)["traceEvents"] for v in e.get("args", {}).values()
               if isinstance(v, int) and v > 2**63)
    tracewh("ingest", path, "--run", "big")
    args = [r["args"] for r in sql("SELECT args FROM cpu_ops UNION ALL SELECT args FROM kernels")]
    assert any(str(big) in (a or "") for a in args)


def test_pid_and_tid_as_numbers_or_strings(tracewh, sql):
    tracewh("ingest", shared("deepseek-profile-data/train.json"), "--run", "ds")
    rows = sql("SELECT pid, tid FROM instants ORDER BY ts_ns")
    assert {"pid": "Traces", "tid": "Trace PyTorch Profiler"} in rows
    assert sql("SELECT count(*) AS n FROM metadata WHERE pid = 'Spans'")[0]["n"] >= 1


def test_deepseek_train_figures(tracewh, sql):
    tracewh("ingest", shared("deepseek-profile-data/train.json"), "--run", "ds")
    (trace,) = sql("SELECT rank, world_size, backend, device_names, events FROM traces")
    assert trace == {"rank": 0, "world_size": 64, "backend": "nccl",
                     "device_names": ["NVIDIA H800"], "events": 14240}
    deepep = sql("SELECT name, count(*) AS n FROM kernels WHERE name LIKE '%dpsk::ep::%' "
                 "GROUP BY 1 ORDER BY 1")
    assert sum(r["n"] for r in deepep) == 36
    assert sql("SELECT DISTINCT stream FROM kernels WHERE name LIKE '%dpsk::ep::%'") == \
        [{"stream": 27}]


def test_rank_phase_and_run_defaults(tracewh, sql, tmp_path):
    source = tmp_path / "My Run!"
    source.mkdir()
    shutil.copy(shared("hta/trace_filter/sampled_rank-1.json.gz"), source / "train_rank-9.json.gz")
    shutil.copy(shared("hta/call_stack/backward_thread.json"), source / "worker5_decode.json")
    tracewh("ingest", source)
    rows = sql("SELECT run, phase, rank FROM traces ORDER BY rank")
    # distributedInfo.rank wins over the file name; without it the name's number counts
    assert rows == [{"run": "My_Run", "phase": "decode", "rank": 0},
                    {"run": "My_Run", "phase": "train", "rank": 1}]


def test_a_null_rank_counts_as_absent_and_is_noted(tracewh, sql, tmp_path):
    """distributedInfo.rank null: the file name's number, else 0, as without one; the trace's
    warnings say which rank it took and why."""
    document = json.loads(shared("hta/call_stack/backward_thread.json").read_text())
    document["distributedInfo"] = {"rank": None, "world_size": 4}
    for name in ("rank-3.json", "plain.json"):
        (tmp_path / name).write_text(json.dumps(document))
        tracewh("ingest", tmp_path / name, "--run", name.split(".")[0])
    rows = sql("SELECT run, rank, warnings FROM traces ORDER BY run")
    assert rows == [
        {"run": "plain", "rank": 0,
         "warnings": ["distributedInfo.rank is null: rank 0 (none in the file name) (1)"]},
        {"run": "rank-3", "rank": 3,
         "warnings": ["distributedInfo.rank is null: rank 3 from the file name (1)"]}]


def test_unsafe_names_are_refused(tracewh, warehouse):
    path = shared("hta/call_stack/backward_thread.json")
    for option in (["--run", "../x"], ["--run", "_hidden"], ["--phase", "a b"],
                   ["--tag", "k=v;drop"], ["--tag", "novalue"]):
        result = tracewh("ingest", path, *option, expect=2)
        assert result.output.startswith("error: invalid") and "Traceback" not in result.output
    assert not (warehouse / "kernels").exists()


def test_a_refused_phase_is_echoed_as_typed(tracewh):
    result = tracewh("ingest", shared("hta/call_stack/backward_thread.json"), "--phase",
                     "Bad/Phase", expect=2)
    assert result.output.startswith("error: invalid phase 'Bad/Phase': use 1-128 letters")


def test_reingest_is_a_no_op_and_replace_replaces(tracewh, sql):
    path = shared("hta/call_stack/backward_thread.json")
    tracewh("ingest", path, "--run", "r", "--tag", "git=abc123")
    again = tracewh("ingest", path, "--run", "r")
    assert "unchanged" in again.output
    assert sql("SELECT count(*) AS n FROM traces")[0]["n"] == 1
    tracewh("ingest", path, "--run", "r", "--replace", "--tag", "git=def456")
    assert sql("SELECT tags, ingest_seq FROM traces") == [{"tags": '{"git": "def456"}',
                                                          "ingest_seq": 2}]
    assert sql("SELECT count(*) AS n FROM cpu_ops")[0]["n"] == 5


def test_second_capture_of_a_rank_is_kept_beside_the_first(tracewh, sql, tmp_path):
    first = shared("hta/call_stack/backward_thread.json")
    second = tmp_path / "backward_thread.json"
    document = json.loads(first.read_text())
    document["traceEvents"] = document["traceEvents"][:3]
    second.write_text(json.dumps(document))
    tracewh("ingest", first, second, "--run", "r", "--phase", "train")
    rows = sql("SELECT rank, events FROM traces ORDER BY events")
    assert rows == [{"rank": 0, "events": 3}, {"rank": 0, "events": 7}]
    totals = sql("SELECT trace_id, sum(events) AS n FROM event_counts GROUP BY 1 ORDER BY 2")
    assert [r["n"] for r in totals] == [3, 7]


def test_dlrm_eight_ranks_in_parallel(tracewh, sql, warehouse):
    result = tracewh("ingest", EXAMPLES, "--run", "dlrm", "--phase", "train", "--jobs", "2")
    assert "run dlrm: 8 files ingested, 26,538 events" in result.output
    assert [r["rank"] for r in sql("SELECT rank FROM traces ORDER BY rank")] == list(range(8))
    # Hive layout, standard Parquet types, readable by pyarrow alone
    dataset = ds.dataset(warehouse / "kernels", format="parquet", partitioning="hive")
    assert dataset.count_rows() == 2244
    assert set(dataset.schema.names) >= {"run", "phase", "rank", "ts_ns", "dur_ns", "stream"}
    for file in (warehouse / "kernels").rglob("*.parquet"):
        schema = pq.read_schema(file)
        assert str(schema.field("ts_ns").type) == "int64"
        assert "run" not in schema.names  # partition columns live in the path


def test_bad_file_among_good_ones(tracewh, sql, tmp_path):
    bad = tmp_path / "rank-3.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": ')
    good = shared("hta/call_stack/backward_thread.json")
    result = tracewh("ingest", bad, good, "--run", "r", expect=2)
    assert f"error: {bad}: truncated" in result.output
    assert "Traceback" not in result.output
    assert sql("SELECT rank, events FROM traces") == [{"rank": 0, "events": 7}]
    assert sql("SELECT count(*) AS n FROM kernels WHERE rank = 3")[0]["n"] == 0


def test_strict_stops_at_the_first_failure(tracewh, sql, tmp_path):
    bad = tmp_path / "a.json"
    bad.write_text("not json")
    good = tmp_path / "b.json"
    shutil.copy(shared("hta/call_stack/backward_thread.json"), good)
    result = tracewh("ingest", bad, good, "--run", "r", "--strict", "--jobs", "1", expect=2)
    assert "1 file skipped: --strict stops at the first failure" in result.output
    assert sql("SELECT count(*) AS n FROM traces")[0]["n"] == 0


def test_strict_in_parallel_writes_only_what_it_reports(tracewh, sql, tmp_path):
    """Files still running when another fails do not commit, and every file is either
    reported ingested or skipped."""
    bad = tmp_path / "a.json"
    bad.write_text("not json")
    ranks = sorted(EXAMPLES.glob("*.json*"))
    result = tracewh("ingest", bad, *ranks, "--run", "r", "--strict", "--jobs", "2", expect=2)
    ingested = re.search(r"run r: (\d+) files? ingested", result.output)
    ingested = int(ingested.group(1)) if ingested else 0
    skipped = re.search(r"(\d+) files? skipped", result.output)
    assert skipped and ingested + int(skipped.group(1)) == len(ranks)
    assert sql("SELECT count(*) AS n FROM traces")[0]["n"] == ingested


def test_strict_in_parallel_does_not_commit_a_file_still_running(tracewh, sql, tmp_path):
    bad = tmp_path / "a.json"
    bad.write_text("not json")
    slow = shared("deepseek-profile-data/train.json")  # ~0.4 s to ingest; bad fails at once
    result = tracewh("ingest", bad, slow, "--run", "r", "--strict", "--jobs", "2", expect=2)
    assert "1 file skipped" in result.output and "ingested" not in result.output
    assert sql("SELECT count(*) AS n FROM traces")[0]["n"] == 0


def test_gzip_truncated(tracewh, tmp_path, warehouse):
    data = gzip.compress(shared("hta/call_stack/backward_thread.json").read_bytes())
    bad = tmp_path / "t.json.gz"
    bad.write_bytes(data[: len(data) // 2])
    result = tracewh("ingest", bad, "--run", "r", expect=2)
    assert result.output.count("\n") == 2 and f"error: {bad}:" in result.output


def test_odd_events_are_kept_and_counted(tracewh, sql, tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "pid": 0, "tid": 7},     # no dur
        {"ph": "Q", "name": "unknown phase", "ts": 2, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "brand_new", "name": "n", "ts": 3, "dur": 1},
        {"ph": "i", "name": "odd field", "ts": 4, "cname": "good", "name2": [1]},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}},
    ]}))
    result = tracewh("ingest", path, "--run", "odd")
    assert "warning:" in result.output
    assert sql("SELECT dur_ns FROM kernels") == [{"dur_ns": None}]
    assert sorted(r["ph"] for r in sql("SELECT ph FROM other_events")) == ["Q", "X"]
    assert sql("SELECT extra FROM instants") == [{"extra": '{"cname":"good","name2":[1]}'}]
    (trace,) = sql("SELECT warnings, events FROM traces")
    assert trace["events"] == 5 and len(trace["warnings"]) == 4


def test_no_field_of_any_event_is_dropped(tracewh, sql, tmp_path):
    every_field = {"cat": "cpu_op", "name": "n", "pid": 1, "tid": 2, "ts": 5, "dur": 3, "id": 9,
                   "bp": "e", "s": "t", "args": {"a": 1}}
    events = [{**every_field, "ph": ph, **extra} for ph, extra in [
        ("X", {"cat": "kernel"}), ("X", {"cat": "cpu_op"}), ("X", {"cat": "cuda_runtime"}),
        ("X", {"cat": "brand_new"}), ("s", {}), ("f", {}), ("C", {}), ("i", {}), ("I", {}),
        ("M", {}), ("Q", {})]]
    path = tmp_path / "fields.json"
    path.write_text(json.dumps({"traceEvents": events}))
    tracewh("ingest", path, "--run", "fields")
    kept = {row["event_index"]: (kept_keys(table, row), json.loads(row["extra"] or "{}"))
            for table in EVENT_TABLES for row in sql(f"SELECT * FROM {table}")}
    assert sorted(kept) == list(range(len(events)))
    for index, event in enumerate(events):
        assert kept[index][0] == set(event), (index, event, kept[index])
    assert kept[8][1]["ph"] == "I" and "ph" not in kept[7][1]  # 'i' implied, 'I' kept
    assert kept[0][1] == {"id": 9, "bp": "e", "s": "t"}  # a kernel's id, bp and s


@pytest.mark.parametrize("content, problem", [
    ('[[1700000000, 1700000001], [[1024, 0], [2048, 0]]]',
     "not a trace: a JSON array of arrays at byte 0, not of events; it looks like a PyTorch "
     "memory timeline (export_memory_timeline): ingest the trace that export_chrome_trace or "
     "on_trace_ready writes\n"),
    ('[1700000000, 1024]', "event 0: not a trace event"),
    ('{"traceEvents": [{"ph": "X", "ts": 1}, "oops"]}', "event 1: not a trace event"),
    ('{"traceEvents": [{"ph": "X", "ts": 1}, {"ts": 2, "name": "no ph"}]}',
     "event 1: event has no ph"),
    ('{"traceEvents": [{"ph": "M", "name": "ok"}, {"ph": "X", "name": "no ts"}]}',
     "event 1: event has no ts"),
    ('{"traceEvents": [{"ph": "X", "ts": 1e400}]}', "event 0: ts"),
    ('{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "cat": "kernel", "ts": '
     '9223372036854000, "dur": 100000}]}',
     "event 1: ts 9223372036854000000 ns + dur 100000000 ns: ends out of the 64-bit "
     "nanosecond range"),
])
def test_invalid_events_are_refused_whole(content, problem, tracewh, tmp_path, warehouse):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = tracewh("ingest", path, "--run", "r", expect=2)
    assert result.output.startswith(f"error: {path}: {problem}")
    assert "Traceback" not in result.output
    assert not list(warehouse.glob("*/run=*"))


def test_a_dur_beyond_range_where_no_table_wants_it_is_kept(tracewh, sql, tmp_path):
    path = tmp_path / "odd.json"
    path.write_text('{"traceEvents": [{"ph": "i", "name": "x", "ts": 5.5, "dur": 1e400}]}')
    tracewh("ingest", path, "--run", "odd")
    assert sql("SELECT ts_ns, extra FROM instants") == [{"ts_ns": 5500, "extra": '{"dur":1E+400}'}]


def test_args_that_are_not_utf8_are_one_error(tracewh, tmp_path, warehouse):
    # The escaped slash sends the duplicate-key check down its exact path, which once met the
    # undecodable byte with a traceback.
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "i", "name": "i", "ts": 1}, {"ph": "X", '
                     b'"cat": "kernel", "name": "k", "ts": 1, "dur": 1}, {"ph": "X", "cat": '
                     b'"kernel", "name": "a\\/b", "ts": 1, "dur": 1, "args": {"x": "\xff"}}]}')
    result = tracewh("ingest", path, "--run", "r", expect=2)
    assert result.output.startswith(f"error: {path}: event 2: args are not valid UTF-8 text")
    assert "Traceback" not in result.output and not list(warehouse.glob("*/run=*"))


def test_file_names_that_are_not_utf8(tracewh, sql, tmp_path):
    directory = tmp_path / "names"
    directory.mkdir()
    bad = directory / b"bad\xffname.json".decode("utf-8", "surrogateescape")
    bad.write_bytes(b'{"traceEvents": [')
    good = directory / b"good\xfe.json".decode("utf-8", "surrogateescape")
    good.write_bytes(shared("hta/call_stack/backward_thread.json").read_bytes())
    result = tracewh("ingest", directory, "--run", "names", expect=2)
    assert "bad\\xffname.json: truncated" in result.output and "Traceback" not in result.output
    assert sql("SELECT source_path FROM traces")[0]["source_path"].endswith("good\\xfe.json")


def test_warehouse_write_failure_is_one_line(tracewh, sql, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("tracewh.ingest.writer.pq.write_table", disk_full)
    result = tracewh("ingest", shared("hta/call_stack/backward_thread.json"), "--run", "r",
                     "--jobs", "1", expect=2)
    assert "cannot write to the warehouse" in result.output and "No space left" in result.output
    monkeypatch.undo()
    assert sql("SELECT count(*) AS n FROM traces") == [{"n": 0}]


# Args that defeat unconfirmed cuts: a `}, {` inside a value or a string makes a false cut, a
# "ph" key or string that is no event's a false count.
ODD_ARGS = [{"nested": [{"a": 1}, {"b": 2}]}, {"text": "}, {"}, {"ph": "X"}, {"note": "ph"}]


def hostile_kernels(count, odd_args=ODD_ARGS):
    return [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": 10 * i, "dur": 5, "pid": 0,
             "tid": 7, "args": odd_args[i % len(odd_args)]} for i in range(count)]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("odd", ODD_ARGS, ids=["nested", "text", "ph-key", "ph-text"])
def test_odd_layouts_in_many_chunks_are_read_again_with_confirmed_cuts(
        odd, jobs, tracewh, sql, tmp_path, monkeypatch):
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 4096)  # ~60 chunks
    events = hostile_kernels(2000, [{}, odd])
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=2))
    tracewh("ingest", path, "--run", "odd", "--jobs", jobs)
    rows = sql("SELECT event_index, name, args FROM kernels ORDER BY event_index")
    assert [r["event_index"] for r in rows] == list(range(len(events)))
    assert [r["name"] for r in rows] == [e["name"] for e in events]
    assert [json.loads(r["args"]) for r in rows] == [e["args"] for e in events]


def test_each_worker_writes_one_file_per_table_for_all_the_chunks_it_takes(
        tracewh, sql, tmp_path, warehouse, monkeypatch):
    """A file per table and worker, a row group per chunk, not a file per chunk (DuckDB opens
    a scan's files one after another): a trace of ~60 chunks read by 2 workers is at most 2
    files per table, holding the rows one process stores in one file."""
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 4096)
    monkeypatch.setattr("tracewh.ingest.writer.MERGE_BELOW_ROWS", 0)  # parts kept apart
    path = tmp_path / "chunked.json"
    path.write_text(json.dumps({"traceEvents": hostile_kernels(2000, [{}])}, indent=2))
    for run, jobs in (("one", "1"), ("two", "2")):
        tracewh("ingest", path, "--run", run, "--jobs", jobs)
    files = {run: sorted(warehouse.glob(f"kernels/run={run}/*/*/*.parquet")) for run in
             ("one", "two")}
    row_groups = {run: [pq.ParquetFile(f).num_row_groups for f in found]
                  for run, found in files.items()}
    assert len(files["one"]) == 1 and len(files["two"]) <= 2  # was one per chunk
    assert sum(row_groups["two"]) == sum(row_groups["one"]) > 50
    one, two = (sql(f"SELECT * EXCLUDE (run, trace_id) FROM kernels WHERE run = '{run}' "
                    "ORDER BY event_index") for run in ("one", "two"))
    assert one == two and len(one) == 2000


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_corruption_deep_in_a_chunked_file_names_its_byte(jobs, tracewh, tmp_path, warehouse,
                                                          monkeypatch):
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 4096)
    text = json.dumps({"traceEvents": hostile_kernels(2000)}, indent=2)
    offset = text.index('"name": "k1500"') + 8  # the value's opening quote
    path = tmp_path / "bad.json"
    path.write_text(text[:offset] + "@" + text[offset + 1:])
    result = tracewh("ingest", path, "--run", "bad", "--jobs", jobs, expect=2)
    error = result.output.splitlines()[0]
    assert error == f"error: {path}: malformed JSON: invalid character at byte {offset}"
    assert not list(warehouse.glob("*/run=*"))


@pytest.mark.parametrize("content, problem", [
    ('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "ts": 1, "ts": 5}]}',
     "event 1: duplicate key 'ts' in the event"),
    ('{"schemaVersion": 1, "schemaVersion": 2, "traceEvents": []}',
     "duplicate key 'schemaVersion' in the trace's top-level object at byte 21"),
    ('{"traceEvents": [], "traceName": "a", "traceName": "b"}',
     "duplicate key 'traceName' in the trace's top-level object at byte 38"),
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2},'
     ' {"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2, "args": {"External id": 1,'
     ' "External id": 2}}]}',
     "event 1: duplicate key 'External id' in the event"),
    ('{"traceEvents": [{"ph": "i", "ts": 1, "args": {"a": {"b": 1, "b": 1}}}]}',
     "event 0: duplicate key 'b' in the event"),
    ('{"traceEvents": [{"ph": "i", "ts": 1}], "traceEvents": [{"ph": "i", "ts": 1}]}',
     "duplicate key 'traceEvents' in the trace's top-level object at byte 40"),
    ('{"schemaVersion": 1, "traceEvents": [{"ph": "i", "ts": 1}], "traceEvents": []}',
     "duplicate key 'traceEvents' in the trace's top-level object at byte 60"),
    ('{"traceEvents": [], "traceEvents": [{"ph": "i", "ts": 1}]}',
     "duplicate key 'traceEvents' in the trace's top-level object at byte 20"),
])
def test_duplicate_keys_are_refused(content, problem, tracewh, tmp_path, warehouse):
    path = tmp_path / "dup.json"
    path.write_text(content)
    result = tracewh("ingest", path, "--run", "r", expect=2)
    error = result.output.splitlines()[0]
    assert error.startswith(f"error: {path}: ") and problem in error
    assert not list(warehouse.glob("*/run=*"))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_duplicates_deep_in_a_chunked_file_are_named(jobs, tracewh, tmp_path, warehouse,
                                                     monkeypatch):
    """A key repeated in the args of event 1500 of 2000, and traceEvents repeated after
    events read in many blocks: each named, with the event index or the byte."""
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 4096)
    monkeypatch.setattr("tracewh.ingest.reader.FIRST_BLOCK_SIZE", 4096)
    text = json.dumps({"traceEvents": hostile_kernels(2000)})
    at = text.index('"k1500"')
    path = tmp_path / "args.json"
    path.write_text(text[:at] + '"k1500", "args": {"stream": 7, "stream": 8}' + text[at + 7:])
    result = tracewh("ingest", path, "--run", "a", "--jobs", jobs, expect=2)
    assert result.output.startswith(f"error: {path}: event 1500: duplicate key 'stream' in "
                                    "the event\n")
    path = tmp_path / "events.json"
    path.write_text(text[:-1] + ', "traceEvents": []}')
    result = tracewh("ingest", path, "--run", "e", "--jobs", jobs, expect=2)
    assert result.output.startswith(f"error: {path}: duplicate key 'traceEvents' in the trace's "
                                    f"top-level object at byte {len(text) + 1}\n")
    assert not list(warehouse.glob("*/run=*"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(0, 200)), max_size=50))
def test_merge_gives_disjoint_intervals_of_the_same_union(intervals):
    """The ingest-time merge (gpu_intervals) against the reference: same union length,
    sorted, disjoint and not touching, every input point covered."""
    pairs = [(start, start + length) for start, length in intervals]
    starts, ends = merge(pa.array([a for a, _ in pairs], pa.int64()),
                         pa.array([b for _, b in pairs], pa.int64()))
    merged = list(zip(starts.to_pylist(), ends.to_pylist()))
    assert sum(b - a for a, b in merged) == union_length(pairs)
    assert all(a <= b < c for (a, b), (c, _) in zip(merged, merged[1:]))
    assert all(any(a <= s and e <= b for a, b in merged) for s, e in pairs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-2**70, 2**70), st.text(max_size=8))))
def test_ids_are_the_text_of_each_value(values):
    """pid/tid/id columns: every value's text, whatever mix of numbers, strings and nulls."""
    assert _ids(values).to_pylist() == [None if v is None else str(v) for v in values]


DLRM0_NAME = "worker0_step_12.1694128201545.pt.trace.json.gz"
DLRM1_NAME = "worker1_step_12.1694128201556.pt.trace.json.gz"


def test_traces_of_different_jobs_in_one_run_are_warned_about(tracewh, tmp_path):
    """trace_compare/test and trace_diff/test both default to run 'test': the ingest says so,
    and that the traces (world sizes 8 and 2, V100 and A100, 258 days apart) are not one job."""
    for folder, source in (("trace_compare", EXAMPLES / DLRM0_NAME),
                           ("trace_diff", shared("hta/nccl_parser_config/nccl_data.json.gz"))):
        (tmp_path / folder / "test").mkdir(parents=True)
        shutil.copy(source, tmp_path / folder / "test" / "rank0.json.gz")
    result = tracewh("ingest", tmp_path / "trace_compare" / "test",
                     tmp_path / "trace_diff" / "test")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: run 'test' was named after 2 different directories ({tmp_path}/trace_compare/"
        f"test, {tmp_path}/trace_diff/test): pass --run to keep them apart",
        "warning: run 'test' now holds traces of world sizes 2, 8: they look like different "
        "jobs; name each job's run with --run",
        "warning: run 'test', phase 'unknown', rank 0: 2 captures that look like different jobs "
        "(devices NVIDIA A100-PG509-200 and Tesla V100-SXM2-32GB; start times 258.0 days apart);"
        " their figures add up as one rank's: name each job's run with --run"]


def test_captures_of_one_job_are_not_warned_about(tracewh):
    result = tracewh("ingest", EXAMPLES / DLRM0_NAME, EXAMPLES / DLRM1_NAME, "--run", "one",
                     "--rank", "0")
    assert "warning" not in result.stderr


def test_tags_on_an_unchanged_file_are_an_error_not_ignored(tracewh, sql):
    tracewh("ingest", EXAMPLES / DLRM0_NAME, "--run", "r", "--tag", "git=abc")
    tracewh("ingest", EXAMPLES / DLRM0_NAME, "--run", "r", "--tag", "git=abc")  # same tags: fine
    result = tracewh("ingest", EXAMPLES / DLRM0_NAME, "--run", "r", "--tag", "git=def", expect=2)
    assert result.stderr.startswith(
        f"error: {EXAMPLES / DLRM0_NAME}: --tag not applied: the file is already in run r, "
        'phase unknown, rank 0 with tags {"git": "abc"}; --replace re-ingests it with the new '
        "tags\n")
    tracewh("ingest", EXAMPLES / DLRM0_NAME, "--run", "r", "--tag", "git=def", "--replace")
    assert sql("SELECT tags FROM traces") == [{"tags": '{"git": "def"}'}]


def test_negative_duration_is_refused_as_unknown(tracewh, sql, tmp_path):
    """A kernel of a real trace given `"dur": -5`: its dur_ns is NULL, the -5 kept in extra,
    the trace's warnings say so, and every figure is that of the same trace with the kernel's
    dur missing (unknown), not 5,000 ns less."""
    document = json.loads(gzip.decompress(
        shared("param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json.gz").read_bytes()))
    events = document["traceEvents"]
    index = max((i for i, e in enumerate(events) if e.get("cat") == "kernel"),
                key=lambda i: events[i]["dur"])
    events[index]["dur"] = -5
    (tmp_path / "negative").mkdir()
    (tmp_path / "negative" / "trace.json").write_text(json.dumps(document))
    del events[index]["dur"]
    (tmp_path / "unknown").mkdir()
    (tmp_path / "unknown" / "trace.json").write_text(json.dumps(document))
    for run in ("negative", "unknown"):
        tracewh("ingest", tmp_path / run / "trace.json", "--run", run)

    def figures(run):
        kernels = sql(f"SELECT short_name, count, total_ns FROM kernel_stats WHERE run = '{run}'"
                      " ORDER BY ALL")
        overlap = sql(f"SELECT comm_ns, compute_ns, overlap_ns FROM overlap WHERE run = '{run}'")
        return kernels, overlap

    assert figures("negative") == figures("unknown")
    assert min(row["total_ns"] for row in figures("negative")[0]) >= 0
    assert sql(f"SELECT dur_ns, extra FROM kernels WHERE event_index = {index} "
               "AND run = 'negative'") == [{"dur_ns": None, "extra": '{"dur":-5}'}]
    (warnings,) = sql("SELECT warnings FROM traces WHERE run = 'negative'")
    assert "X events with a negative dur (dur_ns NULL, the dur kept in extra) (1)" \
        in warnings["warnings"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_rewritten_while_it_is_read_fails(jobs, tracewh, sql, tmp_path, warehouse,
                                                 monkeypatch):
    """DeepSeek's trace, read in 256 KB blocks, rewritten in place (same size, one kernel's
    dur changed) once the first block is read: the file fails with one line and nothing is
    committed, so the original, ingested after, is ingested rather than `unchanged`."""
    from tracewh.ingest.reader import TraceReader
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 256 << 10)
    monkeypatch.setattr("tracewh.ingest.reader.FIRST_BLOCK_SIZE", 256 << 10)
    original = shared("deepseek-profile-data/train.json").read_bytes()
    at = original.index(b'"dur": 1', len(original) * 2 // 3) + len(b'"dur": ')
    rewritten = original[:at] + b"9" + original[at + 1:]
    path = tmp_path / "train.json"
    path.write_bytes(original)
    read_block = TraceReader._read_block
    blocks = []

    def rewriting_read_block(self):
        if len(blocks) == 1:
            with open(path, "r+b") as handle:  # in place: same inode, same size
                handle.write(rewritten)
        blocks.append(1)
        return read_block(self)

    monkeypatch.setattr(TraceReader, "_read_block", rewriting_read_block)
    result = tracewh("ingest", path, "--run", "torn", "--jobs", jobs, expect=2)
    assert result.output.splitlines()[0] == \
        f"error: {path}: the file changed while it was read"
    assert len(blocks) > 2 and path.read_bytes() == rewritten
    assert not list(warehouse.glob("*/run=*"))
    monkeypatch.setattr(TraceReader, "_read_block", read_block)
    path.write_bytes(original)
    assert "1 file ingested" in tracewh("ingest", path, "--run", "torn", "--jobs", jobs).output


@pytest.mark.parametrize("relative", ["deepseek-profile-data/train.json",
                                      "param-dlrm-8rank/" + "worker0_step_12.1694128201545"
                                      ".pt.trace.json.gz"])
def test_the_recorded_sha256_is_the_files(relative, tracewh, sql, monkeypatch):
    """The sha256 stored is hashlib's of the file as stored (hashed as it is read, in many
    blocks here), plain or gzipped, and its size the file's."""
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 64 << 10)
    monkeypatch.setattr("tracewh.ingest.reader.FIRST_BLOCK_SIZE", 64 << 10)
    monkeypatch.setattr("tracewh.ingest.pipeline.HASH_FIRST_LIMIT", 0)  # no hash beforehand
    path = shared(relative)
    tracewh("ingest", path, "--run", "h")
    data = path.read_bytes()
    assert sql("SELECT sha256, bytes FROM traces") == [
        {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}]


def test_one_large_file_is_decoded_in_lanes_of_threads_as_in_one(tracewh, sql, monkeypatch):
    """--jobs 2 on one large file: its chunks go to two lanes of threads of the command, no
    process is forked, one thread merges the small parts while the command measures the
    per-trace tables, whose pieces the threads write behind it; every table holds the rows of
    a single-thread ingest."""
    from tracewh.ingest.workers import ThreadLanes

    lanes, tasks = [], []
    in_lanes, submit = ThreadLanes.in_lanes, ThreadLanes.submit

    def recording_lanes(self, function, arguments, items):
        lanes.append(in_lanes(self, function, arguments, items))
        return lanes[-1]

    def recording(self, function, *arguments):
        tasks.append(function.__name__)
        return submit(self, function, *arguments)

    def forked(*_):
        raise AssertionError("a worker process for one file")

    monkeypatch.setattr(ThreadLanes, "in_lanes", recording_lanes)
    monkeypatch.setattr(ThreadLanes, "submit", recording)
    monkeypatch.setattr("tracewh.ingest.pipeline.worker_pool", forked)
    monkeypatch.setattr("tracewh.ingest.reader.BLOCK_SIZE", 1 << 20)  # lanes, 3+ chunks
    path = shared("deepseek-profile-data/train.json")
    tracewh("ingest", path, "--run", "threads", "--jobs", "2")
    tracewh("ingest", path, "--run", "one", "--jobs", "1")
    [(first, _), (second, _)] = lanes[0]
    chunks = sorted(summary.chunk for summary in first + second)
    assert len(lanes) == 1 and len(chunks) >= 3 and chunks == list(range(len(chunks)))
    assert tasks[0] == "_merged" and len(tasks) > 4 and set(tasks[1:]) == {"write"}
    tables = ["cpu_ops", "kernels", "op_time", "critical_path_edges", "call_tree",
              "kernel_ops", "window_time", "step_time"]
    counts = {run: {row["name"]: row["n"] for row in sql(" UNION ALL ".join(
        f"SELECT '{table}' AS name, count(*) AS n FROM {table} "
        f"WHERE trace_id IN (SELECT trace_id FROM traces WHERE run = '{run}')"
        for table in tables))} for run in ("threads", "one")}
    assert counts["threads"] == counts["one"] and len(counts["one"]) == len(tables)
    assert all(counts["one"].values())


# The call tree's text columns are held as Arrow dictionaries (ingest/call_tree.py): read
# from the staged parts as Parquet's own dictionaries, and written as them, yet read back by
# every engine as the plain text they are.

def test_a_part_written_from_arrow_dictionaries_reads_back_as_plain_text(tmp_path):
    from tracewh.ingest.writer import read_staged, write_part

    names = pa.array(["aten::mm", None, "aten::mm", "nn.Module: M"])
    write_part(tmp_path, "call_tree", 0, pa.table({"name": names.dictionary_encode()}))
    written = pq.read_table(tmp_path / "call_tree.00000.parquet")
    assert written.schema.field("name").type == pa.string()
    assert written["name"].to_pylist() == names.to_pylist()
    coded = read_staged(tmp_path, {"call_tree": [0]}, {"call_tree": ["name"]},
                        dictionaries=("name",))
    assert pa.types.is_dictionary(coded["call_tree"]["name"].type)
    assert coded["call_tree"]["name"].to_pylist() == names.to_pylist()
    empty = read_staged(tmp_path, {}, {"cpu_ops": ["name", "ts_ns"]},
                        dictionaries=("name",))["cpu_ops"]
    assert pa.types.is_dictionary(empty["name"].type) and empty.num_rows == 0


def test_the_call_tree_from_dictionaries_equals_it_from_plain_text(tracewh, warehouse,
                                                                     tmp_path):
    """measure (text read as dictionaries) writes the rows tree_tables makes of the same
    parts read as plain text, on a real trace: its tables' files, staged as parts."""
    from tracewh.ingest import call_tree
    from tracewh.ingest.pipeline import _measured_into
    from tracewh.ingest.writer import read_staged
    from tracewh.storage.layout import staged_name
    from tracewh.storage.schema import TABLES

    trace = shared("tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz")
    tracewh("ingest", trace, "--run", "r", "--phase", "infer")
    staging, parts = tmp_path / "staging", {}
    staging.mkdir()
    for table in call_tree.READ:
        for number, path in enumerate(sorted((warehouse / table).glob("run=r/**/*.parquet"))):
            shutil.copy(path, staging / staged_name(table, number))
            parts.setdefault(table, []).append(number)
    written = _measured_into(staging, None, call_tree.measure, parts, "t")
    plain = call_tree.tree_tables(read_staged(staging, parts, call_tree.READ), "t")
    assert sorted(written) == sorted(name for name, rows in plain.items() if rows is not None)
    assert {"call_tree", "kernel_ops", "kernel_attribution", "call_ancestors"} <= set(written)
    for table in written:
        stored = pq.read_table(staging / staged_name(table, 0))
        assert stored.schema == TABLES[table].schema, table
        assert stored.equals(plain[table].cast(TABLES[table].schema)), table
    assert plain["call_tree"].num_rows > 8_000


def test_writes_behind_run_in_order_one_at_a_time_and_raise_their_errors():
    """_WritesBehind: the calls run on the pool's thread in the order made, never two at
    once; a call's error is raised by the caller's next call or on leaving, and on leaving
    after the caller's own error (Ctrl-C while it waits for a call too), the call in flight
    has ended."""
    import concurrent.futures
    import threading
    import time

    from tracewh.ingest.pipeline import _WritesBehind

    made, running = [], []

    def write(number):
        running.append(number)
        assert len(running) == 1, "two writes at once"
        time.sleep(0.01)
        made.append((number, threading.current_thread().name))
        running.pop()
        if number == "bad":
            raise OSError("disk full")

    with concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="pool") as pool:
        with _WritesBehind(pool) as behind:
            for number in range(5):
                behind.call(write, number)
        assert [number for number, _ in made] == list(range(5))
        assert all(name.startswith("pool") for _, name in made)
        with pytest.raises(OSError, match="disk full"):
            with _WritesBehind(pool) as behind:
                behind.call(write, "bad")
                behind.call(write, "never")
        assert made[-1][0] == "bad"
        with pytest.raises(KeyboardInterrupt):
            with _WritesBehind(pool) as behind:
                behind.call(write, "last")
                raise KeyboardInterrupt
        assert made[-1][0] == "last" and not running
        waits, wait = [], concurrent.futures.wait

        def interrupted_once(futures):  # Ctrl-C while the caller waits for a write
            waits.append(futures)
            if len(waits) == 1:
                raise KeyboardInterrupt
            return wait(futures)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(concurrent.futures, "wait", interrupted_once)
            with pytest.raises(KeyboardInterrupt):
                with _WritesBehind(pool) as behind:
                    behind.call(write, "slow")
                    behind.call(write, "not made")
        assert made[-1][0] == "slow" and not running and len(waits) == 2
    with _WritesBehind(None) as behind:  # no pool: at once, here
        behind.call(write, "here")
    assert made[-1] == ("here", threading.current_thread().name)
