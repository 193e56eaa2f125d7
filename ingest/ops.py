"""The per-trace table `op_time`: each cpu_op name's host and GPU time in one trace, measured
at ingest.

`op_stats` answers "which operators launched the GPU time" from the host call tree: every
GPU activity is attributed to the innermost op enclosing its launch, and its time added up to
every op enclosing that one. In SQL that is ordered window passes over every host event of
the rank (`_host_layers`, `_host_ancestors`, `op_calls`): ~15 s for one rank of DeepSeek's
trace scaled x64, minutes over 64 ranks. A trace's tree never changes after ingest, so its
per-name sums are measured here once, with numpy over a few columns read back from the staged
parts, and `op_stats` adds the stored rows up (sql/_op_time.sql; sql/live/_op_time.sql
computes the same rows in SQL where the stored ones do not hold). The rules are the views',
written here without SQL:

- host tree, per thread (pid, tid): events ordered by start, then longer first, then
  event_index; an event's depth is the number of members open at its start (one ending where
  another starts is closed by then; a zero-duration event never opens), its parent the last
  member opened one level up. Layer `all` (every cpu_ops and runtime event a member) gives
  the children whose CPU time host_self_ns leaves out; layer `cpu_op` (members: category
  cpu_op; runtime events placed but never opening) gives each launch's op and each op's
  ancestors (at each level above it, the last op opened there);
- a GPU activity (any kernels row but gpu_user_annotation ranges and cuda_sync waits: kernel,
  gpu_memcpy, gpu_memset, mtia_ccp_events...) is launched by the runtime call of the
  trace with its correlation id (not 0), the earliest (then the first in the file); its op is
  the launch's parent in the cpu_op layer, else the cpu_op with its External id (the last
  started, then the last in the file);
- busy times are unions of [ts, ts + dur) per call (self: what the call launched; total: with
  what the ops it encloses launched), summed over calls; communication is the default kernel
  rules' class; per name, the totals add up the calls with no ancestor of their name (a
  call nested in a call of its name is already in that call's total);
- a backward call (`autograd::engine::evaluate_function: ...`) finds its forward op by a
  `fwdbwd` flow ending within it on its thread (the cpu_op where the flow starts: the longest
  there, then the first in the file; over several flows the smallest event_index), else by
  sequence number (the last cpu_op started before it with its number that is neither a
  backward call nor a node, `...Backward...`; then the shortest, then the last in the file).
"""

import functools
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracewh.allocator import release_between_phases
from tracewh.storage.schema import TABLES

from .decoder import _decode, native_available
from .keyed import contiguous
from .summaries import default_class
from .writer import read_staged, repeated_text, with_dictionaries

# The kernels rows that are no device work launched by an op: ranges and waits.
NOT_ACTIVITY = ("gpu_user_annotation", "cuda_sync")
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
COMMUNICATION = "communication"
KEY_LIMIT = 2 ** 62  # composite sort and search keys stay below it, else are made of ranks
# The flows the backward links follow; the trace's other flows (ac2g: 99.7% of the 254 MB
# trace's 313K) are never read.
LINK_FLOWS = "fwdbwd"


# The staged columns op_table reads.
COLUMNS = {"cpu_ops": ["event_index", "category", "name", "pid", "tid", "ts_ns", "dur_ns",
                       "external_id", "sequence_number"],
           "runtime": ["event_index", "pid", "tid", "ts_ns", "dur_ns", "correlation"],
           "kernels": ["category", "name_id", "ts_ns", "dur_ns", "correlation", "external_id"],
           "flows": ["category", "ph", "id", "pid", "tid", "ts_ns"]}


# The text columns op_table reads as Arrow dictionaries: names, categories, threads and flow
# phases are tested once per distinct text, and no string per row is made (the staged
# columns of the 254 MB trace: 37 MB of Arrow instead of 51).
TEXT = ("category", "name", "pid", "tid", "ph")


def measure(staging, parts, trace_id, kernel_names, rules):
    """(table, rows or None) pairs: op_tables of the trace staged in `staging` as `parts`
    ({table: part numbers}), see `pieces`."""
    return pieces(read_linking(staging, parts, COLUMNS, TEXT), trace_id, kernel_names, rules)


def read_linking(staging, parts, columns, dictionaries):
    """read_staged of `columns` ({table: columns}; `dictionaries`, and the flows' TEXT, read
    as Arrow dictionaries) of which the flows are only the LINK_FLOWS ones, filtered as
    Parquet is read: the others, all but a few, are never held (11 MB of Arrow for the 254 MB
    trace, 44 MB for 1 GB)."""
    others = {name: wanted for name, wanted in columns.items() if name != "flows"}
    staged = read_staged(staging, parts, others, dictionaries=dictionaries)
    staged.update(read_staged(staging, parts, {"flows": columns["flows"]},
                              filters=[("category", "=", LINK_FLOWS)], dictionaries=TEXT))
    return staged


def op_table(staged, trace_id, kernel_names, rules):
    """The trace's op_time rows (None when it has no cpu_op): see op_tables."""
    return op_tables(staged, trace_id, kernel_names, rules)["op_time"]


def op_tables(staged, trace_id, kernel_names, rules):
    """The trace's op_time and op_call_time rows ({table: rows, None when it has no
    cpu_op}), from its staged tables ({table: at least COLUMNS}) and its kernel_names table
    (None: no GPU activity); `rules` is the fingerprint of the default kernel rules, which
    gpu_self_comm_ns follows."""
    return put_together(pieces(dict(staged), trace_id, kernel_names, rules))


def put_together(pairs):
    """{table: rows or None} of (table, rows or None) pairs, a table's pieces concatenated."""
    tables = {}
    for name, rows in pairs:
        tables.setdefault(name, [])
        if rows is not None:
            tables[name].append(rows)
    return {name: pa.concat_tables(rows) if rows else None for name, rows in tables.items()}


def pieces(staged, trace_id, kernel_names, rules):
    """(table, rows or None) pairs of op_tables, each made as the one before is taken, from
    `staged` ({table: at least COLUMNS}), whose tables it drops as it is done with them: a
    writer that writes each as it comes holds neither the staged columns nor op_call_time
    (50 MB for the 254 MB trace) while op_time is measured. op_call_time comes in pieces of
    at most CALL_ROWS rows."""
    cpu, runtime, kernels, flows = (staged.pop(name) for name in COLUMNS)
    is_op = _matching(_dictionary(cpu["category"]), pc.equal, "cpu_op")
    if not is_op.any():
        yield "op_call_time", None
        yield "op_time", None
        return
    host = _Host(cpu, runtime, flows)
    del runtime, flows  # in host
    cpu = cpu.select(PER_CALL_COLUMNS)  # the others, in host, let go
    calls = _Calls(host, np.flatnonzero(is_op))
    # The heap the host's columns and the tree were made in, freed, given back before the
    # GPU work is attributed, which reused little of it on several heaps (~45 MB of the 254
    # MB trace's).
    release_between_phases()
    calls.attribute(_work(host, calls, kernels, kernel_names))
    del kernels
    names = _dictionary(cpu["name"]).take(pa.array(calls.ops))
    for rows in _per_call(trace_id, cpu, host, names, calls, rules):
        yield "op_call_time", rows
        del rows  # taken: not held while the next piece is made
    del cpu
    calls.mark_nested(_codes(names))
    calls.count_children(host)
    yield "op_time", _per_name(trace_id, names, calls, _backward_links(host, calls, names),
                               rules)


# The staged cpu_ops columns op_call_time copies: the only ones held once _Host is made.
PER_CALL_COLUMNS = ["name", "pid", "tid", "ts_ns", "dur_ns"]


def _array(column, fill=0):
    """An int64 numpy array of an integer column, NULL as `fill`."""
    return np.asarray(pc.fill_null(contiguous(column), fill), np.int64)


def _mask(column):
    """A boolean numpy array of a boolean column, NULL as false."""
    return np.asarray(pc.fill_null(contiguous(column), False), bool)


def _valid(column):
    return np.asarray(pc.is_valid(contiguous(column)), bool)


def _stack(*columns):
    return pa.chunked_array([chunk for column in columns for chunk in column.chunks])


class _Host:
    """The trace's cpu_ops rows followed by its runtime rows, as numpy columns, and its
    `fwdbwd` flows with their threads coded alike (a NULL pid or tid joins nothing, as in the
    views' joins)."""

    def __init__(self, cpu, runtime, flows):
        flows = flows.filter(pa.array(_matching(_dictionary(flows["category"]), pc.equal,
                                                LINK_FLOWS)))
        self.cpu_rows = len(cpu)
        self.size = len(cpu) + len(runtime)
        self.index = _narrowed(_array(_stack(cpu["event_index"], runtime["event_index"])))
        self.ts = _array(_stack(cpu["ts_ns"], runtime["ts_ns"]))
        durations = _stack(cpu["dur_ns"], runtime["dur_ns"])
        self.dur, self.has_dur = _array(durations), _valid(durations)
        self.span = np.maximum(self.dur, 0)
        self.correlation = _array(runtime["correlation"])  # of the runtime rows; NULL as 0
        self.external_id = _array(cpu["external_id"])  # of the cpu_ops rows; NULL as 0
        self.sequence = _array(cpu["sequence_number"])
        self.numbered = _valid(cpu["sequence_number"])
        pid = _codes(_stack(cpu["pid"], runtime["pid"], flows["pid"]))
        tid = _codes(_stack(cpu["tid"], runtime["tid"], flows["tid"]))
        thread = (pid + 1) * (tid.max(initial=0) + 2) + tid + 1
        if thread.max(initial=0) > len(thread):  # many pids and tids: dense codes, <= rows
            thread = np.unique(thread, return_inverse=True)[1].reshape(-1)
        self.thread, self.flow_thread = thread[:self.size], thread[self.size:]
        joinable = (pid >= 0) & (tid >= 0)
        self.joinable, self.flow_joinable = joinable[:self.size], joinable[self.size:]
        self.flows = flows


def _narrowed(values):
    """An int64 array as int32 where its values fit (event indices, below 2^31 in any trace
    a machine reads): half the memory of a whole-trace column."""
    if len(values) and (values.min() < -2 ** 31 or values.max() >= 2 ** 31):
        return values
    return values.astype(np.int32)


def _codes(column):
    """Dense codes of a string column's values (NULL: -1), plain or Arrow dictionaries."""
    if pa.types.is_dictionary(column.type):
        return _array(_unified(column).indices, fill=-1)
    return _array(pc.dictionary_encode(contiguous(column).cast(pa.string())).indices, fill=-1)


def _dictionary(column):
    """A DictionaryArray of a text column, plain or read as dictionaries (see read_staged)."""
    if pa.types.is_dictionary(column.type):
        return _unified(column)
    return pc.dictionary_encode(contiguous(column).cast(pa.string()))


def _matching(column, function, value):
    """A boolean numpy array: `function(text, value)` of each row of a dictionary `column`
    (NULL: false), computed once per distinct text."""
    found = _mask(function(column.dictionary, value))
    indices = _array(column.indices, fill=-1)
    return found[indices] & (indices >= 0) if len(found) else np.zeros(len(indices), bool)


def _unified(column):
    """One DictionaryArray of a (chunked) dictionary column whose chunks' dictionaries
    differ (Parquet's are per row group)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.unify_dictionaries()
    return contiguous(column)


def _sortable(groups, values):
    """One int64 key per row ordering rows by (group, value) (int64 arrays, groups >= 0):
    values shifted to start at 0, or replaced by their ranks where groups x values would
    reach KEY_LIMIT."""
    if not len(values):
        return values.astype(np.int64)
    low, high = int(values.min()), int(values.max())
    width = high - low + 1
    if (int(groups.max()) + 1) * width < KEY_LIMIT:
        return groups * width + (values - low)
    ranks = np.unique(values, return_inverse=True)[1].reshape(-1)
    return groups * (len(values) + 1) + ranks


class _Order:
    """The trace's host rows in start order (per thread: by start, longer first, then
    event_index), shared by the layers, each of which is a subset of the rows; and, for
    _Tree alone (made when it asks), the rows' start keys, their positions in that order and
    the rows that can open (a positive duration) by end."""

    def __init__(self, host):
        self._host = host
        self.rows = np.lexsort((host.index, -host.span, host.ts, host.thread))

    @functools.cached_property
    def _keys(self):
        """(start keys of every row, end keys of the rows that can open, those rows)."""
        host = self._host
        opening = np.flatnonzero(host.span > 0)
        keys = _sortable(np.concatenate([host.thread, host.thread[opening]]),
                         np.concatenate([host.ts, host.ts[opening] + host.span[opening]]))
        return keys[:host.size], keys[host.size:], opening

    @property
    def start_keys(self):
        return self._keys[0]

    @functools.cached_property
    def position(self):
        position = np.empty(self._host.size, np.int64)
        position[self.rows] = np.arange(self._host.size)
        return position

    @functools.cached_property
    def _by_end(self):
        _, end_keys, opening = self._keys
        by_end = np.argsort(end_keys, kind="stable")
        return opening[by_end], end_keys[by_end]

    @property
    def ending(self):
        return self._by_end[0]

    @property
    def end_keys(self):
        return self._by_end[1]


def _tree(host, order, placed, member):
    """One layer of the host tree (see _Tree) of the host rows `placed` in it, of which
    `member` may open: by the native core when it is available, else by _Tree."""
    if native_available():
        return _NativeTree(host, order, placed, member)
    return _Tree(host, order, placed, member)


class _NativeTree:
    """_Tree taken by the native core (ingest/native/src/tree.rs): one walk over the rows in
    start order instead of sorted searches over the trace, its depth and parent int32. Its
    `ancestor` answers for rows deeper than the level, as every caller asks."""

    def __init__(self, host, order, placed, member):
        opens = member & (host.span > 0)
        self._tree = _decode.HostTree(order.rows, host.thread, host.ts, host.span,
                                      opens.view(np.uint8), placed.view(np.uint8))
        self.depth = np.frombuffer(self._tree.depth(), np.int32)
        self.parent = np.frombuffer(self._tree.parent(), np.int32)

    def ancestor(self, rows, level):
        """For host `rows` deeper than `level` (an int or one per row), the last member
        opened at `level` before each in its thread's order: its ancestor there (-1 for a row
        not deeper)."""
        rows = np.ascontiguousarray(rows, np.int64)
        levels = np.ascontiguousarray(np.broadcast_to(level, rows.shape), np.int64)
        return np.frombuffer(self._tree.ancestors(rows, levels), np.int64)


class _Tree:
    """One layer of the host tree: per host row placed in it, its depth and its parent row
    (-1 at the top), and `ancestor(rows, level)`. `member`: the rows that may open. The
    reference _NativeTree is tested against."""

    def __init__(self, host, order, placed, member):
        opens = member & (host.span > 0)
        # Open at a row's start: the members opened before it in start order less those that
        # ended at or before its start (an opener that ended by then started before it).
        # Counted over all threads at once: every earlier thread's openers opened and ended.
        # (In start order, where the start keys ascend: a sorted search runs faster.)
        opened = opens[order.rows].astype(np.int64)
        ended = np.searchsorted(order.end_keys[opens[order.ending]],
                                order.start_keys[order.rows], side="right")
        self.depth = np.empty(host.size, np.int64)
        self.depth[order.rows] = np.cumsum(opened) - opened - ended
        self.depth[~placed] = 0
        self._levels = int(self.depth.max(initial=0)) + 1
        self._thread, self._position = host.thread, order.position
        self._stride = host.size + 1
        openers = order.rows[opens[order.rows]]
        self._pairs = None  # (thread, level) pairs keyed as they are, unless that overflows:
        if (int(host.thread.max(initial=0)) + 1) * self._levels * self._stride >= KEY_LIMIT:
            self._pairs = np.unique(self._code(openers, self.depth[openers]))  # then by rank
        # Openers in start order, stably grouped by (thread, level): each group's positions
        # stay ascending, so their keys come out sorted.
        grouped = np.argsort(_narrow(self._code(openers, self.depth[openers])), kind="stable")
        self._openers = openers[grouped]
        self._opener_keys = self._key(self._openers, self.depth[self._openers])
        self.parent = np.full(host.size, -1, np.int64)
        inner = np.flatnonzero(self.depth > 0)
        self.parent[inner] = self.ancestor(inner, self.depth[inner] - 1)

    def _code(self, rows, level):
        """A code per (thread, level), >= 0 (past every opener's for a pair none has)."""
        pair = self._thread[rows] * self._levels + level
        if self._pairs is None:
            return pair
        at = np.searchsorted(self._pairs, pair)
        known = self._pairs[np.minimum(at, max(len(self._pairs) - 1, 0))] == pair \
            if len(self._pairs) else np.zeros(len(pair), bool)
        return np.where(known, at, len(self._pairs))

    def _key(self, rows, level):
        return self._code(rows, level) * self._stride + self._position[rows]

    def ancestor(self, rows, level):
        """For host `rows`, the last member opened at `level` before each in its thread's
        order (-1: none)."""
        if not len(self._openers):
            return np.full(len(rows), -1, np.int64)
        wanted = self._key(rows, level)
        found = np.searchsorted(self._opener_keys, wanted, side="right") - 1
        safe = np.maximum(found, 0)
        same = (found >= 0) & (self._opener_keys[safe] // self._stride
                               == wanted // self._stride)
        return np.where(same, self._openers[safe], -1)


def _narrow(codes):
    """Small non-negative codes as int16 where they fit: numpy sorts those by radix."""
    return codes.astype(np.int16) if codes.max(initial=0) < 2 ** 15 else codes


class _Calls:
    """The trace's cpu_op calls (host rows `ops`) and their figures, by call slot."""

    def __init__(self, host, ops):
        self.ops = ops
        self.slot = np.full(host.size, -1, np.int32)  # call slots < rows < 2^31 (_NativeTree)
        self.slot[ops] = np.arange(len(ops))
        self.order = _Order(host)
        member = self.slot >= 0
        placed = member.copy()
        placed[host.cpu_rows:] = True  # runtime rows are placed, never open
        self.tree = _tree(host, self.order, placed, member)
        self.host_ns = host.dur[ops]
        self.child_ns = np.zeros(len(ops), np.int64)
        self.gpu_kernels = np.zeros(len(ops), np.int64)
        self.gpu_self_ns = np.zeros(len(ops), np.int64)
        self.gpu_self_comm_ns = np.zeros(len(ops), np.int64)
        self.gpu_self_busy_ns = np.zeros(len(ops), np.int64)
        self.gpu_total_ns = np.zeros(len(ops), np.int64)
        self.gpu_total_busy_ns = np.zeros(len(ops), np.int64)
        self.nested = np.zeros(len(ops), bool)  # see mark_nested

    def launch_ops(self, host):
        """The call slot enclosing each runtime row (-1: none), by runtime row."""
        parent = self.tree.parent[host.cpu_rows:]
        return np.where(parent >= 0, self.slot[np.maximum(parent, 0)], -1)

    def attribute(self, work):
        """Add the attributed GPU activity (call slot, start, duration, communication) to the
        calls' self and total figures."""
        slot, start, dur, comm = work
        np.add.at(self.gpu_kernels, slot, 1)
        np.add.at(self.gpu_self_ns, slot, dur)
        np.add.at(self.gpu_self_comm_ns, slot[comm], dur[comm])
        self.gpu_self_busy_ns += _union_lengths(slot, start, start + dur, len(self.ops))
        holders, items = self._holders(np.unique(slot), slot)
        np.add.at(self.gpu_total_ns, holders, dur[items])
        self.gpu_total_busy_ns += _union_lengths(holders, start[items],
                                                 start[items] + dur[items], len(self.ops))

    def mark_nested(self, names):
        """nested: the calls with an ancestor of their own name (codes `names`, by call
        slot), whose GPU time the name's total already holds through that ancestor."""
        rows = self.ops
        depth = self.tree.depth[rows]
        for level in range(int(depth.max(initial=0))):
            deeper = np.flatnonzero(depth > level)
            found = self.tree.ancestor(rows[deeper], level)
            known = found >= 0
            inner = names[deeper[known]]
            same = (names[self.slot[found[known]]] == inner) & (inner >= 0)  # NULL: no name
            self.nested[deeper[known][same]] = True

    def _holders(self, launchers, slot):
        """(holder slot, work item) pairs: each item's call and every call enclosing it (its
        ancestors at each level above it)."""
        rows = self.ops[launchers]
        depth = self.tree.depth[rows]
        pairs_of, holders = [launchers], [launchers]
        for level in range(int(depth.max(initial=0))):
            deeper = depth > level
            found = self.tree.ancestor(rows[deeper], level)
            pairs_of.append(launchers[deeper][found >= 0])
            holders.append(self.slot[found[found >= 0]])
        pairs_of, holders = np.concatenate(pairs_of), np.concatenate(holders)
        by_call = np.argsort(pairs_of, kind="stable")
        pairs_of, holders = pairs_of[by_call], holders[by_call]
        first = np.searchsorted(pairs_of, slot, side="left")
        count = np.searchsorted(pairs_of, slot, side="right") - first
        items = np.repeat(np.arange(len(slot)), count)
        within = np.arange(len(items)) - np.repeat(np.cumsum(count) - count, count)
        return holders[np.repeat(first, count) + within], items

    def count_children(self, host):
        """child_ns: the CPU time of the events each call directly encloses (layer `all`).
        The last use of the trees: the cpu_op layer's (done with once the calls' GPU work is
        attributed) is let go first, as large as the one built here (~37 MB for the 254 MB
        trace, at an ingest worker's peak)."""
        self.tree = None
        every = np.ones(host.size, bool)
        parent = _tree(host, self.order, every, every).parent
        child = np.flatnonzero((parent >= 0) & (self.slot[np.maximum(parent, 0)] >= 0))
        np.add.at(self.child_ns, self.slot[parent[child]], host.dur[child])


def _union_lengths(groups, starts, ends, size):
    """Per group (0..size-1), the length of the union of [starts, ends) of its rows."""
    lengths = np.zeros(size, np.int64)
    keep = ends > starts
    groups, starts, ends = groups[keep], starts[keep], ends[keep]
    if not len(groups):
        return lengths
    marks = np.concatenate([starts, ends])
    marked = np.concatenate([groups, groups])
    order = np.argsort(_sortable(marked, marks), kind="stable")
    step = np.concatenate([np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)])
    open_after = np.cumsum(step[order])  # every group's marks sum to 0: no reset needed
    covered = np.diff(marks[order])
    inside = open_after[:-1] > 0
    np.add.at(lengths, marked[order][:-1][inside], covered[inside])
    return lengths


def _work(host, calls, kernels, kernel_names):
    """The GPU activity attributed to a call: (call slot, start, duration (NULL as 0),
    communication) arrays."""
    activity = kernels.filter(pc.invert(pc.is_in(kernels["category"], pa.array(NOT_ACTIVITY))))
    correlation = _array(activity["correlation"])
    slot = np.full(len(activity), -1, np.int64)
    # The launch: the runtime row of each correlation id (not 0) that starts first.
    with_id = np.flatnonzero(host.correlation != 0) + host.cpu_rows
    ids = host.correlation[with_id - host.cpu_rows]
    by_id = np.lexsort((host.index[with_id], host.ts[with_id], ids))
    ids, launches = ids[by_id], with_id[by_id]
    launch = _equal(ids, correlation, last=False)
    launched = (launch >= 0) & (correlation != 0)
    slot[launched] = calls.launch_ops(host)[launches[launch[launched]] - host.cpu_rows]
    # Else the call carrying the activity's External id: the last started, then the last in
    # the file.
    missing = np.flatnonzero(slot < 0)
    external = _array(activity["external_id"])
    if len(missing):
        slot[missing] = _by_external_id(host, calls, external[missing])
    start = _array(activity["ts_ns"])
    dur = _array(activity["dur_ns"])
    comm = _communication(activity, kernel_names)
    keep = slot >= 0
    return slot[keep], start[keep], dur[keep], comm[keep]


def _by_external_id(host, calls, external):
    """The call slot with each External id (not 0; -1: none): the last started, then the
    last in the file."""
    cpu = host.external_id[calls.ops]
    carrying = np.flatnonzero(cpu != 0)
    if not len(carrying):
        return np.full(len(external), -1, np.int64)
    rows = calls.ops[carrying]
    by_id = np.lexsort((host.index[rows], host.ts[rows], cpu[carrying]))
    carrying = carrying[by_id]
    found = _equal(cpu[carrying], external, last=True)
    return np.where((found >= 0) & (external != 0), carrying[np.maximum(found, 0)], -1)


def _equal(keys, wanted, last):
    """For each of `wanted`, the position of the first (or `last`) equal key in the sorted
    `keys` (-1: none)."""
    if not len(keys):
        return np.full(len(wanted), -1, np.int64)
    found = np.searchsorted(keys, wanted, side="right") - 1 if last else \
        np.searchsorted(keys, wanted, side="left")
    safe = np.clip(found, 0, len(keys) - 1)
    return np.where((found >= 0) & (found < len(keys)) & (keys[safe] == wanted), found, -1)


def _communication(activity, kernel_names):
    """Whether each activity's name is of class communication under the default rules: each
    distinct (category, name) classified once, matched on (category, name_id or 0)."""
    comm = np.zeros(len(activity), bool)
    if kernel_names is None or not len(activity):
        return comm
    keys = _array(activity["name_id"])
    categories = activity["category"]
    for category, name_key, name in zip(kernel_names["category"].to_pylist(),
                                        _array(kernel_names["name_id"]).tolist(),
                                        kernel_names["name"].to_pylist()):
        if default_class(category, name) == COMMUNICATION:
            comm |= (keys == name_key) & _mask(pc.equal(categories, category))
    return comm


def _backward_links(host, calls, names):
    """(backward call slots, their forward call slots) of the backward calls linked to a
    forward op."""
    backward = np.flatnonzero(_matching(names, pc.starts_with, BACKWARD_PREFIX))
    forward = _by_flow(host, calls, backward)
    missing = forward < 0
    forward[missing] = _by_sequence(host, calls, names, backward[missing])
    linked = forward >= 0
    return backward[linked], forward[linked]


def _by_flow(host, calls, backward):
    """The forward call slot of each backward call by `fwdbwd` flows (-1: none)."""
    forward = np.full(len(backward), -1, np.int64)
    flows = host.flows
    rows = np.flatnonzero(host.flow_joinable)
    if not len(backward) or not len(rows):
        return forward
    taken = pa.array(rows, pa.int64())
    phase = contiguous(flows["ph"]).take(taken).to_pylist()
    ids = contiguous(flows["id"]).take(taken).to_pylist()
    flow_ts, flow_thread = _array(contiguous(flows["ts_ns"]).take(taken)), host.flow_thread[rows]
    starts = [i for i, (ph, id_) in enumerate(zip(phase, ids)) if ph == "s" and id_ is not None]
    origin = _flow_origins(host, calls, [ids[i] for i in starts], flow_thread[starts],
                           flow_ts[starts])
    ends = np.array([i for i, (ph, id_) in enumerate(zip(phase, ids))
                     if ph in ("f", "t") and id_ in origin], np.int64)
    if not len(ends):
        return forward
    # The flows ending within each backward call [ts, ts + dur) on its thread.
    asking = calls.ops[backward]
    keys = _sortable(np.concatenate([flow_thread[ends], host.thread[asking], host.thread[asking]]),
                     np.concatenate([flow_ts[ends], host.ts[asking],
                                     host.ts[asking] + host.dur[asking]]))
    end_keys = keys[:len(ends)]
    by_key = np.argsort(end_keys, kind="stable")
    low = np.searchsorted(end_keys[by_key], keys[len(ends):len(ends) + len(asking)])
    high = np.searchsorted(end_keys[by_key], keys[len(ends) + len(asking):])
    for k in np.flatnonzero((high > low) & host.joinable[asking]):
        found = [origin[ids[ends[e]]] for e in by_key[low[k]:high[k]]]
        forward[k] = min(found, key=lambda slot: host.index[calls.ops[slot]])
    return forward


def _flow_origins(host, calls, ids, threads, starts):
    """{flow id: the call slot where it starts}: the call of the flow start's thread and
    time, the longest (NULL duration last), then the first in the file; over several starts
    of one id, the first by that order."""
    ops = calls.ops
    keys = _sortable(np.concatenate([threads, host.thread[ops]]),
                     np.concatenate([starts, host.ts[ops]]))
    start_keys, op_keys = keys[:len(ids)], keys[len(ids):]
    at_place = defaultdict(list)
    for slot in np.flatnonzero(np.isin(op_keys, start_keys) & host.joinable[ops]):
        at_place[op_keys[slot]].append(slot)
    origin = {}
    for id_, key in zip(ids, start_keys):
        for slot in at_place.get(key, ()):
            row = ops[slot]
            rank = (not host.has_dur[row], -host.dur[row], host.index[row])
            if id_ not in origin or rank < origin[id_][0]:
                origin[id_] = (rank, slot)
    return {id_: slot for id_, (_, slot) in origin.items()}


def _by_sequence(host, calls, names, backward):
    """The forward call slot of each backward call by sequence number (-1: none): the last
    call started before it with its number that is no backward call or node."""
    forward = np.full(len(backward), -1, np.int64)
    sequence, numbered = host.sequence[calls.ops], host.numbered[calls.ops]
    asking = backward[numbered[backward]]
    if not len(asking):
        return forward
    eligible = (_valid(names) & ~_matching(names, pc.starts_with, BACKWARD_PREFIX)
                & ~_matching(names, pc.match_substring, "Backward") & numbered)
    eligible &= np.isin(sequence, sequence[asking])
    candidates = np.flatnonzero(eligible)
    rows = calls.ops[candidates]
    entries = np.concatenate([asking, candidates])
    kind = np.concatenate([np.zeros(len(asking), np.int8), np.ones(len(candidates), np.int8)])
    # Among candidates of one number and start, the last in this order wins: the shortest
    # (NULL duration before any), then the last in the file.
    longest_first = np.concatenate([np.zeros(len(asking), np.int64),
                                    np.where(host.has_dur[rows], -host.dur[rows],
                                             np.iinfo(np.int64).min)])
    rows_all = calls.ops[entries]
    order = np.lexsort((host.index[rows_all], longest_first, kind,
                        _sortable(np.unique(sequence[entries], return_inverse=True)[1]
                                  .reshape(-1), host.ts[rows_all])))
    position = np.where(kind[order] == 1, np.arange(len(order)), -1)
    last = np.maximum.accumulate(position)
    asked = np.flatnonzero(kind[order] == 0)
    found = last[asked]
    safe = entries[order][np.maximum(found, 0)]
    same = (found >= 0) & (sequence[safe] == sequence[entries[order][asked]])
    answer = np.full(len(asking), -1, np.int64)
    answer[order[asked]] = np.where(same, safe, -1)
    forward[numbered[backward]] = answer
    return forward


# The op_call_time rows made into Arrow at once (a row group of the staged part): the whole
# table was 1.12M rows and ~100 MB of Arrow for the 1 GB trace, beside the calls' columns;
# 2^18 rows were 31 MB, one piece made while the one before is written.
CALL_ROWS = 1 << 16


def _per_call(trace_id, cpu, host, names, calls, rules):
    """The op_call_time rows, CALL_ROWS calls at a time: each call with its place in the
    cpu_op tree (as call_tree's cpu_op layer gives it) and its GPU figures (as op_calls
    computes them)."""
    copied = {name: _dictionary(cpu[name]) if name in CALL_TEXT else contiguous(cpu[name])
              for name in ("pid", "tid", "ts_ns", "dur_ns")}
    for first in range(0, len(calls.ops), CALL_ROWS):
        yield _call_rows(trace_id, copied, host, names, calls, rules,
                         slice(first, first + CALL_ROWS))


def _call_rows(trace_id, copied, host, names, calls, rules, slots):
    """op_call_time's rows of the calls `slots` (a slice of the call slots); `copied`: the
    cpu_ops columns it copies, each one array."""
    rows, tree = calls.ops[slots], calls.tree
    size = len(rows)
    depth = tree.depth[rows]
    inner = depth > 0
    parent = np.maximum(tree.parent[rows], 0)
    top = np.where(inner, tree.ancestor(rows, np.zeros(size, np.int64)), rows)
    parent_end = host.ts[parent] + host.span[parent]
    end = host.ts[rows] + host.span[rows]
    taken = pa.array(rows)
    columns = {"trace_id": repeated_text(trace_id, size),
               "event_index": pa.array(host.index[rows]), "name": names[slots],
               **{name: column.take(taken) for name, column in copied.items()},
               "depth": pa.array(depth),
               "parent_event_index": pa.array(host.index[parent], mask=~inner),
               "top_event_index": pa.array(host.index[np.maximum(top, 0)], mask=top < 0),
               "partial_overlap": pa.array(inner & ((parent_end < end)
                                                    | (parent_end <= host.ts[rows]))),
               **{column: pa.array(getattr(calls, column)[slots]) for column in CALL_FIGURES},
               "rules": repeated_text(rules, size)}
    schema = with_dictionaries(TABLES["op_call_time"].schema, CALL_TEXT)
    return pa.table({name: columns[name] for name in schema.names}).cast(schema)


# op_call_time's text columns, handed to the writer as the dictionaries they are read as
# (see with_dictionaries): cast to plain text, each row's string was made and hashed again.
CALL_TEXT = ("trace_id", "name", "pid", "tid", "rules")


# The per-call GPU figures op_call_time stores (those of op_calls).
CALL_FIGURES = ("gpu_kernels", "gpu_self_ns", "gpu_self_comm_ns", "gpu_self_busy_ns",
                "gpu_total_ns", "gpu_total_busy_ns")


def _per_name(trace_id, names, calls, links, rules):
    """The op_time rows: the calls' figures summed per name."""
    encoded = pc.dictionary_encode(contiguous(names))
    code = _array(encoded.indices, fill=len(encoded.dictionary))
    size = len(encoded.dictionary) + 1  # the last: NULL names
    sums = {}

    def add(column, slots, values):
        sums.setdefault(column, np.zeros(size, np.int64))
        np.add.at(sums[column], code[slots], values)

    every = np.arange(len(calls.ops))
    add("calls", every, 1)
    add("gpu_calls", every, calls.gpu_kernels > 0)
    add("host_ns", every, calls.host_ns)
    add("host_self_ns", every, calls.host_ns - calls.child_ns)
    for column in ("gpu_kernels", "gpu_self_ns", "gpu_self_busy_ns", "gpu_self_comm_ns"):
        add(column, every, getattr(calls, column))
    outermost = np.flatnonzero(~calls.nested)  # a nested call of the name adds nothing
    for column in ("gpu_total_ns", "gpu_total_busy_ns"):
        add(column, outermost, getattr(calls, column)[outermost])
    backward, forward = links
    named = code[forward] < len(encoded.dictionary)  # a forward op without a name counts nowhere
    backward, forward = backward[named], forward[named]
    add("backward_calls", forward, 1)
    add("backward_gpu_total_ns", forward, calls.gpu_total_ns[backward])
    add("backward_gpu_total_busy_ns", forward, calls.gpu_total_busy_ns[backward])
    present = np.flatnonzero(sums["calls"] > 0)
    dictionary = pa.concat_arrays([encoded.dictionary, pa.array([None], pa.string())])
    columns = {"trace_id": pa.array([trace_id] * len(present), pa.string()),
               "name": dictionary.take(pa.array(present))}
    columns.update((column, pa.array(values[present])) for column, values in sums.items())
    columns["rules"] = pa.array([rules] * len(present), pa.string())
    return pa.table(columns).select(TABLES["op_time"].schema.names).cast(
        TABLES["op_time"].schema)
