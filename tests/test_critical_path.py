"""The critical path of each step (ingest/critical_path.py, the rank_critical_path views)
against HTA's own figures on real traces (tests/data/critical_path/hta.toml, produced by
running HTA), and its longest path against a plain reference on generated graphs."""

import collections
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tracewh as tracewh_library
from tracewh.ingest.critical_path import (BLOCKING, COLUMNS, DATA_LOADING, SYNC_COLUMNS,
                                          _best_edges,
                                          _best_edges_reference,
                                          _call_stack_edges, _call_stack_edges_reference,
                                          _gpu_edges, _gpu_edges_reference, GpuWindow,
                                          _lock_edges, _longest_path, _walk, _walks,
                                          path_table,
                                          LOCK, SPAN)
from tracewh.ingest.decoder import native_available

from .conftest import EXAMPLES, SHARED, connect, load_reference, require

DATA = Path(__file__).parent / "data" / "critical_path"
HTA = tomllib.loads((DATA / "hta.toml").read_text())


def _breakdown_us(bound_by, ns):
    sums = collections.Counter()
    for name, value in zip(bound_by, ns):
        sums[name] += value
    return {name: value / 1000 for name, value in sums.items()}


@pytest.mark.parametrize("case", sorted(HTA))
def test_rank_breakdown_agrees_with_hta(case, tracewh, sql, warehouse):
    """tracewh's per-rank breakdown, stored at ingest, is HTA 0.6.1's (its data_load_events
    tracewh's DATA_LOADING): exactly on integer-microsecond traces, and on a float-timestamp
    trace once its events are rounded as HTA rounds them (what the ingest stored then has
    HTA's classes, its own nanoseconds)."""
    reference = HTA[case]
    trace = DATA / reference["trace"] if reference.get("bundled") else SHARED / reference["trace"]
    tracewh("ingest", require(trace), "--run", "r")
    step = reference["step"] or None
    stored = sql("SELECT step, bound_by, ns FROM rank_critical_path_breakdown")
    assert {row["step"] for row in stored} == {step}
    classes = _breakdown_us([r["bound_by"] for r in stored], [r["ns"] for r in stored])
    if not reference["rounded"]:
        assert classes == reference["breakdown_us"]
        return
    assert set(classes) == set(reference["breakdown_us"])
    connection = connect(warehouse)
    base = connection.sql("SELECT coalesce(base_time_ns, 0) FROM traces").fetchall()[0][0]
    staged = {table: connection.sql(f"SELECT {', '.join(columns)} FROM {table}").to_arrow_table()
              for table, columns in COLUMNS.items()}
    staged["syncs"] = connection.sql(f"SELECT {', '.join(SYNC_COLUMNS)} FROM kernels "
                                     "WHERE category = 'cuda_sync'").to_arrow_table()
    staged = {table: _hta_rounded(rows, base) for table, rows in staged.items()}
    names = connection.sql("SELECT category, name_id, name FROM kernel_names").to_arrow_table()
    rows = path_table(staged, "t", names)
    rows = rows.filter(pc.is_null(rows["segment_of"]))  # the step's path, not the segments
    assert set(rows["step"].to_pylist()) == {step}
    assert _breakdown_us(rows["bound_by"].to_pylist(), rows["ns"].to_pylist()) == \
        reference["breakdown_us"]


def _hta_rounded(table, base):
    """HTA's rounding of a trace with float timestamps: each start up and each end down to a
    whole microsecond of the trace's own clock (relative to `base` ns)."""
    relative = pc.cast(pc.subtract(table["ts_ns"], base), pa.float64())
    start = pc.multiply(pc.ceil(pc.divide(relative, 1000.0)), 1000.0)
    end = pc.multiply(pc.floor(pc.divide(
        pc.add(relative, pc.cast(table["dur_ns"], pa.float64())), 1000.0)), 1000.0)
    table = table.set_column(table.schema.get_field_index("ts_ns"), "ts_ns",
                             pc.add(pc.cast(start, pa.int64()), base))
    return table.set_column(table.schema.get_field_index("dur_ns"), "dur_ns",
                            pc.cast(pc.subtract(end, start), pa.int64()))


def test_path_rows_are_a_chain_in_time(tracewh, sql, warehouse):
    """The stored path of DeepSeek's step runs forward in time, each edge's weight its
    length (but blocking calls' ends), attributed to real events of the step's rank. The
    job's path of this one-rank run, stored without asking for its collectives' figures, is
    the view's, which asks for them."""
    tracewh("ingest", require(SHARED / "deepseek-profile-data/train.json"), "--run", "r")
    rows = sql("SELECT * FROM rank_critical_path ORDER BY seq")
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    assert all(a["end_ns"] <= b["start_ns"] for a, b in zip(rows, rows[1:]))
    assert all(r["ns"] == r["end_ns"] - r["start_ns"]
               or (r["ns"] == 0 and r["name"] in BLOCKING) for r in rows)
    kernels = sql("SELECT count(*) AS n FROM rank_critical_path AS p JOIN kernels AS k "
                  "ON k.event_index = p.event_id WHERE p.event_table = 'kernels' "
                  "AND p.name = k.name")
    assert kernels[0]["n"] == sum(r["event_table"] == "kernels" for r in rows) > 900
    assert sql("SELECT count(*) AS n FROM critical_path_edges WHERE bound_by = "
               "'gpu_communication_bound'")[0]["n"] > 0  # cuts the job's path turns at
    _stored_path_is_the_view_s(warehouse)
    job = sql("SELECT * FROM critical_path ORDER BY seq")
    assert [(r["seq"], r["ns"], r["event_id"]) for r in job] == \
        [(r["seq"], r["ns"], r["event_id"]) for r in rows]
    shares = sql("SELECT sum(share) AS s FROM critical_path_breakdown")
    assert shares[0]["s"] == pytest.approx(1.0)
    top = sql("SELECT name, bound_by, ns FROM critical_path_by_name LIMIT 1")[0]
    assert top["bound_by"] == "gpu_compute_bound"
    assert top["ns"] == max(r["ns"] for r in sql(
        "SELECT name, sum(ns) AS ns FROM rank_critical_path GROUP BY name, bound_by"))


# Generated graphs: a DAG on n nodes (edges from a lower to a higher label, labels then
# shuffled), weights of either sign, against a longest path computed the plain way.

@st.composite
def dags(draw):
    size = draw(st.integers(1, 12))
    pairs = draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1),
                                    st.integers(-5, 20)), max_size=40))
    labels = draw(st.permutations(range(size)))
    edges = [(labels[a], labels[b], w) for a, b, w in pairs if a < b]
    return size, edges


def _reference_lengths(size, edges):
    """Each node's length: the best of its incoming edges' (predecessor + weight), or 0 when
    that is negative or there is none, computed by relaxing every edge `size` times
    (Bellman-Ford on a DAG)."""
    length = [0] * size
    for _ in range(size):
        best = [None] * size
        for a, b, w in edges:
            best[b] = max(best[b] if best[b] is not None else length[a] + w, length[a] + w)
        length = [max(0, value) if value is not None else 0 for value in best]
    return length


def _reference_length(size, edges):
    """The greatest length over every node (see _reference_lengths)."""
    return max(_reference_lengths(size, edges))


@settings(max_examples=200, deadline=None)
@given(graph=dags())
@example(graph=(3, [(0, 1, -5), (1, 2, 3)]))  # a path starting afresh after a negative edge
@example(graph=(4, [(2, 0, 4), (0, 3, 0), (1, 3, 5)]))  # labels not in time order
def test_longest_path_equals_the_plain_reference(graph):
    size, edges = graph
    src = pa.array([a for a, _, _ in edges], pa.int64()).to_numpy()
    dst = pa.array([b for _, b, _ in edges], pa.int64()).to_numpy()
    weight = pa.array([w for _, _, w in edges], pa.int64()).to_numpy()
    path = _longest_path(size, src, dst, weight)
    assert all(dst[a] == src[b] for a, b in zip(path, path[1:]))
    assert sum(int(weight[e]) for e in path) == _reference_length(size, edges)


@settings(max_examples=300, deadline=None)
@given(graph=dags(), spread=st.integers(0, 2**40))
@example(graph=(3, [(0, 1, -5), (1, 2, 3)]), spread=0)
@example(graph=(4, [(0, 1, 7), (0, 2, 7), (1, 3, 0), (2, 3, 0)]), spread=0)  # equal paths
def test_native_best_edges_are_the_reference_edge_for_edge(graph, spread):
    """The native core takes the same best edge into every node as the Python reference, and
    ends the longest path at the same node, ties and fresh starts included (the edges' events
    become the stored path and segments), with weights up to 2^40 ns."""
    if not native_available():
        pytest.skip("the native core is not built")
    size, edges = graph
    src, dst = (np.array([edge[i] for edge in edges], np.int64) for i in (0, 1))
    weight = np.array([w * spread if w > 15 else w for _, _, w in edges], np.int64)
    via, end = _best_edges(size, src, dst, weight)
    assert (list(via), end) == _best_edges_reference(size, src, dst, weight)


@st.composite
def host_events(draw):
    """Host events as _Host orders them: per thread, by start then longer first; nested,
    overlapping, touching and equal events, some blocking, some taking the runtime's lock."""
    rows = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(1, 12),
                                   st.booleans(), st.booleans()), max_size=30))
    rows.sort(key=lambda row: (row[0], row[1], -row[2]))
    thread, start, duration, blocking, locking = (
        np.array([row[i] for row in rows], dtype)
        for i, dtype in enumerate((np.int64, np.int64, np.int64, bool, bool)))
    return thread, start, start + duration, blocking, locking


@settings(max_examples=300, deadline=None)
@given(events=host_events())
@example(events=(np.array([0, 0, 0, 1]), np.array([0, 1, 5, 0]), np.array([9, 5, 9, 3]),
                 np.array([False, True, False, False]),
                 np.array([False, False, False, False])))  # nested, closing, next thread
@example(events=(np.array([0, 0, 0, 0]), np.array([0, 1, 2, 6]), np.array([9, 5, 4, 8]),
                 np.array([False, False, False, False]),
                 np.array([True, True, True, True])))  # locking calls nested and in turn
def test_native_call_stack_edges_are_the_reference_edge_for_edge(events):
    """The native call-stack pass gives the Python reference's edges, in its order (the
    longest path takes the first of equal edges, so the order is part of the result)."""
    if not native_available():
        pytest.skip("the native core is not built")
    assert _call_stack_edges(*events).tolist() == _call_stack_edges_reference(*events).tolist()


@st.composite
def gpu_windows(draw):
    """(base, GpuWindow): GPU work on a few streams, some graph-launched, with idle and busy
    queues, and syncs of every kind (sources and targets some work or none) interleaved with
    it in any order: every branch of the walk, ties of times included."""
    rows, syncs = draw(st.integers(0, 12)), draw(st.integers(0, 8))
    ints = lambda low, high, size: np.array(draw(st.lists(st.integers(low, high), min_size=size,
                                                          max_size=size)), np.int64)
    ts = ints(0, 50, rows)
    work = dict(stream=ints(0, 2, rows), at_launch=ints(0, 2, rows), at_start=ints(0, 1, rows),
                end=ts + ints(0, 20, rows), ts=ts, graph=ints(0, 1, rows).astype(bool),
                launch=ints(0, 3, rows), launch_ts=ints(0, 50, rows),
                launch_node=2 * ints(0, 20, rows))
    sync = dict(sync_kind=ints(0, 3, syncs), sync_stream=ints(0, 2, syncs),
                sync_source=ints(-1, rows - 1, syncs), sync_target=ints(-1, rows - 1, syncs),
                call_end=2 * ints(0, 20, syncs) + 1, call_end_ts=ints(0, 70, syncs))
    order = np.array(draw(st.permutations(range(rows + syncs))), np.int64)
    return 2 * draw(st.integers(0, 50)), GpuWindow(order=order, **work, **sync)


def _window(order, stream, ts, end, syncs=()):
    """A GpuWindow of work on `stream` at [ts, end), none graph-launched or starting an idle
    queue, and `syncs` (kind, source, target)."""
    array = lambda values: np.array(values, np.int64)
    zeros = array([0] * len(stream))
    return 0, GpuWindow(order=array(order), stream=array(stream), at_launch=zeros,
                        at_start=zeros, end=array(end), ts=array(ts), graph=zeros,
                        launch=zeros, launch_ts=zeros, launch_node=zeros,
                        sync_kind=array([kind for kind, _, _ in syncs]),
                        sync_stream=array([0] * len(syncs)),
                        sync_source=array([source for _, source, _ in syncs]),
                        sync_target=array([target for _, _, target in syncs]),
                        call_end=array([1] * len(syncs)), call_end_ts=array([99] * len(syncs)))


@settings(max_examples=400, deadline=None)
@given(window=gpu_windows())
# a stream wait's source that ended with the stream's previous work: no gap edge
@example(window=_window([0, 1, 3, 2], [0, 1, 0], [0, 0, 10], [5, 5, 12], [(3, 1, 2)]))
def test_native_gpu_edges_are_the_reference_edge_for_edge(window):
    """The native walk of a window's GPU work and syncs gives the Python reference's edges,
    in its order."""
    if not native_available():
        pytest.skip("the native core is not built")
    base, columns = window
    assert _gpu_edges(base, columns).tolist() == _gpu_edges_reference(base, columns).tolist()


def test_native_gpu_edges_refuse_columns_that_disagree():
    if not native_available():
        pytest.skip("the native core is not built")
    from tracewh.ingest.decoder import _decode

    columns = [np.zeros(2, np.int64).tobytes()] * 16
    with pytest.raises(ValueError, match="do not agree"):
        _decode.gpu_edges_of(0, columns[:15])
    with pytest.raises(ValueError, match="do not agree"):  # a sync source names no work
        _decode.gpu_edges_of(0, columns[:12] + [np.array([5, 0], np.int64).tobytes()]
                             + columns[13:])


@settings(max_examples=200, deadline=None)
@given(graph=dags(), stops=st.lists(st.booleans(), min_size=40, max_size=40))
def test_native_walks_are_the_reference_s(graph, stops):
    """The native walks back along the best edges (the path and the segments) give the
    reference's edges into every node, stopping at the same flagged edges, or not."""
    if not native_available():
        pytest.skip("the native core is not built")
    size, edges = graph
    src, dst = (np.array([edge[i] for edge in edges], np.int64) for i in (0, 1))
    weight = np.array([w for _, _, w in edges], np.int64)
    via, _ = _best_edges(size, src, dst, weight)
    stop = np.array(stops[:len(edges)] + [False] * (len(edges) - len(stops)), bool)
    nodes = np.arange(-1, size, dtype=np.int64)
    for flags in (None, stop):
        assert [w.tolist() for w in _walks(via, src, nodes, flags)] == [
            _walk(via, src, node, flags).tolist() for node in nodes.tolist()]


def _lock_edges_reference(events, start, end, index):
    """HTA's lock chain as HTA writes it: the nodes in (time, event) order, a stack of starts
    emptied by each end (the latest first), an edge from an end to the end right after it."""
    nodes = sorted([(t, i, 2 * e) for e, t, i in zip(events, start, index)]
                   + [(t, i, 2 * e + 1) for e, t, i in zip(events, end, index)])
    edges, pending, last = [], [], None
    for _, _, node in nodes:
        if node % 2 == 0:
            pending.append(node)
        else:
            while pending:
                begin = pending.pop()
                edges.append((begin, node, SPAN, begin // 2) if begin + 1 == node
                             else (begin, node, LOCK, -1))
            if last is not None and last % 2 == 1:
                edges.append((last, node, LOCK, -1))
        last = node
    return edges


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 15)), max_size=25))
@example(calls=[(0, 10), (2, 10), (4, 3), (20, 2)])  # HTA's example: one waits, then in turn
def test_lock_chain_is_htas_loop(calls):
    """The lock chain in numpy gives HTA's loop's edges, in its order."""
    start = np.array([t for t, _ in calls], np.int64)
    end = start + np.array([d for _, d in calls], np.int64)
    events = np.arange(len(calls), dtype=np.int64) * 3  # rows of a window, not 0..n-1
    index = np.arange(len(calls), dtype=np.int64)[::-1].copy()  # event order breaks ties
    found = _lock_edges(events, start, end, index) if len(calls) else np.zeros((0, 4))
    assert found.tolist() == [list(edge) for edge in _lock_edges_reference(
        events.tolist(), start.tolist(), end.tolist(), index.tolist())]


@settings(max_examples=200, deadline=None)
@given(graph=dags())
@example(graph=(3, [(0, 1, -5), (1, 2, 3)]))
def test_the_way_into_every_node_is_its_longest(graph):
    """The segments' walk: from each node back along its best incoming edges, a chain of
    edges into the node whose length is the node's longest (the plain reference)."""
    size, edges = graph
    src = pa.array([a for a, _, _ in edges], pa.int64()).to_numpy()
    dst = pa.array([b for _, b, _ in edges], pa.int64()).to_numpy()
    weight = pa.array([w for _, _, w in edges], pa.int64()).to_numpy()
    via, _ = _best_edges(size, src, dst, weight)
    for node, length in enumerate(_reference_lengths(size, edges)):
        way = _walk(via, src, node).tolist()
        assert all(dst[a] == src[b] for a, b in zip(way, way[1:]))
        assert not way or dst[way[-1]] == node
        assert sum(int(weight[e]) for e in way) == length


def test_job_path_of_several_ranks_and_the_command(tracewh, sql, warehouse):
    """Over DLRM's 8 ranks the job's path is the path of a rank without a collective on it
    (rank 0's, 5.9 ms, its CPU path the longest of those): rank 1's own path is longer, but
    most of it waits in a collective, and walked through the rank that arrived last there it
    is shorter; no rank's path less its waits is longer than rank 0's.
    `tracewh critical-path` prints its breakdown and its longest events, or one rank's."""
    tracewh("ingest", EXAMPLES, "--run", "dlrm")
    paths = sql("SELECT rank, seq, start_ns, end_ns, ns, bound_by FROM rank_critical_path")
    waits = {(w["rank"], w["start_ns"], w["start_ns"] + w["dur_ns"]): w["wait_ns"] for w in sql(
        "SELECT rank, start_ns, dur_ns, wait_ns FROM collective_waits WHERE matched")}
    own, waited = collections.Counter(), collections.Counter()
    for edge in paths:
        own[edge["rank"]] += edge["ns"]
        if edge["bound_by"] == "gpu_communication_bound":
            waited[edge["rank"]] += min(edge["ns"], waits.get(
                (edge["rank"], edge["start_ns"], edge["end_ns"]), 0))
    chosen = max(sorted(own), key=lambda rank: own[rank] - waited[rank])
    assert (chosen, max(own, key=own.get)) == (0, 1) and waited[1] > 4_000_000
    job = sql("SELECT rank, bound_by, ns FROM critical_path")
    assert {r["rank"] for r in job} == {0}
    total = sql("SELECT sum(ns) AS ns FROM critical_path_breakdown")[0]["ns"]
    assert total == own[0] == 5_893_000 == sum(r["ns"] for r in job)
    found = json.loads(tracewh("critical-path", "dlrm", "--format", "json", "--top", "3").stdout)
    assert sum(row["ns"] for row in found["breakdown"]) == total
    assert len(found["segments"]) == 3
    assert found["segments"][0]["ns"] >= found["segments"][-1]["ns"]
    _stored_path_is_the_view_s(warehouse)
    one = json.loads(tracewh("critical-path", "dlrm", "--rank", "0", "--step",
                             "ProfilerStep#10", "--format", "json").stdout)
    assert {(r["bound_by"], r["ns"]) for r in one["breakdown"]} == {
        (r["bound_by"], r["ns"]) for r in sql(
            "SELECT bound_by, ns FROM rank_critical_path_breakdown WHERE run = 'dlrm' "
            "AND rank = 0 AND step = 'ProfilerStep#10'")}
    assert ("data_loading", HTA["dlrm-worker0"]["breakdown_us"]["data_loading"] * 1000) in {
        (r["bound_by"], r["ns"]) for r in one["breakdown"]}
    refused = tracewh("critical-path", "nope", expect=2)
    assert "unknown run 'nope'" in refused.stderr


DELAY_US = 3000
SLOW_US = 500


def _shifted(events, grown, delay_us):
    """`events` with `delay_us` inserted at the end of event `grown` (an index): it, the host
    events of its thread around it and the step around it last `delay_us` longer, and every
    event starting from its end on starts `delay_us` later."""
    first = events[grown]
    at_us = first["ts"] + first["dur"]
    for index, event in enumerate(events):
        if "ts" not in event:
            continue
        if event["ts"] >= at_us:
            event["ts"] += delay_us
            continue
        around = "dur" in event and event["ts"] + event["dur"] >= at_us
        host = event.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime")
        if index == grown or around and (
                host and event.get("tid") == first["tid"]
                or event.get("name", "").startswith("ProfilerStep#")):
            event["dur"] += delay_us


def _late_rank(tracewh, sql, tmp_path, cut_short=False):
    """Ingest DLRM's rank 1 as run `base` and two ranks made from it as run `job`: rank 1
    spends DELAY_US more in the host op that takes the most of its way into the all-to-all on
    its path (ended before the collective started), so it arrives DELAY_US late, and rank 0's
    copy of the collective lasts DELAY_US (its wait) + SLOW_US (a slower transfer) longer;
    with `cut_short`, rank 1's step ends as that op starts, so the step holds no way of rank
    1's into the collective. (base path ns, the
    collective's path row, the op's event_id and ns on the way into it)."""
    source = EXAMPLES / "worker1_step_12.1694128201556.pt.trace.json.gz"
    tracewh("ingest", source, "--run", "base")
    base_ns = sql("SELECT sum(ns) AS ns FROM rank_critical_path")[0]["ns"]
    collective = sql("SELECT event_id, start_ns, ns FROM rank_critical_path "
                     "WHERE bound_by = 'gpu_communication_bound' ORDER BY ns DESC LIMIT 1")[0]
    op = sql(f"SELECT p.event_index AS event_id, sum(p.ns) AS ns FROM critical_path_edges AS p "
             f"JOIN cpu_ops AS o ON o.event_index = p.event_index "
             f"WHERE p.segment_of = {collective['event_id']} AND p.event_table = 'cpu_ops' "
             f"AND o.category = 'cpu_op' "
             f"AND o.ts_ns + o.dur_ns < {collective['start_ns']} "
             f"GROUP BY ALL ORDER BY ns DESC, event_id LIMIT 1")[0]
    for rank in (0, 1):
        document = load_reference(source)
        document["distributedInfo"].update(rank=rank, world_size=2)
        events = document["traceEvents"]
        if rank == 1:
            _shifted(events, op["event_id"], DELAY_US)
            if cut_short:
                step = next(e for e in events if e.get("name", "").startswith("ProfilerStep#"))
                step["dur"] = events[op["event_id"]]["ts"] - step["ts"]
        else:
            _shifted(events, collective["event_id"], DELAY_US + SLOW_US)
        (tmp_path / f"rank{rank}.json").write_text(json.dumps(document, default=str))
    tracewh("ingest", tmp_path / "rank0.json", tmp_path / "rank1.json", "--run", "job")
    return base_ns, collective, op


def test_job_path_runs_through_the_rank_the_others_waited_for(tracewh, sql, tmp_path,
                                                              warehouse):
    """Two ranks made from DLRM's rank 1 (_late_rank): the job's path crosses at the
    collective: rank 1's work up to its arrival, the delayed op DELAY_US longer on it, then
    rank 0's transfer after the last arrival (SLOW_US longer), no wait; DELAY_US + SLOW_US
    longer than the rank's path was, longer than either rank's path less its waits (what a
    path kept on one rank could say)."""
    base_ns, collective, op = _late_rank(tracewh, sql, tmp_path)
    grown = (DELAY_US + SLOW_US) * 1000
    ranks = {r["rank"]: r["ns"] for r in sql(
        "SELECT rank, sum(ns) AS ns FROM rank_critical_path WHERE run = 'job' GROUP BY rank")}
    assert ranks == {0: base_ns + grown, 1: base_ns + DELAY_US * 1000}
    waits = {r["rank"]: r["wait_ns"] for r in sql(
        f"SELECT rank, wait_ns FROM collective_waits WHERE run = 'job' AND matched "
        f"AND start_ns IN ({collective['start_ns']}, {collective['start_ns'] + DELAY_US * 1000})")}
    assert waits == {0: DELAY_US * 1000, 1: 0}
    job = sql("SELECT seq, rank, bound_by, ns, event_table, event_id FROM critical_path "
              "WHERE run = 'job' ORDER BY seq")
    assert sum(r["ns"] for r in job) == base_ns + grown > max(
        ranks[rank] - waits[rank] for rank in ranks)
    assert [r["seq"] for r in job] == list(range(len(job)))
    crossing = next(i for i, r in enumerate(job) if r["rank"] == 0)
    assert {r["rank"] for r in job[:crossing]} == {1} and job[crossing:] == job[-1:]
    assert job[-1]["event_id"] == collective["event_id"]
    assert job[-1]["ns"] == collective["ns"] + SLOW_US * 1000
    assert sum(r["ns"] for r in job if r["event_table"] == "cpu_ops"
               and r["event_id"] == op["event_id"]) == op["ns"] + DELAY_US * 1000
    assert "gpu_communication_wait" not in {r["bound_by"] for r in job}
    _stored_path_is_the_view_s(warehouse)


def _stored_path_is_the_view_s(warehouse):
    """The job's path the refresh stored (the critical_path mart, computed in Python) holds
    the rows the view's SQL computes, and is what a question over every run reads."""
    from tracewh.derived.marts import mart_path

    current = tracewh_library.open(warehouse).current_marts()
    assert {Path(p).parent for p in current["critical_path"]} == {
        mart_path(warehouse, "critical_path")}
    stored = connect(warehouse).sql("SELECT * FROM critical_path").fetchall()
    computed = connect(warehouse, marts=False).sql("SELECT * FROM critical_path").fetchall()
    assert len(computed) > 0 and sorted(stored, key=repr) == sorted(computed, key=repr)


def test_job_path_keeps_a_wait_for_a_rank_without_its_way_there(tracewh, sql, tmp_path,
                                                                warehouse):
    """As above, but rank 1's step ends before its way into the collective, so no segment of
    rank 1's leads there: the instance is matched all the same, and the job's path stays on
    rank 0, its wait for rank 1 on it as gpu_communication_wait (DELAY_US), then the
    transfer."""
    base_ns, collective, _ = _late_rank(tracewh, sql, tmp_path, cut_short=True)
    job = sql("SELECT seq, rank, bound_by, ns, start_ns, event_id FROM critical_path "
              "WHERE run = 'job' ORDER BY seq")
    assert {r["rank"] for r in job} == {0}
    assert sum(r["ns"] for r in job) == base_ns + (DELAY_US + SLOW_US) * 1000
    wait, transfer = job[-2:]
    assert (wait["bound_by"], wait["ns"], wait["event_id"]) == \
        ("gpu_communication_wait", DELAY_US * 1000, collective["event_id"])
    assert (transfer["bound_by"], transfer["ns"], transfer["start_ns"]) == \
        ("gpu_communication_bound", collective["ns"] + SLOW_US * 1000,
         collective["start_ns"] + DELAY_US * 1000)
    breakdown = {r["bound_by"]: r["ns"] for r in sql(
        "SELECT bound_by, ns FROM critical_path_breakdown WHERE run = 'job'")}
    assert breakdown["gpu_communication_wait"] == DELAY_US * 1000
    _stored_path_is_the_view_s(warehouse)


def test_diff_and_trend_say_which_class_of_which_rank_grew(tracewh, sql, tmp_path):
    """`tracewh diff --by critical-path` keys each rank's path by class: rank 1, its host op
    DELAY_US longer (_late_rank's rank 1 alone as run `late`), regressed by exactly that in
    cpu_bound, its launch delay unchanged; `trend critical_path:cpu_bound` shows the growth."""
    _late_rank(tracewh, sql, tmp_path)
    tracewh("ingest", tmp_path / "rank1.json", "--run", "late")
    report = json.loads(tracewh("diff", "base", "late", "--by", "critical-path",
                                "--format", "json").stdout)
    rows = {row["name"]: row for row in report["kernels"]}
    assert rows["cpu_bound rank 1"]["delta_ns"] == DELAY_US * 1000
    assert rows["cpu_bound rank 1"]["status"] == "regressed"
    assert rows["gpu_kernel_launch_overhead rank 1"]["status"] == "unchanged"
    assert report["by"] == "critical-path"
    table = tracewh("diff", "base", "late", "--by", "critical-path").stdout
    assert "critical path classes" in table and "cpu_bound rank 1" in table
    trend = json.loads(tracewh("trend", "critical_path:cpu_bound", "--format", "json").stdout)
    values = {row["run"]: row for row in trend}
    assert values["late"]["value"] - values["base"]["value"] == DELAY_US * 1000
    refused = tracewh("trend", "critical_path:nope", expect=2)
    assert "critical_path:CLASS" in refused.stderr


def test_a_column_says_where_hta_classes_an_edge_otherwise(tracewh, sql, tmp_path):
    """DLRM's rank 1 with its all-to-all kernel named as DeepEP's: tracewh's path counts it as
    communication, HTA (`^nccl.*Kernel`) as compute, and hta_bound_by says so; the other
    edges' classes are HTA's own."""
    source = EXAMPLES / "worker1_step_12.1694128201556.pt.trace.json.gz"
    document = load_reference(source)
    events = document["traceEvents"]
    collective = next(i for i, e in enumerate(events) if e.get("cat") == "kernel"
                      and e["name"].startswith("ncclKernel_SendRecv"))
    events[collective]["name"] = "void deep_ep::internode::dispatch<8>(int4*)"
    (tmp_path / "deepep.json").write_text(json.dumps(document, default=str))
    tracewh("ingest", tmp_path / "deepep.json", "--run", "r")
    rows = sql("SELECT bound_by, hta_bound_by, event_id FROM rank_critical_path "
               "WHERE bound_by <> hta_bound_by")
    assert rows == [{"bound_by": "gpu_communication_bound",
                     "hta_bound_by": "gpu_compute_bound", "event_id": collective}]
    assert sql("SELECT count(*) AS n FROM rank_critical_path")[0]["n"] > 600


VLLM = "tracelens/inference/vllm_decode_full_graph_execution.json.gz"


def test_graph_launch_connects_to_its_kernels_where_hta_does_not(tracewh, sql, tmp_path):
    """vLLM's decode replays one hipGraphLaunch of 421 kernels. On the real trace the stream
    is still busy when the graph is launched, so its first kernel follows the previous work
    (as HTA's). With that earlier GPU work taken out, the stream is idle at the launch: the
    path runs from the host through the call into the graph's first kernel, the launch delay
    attributed to the call, and hta_bound_by says HTA has no such edge."""
    import gzip
    document = json.loads(gzip.decompress(require(SHARED / VLLM).read_bytes()))
    tracewh("ingest", SHARED / VLLM, "--run", "real")
    launches = sql("SELECT * FROM rank_critical_path WHERE run = 'real' "
                   "AND bound_by = 'gpu_kernel_launch_overhead'")
    assert launches == []
    graph = next(e["args"]["correlation"] for e in document["traceEvents"]
                 if e.get("name") == "hipGraphLaunch")
    document["traceEvents"] = [
        e for e in document["traceEvents"]
        if e.get("cat") not in ("kernel", "gpu_memcpy") or e["args"]["correlation"] == graph]
    trace = tmp_path / "graph_only.json"
    trace.write_text(json.dumps(document))
    tracewh("ingest", trace, "--run", "idle")
    rows = sql("SELECT * FROM rank_critical_path WHERE run = 'idle' ORDER BY seq")
    launch = [r for r in rows if r["bound_by"] == "gpu_kernel_launch_overhead"]
    assert [(r["name"], r["event_table"], r["hta_bound_by"]) for r in launch] == [
        ("hipGraphLaunch", "runtime", None)]
    call = sql("SELECT ts_ns, event_index FROM runtime WHERE run = 'idle' "
               "AND name = 'hipGraphLaunch'")[0]
    first = sql("SELECT min(ts_ns) AS ts FROM kernels WHERE run = 'idle'")[0]["ts"]
    assert (launch[0]["start_ns"], launch[0]["end_ns"], launch[0]["event_id"]) == (
        call["ts_ns"], first, call["event_index"])
    assert launch[0]["ns"] == first - call["ts_ns"] > 6_000_000  # the GPU ran 6.9 ms behind
    assert rows[0]["event_table"] in ("cpu_ops", "runtime")  # the path starts on the host
    assert sum(r["ns"] for r in rows if r["bound_by"] == "gpu_compute_bound") == sum(
        e["dur_ns"] for e in sql("SELECT dur_ns FROM kernels WHERE run = 'idle'"))


def test_a_cpu_only_trace_gets_its_host_path(tracewh, sql, tmp_path):
    """DLRM's worker 0 without its GPU activity and runtime calls (a CPU-only trace, on which
    HTA fails): with no edge across threads, the step's path is the thread whose top-level
    ops (and data loading annotations) take the most time, each op's time wholly on it,
    computed here from the trace's events by their nesting."""
    source = SHARED / "param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
    document = load_reference(require(source))
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("cat") not in (
        "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cuda_sync",
        "gpu_user_annotation", "ac2g")]
    trace = tmp_path / "cpu_only.json"
    trace.write_text(json.dumps(document, default=str))
    tracewh("ingest", trace, "--run", "cpu")
    step = next(e for e in document["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    loading = re.compile("|".join(DATA_LOADING))
    nodes = sorted(((e["pid"], e["tid"]), e["ts"], -e["dur"]) for e in document["traceEvents"]
                   if e.get("ph") == "X" and e["dur"] > 0
                   and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]
                   and (e.get("cat") == "cpu_op" or loading.search(e["name"])))
    busy, open_until = collections.Counter(), {}
    for thread, start, negative in nodes:
        if start >= open_until.get(thread, start):  # nothing open on the thread: top level
            busy[thread] += -negative
            open_until[thread] = start - negative
        else:
            open_until[thread] = max(open_until[thread], start - negative)
    rows = sql("SELECT step, bound_by, ns FROM rank_critical_path WHERE run = 'cpu'")
    assert {r["step"] for r in rows} == {step["name"]}
    assert {r["bound_by"] for r in rows} == {"cpu_bound", "data_loading"}
    assert sum(r["ns"] for r in rows) == max(busy.values()) * 1000 > 4_000_000
    hta = sql("SELECT DISTINCT hta_bound_by FROM rank_critical_path WHERE run = 'cpu'")
    assert hta == [{"hta_bound_by": None}]  # HTA gives no path of it


def test_mtia_work_is_on_the_path_where_hta_fails(tracewh, sql, tmp_path):
    """An MTIA trace: the device's work (mtia_ccp_events) is launched by `runFunction -
    job_prep_and_submit_for_execution`, an mtia_runtime call, which HTA counts as a launch
    but gives no node (its graph has none for mtia_runtime), so HTA fails on MTIA traces
    (AssertionError: could not find runtime index). tracewh's path runs through the call,
    its launch delay and the device's work, with the names, streams and args of HTA's own
    MTIA test trace (bundled), and hta_bound_by says HTA has none of it. That trace's own path
    is its host's (its device work never outlasts the host's chain), 248.8 ms."""
    call = {"ph": "X", "cat": "mtia_runtime", "pid": 865, "tid": 1828, "ts": 110, "dur": 8,
            "name": "runFunction - job_prep_and_submit_for_execution",
            "args": {"correlation": 20200002, "device": 17, "stream_id": 101,
                     "executable_name": "remote"}}
    work = {"ph": "X", "cat": "mtia_ccp_events", "name": "remote", "pid": 17, "tid": 3700,
            "ts": 130, "dur": 480, "args": {"correlation": 20200002, "stream": 101}}
    step = {"ph": "X", "cat": "cpu_op", "name": "predict", "pid": 865, "tid": 1828,
            "ts": 100, "dur": 40, "args": {}}
    trace = tmp_path / "mtia.json"
    trace.write_text(json.dumps({"traceEvents": [step, call, work]}))
    tracewh("ingest", trace, "--run", "mtia")
    rows = sql("SELECT bound_by, ns, name, event_table, hta_bound_by FROM rank_critical_path "
               "WHERE run = 'mtia' ORDER BY seq")
    assert [(r["bound_by"], r["ns"], r["name"], r["event_table"], r["hta_bound_by"])
            for r in rows] == [("cpu_bound", 10_000, "predict", "cpu_ops", None),
                               ("gpu_kernel_launch_overhead", 20_000, None, None, None),
                               ("gpu_compute_bound", 480_000, "remote", "kernels", None)]
    tracewh("ingest", DATA / "hta" / "mtia_inference.json.gz", "--run", "real")
    real = sql("SELECT bound_by, sum(ns) AS ns FROM rank_critical_path WHERE run = 'real' "
               "GROUP BY ALL")
    assert real == [{"bound_by": "cpu_bound", "ns": 248_816_410}]
