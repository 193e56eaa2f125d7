"""The per-trace table `critical_path_edges`: the critical path of each step of one trace
(one rank), measured once at ingest by the rules of HTA's critical path analysis.

The question is which chain of work set the step's length. The answer is the longest path of
a graph whose nodes are the start and end of every event and whose edges are the
dependencies between them, weighted by the time they took; a trace's graph never changes
after ingest, so each step's path is taken here, once, and the views (rank_critical_path,
critical_path, ...) read the stored edges. The graph is HTA's (hta/analyzers/
critical_path_analysis.py), written here with numpy and one linear pass:

- window: a step is a ProfilerStep#N with a duration (a trace without one is one window over
  the whole capture, step NULL); its host events are those starting in [start, end] with a
  positive duration, its GPU work (kernel, gpu_memcpy, gpu_memset, and MTIA's
  mtia_ccp_events, launched by mtia_runtime calls) that whose launch (the
  runtime call of the trace with its correlation id, not 0: the earliest, then the first in
  the file) is one of them;
- nodes: a start and an end for each host node event (cpu_op events of cpu_ops, every runtime
  call, and the cpu_ops events of any category whose name loads data, DATA_LOADING) and each
  piece of that GPU work; other host events (annotations, python functions) only nest them;
- call stack edges, per thread: events ordered by start, then longer first, then file order;
  one is inside the last open one not ended by its start. A top-level event is a chain
  start -> each child's start and end (recursively) -> its end, each edge weighing the time
  between its ends, but the edge into the end of a blocking call (BLOCKING) weighs 0; the end
  of a top-level event links to the start of the next on the thread with weight 0; no such
  edge joins two calls that take the runtime's lock (LOCKING) but from one's end to the
  other's start;
- the lock chain across threads (HTA >= 0.6): the LOCKING calls hold the runtime's lock in
  turn, in the order they end; each call's span is an edge from its start to the end that
  follows it when no other call ends between, and a call whose start precedes another's end
  waits for that end (weight 0), as consecutive ends follow each other (see _lock_edges);
- GPU edges, per (device, stream), work in start order: start -> end; then from the launch's
  start to the work's start (the launch delay) when the stream's queue held nothing else at
  the launch and at the start (HTA's queue length: +1 at each launch by a LAUNCHES call, -1
  at the start of what it launched, over the whole trace) and the previous work on the stream
  ended before the launch; else from the end of the previous work on the stream (the
  kernel-kernel delay);
- graph launches (GRAPH_LAUNCHES, where HTA connects nothing): the first work of a launch
  on each stream has the launch delay from the call's start when the stream's previous work
  ended before the call, else the kernel-kernel delay as any work; the launch delay is
  attributed to the call (a stored row with event_table runtime), not to no event;
- sync edges, weighing 0, from the GPU's records of synchronisations (cuda_sync events with a
  runtime call), taken in the order of their ends among the work in start order: a Context
  Sync links the end of the last work so far on every stream to the end of its call
  (cudaDeviceSynchronize), a Stream Sync that of its stream's (cudaStreamSynchronize), an
  Event Sync that of the work its event waits for (cudaEventSynchronize): the last work
  launched onto the event's stream before the cudaEventRecord it names. A Stream Wait Event
  (cudaStreamWaitEvent) links the end of the work its event waits for to the start of the
  next work launched onto its stream from the call's thread, and that work then has a
  launch delay only when the awaited work ended before its launch, a kernel-kernel delay
  only when it ended before the previous work on the stream. An edge that would go back in
  time is left out (it could close a cycle);
- the path: the longest path of the graph (nodes in a topological order, each taking its
  best incoming edge; a path whose length would be negative starts afresh);
- each path edge is attributed to an event (the start's event for an edge leaving a start,
  else the end's event for an edge into an end, else the enclosing event; a kernel-kernel
  delay to the earlier work) and classified: launch delay gpu_kernel_launch_overhead,
  kernel-kernel delay gpu_kernel_kernel_overhead, host events data_loading when their name
  loads data (DATA_LOADING), else cpu_bound, GPU work
  gpu_communication_bound when the default kernel rules class it communication, else
  gpu_compute_bound. The zero-weight links (between top-level events) and sync edges are not
  stored;
- the segments (rows with `segment_of`, the communication kernel's event_index): for each
  communication kernel of the window, the best path into its start (each node's best incoming
  edge, walked back), back to and with the first communication kernel met. What the job's
  path across ranks (the critical_path view) joins at a collective: the work of the rank
  that arrived last, up to its arrival.

The rules are HTA 0.6.1's. Where tracewh differs from HTA, on purpose: communication is
tracewh's class (DeepEP, RCCL, symmetric memory count; HTA matches `^nccl.*Kernel` only),
times are integer ns (HTA rounds to us), CPU-only traces get their CPU path and MTIA traces
theirs with the device's work (HTA fails on both), graph launches connect to their work.
"""

import array
import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracewh.allocator import release_between_phases
from tracewh.storage.schema import TABLES

from .decoder import _decode, native_available
from .ops import _array, _dictionary, _matching, _narrowed, _stack, _valid
from .steps import WORK_CATEGORIES, _steps
from .summaries import default_class
from .writer import read_staged, repeated_text, with_dictionaries

# HTA's runtime calls that queue work on a stream (its queue length counts these).
LAUNCHES = frozenset((
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
    "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
    "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream"))
# Calls that wait for the GPU: their time is the GPU's, so the edge into their end weighs 0.
BLOCKING = frozenset((
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize",
    "cudaMemcpy", "cudaMemcpyAsync"))
# Calls that take the CUDA runtime's lock (HTA >= 0.6's CUDA_RUNTIME_EVENTS): one at a time
# across the threads, in the order they end (the lock chain).
LOCKING = frozenset(("cudaLaunchKernel", "cudaMemcpyAsync", "cudaHostAlloc"))
# A gap between two pieces of work on a stream at least this long is no kernel-kernel delay
# (HTA >= 0.6: a dependency tracewh cannot see, not overhead), ns.
GAP_LIMIT_NS = 1_500_000
# Host events that load data (HTA >= 0.6's data_load_events, regular expressions searched in
# the name; HTA takes them from its caller, tracewh names PyTorch's DataLoader annotation and
# the annotations HTA's authors pass themselves): each is a node of the graph whatever its
# category (an annotation is one otherwise only for nesting), its time data_loading.
DATA_LOADING = ("DataLoader", "data_loading", "copy_batch_to_gpu")
# Calls that launch a whole CUDA/HIP graph: HTA leaves their work unconnected to them (its
# issue 290), tracewh gives each stream's first work of the launch a launch delay.
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cudaGraphLaunch_v10000", "hipGraphLaunch")
# The GPU's records of synchronisations (cuda_sync events), by the edges they add: a context
# sync waits for every stream, a stream sync for one, an event sync for the work before the
# event's record, a stream wait event holds a stream's next work until that work is done.
SYNCS = {"Context Sync": 0, "Stream Sync": 1, "Event Sync": 2, "Stream Wait Event": 3}
CONTEXT_SYNC, STREAM_SYNC, EVENT_SYNC, STREAM_WAIT = range(4)

# Edge kinds: time spent in an event, a zero-weight link between top-level events, a launch
# delay, a kernel-kernel delay, a zero-weight span (into a blocking call's end), a
# zero-weight synchronisation (GPU work's end -> the waiting call's end or work's start), a
# zero-weight wait for the runtime's lock (a call's start or end -> the end of the call that
# held the lock then).
SPAN, LINK, LAUNCH, GAP, WAIT, SYNC, LOCK = range(7)
ZERO_WEIGHT = (LINK, WAIT, SYNC, LOCK)
KIND_CLASS = {LAUNCH: "gpu_kernel_launch_overhead", GAP: "gpu_kernel_kernel_overhead"}
# What an edge is bound by, by code (the last: an edge with no event and no delay).
BOUND_BY = ("cpu_bound", "data_loading", "gpu_compute_bound", "gpu_communication_bound",
            *KIND_CLASS.values(), "")
# The tables of the events edges are attributed to, by code.
EVENT_TABLES = ("cpu_ops", "runtime", "kernels")
# critical_path_edges' text columns, made as dictionaries of the codes above and of the
# events' names (see with_dictionaries): no Python string per row is converted, and the
# Parquet writer writes the dictionary it is given instead of hashing every value.
TEXT_COLUMNS = ("trace_id", "step", "bound_by", "name", "event_table")

# The staged columns path_table reads.
COLUMNS = {"cpu_ops": ["event_index", "category", "name", "pid", "tid", "ts_ns", "dur_ns"],
           "runtime": ["event_index", "name", "pid", "tid", "ts_ns", "dur_ns", "correlation"],
           "kernels": ["event_index", "category", "name_id", "ts_ns", "dur_ns", "device",
                       "stream", "correlation"]}
# The text columns path_table reads as Arrow dictionaries: the names' tests are made once per
# distinct name, and no string per row is made.
TEXT = ("category", "name", "pid", "tid")
# The staged columns of the synchronisations (kernels rows of category cuda_sync), read apart:
# their args are not read for the other GPU activity.
SYNC_COLUMNS = ["event_index", "name", "ts_ns", "dur_ns", "device", "stream", "correlation",
                "args"]


def measure(staging, parts, trace_id, kernel_names):
    """(table, rows) pairs of the trace staged in `staging` as `parts` ({table: part
    numbers}): its critical_path_edges, a step's rows at a time (see `pieces`)."""
    staged = read_staged(staging, parts, COLUMNS, dictionaries=TEXT)
    staged["syncs"] = read_staged(staging, parts, {"kernels": SYNC_COLUMNS},
                                  filters=[("category", "=", "cuda_sync")])["kernels"]
    return (("critical_path_edges", rows)
            for rows in _batched(pieces(staged, trace_id, kernel_names), BATCH_ROWS))


# The rows measure hands on at once (a row group of the staged part): a step's path alone
# can be a few thousand rows, too few for a row group of its own.
BATCH_ROWS = 1 << 16


def _batched(tables, rows):
    """The tables put together as they come into tables of at least `rows` rows (the last
    may hold fewer)."""
    held, count = [], 0
    for table in tables:
        held.append(table)
        count += table.num_rows
        if count >= rows:
            yield pa.concat_tables(held).combine_chunks()
            held, count = [], 0
    if held:
        yield pa.concat_tables(held).combine_chunks()


def path_table(staged, trace_id, kernel_names, data_loading=DATA_LOADING):
    """The trace's critical_path_edges rows (None when it has no host node event), from its
    staged tables ({table: at least COLUMNS}, and "syncs": its cuda_sync rows' SYNC_COLUMNS,
    absent: none) and its kernel_names table (None: no GPU activity); `data_loading`: the
    patterns of host events that load data (() as HTA before 0.6, which has no such class)."""
    parts = list(pieces(dict(staged), trace_id, kernel_names, data_loading))
    return pa.concat_tables(parts) if parts else None


def pieces(staged, trace_id, kernel_names, data_loading=DATA_LOADING):
    """path_table's rows, a window (step) at a time, each made as the one before is taken
    (none when the trace has no host node event), from `staged`, whose tables it drops once
    its graph's columns are taken from them: a writer that writes each as it comes holds one
    step's path, not the trace's (415,000 rows, 84 MB of Arrow, for the 254 MB trace), nor
    the staged columns."""
    cpu, runtime, kernels = (staged.pop(name) for name in COLUMNS)
    host = _Host(cpu, runtime, data_loading)
    if not host.size:
        return
    work = _Work(kernels, kernel_names, host)
    syncs = _Syncs(staged.pop("syncs", None), host, work)
    windows = _steps(cpu) or [(None, None, int(host.ts.min()), int(host.end.max()))]
    del cpu, runtime, kernels
    # The staged columns and the graph's making are done with: their heap, freed, is given
    # back before the steps' graphs are made, which reused little of it on several heaps
    # (the 254 MB trace: ~80 MB held free through every step, the measure's peak).
    release_between_phases()
    schema = with_dictionaries(TABLES["critical_path_edges"].schema, TEXT_COLUMNS)
    names, name_code = _distinct(host.name_text.tolist() + work.name_text)
    name_code = np.append(name_code, -1)  # an edge without a name: code -1
    for _, step, start, end in windows:
        path = _Graph(host, work, syncs, start, end).path()
        size = len(path["ns"])
        valid = pa.array(path.pop("valid"))
        columns = {"trace_id": repeated_text(trace_id, size),
                   "step": _coded(np.full(size, -1 if step is None else 0),
                                  pa.array([step or ""])),
                   "bound_by": _coded(path.pop("bound_by"), pa.array(BOUND_BY)),
                   "event_table": _coded(path.pop("event_table"), pa.array(EVENT_TABLES)),
                   "name": _coded(name_code[path.pop("name")], names)}
        for name, values in path.items():
            column = pa.array(values, schema.field(name).type)
            if name == "event_index":  # NULL where the edge has no event (a launch delay)
                column = pc.if_else(valid, column, pa.scalar(None, pa.int64()))
            if name == "segment_of":  # NULL on the step's own path
                column = pc.if_else(pc.equal(column, -1), pa.scalar(None, pa.int64()), column)
            columns[name] = column
        yield pa.table(columns).select(schema.names).cast(schema)


def _distinct(texts):
    """(the distinct texts of `texts` but None, the code of each of `texts` into them, -1
    for None)."""
    texts = pa.array(texts, pa.string())
    distinct = pc.drop_null(pc.unique(texts))
    return distinct, _array(pc.index_in(texts, distinct), fill=-1)


def _coded(codes, dictionary):
    """A dictionary column of `codes` into `dictionary` (-1: NULL)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=codes < 0),
                                          dictionary)


class _Host:
    """The host node events with a positive duration: cpu_op rows of cpu_ops and those that
    load data, then runtime rows, as numpy columns, ordered by (thread, start, longer first,
    table, file order)."""

    def __init__(self, cpu, runtime, data_loading):
        category, names = _dictionary(cpu["category"]), _dictionary(_stack(cpu["name"],
                                                                          runtime["name"]))
        cpu_names = names.slice(0, len(cpu))
        is_node = _valid(category) & (_matching(category, pc.equal, "cpu_op")
                                      | _text_test(cpu_names, _loads_data, data_loading))
        rows = np.concatenate([np.flatnonzero(is_node), len(cpu) + np.arange(len(runtime))])
        nodes = len(rows) - len(runtime)  # the cpu_ops rows that are nodes, first

        def column(name):
            return _array(_stack(cpu[name], runtime[name]))[rows]
        dur = column("dur_ns")
        keep = dur > 0
        table_code = np.repeat(np.arange(2, dtype=np.int8), [nodes, len(runtime)])[keep]
        ts, dur = column("ts_ns")[keep], dur[keep]
        thread = _threads(*(_dictionary(_stack(cpu[name], runtime[name])) for name in
                            ("pid", "tid")), rows)[keep]
        index = column("event_index")[keep]
        order = np.lexsort((index, table_code, -dur, ts, thread))
        self.size = len(order)
        self.ts, self.end = ts[order], (ts + dur)[order]
        self.thread, self.table = thread[order], table_code[order]
        self.index = _narrowed(index[order])  # held, with the columns below, through every step
        # each row's name as a code into the distinct names (None last): a Python string per
        # row was 25 MB of the 254 MB trace's; the tests of names are made once per name
        self.name_text = np.asarray(names.dictionary.to_pylist() + [None], dtype=object)
        codes = _array(names.indices, fill=len(names.dictionary))
        self.name_code = _narrowed(codes[rows][keep][order])
        self.blocking, self.locking, self.queues = (
            _text_test(names, lambda text: pc.is_in(text, pa.array(sorted(calls))))
            [rows][keep][order] for calls in (BLOCKING, LOCKING, LAUNCHES))
        self.loads_data = _text_test(names, _loads_data, data_loading)[rows][keep][order]
        correlation = np.concatenate([np.zeros(nodes, np.int64),
                                      _array(runtime["correlation"])])[keep][order]
        self.correlation = np.where(self.table == 1, correlation, 0)
        self.by_start = np.argsort(self.ts, kind="stable")
        self.ordered_starts = self.ts[self.by_start]

    def named(self, texts):
        """Whether each row's name is one of `texts`."""
        wanted = set(texts)
        return np.fromiter((text in wanted for text in self.name_text), bool,
                           len(self.name_text))[self.name_code]


class _Work:
    """The trace's GPU work launched by a host node event: start, end, stream, its launch
    (a row of _Host), the queue length at the launch and at its start, its class."""

    def __init__(self, kernels, kernel_names, host):
        kernels = kernels.filter(pc.and_(
            pc.is_in(kernels["category"], pa.array(WORK_CATEGORIES)),
            pc.is_valid(kernels["dur_ns"])))
        launch = _launches(host, _array(kernels["correlation"]))
        keep = launch >= 0
        ts = _array(kernels["ts_ns"])[keep]
        order = np.lexsort((_array(kernels["event_index"])[keep], ts))
        self.launch = launch[keep][order]
        self.launch_ts = host.ts[self.launch]
        self.graph = host.named(GRAPH_LAUNCHES)[self.launch]
        self.by_launch = np.argsort(self.launch_ts, kind="stable")
        self.ordered_launches = self.launch_ts[self.by_launch]
        self.ts = ts[order]
        self.end = self.ts + _array(kernels["dur_ns"])[keep][order]
        self.index = _array(kernels["event_index"])[keep][order]
        device, stream = (_array(kernels[name])[keep][order] for name in ("device", "stream"))
        (devices, streams), pairs, self.stream = _pair_codes(device, stream)
        self.stream_code = {(int(devices[d]), int(streams[s])): code
                            for code, (d, s) in enumerate(pairs.tolist())}
        self.queue_at_launch, self.queue_at_start = _queues(
            host.ts[self.launch], self.ts, self.stream, host.queues[self.launch])
        names, classes = _names(kernel_names)
        ids = _array(kernels["name_id"])[keep][order]
        category = _dictionary(kernels["category"])
        texts = category.dictionary.to_pylist() + [None]  # NULL: code -1
        codes = _array(category.indices, fill=-1)[keep][order]
        (_, id_values), pairs, pair_of = _pair_codes(codes, ids)
        self.name_text = [names.get(value) for value in id_values.tolist()]
        self.name_code = pairs[pair_of, 1]  # into name_text
        self.communication = np.asarray(
            [classes.get((texts[c], int(id_values[i]))) == "gpu_communication_bound"
             for c, i in pairs.tolist()], bool)[pair_of]


def _pair_codes(first, second):
    """The distinct values of two int64 columns ((first's, second's), ascending), the
    distinct pairs of a row's values (rows of (position in first's, in second's), in
    lexicographic order) and each row's pair (a code into them): what is named or classed
    per row is then looked up once per pair (a Python lookup per row of the 254 MB trace's
    GPU work was ~0.06 s of its critical path, np.unique over rows of pairs 0.03 s)."""
    values, ranks = zip(*(np.unique(column, return_inverse=True) for column in (first, second)))
    key = ranks[0].reshape(-1) * len(values[1]) + ranks[1].reshape(-1)
    distinct, code = np.unique(key, return_inverse=True)
    return values, np.stack([distinct // max(len(values[1]), 1),
                             distinct % max(len(values[1]), 1)], axis=1), code.reshape(-1)


class _Syncs:
    """The trace's synchronisations with a runtime call (HTA's rules): each one's kind, call (a
    row of _Host), stream (a code of _Work's streams, -1: none), the work it waits for (a row
    of _Work, -1: none; event syncs and stream wait events: the last work launched onto the
    event's stream by a LAUNCHES call before the cudaEventRecord the sync names) and, for a
    stream wait event, the work it holds (the first launched onto its stream from the
    cudaStreamWaitEvent's thread at or after the call, -1: none); in the order of their
    ends (the GPU's record of a sync may outlast work it overlaps)."""

    def __init__(self, table, host, work):
        if table is None:
            table = pa.table({name: pa.array([], TABLES["kernels"].schema.field(name).type)
                              for name in SYNC_COLUMNS})
        table = table.filter(pc.and_(pc.is_in(table["name"], pa.array(list(SYNCS))),
                                     pc.is_valid(table["dur_ns"])))
        call = _launches(host, _array(table["correlation"]))
        keep = call >= 0
        end = (_array(table["ts_ns"]) + _array(table["dur_ns"]))[keep]
        order = np.lexsort((_array(table["event_index"])[keep], end))
        table = table.filter(pa.array(keep)).take(pa.array(order))
        self.call, self.end = call[keep][order], end[order]
        self.kind = np.asarray([SYNCS[name] for name in table["name"].to_pylist()], np.int64)
        devices, streams = table["device"].to_pylist(), table["stream"].to_pylist()
        self.stream = np.asarray([work.stream_code.get((device, stream), -1)
                                  for device, stream in zip(devices, streams)], np.int64)
        args = [json.loads(text) if text else {} for text in table["args"].to_pylist()]
        waits = [(a.get("wait_on_cuda_event_record_corr_id"), a.get("wait_on_stream"))
                 for a in args]
        self.source = _recorded_work(host, work, waits, devices)
        self.target = np.full(len(self.call), -1, np.int64)
        waiting = np.flatnonzero(self.kind == STREAM_WAIT).tolist()
        groups = _launch_groups(work, host.queues[work.launch], host.thread[work.launch],
                                work.stream) if waiting else {}
        for s in waiting:
            self.target[s] = _next_launch(host, work, int(self.call[s]), int(self.stream[s]),
                                          groups)


def _recorded_work(host, work, waits, devices):
    """For each sync waiting on a cudaEventRecord ((its correlation, stream) of `waits`, on
    the sync's device): the last work launched onto that stream by a LAUNCHES call starting
    before the record's call, the last in work order of equal ones (-1: none)."""
    found = np.full(len(waits), -1, np.int64)
    records = {int(host.correlation[row]): row for row in
               np.flatnonzero(host.named(["cudaEventRecord"])).tolist()}
    if not any(isinstance(record, int) for record, _ in waits):
        return found
    by_stream = _launch_groups(work, host.queues[work.launch], work.stream)
    for s, ((record, stream), device) in enumerate(zip(waits, devices)):
        row = records.get(record) if isinstance(record, int) else None
        code = work.stream_code.get((device, stream)) if isinstance(stream, int) else None
        if row is None or code not in by_stream:
            continue
        times, rows = by_stream[code]
        before = np.searchsorted(times, host.ts[row], side="right")
        found[s] = rows[before - 1] if before else -1
    return found


def _next_launch(host, work, call, stream, groups):
    """The first work (in work order of equal ones) launched onto `stream` by a LAUNCHES call
    on the thread of host row `call` at or after its start (-1: none); `groups`:
    _launch_groups by (thread, stream)."""
    times, rows = groups.get((int(host.thread[call]), stream), ((), ()))
    after = np.searchsorted(times, host.ts[call]) if len(times) else 0
    return int(rows[after]) if after < len(rows) else -1


def _launch_groups(work, counted, *keys):
    """{key: (launch times ascending, the work's rows in that order, ties in work order)} of
    the work launched by a LAUNCHES call (`counted`), grouped by the values of `keys` (a
    key a value, or a tuple of values for several)."""
    rows = np.flatnonzero(counted)
    rows = rows[np.lexsort((rows, work.launch_ts[rows], *(k[rows] for k in reversed(keys))))]
    values = np.stack([k[rows] for k in keys], axis=1) if len(rows) else np.zeros((0, 1))
    edges = np.flatnonzero(np.any(values[1:] != values[:-1], axis=1)) + 1
    groups = {}
    for first, last in zip([0, *edges.tolist()], [*edges.tolist(), len(rows)]):
        if first < last:
            key = tuple(int(v) for v in values[first])
            members = rows[first:last]
            groups[key if len(keys) > 1 else key[0]] = (work.launch_ts[members], members)
    return groups


def _launches(host, correlation):
    """For each correlation id, the _Host row of its launch (-1: none): the earliest runtime
    call with that id (not 0), then the first in the file."""
    calls = np.flatnonzero(host.correlation != 0)
    calls = calls[np.lexsort((host.index[calls], host.ts[calls], host.correlation[calls]))]
    ids = host.correlation[calls]
    first = np.ones(len(ids), bool)
    first[1:] = ids[1:] != ids[:-1]
    calls, ids = calls[first], ids[first]
    found = np.searchsorted(ids, correlation)
    found = np.minimum(found, max(len(ids) - 1, 0))
    hit = (correlation != 0) & (len(ids) > 0)
    hit &= ids[found] == correlation if len(ids) else hit
    return np.where(hit, calls[found] if len(ids) else -1, -1)


def _queues(launch_ts, start_ts, stream, counted):
    """HTA's queue length per stream at each work's launch (after it) and start (after it),
    for the work whose launch is `counted` (a LAUNCHES call); -1 elsewhere."""
    at_launch = np.full(len(start_ts), -1, np.int64)
    at_start = at_launch.copy()
    rows = np.flatnonzero(counted)
    if not len(rows):
        return at_launch, at_start
    times = np.concatenate([launch_ts[rows], start_ts[rows]])
    streams = np.concatenate([stream[rows], stream[rows]])
    step = np.concatenate([np.ones(len(rows), np.int64), -np.ones(len(rows), np.int64)])
    order = np.lexsort((times, streams))  # stable: a launch before a start at the same time
    running = np.cumsum(step[order])
    group_start = np.ones(len(order), bool)
    group_start[1:] = streams[order][1:] != streams[order][:-1]
    before = np.maximum.accumulate(np.where(group_start, np.arange(len(order)), 0))
    offset = np.where(before > 0, running[before - 1], 0)
    length = np.empty(len(order), np.int64)
    length[order] = running - offset
    at_launch[rows], at_start[rows] = length[:len(rows)], length[len(rows):]
    return at_launch, at_start


def _loads_data(names, patterns):
    """Whether each of `names` (a string array) is of a host event that loads data: matches
    one of `patterns` (regular expressions, searched)."""
    if not patterns:
        return pa.array(np.zeros(len(names), bool))
    return pc.fill_null(pc.match_substring_regex(names, "|".join(patterns)), False)


def _text_test(column, test, *arguments):
    """A boolean numpy array: `test(texts, *arguments)` (an Arrow boolean array, NULL as
    false) of each row of a dictionary `column` (NULL: false), computed once per distinct
    text."""
    return _matching(column, lambda texts, _: test(texts, *arguments), None)


def _threads(pid, tid, rows):
    """A code per row of `rows` of its thread (pid, tid), in the order the threads first
    appear there (NULL and empty text alike), from two dictionary columns."""
    codes = []
    for column in (pid, tid):
        empty = pc.index(column.dictionary, "").as_py()
        size = len(column.dictionary)
        codes.append(_array(column.indices, fill=size if empty < 0 else empty)[rows])
    key = codes[0] * (len(tid.dictionary) + 1) + codes[1]
    keys = (len(pid.dictionary) + 1) * (len(tid.dictionary) + 1)
    if keys > len(key):  # many pids and tids: their pairs' sort
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(first), np.int64)
        rank[np.argsort(first)] = np.arange(len(first))
        return rank[inverse.reshape(-1)]
    # Few: each pair's first row found in a table of the pairs, not by sorting the rows
    # (np.unique's sorted copies, argsort and inverse of every host row, at the measure's
    # peak).
    first = np.full(keys, len(key), np.int64)
    np.minimum.at(first, key, np.arange(len(key)))
    present = np.flatnonzero(first < len(key))
    rank = np.zeros(keys, np.int64)
    rank[present[np.argsort(first[present])]] = np.arange(len(present))
    return rank[key]


def _names(kernel_names):
    """{name_id: name} and {(category, name_id): class of the path} of the trace's GPU
    activity names."""
    if kernel_names is None:
        return {}, {}
    rows = list(zip(kernel_names["category"].to_pylist(), kernel_names["name_id"].to_pylist(),
                    kernel_names["name"].to_pylist()))
    names = {name_id: name for _, name_id, name in rows}
    classes = {(category, name_id): "gpu_communication_bound"
               if default_class(category, name) == "communication" else "gpu_compute_bound"
               for category, name_id, name in rows}
    return names, classes


def _positions(rows, values):
    """The position in `rows` (ascending) of each of `values`, -1 where it is not there."""
    found = np.minimum(np.searchsorted(rows, values), max(len(rows) - 1, 0))
    return np.where((values >= 0) & (len(rows) > 0) & (rows[found] == values)
                    if len(rows) else False, found, -1)


def _within(by_time, ordered, start, end):
    """The rows (ascending) whose time is in [start, end]: `by_time` the rows in time order,
    `ordered` their times."""
    low, high = np.searchsorted(ordered, start), np.searchsorted(ordered, end, side="right")
    return np.sort(by_time[low:high])


class _Graph:
    """The graph of one window: node 2i is the start of event i, 2i+1 its end (the window's
    host events first, then its GPU work); edges as parallel lists."""

    def __init__(self, host, work, syncs, start, end):
        self.host, self.work, self.syncs = host, work, syncs
        self.rows = _within(host.by_start, host.ordered_starts, start, end)
        self.work_rows = _within(work.by_launch, work.ordered_launches, start, end)
        self.launch_node = 2 * np.searchsorted(self.rows, work.launch[self.work_rows])
        self.base = 2 * len(self.rows)
        self.edges = []  # arrays of rows (src, dst, kind, attributed event)
        self._lock_chain()
        self._call_stacks()
        self._gpu()
        self.times = np.concatenate([
            np.stack([host.ts[self.rows], host.end[self.rows]], axis=1).reshape(-1),
            np.stack([work.ts[self.work_rows], work.end[self.work_rows]],
                     axis=1).reshape(-1)])
        self.size = len(self.times)

    def _lock_chain(self):
        """The runtime's lock across threads (see _lock_edges)."""
        host, rows = self.host, self.rows
        calls = np.flatnonzero(host.locking[rows])
        if len(calls):
            self.edges.append(_lock_edges(calls, host.ts[rows[calls]], host.end[rows[calls]],
                                          host.index[rows[calls]]))

    def _call_stacks(self):
        """Each thread's chains of nested events (see the module's docstring)."""
        host = self.host
        self.edges.append(_call_stack_edges(host.thread[self.rows], host.ts[self.rows],
                                            host.end[self.rows], host.blocking[self.rows],
                                            host.locking[self.rows]))

    def _gpu(self):
        """The GPU work's spans, launch delays, kernel-kernel delays and synchronisations,
        the work in start order and the syncs (whose call is in the window) by their ends."""
        work, syncs, rows = self.work, self.syncs, self.work_rows
        calls = _positions(self.rows, syncs.call)
        in_window = np.flatnonzero(calls >= 0)
        order = np.lexsort((np.arange(len(rows) + len(in_window)),
                            np.concatenate([np.ones(len(rows), np.int64),
                                            np.zeros(len(in_window), np.int64)]),
                            np.concatenate([work.ts[rows], syncs.end[in_window]])))
        self.edges.append(_gpu_edges(self.base, GpuWindow(
            order=order, stream=work.stream[rows], at_launch=work.queue_at_launch[rows],
            at_start=work.queue_at_start[rows], end=work.end[rows], ts=work.ts[rows],
            graph=work.graph[rows], launch=work.launch[rows],
            launch_ts=self.host.ts[self.rows[self.launch_node // 2]],
            launch_node=self.launch_node, sync_kind=syncs.kind[in_window],
            sync_stream=syncs.stream[in_window],
            sync_source=_positions(rows, syncs.source)[in_window],
            sync_target=_positions(rows, syncs.target)[in_window],
            call_end=2 * calls[in_window] + 1, call_end_ts=self.host.end[syncs.call[in_window]])))

    def path(self):
        """The path's edges in order, then each communication kernel's segment: {column:
        array} of the rows' columns but trace_id, step and seq, and "valid" (the row has an
        event); `seq` restarts at 0 with each segment."""
        self.src, self.dst, self.kind, self.attributed = src, dst, kind, _ = np.concatenate(
            self.edges).T
        self.weight = np.where(np.isin(kind, ZERO_WEIGHT), 0,
                               self.times[dst] - self.times[src]) if len(src) else src
        via, end = _best_edges(self.size, src, dst, self.weight)
        comm = (kind == SPAN) & (src >= self.base)
        comm[comm] = self.work.communication[self.work_rows[(src[comm] - self.base) // 2]]
        nodes = src[comm]
        paths = [_walks(via, src, np.array([end]))[0], *_walks(via, src, nodes, stop=comm)]
        # the communication kernel each segment goes into, by its event_index (-1: the path)
        segments = np.concatenate([[-1], self.work.index[self.work_rows[(nodes - self.base)
                                                                         // 2]]])
        stored = ~np.isin(kind, (LINK, SYNC, LOCK))
        return self._rows([edges[stored[edges]] for edges in paths], segments.astype(np.int64))

    def _rows(self, paths, segments):
        """The rows of the path edges of each of `paths` (edge indices, in order), one after
        another, the segment into the communication kernel `segments` names (-1: the step's
        path): made for all paths at once, as a step has a segment for each communication
        kernel (37 per step of DeepSeek's trace, 2,368 for the 254 MB trace)."""
        lengths = [len(edges) for edges in paths]
        edges = np.concatenate(paths)
        first = np.repeat(np.cumsum(lengths) - lengths, lengths)
        src, dst, kind, weight = self.src, self.dst, self.kind, self.weight
        event = self.attributed[edges]
        hosts = len(self.rows)
        on_host, on_gpu = (event >= 0) & (event < hosts), event >= hosts
        host_row = self.rows[np.where(on_host, event, 0)] if hosts else event
        work_row = self.work_rows[np.where(on_gpu, event - hosts, 0)] if len(self.work_rows) \
            else event
        host_name = self.host.name_code[host_row] if hosts else event
        work_name = len(self.host.name_text) + self.work.name_code[work_row] \
            if len(self.work_rows) else event
        loads_data = self.host.loads_data[host_row] if hosts else on_host
        communication = self.work.communication[work_row] if len(self.work_rows) else on_gpu
        bound_by = np.where(on_host, np.where(loads_data, BOUND_BY.index("data_loading"),
                                              BOUND_BY.index("cpu_bound")),
                            np.where(on_gpu, np.where(communication,
                                                      BOUND_BY.index("gpu_communication_bound"),
                                                      BOUND_BY.index("gpu_compute_bound")),
                                     BOUND_BY.index("")))
        for code, label in KIND_CLASS.items():
            bound_by = np.where(kind[edges] == code, BOUND_BY.index(label), bound_by)
        return {"bound_by": bound_by, "ns": weight[edges],
                "start_ns": self.times[src[edges]], "end_ns": self.times[dst[edges]],
                "name": np.where(on_host, host_name, np.where(on_gpu, work_name, -1)),
                "event_table": np.where(on_host, self.host.table[host_row] if hosts else event,
                                        np.where(on_gpu, EVENT_TABLES.index("kernels"), -1)),
                "event_index": np.where(on_host, self.host.index[host_row],
                                        self.work.index[work_row] if len(self.work_rows)
                                        else 0),
                "segment_of": np.repeat(segments, lengths),
                "seq": np.arange(len(edges), dtype=np.int64) - first,
                "valid": on_host | on_gpu}


def _walks(via, src, nodes, stop=None):
    """[_walk(via, src, node, stop) for each of `nodes`]: by the native core when it is
    available (the segments' walks, a Python loop each, were ~40% of DeepSeek's step), else
    by the reference."""
    if native_available():
        columns = [np.ascontiguousarray(values, np.int64).tobytes() for values in (via, src, nodes)]
        flags = b"" if stop is None else np.asarray(stop, np.uint8).tobytes()
        edges, offsets = (np.frombuffer(column, np.int64)
                          for column in _decode.walks_of(*columns, flags))
        return np.split(edges, offsets[1:-1]) if len(offsets) > 1 else []
    return [_walk(via, src, node, stop) for node in np.asarray(nodes).tolist()]


def _walk(via, src, node, stop=None):
    """The edges (indices, in order) of the best path into `node` (`via`: each node's best
    incoming edge, -1 for none), walked back to its start, or to and with the first edge
    where `stop` is true: the reference the native walks are tested against."""
    path = []
    edge = via[node] if node >= 0 else -1
    while edge >= 0:
        path.append(edge)
        if stop is not None and stop[edge]:
            break
        edge = via[int(src[edge])]
    return np.asarray(path[::-1], np.int64)


def _lock_edges(events, start, end, index):
    """The lock chain's edges, rows (src, dst, kind, attributed event), of the calls that take
    the runtime's lock (`events`: their rows in a window, node 2e their start, 2e+1 their
    end; their starts, ends and event indices), as HTA's _construct_graph_from_cuda_runtime_
    events: the starts and ends in time order (then event order); each end takes the starts
    since the previous end, the latest first (its own: the call's span; another call's: that
    call waited for the lock, weight 0), then, right after an end, comes from it (weight 0).
    HTA's loop in numpy (the test has the loop as the reference)."""
    nodes = np.concatenate([2 * events, 2 * events + 1])
    nodes = nodes[np.lexsort((np.tile(index, 2), np.concatenate([start, end])))]
    ends = np.flatnonzero(nodes % 2 == 1)
    starts = np.flatnonzero(nodes % 2 == 0)
    into = ends[np.searchsorted(ends, starts)]  # the end that takes each start
    taken = np.lexsort((-starts, into))
    src, dst = nodes[starts[taken]], nodes[into[taken]]
    own = dst == src + 1
    follows = ends[1:][ends[1:] - 1 == ends[:-1]]  # ends right after an end
    edges = np.concatenate([
        np.stack([src, dst, np.where(own, SPAN, LOCK), np.where(own, src // 2, -1)], 1),
        np.stack([nodes[follows - 1], nodes[follows], np.full(len(follows), LOCK),
                  np.full(len(follows), -1)], 1)])
    return edges[np.argsort(np.concatenate([into[taken], follows]), kind="stable")]


def _call_stack_edges(thread, start, end, blocking, locking):
    """The call-stack edges, rows (src, dst, kind, attributed event), of host events in the
    order of _Host (int64 thread codes, starts and ends, bool blocking and locking): by the
    native core when it is available (its per-event loop in Python was ~1.7 s of the 254 MB
    trace's ingest), else by the reference."""
    if native_available():
        columns = [np.ascontiguousarray(values, np.int64).tobytes()
                   for values in (thread, start, end)]
        flags = [np.asarray(values, np.uint8).tobytes() for values in (blocking, locking)]
        edges = _decode.call_stack_edges_of(*columns, *flags)
        return np.stack([np.frombuffer(column, np.int64) for column in edges], axis=1)
    return _call_stack_edges_reference(thread, start, end, blocking, locking)


def _call_stack_edges_reference(thread, start, end, blocking, locking):
    """`_call_stack_edges` in Python, the reference the native one is tested against: per
    thread, an event is inside the last open one not ended by its start; a top-level event
    is a chain start -> each child's start and end -> its end (the edge into a blocking
    call's end a WAIT), and its end links to the next top-level event's start. An edge is
    attributed to the event whose start it leaves, else to the one whose end it enters,
    else to the enclosing event. An edge between two calls that take the runtime's lock
    (`locking`) is left to the lock chain (_lock_edges) unless it goes from one's end to
    the other's start (HTA's _shares_cuda_runtime_lock)."""
    threads, ends = thread.tolist(), end.tolist()
    starts, blocking, locking = start.tolist(), blocking.tolist(), locking.tolist()
    edges = []
    edge = edges.append

    def close(stack, last):
        # the edge into the innermost open event's end; (new last node, top-level end)
        i = stack.pop()
        if not (locking[i] and locking[last // 2]):
            edge((last, 2 * i + 1, WAIT if blocking[i] else SPAN,
                  last // 2 if last % 2 == 0 else i))
        return (2 * i + 1, None) if stack else (None, 2 * i + 1)

    stack, last, top_end, current = [], None, None, None
    for i, (t, ts) in enumerate(zip(threads, starts)):
        if t != current:
            while stack:
                last, top_end = close(stack, last)
            current, top_end = t, None
        while stack and ends[stack[-1]] <= ts:
            last, top_end = close(stack, last)
        if not stack and top_end is not None:
            edge((top_end, 2 * i, LINK, -1))
        if last is not None and not (locking[i] and locking[last // 2] and last % 2 == 0):
            edge((last, 2 * i, SPAN, last // 2 if last % 2 == 0 else stack[-1]))
        stack.append(i)
        last = 2 * i
    while stack:
        last, top_end = close(stack, last)
    return np.asarray(edges, np.int64).reshape(-1, 4)


@dataclasses.dataclass
class GpuWindow:
    """A window's GPU work (rows in launch order: stream, queue lengths at launch and at
    start, end, start, whether graph-launched, launch id, its launch call's start and start
    node) and the syncs whose call is in it (kind, stream, source and target work rows or
    -1, their call's end node and end), and `order`: the work and syncs as they happen
    (k < len(work): a work row, else sync k - len(work))."""

    order: np.ndarray
    stream: np.ndarray
    at_launch: np.ndarray
    at_start: np.ndarray
    end: np.ndarray
    ts: np.ndarray
    graph: np.ndarray
    launch: np.ndarray
    launch_ts: np.ndarray
    launch_node: np.ndarray
    sync_kind: np.ndarray
    sync_stream: np.ndarray
    sync_source: np.ndarray
    sync_target: np.ndarray
    call_end: np.ndarray
    call_end_ts: np.ndarray


def _gpu_edges(base, window):
    """The GPU edges, rows (src, dst, kind, attributed event), of a GpuWindow whose work's
    nodes start at `base`: by the native core when it is available (its loop in Python was
    ~0.1 s of the 254 MB trace's ingest), else by the reference."""
    if native_available():
        columns = [np.ascontiguousarray(getattr(window, field.name), np.int64).tobytes()
                   for field in dataclasses.fields(window)]
        edges = _decode.gpu_edges_of(base, columns)
        return np.stack([np.frombuffer(column, np.int64) for column in edges], axis=1)
    return _gpu_edges_reference(base, window)


def _gpu_edges_reference(base, window):
    """`_gpu_edges` in Python, the reference the native one is tested against: each work's
    span; a sync edge into it from the work a Stream Wait Event holds it for (when that
    ended before it started); a launch edge from its launch call when it starts an idle
    queue (or a graph's first work on a stream) and nothing on its stream or its source
    ended after the launch; else a gap edge from the stream's previous work when the gap is
    under GAP_LIMIT_NS; and a sync edge from each work a sync waits for (every stream's
    last for a context sync, the stream's last for a stream sync, its source for an event
    sync) that ended by the sync call's end."""
    w = window
    rows = len(w.stream)
    streams, at_launch, at_start = w.stream.tolist(), w.at_launch.tolist(), w.at_start.tolist()
    ends, work_ts, launch_ts = w.end.tolist(), w.ts.tolist(), w.launch_ts.tolist()
    graph, launches, launch_node = w.graph.tolist(), w.launch.tolist(), w.launch_node.tolist()
    kinds, sync_streams = w.sync_kind.tolist(), w.sync_stream.tolist()
    sources, targets = w.sync_source.tolist(), w.sync_target.tolist()
    call_end, call_end_ts = w.call_end.tolist(), w.call_end_ts.tolist()
    # the edges' four values in turn, int64 (a tuple of Python ints each was ~100 bytes
    # an edge: 60 MB for the x256 trace, whose GPU work falls in one step)
    last, held, edges, graph_streams = {}, {}, array.array("q"), set()
    for k in w.order.tolist():
        if k >= rows:  # a sync
            s = k - rows
            if kinds[s] == STREAM_WAIT:
                if targets[s] >= 0 and sources[s] >= 0:
                    held[targets[s]] = sources[s]
                continue
            waited = (list(last.values()) if kinds[s] == CONTEXT_SYNC else
                      [last.get(sync_streams[s])] if kinds[s] == STREAM_SYNC else
                      [sources[s]] if sources[s] >= 0 else [])
            for j in waited:
                if j is not None and ends[j] <= call_end_ts[s]:
                    edges.extend((base + 2 * j + 1, call_end[s], SYNC, -1))
            continue
        j, node = k, base + 2 * k
        edges.extend((node, node + 1, SPAN, node // 2))
        previous, source = last.get(streams[j]), held.pop(j, None)
        if source is not None and ends[source] <= work_ts[j]:
            edges.extend((base + 2 * source + 1, node, SYNC, -1))
        else:
            source = None
        first_of_graph = graph[j] and (launches[j], streams[j]) not in graph_streams
        if first_of_graph:
            graph_streams.add((launches[j], streams[j]))
        if ((at_launch[j] == 1 and at_start[j] == 0 or first_of_graph)
                and (previous is None or ends[previous] < launch_ts[j])
                and (source is None or ends[source] < launch_ts[j])):
            launch = launch_node[j]  # a graph's: attributed to its launch
            edges.extend((launch, node, LAUNCH, launch // 2 if graph[j] else -1))
        elif (previous is not None and work_ts[j] - ends[previous] < GAP_LIMIT_NS
              and (source is None or ends[source] < ends[previous])):
            edges.extend((base + 2 * previous + 1, node, GAP, base // 2 + previous))
        last[streams[j]] = j
    return np.frombuffer(edges, np.int64).reshape(-1, 4)


def _longest_path(size, src, dst, weight):
    """The edges (indices) of a longest path of the DAG of `size` nodes and edges src -> dst
    of `weight`, in order (see _best_edges)."""
    if not len(src):
        return []
    via, end = _best_edges(size, src, dst, weight)
    return _walk(via, src, end).tolist()


def _best_edges(size, src, dst, weight):
    """(each node's best incoming edge, -1 for none; the end node of a longest path) of the
    DAG of `size` nodes and edges src -> dst of `weight` (int64 arrays): by the native core
    when it is available (its per-node loop in Python was ~1 s of the 254 MB trace's
    ingest), else by the reference."""
    if native_available():
        edges = [np.ascontiguousarray(values, np.int64).tobytes() for values in (src, dst, weight)]
        via, end = _decode.best_edges(size, *edges)
        return np.frombuffer(via, np.int64), end
    return _best_edges_reference(size, src, dst, weight)


def _best_edges_reference(size, src, dst, weight):
    """`_best_edges` in Python, the reference the native one is tested against: nodes in a
    topological order (Kahn's, the ready nodes a stack), each taking its best incoming edge
    (the first of equal ones) unless its length would be negative; the path ends at the
    first node of greatest length. The graphs of _Graph have no cycle: host edges follow
    each thread's order, GPU edges the work's start order, and the sync edges from the GPU
    to the host go forward in time."""
    if not len(src):
        return [-1] * size, -1
    order = np.argsort(src, kind="stable")
    first = np.searchsorted(src[order], np.arange(size + 1))
    out_dst, out_weight = dst[order].tolist(), weight[order].tolist()
    out_edge, first = order.tolist(), first.tolist()
    pending = np.bincount(dst, minlength=size).tolist()
    length, via = [None] * size, [-1] * size
    ready = [node for node in range(size) if not pending[node]]
    end, longest = -1, -1
    while ready:
        node = ready.pop()
        if length[node] is None or length[node] < 0:  # no predecessor, or a fresh start
            length[node], via[node] = 0, -1
        here = length[node]
        if here > longest:
            end, longest = node, here
        for k in range(first[node], first[node + 1]):
            target = out_dst[k]
            candidate = here + out_weight[k]
            if length[target] is None or candidate > length[target]:
                length[target], via[target] = candidate, out_edge[k]
            pending[target] -= 1
            if not pending[target]:
                ready.append(target)
    return via, end
