"""Operator attribution (host call tree, op_kernels, op_calls, op_stats, module_stats,
op_backward) against the independent stack-pass reference of tests/op_reference.py, on every
trace of ../shared that has ops, and on traces without any (GPU-only, CPU-only)."""

import csv
import functools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tracewh
from tracewh.ingest.decoder import native_available
from tracewh.ingest.ops import _NativeTree, _Order, _Tree
from tracewh.ingest.pipeline import ingest_options, ingest_paths
from tracewh.ingest.sources import expand_inputs
from tracewh.storage.catalog import Snapshot
from tracewh.query.library import _live_texts, is_internal, live_helpers, published_modules
from tracewh.rules import default_rules, rules_fingerprint

from .conftest import (EXAMPLES, SHARED, define_helpers, load_reference, require,
                       written_library_connection)
from .op_reference import attribution, op_calls, parents
from .reference import ns

PUBLISHED = Path(__file__).resolve().parent / "data" / "tracelens"
# The categories of device work in the files (the kernels table's, but ranges and waits).
DEVICE_WORK = ("kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events")
OPEN = tracewh.open  # the tests' `tracewh` fixture (the CLI) takes the module's name

# Every trace of ../shared with ops but the three largest (MI300 ResNet, 45k host events; HTA's
# NCCL trace, 23k; SGLang, 58k), which the views and the reference agree on too but which
# would take most of this module's time.
TRACES = {
    "dlrm0": EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz",
    "deepseek": SHARED / "deepseek-profile-data/train.json",
    "hta-sampled": SHARED / "hta/trace_filter/sampled_rank-0.json.gz",
    "hta-old": SHARED / "hta/trace_file_list/inference_rank_1.json.gz",
    "hta-mi250": SHARED / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta-triton": SHARED / "hta/triton_example/triton_example.json.gz",
    "hta-backward": SHARED / "hta/call_stack/backward_thread.json",
    "b200": SHARED / "tracelens/b200/eager_trace.json.gz",
    "h100": SHARED / "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "mi300": SHARED / "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "vllm": SHARED / "tracelens/inference/vllm_decode_full_graph_execution.json.gz",
    "gpu-only": SHARED / "tracelens/mi210/gpu_only_trace.json.gz",
    "cpu-only": SHARED / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "mtia": Path(__file__).resolve().parent / "data" / "mtia" / "mtia_single_rank.json",
}


@pytest.fixture(scope="module")
def ops_warehouse(tmp_path_factory):
    """One warehouse, one run per trace (each its own rank 0), shared by the module's tests.
    The traces are committed without the refresh of the marts after each (which these views
    do not read, and which costs more than a small trace's ingest)."""
    wh = tracewh.open(tmp_path_factory.mktemp("ops") / "wh")
    for run, path in TRACES.items():
        if path.exists():
            options = ingest_options(run, "train", 0, jobs=1, embedded=True)
            (outcome,) = ingest_paths(wh.writable(), expand_inputs([str(path)]), options)
            assert outcome.status == "ingested", outcome.error
    wh.reload()
    yield wh
    wh.close()


def rows(wh, query, *params):
    relation = wh.sql(query, params=list(params) if params else None)
    names = relation.columns
    return [dict(zip(names, values)) for values in relation.fetchall()]


_READ = {}


def of_run(wh, name, run):
    """The rows of a table or view for one run: each is read once for all runs (a view's
    passes cost the same for one run as for all), then split."""
    key = (id(wh), name)
    if key not in _READ:
        split = {}
        if is_internal(name):
            define_helpers(wh.connection, name)
        for row in rows(wh, f"SELECT * FROM {name}"):
            split.setdefault(row["run"], []).append(row)
        _READ[key] = split
    return _READ[key].get(run, [])


def raw(wh, run):
    """The stored rows of one run's only trace: the reference's input."""
    return tuple(of_run(wh, table, run) for table in ("cpu_ops", "runtime", "kernels"))


def shadow(host, placed):
    """Events whose parent the rules leave to the order of starts: those flagged partial by
    the reference and those starting while a flagged event is open on their thread."""
    flagged = [r for r in host if placed[r["event_index"]][2]]
    inside = {r["event_index"] for r in flagged}
    for f in flagged:
        end = f["ts_ns"] + max(f["dur_ns"] or 0, 0)
        inside |= {r["event_index"] for r in host
                   if (r["pid"], r["tid"]) == (f["pid"], f["tid"])
                   and f["ts_ns"] <= r["ts_ns"] < end}
    return inside


def test_the_tree_and_the_path_written_in_slices_hold_the_rows_written_whole(tmp_path,
                                                                             monkeypatch):
    """The ingest writes each call_tree layer LAYER_ROWS rows at a time and the critical path
    BATCH_ROWS rows at a time (bounded memory): slices far smaller than DeepSeek's layers
    (thousands of rows) store the rows that one piece per layer and per trace stores."""
    from tracewh.ingest import call_tree, critical_path

    path = require(TRACES["deepseek"])

    def stored(name, layer_rows, batch_rows):
        monkeypatch.setattr(call_tree, "LAYER_ROWS", layer_rows)
        monkeypatch.setattr(critical_path, "BATCH_ROWS", batch_rows)
        wh = tracewh.open(tmp_path / name)
        options = ingest_options("slices", "train", 0, jobs=1, embedded=True)
        (outcome,) = ingest_paths(wh.writable(), expand_inputs([str(path)]), options)
        assert outcome.status == "ingested", outcome.error
        wh.reload()
        try:
            return {table: wh.sql(f"SELECT * EXCLUDE (trace_id) FROM {table} "
                                  "ORDER BY ALL").fetchall()
                    for table in ("call_tree", "critical_path_edges")}
        finally:
            wh.close()

    whole = stored("whole", 1 << 40, 1 << 40)
    sliced = stored("sliced", 1000, 10)
    assert len(whole["call_tree"]) > 10_000 and len(whole["critical_path_edges"]) > 1_000
    assert sliced == whole


@pytest.mark.parametrize("run", TRACES)
def test_host_tree_matches_stack_reference(run, ops_warehouse):
    require(TRACES[run])
    cpu, runtime, _ = raw(ops_warehouse, run)
    host = [dict(r, source="cpu_ops") for r in cpu] + [dict(r, source="runtime") for r in runtime]
    placed = parents(host, lambda row: True)
    tree = {r["event_index"]: r for r in of_run(ops_warehouse, "_host_tree", run)}
    assert sorted(tree) == sorted(placed)
    tolerated = shadow(host, placed)
    wrong = [i for i, (parent, depth, _) in placed.items()
             if (tree[i]["parent_event_index"], tree[i]["depth"]) != (parent, depth)]
    assert set(wrong) <= tolerated
    assert len(wrong) <= len(host) // 100  # partial overlaps are rare in real traces
    flagged = {i for i, r in tree.items() if r["partial_overlap"]}
    assert {i for i, p in placed.items() if p[2]} <= flagged | tolerated


@pytest.mark.parametrize("run", TRACES)
def test_op_kernels_and_op_calls_match_reference(run, ops_warehouse):
    require(TRACES[run])
    cpu, runtime, kernels = raw(ops_warehouse, run)
    expected, _ = attribution(cpu, runtime, kernels)
    got = {r["event_index"]: r for r in of_run(ops_warehouse, "op_kernels", run)}
    assert sorted(got) == sorted(expected)
    names = {r["event_index"]: r["name"] for r in cpu}
    for index, want in expected.items():
        row = got[index]
        assert {key: row[key] for key in want} == want, index
        assert row["op_name"] == names.get(want["op_event_index"])
        assert row["top_op_name"] == names.get(want["top_op_event_index"])
    calls = {r["event_index"]: r for r in of_run(ops_warehouse, "op_calls", run)}
    for op, figures in op_calls(cpu, runtime, kernels).items():
        row = calls[op]
        assert (row["gpu_self_ns"], row["gpu_self_busy_ns"], row["gpu_total_ns"],
                row["gpu_total_busy_ns"]) == figures, (op, row["name"])


@pytest.mark.parametrize("run", TRACES)
def test_gpu_time_is_conserved(run, ops_warehouse):
    """gpu_self_ns over all ops plus the activity no op launched is the rank's whole GPU
    activity time, summed from the trace file itself."""
    document = load_reference(require(TRACES[run]))
    whole = sum(ns(e["dur"]) for e in document["traceEvents"]
                if e.get("ph") == "X" and str(e.get("cat", "")).lower() in DEVICE_WORK
                and "dur" in e)
    ops = sum(r["gpu_self_ns"] for r in of_run(ops_warehouse, "op_stats", run))
    unattributed = sum(r["dur_ns"] or 0 for r in of_run(ops_warehouse, "op_kernels", run)
                       if r["op_event_index"] is None)
    assert ops + unattributed == whole


def test_dlrm_figures(ops_warehouse):
    """DLRM rank 0 (V100): every kernel is launched inside an op; NCCL is flagged on
    record_param_comms; backward calls find their forward op by sequence number (no fwdbwd
    flows in this trace)."""
    require(TRACES["dlrm0"])
    kernels = of_run(ops_warehouse, "op_kernels", "dlrm0")
    assert len(kernels) == 261 and {k["link"] for k in kernels} == {"containment"}
    (comms,) = [r for r in of_run(ops_warehouse, "op_stats", "dlrm0")
                if r["name"] == "record_param_comms"]
    assert comms["communication"] and comms["gpu_self_comm_ns"] == comms["gpu_self_ns"] > 0
    backward = [r for r in of_run(ops_warehouse, "op_backward", "dlrm0")
                if r["node"] == "AddmmBackward0"]
    assert backward and all(r["forward_name"] == "aten::addmm"
                            and r["link"] == "sequence_number" for r in backward)


def test_deepseek_custom_kernels_are_runtime_only_inside_annotations(ops_warehouse):
    """DeepSeek's DeepEP kernels are launched from Python, outside any aten op: runtime_only,
    yet inside DualPipe's annotations; fwdbwd flows link its autograd functions."""
    require(TRACES["deepseek"])
    deepep = [k for k in of_run(ops_warehouse, "op_kernels", "deepseek")
              if "dpsk::ep::" in k["name"]]
    assert len(deepep) == 36
    assert {k["link"] for k in deepep} == {"runtime_only"} and all(k["annotation"]
                                                                   for k in deepep)
    flows = {r["forward_name"] for r in of_run(ops_warehouse, "op_backward", "deepseek")
             if r["link"] == "fwdbwd"}
    assert flows == {"DropoutAddLayerNormFn"}


def test_cuda_graph_kernels_go_to_the_graph_launch(ops_warehouse):
    """vLLM's decode replays one graph: every kernel of its hipGraphLaunch's correlation is
    attributed to that one launch."""
    require(TRACES["vllm"])
    graph = {k["launch_event_index"] for k in of_run(ops_warehouse, "op_kernels", "vllm")
             if k["launch"] == "hipGraphLaunch"}
    replayed = [k for k in of_run(ops_warehouse, "op_kernels", "vllm")
                if k["launch"] == "hipGraphLaunch"]
    assert len(graph) == 1 and len(replayed) > 400


def test_traces_without_ops(ops_warehouse):
    require(TRACES["gpu-only"])
    require(TRACES["cpu-only"])
    assert of_run(ops_warehouse, "op_stats", "gpu-only") == []
    cpu = of_run(ops_warehouse, "op_stats", "cpu-only")
    assert cpu and all(r["gpu_kernels"] == r["gpu_total_ns"] == 0 and r["gpu_self_share"] is None
                       for r in cpu)
    assert sum(r["host_ns"] for r in cpu) > 0
    gpu = of_run(ops_warehouse, "op_kernels", "gpu-only")
    assert gpu and {k["link"] for k in gpu} <= {"runtime_only", "unlaunched"}
    assert of_run(ops_warehouse, "op_kernels", "cpu-only") == []
    (outside,) = of_run(ops_warehouse, "module_stats", "gpu-only")
    assert outside["module_path"] is None
    assert outside["gpu_self_ns"] == sum(k["dur_ns"] or 0 for k in gpu)


def test_mtia_device_activity_is_attributed_and_dma_is_memory(ops_warehouse):
    """MTIA's device activity (mtia_ccp_events) goes to the op whose mtia_runtime launch carries
    its correlation, like a CUDA kernel; its DMA transfers are of class memory (as in HTA)."""
    kernels = of_run(ops_warehouse, "op_kernels", "mtia")
    assert sorted((k["name"], k["class"], k["op_name"], k["launch"], k["link"], k["annotation"])
                  for k in kernels) == sorted(
        [("mul_kernel_f32", "computation", "aten::mul", "runFunction", "containment",
          f"ProfilerStep#{n}") for n in (1, 1, 2, 2)]
        + [("dma_request", "memory", "aten::copy_", "runFunction", "containment",
            f"ProfilerStep#{n}") for n in (1, 2)])
    stats = {r["name"]: r for r in of_run(ops_warehouse, "op_stats", "mtia")}
    assert (stats["aten::mul"]["calls"], stats["aten::mul"]["gpu_kernels"],
            stats["aten::mul"]["gpu_self_ns"]) == (4, 4, 190_000)
    assert stats["aten::copy_"]["gpu_self_ns"] == 50_000


def test_module_paths_run_outer_to_inner(ops_warehouse):
    require(TRACES["h100"])
    stats = {r["module_path"]: r for r in of_run(ops_warehouse, "module_stats", "h100")}
    (root,) = [path for path, r in stats.items() if r["depth"] == 0 and r["gpu_total_ns"]]
    below = [r for path, r in stats.items() if path and path.startswith(root + "/")]
    assert below and all(r["depth"] == r["module_path"].count("/") for r in below)
    assert stats[root]["gpu_total_ns"] == stats[root]["gpu_self_ns"] + sum(
        r["gpu_self_ns"] for r in below)


def test_diff_by_op_and_trend_follow_self_gpu_time(tracewh, sql):
    """`diff --by op` and `trend op:NAME` on two DLRM captures: the op's figures are the
    reference's self GPU time of its calls, and an unknown op is one error line."""
    first, second = TRACES["dlrm0"], EXAMPLES / "worker3_step_12.1694128201557.pt.trace.json.gz"
    for run, path in (("base", first), ("new", second)):
        tracewh("ingest", path, "--run", run, "--phase", "train", "--rank", "0")
    expected = {}
    for run in ("base", "new"):
        tables = [sql(f"SELECT * FROM {table} WHERE run = '{run}'")
                  for table in ("cpu_ops", "runtime", "kernels")]
        names = {r["event_index"]: r["name"] for r in tables[0]}
        figures = op_calls(*tables)
        expected[run] = sum(f[0] for op, f in figures.items()
                            if names[op] == "record_param_comms")
    report = json.loads(tracewh("diff", "base", "new", "--by", "op", "--format", "json",
                                expect=None).stdout)
    (row,) = [r for r in report["kernels"] if r["name"] == "record_param_comms"]
    assert (row["base_total_ns"], row["new_total_ns"]) == (expected["base"], expected["new"])
    assert report["by"] == "op" and row["base_count"] == 8
    trend = json.loads(tracewh("trend", "op:record_param_comms", "--format", "json").stdout)
    assert [(r["run"], r["value"]) for r in trend] == [("base", expected["base"]),
                                                       ("new", expected["new"])]
    wrong = tracewh("trend", "op:record_param_comm", expect=2).output
    assert wrong.startswith("error: no operator named 'record_param_comm'")
    assert "record_param_comms" in wrong and len(wrong.strip().splitlines()) == 1


# The helpers read from the tables the ingest builds (ingest/call_tree.py), each with its
# SQL twin in sql/live/ that computes the same rows at query time.
TREE_HELPERS = ("_host_layers", "_kernel_ops", "_kernel_attribution", "_host_ancestors",
                "_backward_links")


# op_calls' helpers: the calls as measured at ingest (op_call_time) and the traces it
# computes itself; their sql/live/ twins make it compute every trace.
CALL_HELPERS = ("_op_call_time", "_op_calls_live_traces")


@functools.cache
def library_connection():
    """The library as written over empty tables (defining it takes longer than a generated
    example), the host call tree and op_calls computed by its SQL (sql/live/) from the rows a
    test inserts."""
    connection = written_library_connection()
    for helper in TREE_HELPERS + CALL_HELPERS:
        connection.execute(dict(_live_texts())[helper])
    return connection


# Hypothesis: laminar families of intervals on one thread, with the tie cases the rules
# name (equal starts, equal spans, zero durations at a parent's start and end).

def laminar(draws):
    """The draws ((start, duration)) kept in order while they nest with those kept."""
    kept = []
    for start, duration in draws:
        end = start + duration
        if all(end <= s or e <= start or (s <= start and end <= e) or (start <= s and e <= end)
               for s, e in kept):
            kept.append((start, end))
    return kept


@settings(max_examples=50, deadline=None)
@given(draws=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12)), max_size=25),
       kinds=st.lists(st.sampled_from(["cpu_op", "runtime", "user_annotation"]), min_size=25,
                      max_size=25))
def test_tree_rules_on_generated_nesting(draws, kinds):
    connection = library_connection()
    connection.execute("DELETE FROM cpu_ops; DELETE FROM runtime")
    events = []
    for index, ((start, end), kind) in enumerate(zip(laminar(draws), kinds)):
        source = "runtime" if kind == "runtime" else "cpu_ops"
        events.append({"event_index": index, "ts_ns": start, "dur_ns": end - start,
                       "pid": "1", "tid": "1", "category": "cuda_runtime" if source ==
                       "runtime" else kind, "name": f"e{index}", "source": source})
        connection.execute(
            f"INSERT INTO {source} (run, phase, rank, trace_id, event_index, name, category, "
            "ts_ns, dur_ns, pid, tid) VALUES ('r', 'p', 0, 't', ?, ?, ?, ?, ?, '1', '1')",
            [index, f"e{index}", events[-1]["category"], start, end - start])
    placed = parents(events, lambda row: True)
    got = {i: (p, d, f) for i, p, d, f in connection.execute(
        "SELECT event_index, parent_event_index, depth, partial_overlap FROM _host_tree"
    ).fetchall()}
    assert got == placed
    ops = parents([e for e in events if e["category"] == "cpu_op" or e["source"] == "runtime"],
                  lambda row: row["category"] == "cpu_op")
    layer = {i: (p, d) for i, p, d in connection.execute(
        "SELECT event_index, parent_event_index, depth FROM _host_layers WHERE layer = 'cpu_op'"
    ).fetchall()}
    assert layer == {i: (p, d) for i, (p, d, _) in ops.items()}


@st.composite
def host_rows(draw):
    """Host rows of a few threads, in file order: nested, overlapping without nesting,
    touching, equal and zero-length events; each placed in the layer or not, a member
    (which may open) or not (every member is placed, as in the layers)."""
    rows = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(-2, 12),
                                   st.booleans(), st.booleans()), max_size=40))
    columns = [np.array([row[i] for row in rows], dtype)
               for i, dtype in enumerate((np.int64, np.int64, np.int64, bool, bool))]
    thread, ts, dur, member, placed = columns
    return thread, ts, dur, member, placed | member


@settings(max_examples=400, deadline=None)
@given(rows=host_rows())
@example(rows=(np.array([0, 0, 0]), np.array([0, 5, 12]), np.array([10, 10, 1]),
               np.array([True, True, True]), np.array([True, True, True])))  # A, B overlap: C
def test_the_native_tree_is_the_reference_tree(rows):
    """The native core's layer of the host tree (one walk in start order) against _Tree (sorted
    searches): the same depth and parent of every row, and the same ancestor at every level
    above each row, on rows that do not nest too (where the last member opened one level up
    may have ended)."""
    if not native_available():
        pytest.skip("the native core is not built")
    thread, ts, dur, member, placed = rows
    host = type("Host", (), {})()
    host.size, host.thread, host.ts, host.dur = len(ts), thread, ts, dur
    host.span, host.index = np.maximum(dur, 0), np.arange(len(ts), dtype=np.int64)
    order = _Order(host)
    reference, native = _Tree(host, order, placed, member), _NativeTree(host, order, placed, member)
    assert native.depth.tolist() == reference.depth.tolist()
    assert native.parent.tolist() == reference.parent.tolist()
    for level in range(int(reference.depth.max(initial=0))):
        deeper = np.flatnonzero(reference.depth > level)
        assert native.ancestor(deeper, level).tolist() == \
            reference.ancestor(deeper, level).tolist()
        assert native.ancestor(deeper, np.full(len(deeper), level)).tolist() == \
            reference.ancestor(deeper, level).tolist()


def test_the_native_tree_reads_strided_columns_as_contiguous_ones():
    """The native core borrows contiguous columns and copies the others: a layer built from
    every other row of wider arrays (strided views) is the one built from their copies."""
    if not native_available():
        pytest.skip("the native core is not built")
    from tracewh.ingest.decoder import _decode

    thread, ts, dur = (np.array(values, np.int64) for values in
                       ([0, 0, 0, 1, 1], [0, 2, 5, 0, 1], [10, 2, 3, 4, 1]))
    order = np.lexsort((np.arange(5), -dur, ts, thread))
    flags = np.ones(5, np.uint8)

    def widened(values):  # the values at every other place of an array twice as long
        wide = np.zeros(2 * len(values), values.dtype)
        wide[::2] = values
        return wide[::2]

    columns = (order, thread, ts, dur, flags, flags)
    strided = _decode.HostTree(*(widened(values) for values in columns))
    contiguous = _decode.HostTree(*columns)
    depths = [np.frombuffer(built.depth(), np.int32).tolist() for built in (strided, contiguous)]
    assert depths[0] == depths[1] == [0, 1, 1, 0, 1]
    rows, levels = np.array([1, 2, 4]), np.zeros(3, np.int64)
    assert np.frombuffer(strided.ancestors(widened(rows), widened(levels)), np.int64).tolist() \
        == np.frombuffer(contiguous.ancestors(rows, levels), np.int64).tolist() == [0, 0, 3]


@pytest.mark.parametrize("run", ["h100", "mi300"])
def test_agrees_with_tracelens_ops_summary(run, ops_warehouse):
    """TraceLens's published ops summary of the same trace: per op name, its direct kernel
    time (per call the union of the kernels the op launched itself, summed: gpu_self_busy_ns)
    and subtree kernel time (gpu_total_busy_ns), in float µs, and the calls counted. TraceLens
    lists the ops that launched kernels themselves; its times are float µs of float µs
    timestamps, so they agree to within 1 ns per call."""
    require(TRACES[run])
    published = PUBLISHED / f"{run}_falconsai_ops_summary.csv"
    with published.open() as handle:
        expected = list(csv.DictReader(handle))
    ours = {r["name"]: r for r in of_run(ops_warehouse, "op_stats", run) if r["gpu_calls"]}
    assert sorted(ours) == sorted(r["name"] for r in expected)
    for row in expected:
        op = ours[row["name"]]
        calls = int(row["Count"])
        assert op["gpu_calls"] == calls, row["name"]
        assert abs(op["gpu_self_busy_ns"] - float(row["total_direct_kernel_time_sum"]) * 1000) \
            <= calls, row["name"]
        assert abs(op["gpu_total_busy_ns"] - float(row["total_subtree_kernel_time_sum"]) * 1000) \
            <= calls, row["name"]


@pytest.mark.parametrize("run", ["dlrm0", "hta-sampled"])
def test_nested_calls_of_one_name_count_once(run, ops_warehouse):
    """A call nested in a call of the same name adds nothing to the name's total: per name,
    op_stats' gpu_total_ns and gpu_total_busy_ns are the reference's per-call figures summed
    over the calls with no ancestor of their name (on TraceLens's owlv2 H100 trace
    aten::where went from 35,298 to 20,641 ns; see docs/inference.md for TraceLens's 14,657).
    DLRM nests aten::div_, aten::remainder and aten::mul in themselves, HTA's sampled rank
    aten::div, aten::mean, aten::where... Both ways: the stored figures and the call tree."""
    require(TRACES[run])
    cpu, runtime, kernels = raw(ops_warehouse, run)
    _, op_parent = attribution(cpu, runtime, kernels)
    names = {r["event_index"]: r["name"] for r in cpu}

    def nested(op):
        above = op_parent.get(op)
        while above is not None:
            if names[above] == names[op]:
                return True
            above = op_parent.get(above)
        return False

    expected, doubled = {}, set()
    for op, figures in op_calls(cpu, runtime, kernels).items():
        if nested(op):
            if figures[3]:
                doubled.add(names[op])
            continue
        total, busy = expected.get(names[op], (0, 0))
        expected[names[op]] = (total + figures[2], busy + figures[3])
    assert doubled  # the trace has nested calls of one name that launched GPU work
    define_live_op_stats(ops_warehouse.connection)
    for view in ("op_stats", "op_stats_live"):
        got = {r["name"]: (r["gpu_total_ns"], r["gpu_total_busy_ns"])
               for r in of_run(ops_warehouse, view, run)}
        assert got == expected, view


def define_live_op_stats(connection):
    """op_stats_live: op_stats with _op_time computed from the call tree, beside op_stats
    as a connection over the warehouse defines it (from op_time, measured at ingest)."""
    text = published_modules(("_op_time",))["op_stats"]
    connection.execute(text.replace("VIEW op_stats AS", "VIEW op_stats_live AS", 1))


@pytest.mark.parametrize("run", TRACES)
def test_op_stats_from_op_time_equals_the_call_tree(run, ops_warehouse):
    """The stored figures (op_time) and the SQL call tree give op_stats the same rows."""
    require(TRACES[run])
    define_live_op_stats(ops_warehouse.connection)
    live = of_run(ops_warehouse, "op_stats_live", run)
    key = functools.partial(sorted, key=lambda r: str(r["name"]))
    assert key(of_run(ops_warehouse, "op_stats", run)) == key(live)
    assert live or run in ("gpu-only", "hta-old")


def test_op_stats_adds_up_the_traces_of_a_rank(tracewh, sql, warehouse):
    """Two captures of one rank: op_stats sums each trace's stored figures, as the call tree
    over both does."""
    for path in sorted(EXAMPLES.glob("worker[01]_*.json.gz")):
        tracewh("ingest", path, "--run", "twice", "--phase", "train", "--rank", "0")
    per_trace = sql("SELECT trace_id, name, calls FROM op_time WHERE name = 'aten::mm'")
    assert len(per_trace) == 2
    wh = OPEN(warehouse)
    define_live_op_stats(wh.connection)
    stored = rows(wh, "SELECT * FROM op_stats ORDER BY name")
    assert stored == rows(wh, "SELECT * FROM op_stats_live ORDER BY name")
    (mm,) = [r for r in stored if r["name"] == "aten::mm"]
    assert mm["calls"] == sum(r["calls"] for r in per_trace)


def test_the_live_switch_computes_op_time_where_it_does_not_hold():
    """Stored figures under the default rules in a warehouse that has op_time; the call tree
    for a warehouse created before op_time existed, and for other kernel rules (all the
    live helpers then, the classes being live)."""
    rules = default_rules()
    trees = ("_backward_links", "_host_ancestors", "_host_layers", "_kernel_attribution",
             "_kernel_ops")
    calls = ("_op_call_time", "_op_calls_live_traces")
    current = Snapshot({"traces": 3, "op_time": 2, "op_call_time": 2, "call_tree": 2,
                        "kernel_ops": 2, "kernel_attribution": 2, "call_ancestors": 2,
                        "backward_links": 2, "window_time": 2}, 1,
                       (rules_fingerprint(rules),))
    assert live_helpers(current, rules) == ()
    with_op_time = Snapshot({"traces": 3, "op_time": 2}, 1, (rules_fingerprint(rules),))
    assert live_helpers(with_op_time, rules) == (*trees, *calls, "_window_time")
    older = Snapshot({"traces": 3}, 1, (rules_fingerprint(rules),))
    assert live_helpers(older, rules) == (*trees, *calls, "_op_time", "_window_time")
    custom = rules[1:]
    assert "_op_time" in live_helpers(current, custom)
    # the call tree follows no rules: stored wherever the warehouse has it
    assert set(live_helpers(current, custom)) == {name for name, _ in _live_texts()} - set(
        trees)
    assert set(live_helpers(older, custom)) == {name for name, _ in _live_texts()}


# op_time (ingest/ops.py, numpy) against the views it stands in for (SQL), on generated
# threads whose spans need not nest (partial overlaps, zero and missing durations, equal
# starts), launches by correlation (repeated, missing) and External ids.

@functools.cache
def live_ops_connection():
    """The library as written over empty tables, _op_time computed from the call tree."""
    connection = library_connection()
    connection.execute(dict(_live_texts())["_op_time"])
    return connection


SUMMED = ("calls", "gpu_calls", "host_ns", "host_self_ns", "gpu_kernels", "gpu_self_ns",
          "gpu_self_busy_ns", "gpu_total_ns", "gpu_total_busy_ns", "gpu_self_comm_ns",
          "backward_calls", "backward_gpu_total_ns", "backward_gpu_total_busy_ns")
SPAN = st.tuples(st.integers(0, 30), st.one_of(st.none(), st.integers(-1, 12)),
                 st.sampled_from(["cpu_op", "cpu_op", "python_function", "runtime"]),
                 st.sampled_from(["0", "1", None]), st.integers(0, 4))
# Forward ops, a backward call and an autograd node, which links by sequence number pass over.
NAMES = ("aten::mm", "aten::add", "autograd::engine::evaluate_function: MmBackward0",
         "MmBackward0", "aten::mm")
WORK = st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(0, 8)),
                 st.integers(0, 35), st.booleans())


def _generated_tables(spans, work):
    cpu, runtime, kernels = [], [], []
    for index, (start, duration, kind, thread, name) in enumerate(spans):
        row = {"event_index": index, "pid": "1", "tid": thread, "ts_ns": start,
               "dur_ns": duration}
        if kind == "runtime":
            runtime.append(dict(row, correlation=index % 7, category="cuda_runtime",
                                name="cudaLaunchKernel"))
        else:
            cpu.append(dict(row, category=kind, name=NAMES[name], external_id=index % 5,
                            sequence_number=None if name == 4 else index % 3))
    for index, (start, duration, link, by_correlation) in enumerate(work, start=len(spans)):
        kernels.append({"event_index": index, "category": "kernel", "name_id": 1,
                        "name": "k", "ts_ns": start, "dur_ns": duration,
                        "correlation": link % 7 if by_correlation else 100 + link,
                        "external_id": link % 5})
    return cpu, runtime, kernels


def _staged_tables(rows, columns):
    """{table: its generated `rows` as the staged parts hold them} for {table: columns}."""
    import pyarrow as pa

    from tracewh.storage.schema import TABLES

    return {name: pa.Table.from_pylist([{c: r.get(c) for c in wanted} for r in rows[name]],
                                       pa.schema([TABLES[name].schema.field(c)
                                                  for c in wanted]))
            for name, wanted in columns.items()}


def _insert_rows(connection, rows):
    """The library connection's tables `rows` names ({table: rows}) hold those rows only."""
    for name, inserted in rows.items():
        connection.execute(f"DELETE FROM {name}")
        for row in inserted:
            columns = [c for c in row if (c != "name_id" or name == "kernels")
                       and (c != "dur_ns" or name != "instants")]
            connection.execute(
                f"INSERT INTO {name} (run, phase, rank, trace_id, {', '.join(columns)}) "
                f"VALUES ('r', 'p', 0, 't', {', '.join('?' * len(columns))})",
                [row[c] for c in columns])


def test_op_time_counts_a_call_within_its_name_once_though_it_launched_nothing():
    """aten::mm [7, 19) encloses aten::mm [18, 19), which launched nothing and encloses a
    zero-length aten::mm that launched a 1 ns kernel (by External id): the name's total is
    the outer call's 1 ns, the middle call adding nothing."""
    cpu, runtime, kernels = _generated_tables(
        [(7, 12, "cpu_op", "0", 0), (18, 1, "cpu_op", "0", 0), (18, None, "cpu_op", "0", 0)],
        [(0, 1, 2, False)])
    connection = live_ops_connection()
    _insert_rows(connection, {"cpu_ops": cpu, "runtime": runtime, "kernels": kernels})
    assert connection.execute(
        "SELECT calls, gpu_self_ns, gpu_total_ns, gpu_total_busy_ns FROM op_stats").fetchall() \
        == [(3, 1, 1, 1)]


@settings(max_examples=60, deadline=None)
@given(spans=st.lists(SPAN, max_size=30), work=st.lists(WORK, max_size=15),
       ranked=st.booleans())
@example(spans=[(0, None, "cpu_op", "0", 0), (0, None, "cpu_op", "0", 0),
                (0, None, "cpu_op", "0", 0), (0, None, "cpu_op", "0", 0),
                (7, 12, "cpu_op", "0", 0), (18, 1, "cpu_op", "0", 0),
                (18, None, "cpu_op", "0", 0), (0, None, "cpu_op", "0", 0)],
         work=[(0, 1, 1, False)], ranked=False)
def test_op_time_equals_the_views_on_generated_traces(spans, work, ranked):
    """`ranked`: the composite keys made of ranks, as for a trace whose times, threads and
    levels would overflow them."""
    from tracewh.ingest import ops
    from tracewh.ingest.ops import COLUMNS, op_table

    cpu, runtime, kernels = _generated_tables(spans, work)
    rows = {"cpu_ops": cpu, "runtime": runtime, "kernels": kernels, "flows": []}
    staged = _staged_tables(rows, COLUMNS)
    limit = ops.KEY_LIMIT
    ops.KEY_LIMIT = 0 if ranked else limit
    try:
        stored = op_table(staged, "t", None, "rules")
    finally:
        ops.KEY_LIMIT = limit
    got = {} if stored is None else {r["name"]: tuple(r[c] for c in SUMMED)
                                     for r in stored.to_pylist()}
    connection = live_ops_connection()
    _insert_rows(connection, {name: rows[name] for name in ("cpu_ops", "runtime", "kernels")})
    expected = {r[0]: tuple(r[1:]) for r in connection.execute(
        f"SELECT name, {', '.join(SUMMED)} FROM op_stats").fetchall()}
    assert got == expected


# op_call_time (ingest/ops.py, numpy) against op_calls computing every call in SQL.

CALL_COLUMNS = ("event_index", "name", "pid", "tid", "ts_ns", "dur_ns", "depth",
                "parent_event_index", "top_event_index", "partial_overlap", "gpu_kernels",
                "gpu_self_ns", "gpu_self_comm_ns", "gpu_self_busy_ns", "gpu_total_ns",
                "gpu_total_busy_ns")


@settings(max_examples=60, deadline=None)
@given(spans=st.lists(SPAN, max_size=30), work=st.lists(WORK, max_size=15),
       ranked=st.booleans())
def test_op_call_time_equals_op_calls_on_generated_traces(spans, work, ranked):
    """Each call's place and GPU figures as the ingest measures them are op_calls' row of it,
    computed from the events by the SQL."""
    from tracewh.ingest import ops
    from tracewh.ingest.ops import COLUMNS, op_tables

    cpu, runtime, kernels = _generated_tables(spans, work)
    rows = {"cpu_ops": cpu, "runtime": runtime, "kernels": kernels, "flows": []}
    limit = ops.KEY_LIMIT
    ops.KEY_LIMIT = 0 if ranked else limit
    try:
        stored = op_tables(_staged_tables(rows, COLUMNS), "t", None, "rules")["op_call_time"]
    finally:
        ops.KEY_LIMIT = limit
    got = [] if stored is None else [tuple(r[c] for c in CALL_COLUMNS)
                                     for r in stored.to_pylist()]
    connection = library_connection()
    _insert_rows(connection, {"cpu_ops": cpu, "runtime": runtime, "kernels": kernels,
                              "instants": []})
    expected = connection.execute(f"SELECT {', '.join(CALL_COLUMNS)} FROM op_calls").fetchall()
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def test_op_calls_from_op_call_time_equals_op_calls_computed(ops_warehouse):
    """On every trace of the module's warehouse: op_calls as it reads the calls measured at
    ingest is op_calls computing every call from the call tree and op_kernels (the live
    twins of its helpers)."""
    from tracewh.query.library import library_modules_in_order

    connection = ops_warehouse.connection
    define_helpers(connection, "op_calls")
    written = library_modules_in_order()["op_calls"]
    computed = written.replace("VIEW op_calls AS", "VIEW op_calls_computed AS")
    for helper in CALL_HELPERS:
        connection.execute(dict(_live_texts())[helper].replace(
            f"VIEW {helper} AS", f"VIEW {helper}_live AS"))
        computed = computed.replace(f"FROM {helper}", f"FROM {helper}_live")
    connection.execute(computed)
    stored = sorted(connection.execute("SELECT * FROM op_calls").fetchall(), key=repr)
    assert len(stored) > 10_000 and stored == sorted(
        connection.execute("SELECT * FROM op_calls_computed").fetchall(), key=repr)


# call_tree (ingest/call_tree.py, numpy) against the SQL it stands in for
# (sql/live/_host_layers.sql): on every trace of the module's warehouse, and on generated
# threads of every layer's members, runtime calls and instants whose spans need not nest.

TREE_COLUMNS = ("layer", "trace_id", "event_index", "source", "cat", "name", "pid", "tid",
                "ts_ns", "dur_ns", "member", "pos", "depth", "parent_event_index",
                "parent_end_ns", "top_event_index", "partial_overlap")
HOST_LAYERS = f"SELECT {', '.join(TREE_COLUMNS)} FROM _host_layers"


@pytest.mark.parametrize("helper, least", [("_host_layers", 90_000), ("_kernel_ops", 4_000),
                                           ("_kernel_attribution", 4_000),
                                           ("_host_ancestors", 1_000),
                                           ("_backward_links", 100)])
def test_the_stored_call_tree_equals_the_sql_call_tree(ops_warehouse, helper, least):
    """Every trace's call_tree, kernel_ops, kernel_attribution, call_ancestors and
    backward_links rows, as the helpers read them, are the rows their SQL twins compute from the events."""
    connection = ops_warehouse.connection
    define_helpers(connection, helper)
    stored = sorted(connection.execute(f"SELECT * FROM {helper}").fetchall(), key=repr)
    connection.execute(dict(_live_texts())[helper].replace(
        f"VIEW {helper} AS", f"VIEW {helper}_live AS"))
    live = sorted(connection.execute(f"SELECT * FROM {helper}_live").fetchall(), key=repr)
    assert len(stored) > least and stored == live


TREE_SPAN = st.tuples(st.integers(0, 30), st.one_of(st.none(), st.integers(-1, 12)),
                      st.sampled_from(["cpu_op", "python_function", "user_annotation",
                                       "runtime", "instant"]),
                      st.sampled_from(["0", "1", None]), st.booleans())


@settings(max_examples=60, deadline=None)
@given(spans=st.lists(TREE_SPAN, max_size=30), ranked=st.booleans())
def test_call_tree_equals_the_sql_call_tree_on_generated_traces(spans, ranked):
    from tracewh.ingest import call_tree, ops

    rows = {"cpu_ops": [], "runtime": [], "instants": []}
    for index, (start, duration, kind, thread, module) in enumerate(spans):
        source = {"runtime": "runtime", "instant": "instants"}.get(kind, "cpu_ops")
        rows[source].append({
            "event_index": index, "pid": "1", "tid": thread, "ts_ns": start,
            "dur_ns": None if source == "instants" else duration,
            "category": {"runtime": "cuda_runtime", "instant": "[memory]"}.get(kind, kind),
            "name": "nn.Module: M" if module else f"e{index}"})
    staged = _staged_tables(rows, call_tree.COLUMNS)
    limit = ops.KEY_LIMIT
    ops.KEY_LIMIT = 0 if ranked else limit
    try:
        stored = call_tree.tree_table(staged, "t")
    finally:
        ops.KEY_LIMIT = limit
    got = [] if stored is None else [tuple(r[c] for c in TREE_COLUMNS)
                                     for r in stored.to_pylist()]
    connection = library_connection()
    _insert_rows(connection, rows)
    assert sorted(got, key=repr) == sorted(connection.execute(HOST_LAYERS).fetchall(), key=repr)


@settings(max_examples=60, deadline=None)
@given(spans=st.lists(SPAN, max_size=30), work=st.lists(WORK, max_size=15))
def test_kernel_ops_ancestors_and_links_equal_the_sql_on_generated_traces(spans, work):
    """kernel_ops, kernel_attribution, call_ancestors and backward_links (numpy) against their
    SQL twins, on the
    generated threads, launches and External ids of the op_time test."""
    from tracewh.ingest import call_tree
    from tracewh.storage.schema import TABLES

    cpu, runtime, kernels = _generated_tables(spans, work)
    rows = {"cpu_ops": cpu, "runtime": runtime, "kernels": kernels, "flows": [],
            "instants": []}
    stored = call_tree.tree_tables(_staged_tables(rows, call_tree.READ), "t")
    connection = library_connection()
    _insert_rows(connection, {name: rows[name] for name in
                              ("cpu_ops", "runtime", "kernels", "instants")})
    for table, helper in (("kernel_ops", "_kernel_ops"), ("kernel_attribution", "_kernel_attribution"),
                          ("call_ancestors", "_host_ancestors")):
        names = TABLES[table].schema.names
        got = [] if stored[table] is None else sorted(
            (tuple(r[c] for c in names) for r in stored[table].to_pylist()), key=repr)
        expected = connection.execute(f"SELECT {', '.join(names)} FROM {helper}").fetchall()
        assert got == sorted(expected, key=repr), table
    links = [] if stored["backward_links"] is None else sorted(
        tuple(r.values())[1:] for r in stored["backward_links"].to_pylist())
    assert links == sorted(connection.execute(
        "SELECT event_index, forward_event_index, link FROM _backward_links "
        "WHERE link IS NOT NULL").fetchall())


def test_a_warehouse_made_before_the_call_tree_tables_answers_the_same_and_refuses_writes(
        tracewh, warehouse, sql):
    """A warehouse whose pointer has no call_tree, kernel_ops, kernel_attribution,
    call_ancestors nor backward_links (made before they existed, its traces without rows there): the views
    compute the tree (the live twins) and give the same rows; a write is refused in one line
    that says what to do, not with a traceback."""
    from tracewh.storage import delta
    from tracewh.storage.catalog import Catalog

    tracewh("ingest", TRACES["dlrm0"], "--run", "r", "--phase", "train")
    queries = [f"SELECT * FROM {view} ORDER BY ALL" for view in
               ("op_calls", "op_kernels", "op_backward", "module_stats")]
    stored = [sql(text) for text in queries]
    catalog = Catalog(warehouse)
    snapshot = catalog.snapshot()
    tree = ("call_tree", "kernel_ops", "kernel_attribution", "call_ancestors", "backward_links")
    versions = {t: v for t, v in snapshot.versions.items() if t not in tree}
    traces = warehouse / "traces"
    delta.commit(traces, delta.latest_version(traces) + 1, [], "OLDER",
                 catalog.pointer(versions, snapshot.seq, snapshot.class_rules))
    assert live_helpers(Catalog(warehouse).snapshot(), default_rules()) == (
        "_backward_links", "_host_ancestors", "_host_layers", "_kernel_attribution",
        "_kernel_ops")
    assert [sql(text) for text in queries] == stored and len(stored[0]) > 100
    result = tracewh("ingest", EXAMPLES / "worker1_step_12.1694128201556.pt.trace.json.gz",
                     "--run", "r", "--phase", "train", expect=None)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert ("made before the tables call_tree, kernel_ops, kernel_attribution, call_ancestors, "
            "backward_links") \
        in result.output and "tracewh --warehouse NEW ingest" in result.output
