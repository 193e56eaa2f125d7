"""The per-trace table `call_tree`: the host call tree of one trace, in the four layers the
views read (`_host_layers`), built once at ingest.

op_calls, op_kernels, module_stats, collective_calls and the views over them ask of every
host event its parent, depth and outermost enclosing event. In SQL that is ordered window
passes over every host event of the rank (sql/live/_host_layers.sql, ~8 s for one rank of
DeepSeek's trace scaled x64, each time a view is read). A trace's tree never changes after
ingest, so it is built here once, with numpy (the sorted searches of ops.py's _Tree), and
the views read the stored rows (sql/_host_layers.sql). The rules are the live view's:

- per (pid, tid) and layer, events ordered by start, then longer first, then event_index;
  an event's depth is the number of members open at its start (one ending where another
  starts is closed by then; an event without a positive duration never opens), its parent
  the last member opened one level up, its top the one opened at level 0 (a member at depth
  0 is its own top); pos its 1-based place in that order among the layer's events;
- layer `all`: every cpu_ops and runtime event, each a member; layers `cpu_op`, `module` and
  `annotation`: their members (cpu_ops of category cpu_op; python_function events named
  `nn.Module: ...`; category user_annotation) and, placed but never opening, every runtime
  event and every instant;
- partial_overlap: the event ends after its parent or starts once its parent ended.
"""

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracewh.allocator import release_between_phases
from tracewh.storage.schema import TABLES

from . import ops
from .ops import _Order, _array, _dictionary, _matching, _stack, _tree
from .keyed import contiguous
from .writer import read_staged, repeated_text, with_dictionaries

SOURCES = ("cpu_ops", "runtime", "instants")
# The staged columns tree_table reads; ancestor_table reads op_time's too.
COLUMNS = {source: ["event_index", "category", "name", "pid", "tid", "ts_ns"]
           + (["dur_ns"] if source != "instants" else []) for source in SOURCES}
MODULE_PREFIX = "nn.Module: "
# The layers whose members' ancestors call_ancestors holds.
ANCESTOR_LAYERS = ("cpu_op", "module")
# kernel_ops' links, by code.
LINKS = ("containment", "external_id", "runtime_only", "unlaunched")
# The layers of a launch's parents in kernel_ops, and their columns.
PARENTS = {"cpu_op": "op_event_index", "module": "module_event_index",
           "annotation": "annotation_event_index"}
# The GPU activity's own columns that kernel_attribution copies beside its attribution.
ACTIVITY = ["category", "name", "name_id", "ts_ns", "dur_ns", "device", "stream",
            "correlation"]
# The staged columns the attribution reads, once the tree is built: the ids that link GPU
# activity to the host events and the activity's own columns.
LINKING = {"cpu_ops": ["external_id"], "runtime": ["correlation"],
           "kernels": ["event_index"] + ACTIVITY + ["external_id"]}
# The staged columns the tree and the backward links read.
FIRST = {**COLUMNS, "cpu_ops": COLUMNS["cpu_ops"] + ["external_id", "sequence_number"],
         "runtime": COLUMNS["runtime"] + ["correlation"], "flows": ops.COLUMNS["flows"]}
# Every staged column the measure reads.
READ = {**FIRST, "kernels": LINKING["kernels"]}


def measure(staging, parts, trace_id):
    """(table, rows) pairs of the trace staged in `staging` as `parts` ({table: part
    numbers}), see `pieces`: its call_tree, kernel_ops,
    kernel_attribution, call_ancestors and backward_links. The GPU activity and the ids
    that link it are read from the parts once the tree is built, not held beside it (~13 MB
    of the 254 MB trace's)."""
    return pieces(ops.read_linking(staging, parts, FIRST, TEXT), trace_id,
                  lambda: read_staged(staging, parts, LINKING, dictionaries=TEXT))


def pieces(staged, trace_id, read_later=None):
    """(table, rows or None) pairs of the trace's staged tables ({table: at least FIRST}), a
    table's rows in one piece or more (call_tree: LAYER_ROWS at a time), each made as the one
    before is taken: a writer that writes each piece as it comes holds one slice of the tree
    at a time, not four layers (1.5M rows for a 254 MB trace, the ingest's peak of memory).
    The backward links come first, their own columns of the host events let go (and the
    flows, which only they read, dropped from `staged`) before the tree's are made: last,
    beside the tree, they were the measure's peak. `read_later`: a function giving the
    attribution's LINKING columns ({table: rows}), called once the tree is built; None: they
    are taken from `staged` (and held beside the tree)."""
    yield "backward_links", backward_table(staged, trace_id)
    staged.pop("flows", None)
    events = _Events(staged)
    linking = None if read_later else {name: staged[name].select(columns)
                                       for name, columns in LINKING.items()}
    # The host events' staged columns, copied into `events`, let go.
    staged.clear()
    trees = {}
    layers = 0
    for layer in _layers(events, trace_id, trees):
        layers += 1
        yield "call_tree", layer
        del layer  # taken: not held while the next layer is made
    if not layers:
        yield "call_tree", None
    for column in LAYERS_ONLY:  # let go before the attribution's columns are made
        events.columns.pop(column)
    attributed = _attribution(read_later() if read_later else linking, trees)
    yield "kernel_ops", kernel_table(trace_id, trees, attributed)
    yield "kernel_attribution", attribution_table(trace_id, trees, attributed)
    yield "call_ancestors", None if not layers else ancestor_table(trace_id, trees,
                                                                   attributed[3])


def tree_tables(staged, trace_id):
    """{table: rows or None} of the trace's staged tables ({table: at least READ}): `pieces`
    put together."""
    return ops.put_together(pieces(dict(staged), trace_id))


# The events' Arrow columns only the layers copy (the attribution names launches and ops by
# name and tid): 34 MB of the 1 GB trace's, at the call tree's peak beside the attribution.
LAYERS_ONLY = ("category", "pid", "ts_ns", "dur_ns")
# The text columns the layers copy, held as Arrow dictionaries: each layer takes their
# indices, not their text, and the Parquet writer writes the dictionary it is given instead of
# hashing every value again (the four layers of a 254 MB trace are 1.5M rows).
TEXT = ("category", "name", "pid", "tid")


class _Events:
    """The trace's cpu_ops, runtime and instants rows, stacked in that order, as numpy
    columns (an instant has no duration) and the Arrow columns the table copies (TEXT as
    dictionaries)."""

    def __init__(self, staged):
        tables = [staged[source] for source in SOURCES]
        sizes = [len(table) for table in tables]
        self.size = sum(sizes)
        self.source = np.repeat(np.arange(len(SOURCES), dtype=np.int8), sizes)
        self.columns = {"ts_ns": contiguous(_stack(*(table["ts_ns"] for table in tables)))}
        self.columns.update({name: _dictionary(_stack(*(table[name] for table in tables)))
                             for name in TEXT})
        durations = contiguous(_stack(staged["cpu_ops"]["dur_ns"], staged["runtime"]["dur_ns"],
                                      pa.chunked_array([pa.nulls(sizes[2], pa.int64())])))
        self.columns["dur_ns"] = durations
        self.index = ops._narrowed(_array(_stack(*(table["event_index"] for table in tables))))
        self.ts = _array(self.columns["ts_ns"])
        self.span = np.maximum(_array(durations), 0)
        pid, tid = (_array(self.columns[name].indices, fill=-1) for name in ("pid", "tid"))
        thread = (pid + 1) * (tid.max(initial=0) + 2) + tid + 1
        if thread.max(initial=0) > len(thread):  # many pids and tids: dense codes, <= rows
            thread = np.unique(thread, return_inverse=True)[1].reshape(-1)
        self.thread = thread


def tree_table(staged, trace_id, trees=None):
    """The trace's call_tree rows (None when it has no host event), from its staged tables
    ({table: at least COLUMNS}); `trees` (a dict) is given the events and each layer's
    (_Tree, members)."""
    layers = list(_layers(_Events(staged), trace_id, {} if trees is None else trees))
    return pa.concat_tables(layers) if layers else None


def _layers(events, trace_id, trees):
    """The call_tree rows of each layer of the host `events` (_Events) in turn, in slices of
    at most LAYER_ROWS rows (none when the trace has no host event); `trees` is given the
    events and, as each is made, a layer's (_Tree, members)."""
    trees["events"] = events
    if not events.size:
        return
    order = _Order(events)
    category, name = events.columns["category"], events.columns["name"]
    host = events.source < 2
    runtime, instant = events.source == 1, events.source == 2
    cpu = events.source == 0
    python_module = (_matching(category, pc.equal, "python_function")
                     & _matching(name, pc.starts_with, MODULE_PREFIX))
    layers = {"all": (host, host),
              "cpu_op": (cpu & _matching(category, pc.equal, "cpu_op"), runtime | instant),
              "module": (cpu & python_module, runtime | instant),
              "annotation": (cpu & _matching(category, pc.equal, "user_annotation"),
                             runtime | instant)}
    schema = with_dictionaries(TABLES["call_tree"].schema,
                                ("trace_id", "layer", "source", "cat", "name", "pid", "tid"))
    for layer, (member, others) in layers.items():
        # The heap freed since the layer before (its slices, made here while the one before
        # is written by another thread, and their Parquet encoding) given back: reused
        # little on several heaps, it grew by ~25 MB over the four layers of the 254 MB trace.
        release_between_phases()
        tree = _tree(events, order, member | others, member)
        if layer in PARENTS:
            trees[layer] = (tree, member)
        yield from _layer(events, order, tree, layer, member, member | others, trace_id, schema)


def _thread_starts(thread):
    """Where each thread's rows begin (`thread`: the rows' thread codes, each thread's rows
    together), ascending."""
    changes = np.flatnonzero(thread[1:] != thread[:-1]) + 1
    return np.concatenate([np.zeros(min(len(thread), 1), np.int64), changes])


def _positions_in_thread(starts, low, high):
    """The 1-based place of each of the rows low..high-1 among the rows of its thread
    (`starts`: _thread_starts of all the rows): made for a slice as it is made, where the
    whole layer's positions and their four temporaries were the call tree's peak of memory
    (2.1M rows of the 1 GB trace's layer `all`: ~80 MB)."""
    at = np.arange(low, high)
    return at - starts[np.searchsorted(starts, at, side="right") - 1] + 1


# The rows of a layer made into Arrow at once (a row group of the staged part): a layer's
# whole Arrow was as large as the trace (1.06M rows, 50 MB, for the 254 MB trace; 200 MB for
# the 1 GB one), its columns in numpy beside it. A slice and its numpy columns are the call
# tree's peak of memory: 2^17 rows rather than 2^18 took 10-16 MB off the measuring worker's
# peak (the 254 MB trace: 283 -> 273 MB RSS) at the same CPU, 2^16 rather than 2^17 another
# 13-16 MB (one slice made while the one before is written) at 3% more CPU.
LAYER_ROWS = 1 << 16


def _layer(events, order, tree, layer, member, placed, trace_id, schema):
    """One layer's rows, in the thread's start order, LAYER_ROWS at a time: each slice's
    columns computed as it is made (a layer's ten whole-trace numpy columns at once were
    the measure's peak of memory)."""
    every = order.rows[placed[order.rows]]
    starts = _thread_starts(events.thread[every])
    for low in range(0, max(len(every), 1), LAYER_ROWS):  # an empty layer: a table still
        at = slice(low, low + LAYER_ROWS)
        rows = every[at]
        taken = pa.array(rows)
        size = len(taken)
        depth = tree.depth[rows]
        inner = depth > 0
        top = np.where(inner, tree.ancestor(rows, np.zeros(size, np.int64)), rows)
        top_valid = inner | member[rows]
        safe_parent = np.maximum(tree.parent[rows], 0)
        parent_end = events.ts[safe_parent] + events.span[safe_parent]
        partial = inner & ((parent_end < events.ts[rows] + events.span[rows])
                           | (parent_end <= events.ts[rows]))
        columns = {
            "trace_id": repeated_text(trace_id, size),
            "layer": repeated_text(layer, size),
            "event_index": pa.array(events.index[rows]),
            "source": pa.DictionaryArray.from_arrays(
                pa.array(events.source[rows].astype(np.int32)),
                pa.array(SOURCES, pa.string())),
            "cat": events.columns["category"].take(taken),
            "name": events.columns["name"].take(taken),
            "pid": events.columns["pid"].take(taken),
            "tid": events.columns["tid"].take(taken),
            "ts_ns": events.columns["ts_ns"].take(taken),
            "dur_ns": events.columns["dur_ns"].take(taken),
            "member": pa.array(member[rows]),
            "pos": pa.array(_positions_in_thread(starts, low, low + size)),
            "depth": pa.array(depth),
            "parent_event_index": pa.array(events.index[safe_parent], mask=~inner),
            "parent_end_ns": pa.array(parent_end, mask=~inner),
            "top_event_index": pa.array(events.index[np.maximum(top, 0)],
                                        mask=~top_valid),
            "partial_overlap": pa.array(partial),
        }
        yield pa.table(columns).select(schema.names).cast(schema)


def _attribution(staged, trees):
    """The GPU activity (kernels rows but ranges and waits) and its attribution, as
    op_kernels' rules give it: (activity, launch rows, {layer: parent rows of the launch},
    op rows, link), rows of tree_table's events, -1 for none. The launch is the runtime call
    with the activity's correlation id (not 0), the earliest, then the first in the file; the
    op is the launch's parent in the cpu_op layer, else the cpu_op with the activity's
    External id (not 0), the last started, then the last in the file."""
    events = trees["events"]
    kernels = staged["kernels"]
    activity = kernels.filter(pc.invert(pc.is_in(kernels["category"],
                                                 pa.array(ops.NOT_ACTIVITY))))
    nothing = np.full(len(activity), -1, np.int64)
    if not events.size:  # no host event: nothing launched it
        return activity, nothing, {layer: nothing for layer in PARENTS}, nothing, \
            np.full(len(activity), LINKS.index("unlaunched"))
    correlation = _array(activity["correlation"])
    calls = np.flatnonzero(events.source == 1)
    call_ids = _array(staged["runtime"]["correlation"])
    calls, call_ids = calls[call_ids != 0], call_ids[call_ids != 0]
    by_id = np.lexsort((events.index[calls], events.ts[calls], call_ids))
    found = ops._equal(call_ids[by_id], correlation, last=False)
    launch = nothing.copy()
    launched = (found >= 0) & (correlation != 0)
    launch[launched] = calls[by_id][found[launched]]
    parents = {layer: np.where(launch >= 0, trees[layer][0].parent[np.maximum(launch, 0)], -1)
               for layer in PARENTS}
    op = parents["cpu_op"].copy()
    external = _array(activity["external_id"])
    cpu_ids = _array(staged["cpu_ops"]["external_id"])
    carrying = np.flatnonzero(trees["cpu_op"][1][:len(cpu_ids)] & (cpu_ids != 0))
    by_id = np.lexsort((events.index[carrying], events.ts[carrying], cpu_ids[carrying]))
    found = ops._equal(cpu_ids[carrying][by_id], external, last=True)
    stand_in = (op < 0) & (found >= 0) & (external != 0)
    op[stand_in] = carrying[by_id][found[stand_in]]
    link = np.select([parents["cpu_op"] >= 0, op >= 0, launch >= 0], [0, 1, 2], 3)
    return activity, launch, parents, op, link


def kernel_table(trace_id, trees, attributed):
    """The trace's kernel_ops rows (None when it has no GPU activity)."""
    activity, launch, parents, op, link = attributed
    if not len(activity):
        return None
    index = trees["events"].index
    size = len(activity)

    def event(rows):
        if not len(index):
            return pa.nulls(len(rows), pa.int64())
        return pa.array(index[np.maximum(rows, 0)], mask=rows < 0)

    columns = {"trace_id": pa.repeat(pa.scalar(trace_id, pa.string()), size),
               "event_index": contiguous(activity["event_index"]),
               "launch_event_index": event(launch), "op_event_index": event(op),
               **{column: event(parents[layer]) for layer, column in PARENTS.items()
                  if layer != "cpu_op"},
               "link": pa.array(np.asarray(LINKS, dtype=object)[link], pa.string())}
    return pa.table(columns).select(TABLES["kernel_ops"].schema.names).cast(
        TABLES["kernel_ops"].schema)


def attribution_table(trace_id, trees, attributed):
    """The trace's kernel_attribution rows (None when it has no GPU activity): kernel_ops'
    rows with the activity's own columns and the names op_kernels gives them (the launch's
    name and thread, the op's and its top op's, the module without `nn.Module: `, the
    annotation), so that op_kernels reads one table per trace instead of joining the events
    five times at every query."""
    activity, launch, parents, op, link = attributed
    if not len(activity):
        return None
    events = trees["events"]
    size = len(activity)
    module, annotation = parents["module"], parents["annotation"]
    if events.size:
        tree = trees["cpu_op"][0]
        safe = np.maximum(op, 0)
        top = np.where(op < 0, -1, np.where(tree.depth[safe] > 0,
                                            tree.ancestor(safe, np.zeros(size, np.int64)), op))
    else:
        top = op

    def event(rows):
        if not events.size:
            return pa.nulls(len(rows), pa.int64())
        return pa.array(events.index[np.maximum(rows, 0)], mask=rows < 0)

    def text(column, rows, dictionary=None):
        """The events' `column` at `rows` (-1: NULL), as a dictionary column."""
        if not events.size:
            return pa.nulls(len(rows), pa.string())
        values = events.columns[column]
        indices = pc.if_else(pa.array(rows < 0), None,
                             values.indices.take(pa.array(np.maximum(rows, 0))))
        return pa.DictionaryArray.from_arrays(indices, dictionary or values.dictionary)

    names = events.columns["name"].dictionary if events.size else None
    modules = None if names is None else pc.if_else(
        pc.starts_with(names, MODULE_PREFIX),
        pc.utf8_slice_codeunits(names, len(MODULE_PREFIX)), names)
    columns = {"trace_id": repeated_text(trace_id, size),
               **{name: contiguous(activity[name]) for name in ACTIVITY},
               "event_index": contiguous(activity["event_index"]),
               "launch_event_index": event(launch), "launch": text("name", launch),
               "launch_tid": text("tid", launch),
               "op_event_index": event(op), "op_name": text("name", op),
               "top_op_event_index": event(top), "top_op_name": text("name", top),
               "module_event_index": event(module), "module": text("name", module, modules),
               "annotation_event_index": event(annotation),
               "annotation": text("name", annotation),
               "link": pa.DictionaryArray.from_arrays(pa.array(link.astype(np.int32)),
                                                      pa.array(LINKS, pa.string()))}
    schema = with_dictionaries(TABLES["kernel_attribution"].schema, DICTIONARY_COLUMNS)
    return pa.table({name: columns[name] for name in schema.names}).cast(schema)


# kernel_attribution's text columns, written from dictionaries (see with_dictionaries).
DICTIONARY_COLUMNS = ("trace_id", "category", "name", "launch", "launch_tid", "op_name",
                      "top_op_name", "module", "annotation", "link")


def ancestor_table(trace_id, trees, op):
    """The trace's call_ancestors rows (None when it has none): for every nn.Module frame
    and every cpu_op that GPU activity is attributed to (`op`, rows), at each level above it
    the last member of its layer opened there before it on its thread; `trees` as
    tree_table filled it."""
    events = trees["events"]
    askers = {"module": np.flatnonzero(trees["module"][1]),
              "cpu_op": np.unique(op[op >= 0])}
    schema = TABLES["call_ancestors"].schema
    parts = []
    for layer in ANCESTOR_LAYERS:
        tree = trees[layer][0]
        rows = askers[layer]
        rows = rows[tree.depth[rows] > 0]
        found_rows, levels, found = [], [], []
        for level in range(int(tree.depth[rows].max(initial=0))):
            deeper = rows[tree.depth[rows] > level]
            ancestor = tree.ancestor(deeper, np.full(len(deeper), level, np.int64))
            hit = ancestor >= 0
            found_rows.append(deeper[hit])
            levels.append(np.full(int(hit.sum()), level, np.int64))
            found.append(ancestor[hit])
        if not found:
            continue
        found_rows, levels, found = (np.concatenate(x) for x in (found_rows, levels, found))
        size = len(found_rows)
        parts.append(pa.table({
            "trace_id": pa.repeat(pa.scalar(trace_id, pa.string()), size),
            "layer": pa.repeat(pa.scalar(layer, pa.string()), size),
            "event_index": pa.array(events.index[found_rows]),
            "level": pa.array(levels),
            "ancestor_event_index": pa.array(events.index[found])}).cast(schema))
    return pa.concat_tables(parts) if parts else None


def backward_table(staged, trace_id):
    """The trace's backward_links rows (None when no backward call is linked): each backward
    call (`autograd::engine::evaluate_function: ...`) with the forward op that made its
    autograd node, by a `fwdbwd` flow, else by sequence number (ingest/ops.py's rules, those
    of _backward_links)."""
    cpu = staged["cpu_ops"]
    is_op = _matching(_dictionary(cpu["category"]), pc.equal, "cpu_op")
    calls = SimpleNamespace(ops=np.flatnonzero(is_op))
    names = _dictionary(cpu["name"]).take(pa.array(calls.ops, pa.int64()))
    backward = np.flatnonzero(_matching(names, pc.starts_with, ops.BACKWARD_PREFIX))
    if not len(backward):
        return None
    # Its calls and flows alone: the runtime rows, half the host events, are none of them.
    host = ops._Host(cpu, staged["runtime"].slice(0, 0), staged["flows"])
    forward = ops._by_flow(host, calls, backward)
    by_flow = forward >= 0
    forward[~by_flow] = ops._by_sequence(host, calls, names, backward[~by_flow])
    linked = forward >= 0
    if not linked.any():
        return None
    size = int(linked.sum())
    return pa.table({
        "trace_id": pa.repeat(pa.scalar(trace_id, pa.string()), size),
        "event_index": pa.array(host.index[calls.ops[backward[linked]]]),
        "forward_event_index": pa.array(host.index[calls.ops[forward[linked]]]),
        "link": pa.array(np.where(by_flow[linked], "fwdbwd", "sequence_number").astype(object),
                         pa.string())}).cast(TABLES["backward_links"].schema)
