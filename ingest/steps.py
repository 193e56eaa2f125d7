"""The per-trace table `step_time`: what bounds each ProfilerStep#N, measured once at ingest.

`step_bottleneck` measures, in each step's CPU window, four unions (GPU busy time, the time
launched work was waiting or running, the time work was waiting to start, communication
with no computation beside it) and counts the GPU work launched in it. In SQL that is an
ordered window pass over every kernel of the rank, ~10 s over 64 ranks of DeepSeek's trace;
the figures of a trace never change after ingest, so they are measured here from the staged
parts (a few columns of kernels, runtime and cpu_ops read back) and the trace's merged
intervals, and the view reads them (for a rank whose only capture is this trace, under the
default kernel rules: see sql/step_bottleneck.sql). The rules are the view's, written here
without SQL:

- GPU work: kernels of category kernel, gpu_memcpy, gpu_memset or mtia_ccp_events with a
  duration; its launch the runtime call of the trace with its correlation id (not 0), the
  earliest (then the first in the file) when several carry it;
- fed: [min(launch, start), end) of each piece of work; pending: [launch, start) where the
  launch came before the start; busy and the classes: the trace's gpu_intervals;
- a step counts the work whose launch (else start) lies in [start, end).
"""

import bisect

import pyarrow as pa
import pyarrow.compute as pc

from tracewh.storage.schema import TABLES

from .keyed import contiguous, left_join
from .summaries import CLASS_KINDS, merge
from .writer import read_staged

WORK_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events")
STEP_PREFIX = "ProfilerStep#"


# The staged columns step_table reads; the names as Parquet's dictionaries (DICTIONARIES): a
# few steps are looked for among every cpu_op, whose names as strings were 100 MB of the
# ingest's parent process for the 1 GB trace, held while the workers measured.
COLUMNS = {"cpu_ops": ["event_index", "name", "ts_ns", "dur_ns"],
           "kernels": ["category", "ts_ns", "dur_ns", "correlation"],
           "runtime": ["event_index", "ts_ns", "dur_ns", "correlation"]}
DICTIONARIES = ("name",)


def measure(staging, parts, trace_id, intervals, rules):
    """The step_time rows (or None) of the trace staged in `staging` as `parts`, see
    step_table."""
    return step_table(read_staged(staging, parts, COLUMNS, dictionaries=DICTIONARIES),
                      trace_id, intervals, rules)


def step_table(staged, trace_id, intervals, rules):
    """The trace's step_time rows (None when it has no ProfilerStep with a duration), from its
    staged tables ({table: at least COLUMNS}) and its gpu_intervals table (None: no GPU
    activity)."""
    steps = _steps(staged["cpu_ops"])
    if steps is None:
        return None
    work = _work(staged["kernels"], staged["runtime"])
    kinds = _kinds(intervals)
    fed = _union(pc.min_element_wise(work["fed"], work["start"]), work["end"])
    waiting = work.filter(pc.fill_null(pc.less(work["launch"], work["start"]), False))
    pending = _union(waiting["launch"], waiting["start"])
    busy = _union(*kinds["busy"])
    either = _union(*(pa.concat_arrays([kinds[kind][i] for kind in CLASS_KINDS])
                      for i in (0, 1)))
    computation = _union(*kinds["computation"])
    marks = sorted(work["fed"].to_pylist())
    linked = work.filter(pc.is_valid(work["launch"]))
    with_launch = sorted(linked["launch"].to_pylist())
    short = sorted(linked.filter(linked["short"])["launch"].to_pylist())

    rows = []
    for index, name, start, end in steps:
        dur = end - start
        rows.append({
            "trace_id": trace_id, "event_index": index, "step": name, "start_ns": start,
            "end_ns": end, "kernels": _count(marks, start, end),
            "kernels_with_launch": _count(with_launch, start, end),
            "short_kernels": _count(short, start, end),
            "gpu_busy_ns": busy.within(start, end),
            "host_wait_ns": dur - fed.within(start, end),
            "empty_queue_ns": dur - pending.within(start, end),
            "exposed_comm_ns": either.within(start, end) - computation.within(start, end),
            "rules": rules})
    return pa.Table.from_pylist(rows, TABLES["step_time"].schema)


def _steps(cpu_ops):
    """[(event_index, name, start, end)] of the ProfilerStep#N events with a duration (names
    plain or dictionaries)."""
    mask = pc.and_(starts_with(cpu_ops["name"], STEP_PREFIX),
                   pc.fill_null(pc.greater(cpu_ops["dur_ns"], 0), False))
    found = cpu_ops.filter(mask)
    if not len(found):
        return None
    ends = pc.add(found["ts_ns"], found["dur_ns"])
    names = found["name"]
    if pa.types.is_dictionary(names.type):
        names = names.cast(pa.string())
    return list(zip(found["event_index"].to_pylist(), names.to_pylist(),
                    found["ts_ns"].to_pylist(), ends.to_pylist()))


def starts_with(column, prefix):
    """Whether each value of a (chunked) string column, plain or dictionaries, starts with
    `prefix`, NULL as false: a dictionary's values are tested once each."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    tested = [pc.take(pc.starts_with(chunk.dictionary, prefix), chunk.indices)
              if pa.types.is_dictionary(chunk.type) else pc.starts_with(chunk, prefix)
              for chunk in chunks]
    return pc.fill_null(pa.chunked_array(tested, pa.bool_()), False)


def _work(kernels, runtime):
    """The GPU work with its launch: start, end, launch (NULL: none), fed (the launch, else
    the start) and short (it ran shorter than its launch call)."""
    kernels = kernels.filter(pc.and_(pc.is_in(kernels["category"],
                                              pa.array(WORK_CATEGORIES)),
                                     pc.is_valid(kernels["dur_ns"])))
    joined = left_join(kernels, launches(runtime), ["correlation"])
    start = joined["ts_ns"]
    launch = joined["launch"]
    return pa.table({
        "start": start, "end": pc.add(start, joined["dur_ns"]), "launch": launch,
        "fed": pc.coalesce(launch, start),
        "short": pc.fill_null(pc.less(joined["dur_ns"], joined["launch_dur"]), False)})


def launches(runtime):
    """The launch of each correlation id (not 0 nor NULL) of the trace's `runtime` rows
    (event_index, ts_ns, dur_ns, correlation): the earliest call carrying it, then the first
    in the file (`_launch_calls`' rule), as a table of correlation, launch (its start) and
    launch_dur."""
    calls = runtime.filter(pc.fill_null(pc.not_equal(runtime["correlation"], 0), False))
    calls = calls.sort_by([("correlation", "ascending"), ("ts_ns", "ascending"),
                           ("event_index", "ascending")])
    correlation = calls["correlation"]
    first = pc.not_equal(correlation.slice(1), correlation.slice(0, len(correlation) - 1))
    first = pa.concat_arrays([pa.array([True] * min(1, len(calls)), pa.bool_()),
                              *first.chunks])
    return calls.filter(first).select(["correlation", "ts_ns", "dur_ns"]).rename_columns(
        ["correlation", "launch", "launch_dur"])


def _kinds(intervals):
    """{kind: (starts, ends)} of the trace's gpu_intervals (empty without any)."""
    empty = pa.array([], pa.int64())
    kinds = {kind: (empty, empty) for kind in ("busy", *CLASS_KINDS)}
    if intervals is not None:
        for kind in kinds:
            rows = intervals.filter(pc.equal(intervals["kind"], kind))
            kinds[kind] = (contiguous(rows["start_ns"]), contiguous(rows["end_ns"]))
    return kinds


def _union(starts, ends):
    """The union of [starts[i], ends[i]) as a _Union. Intervals of no or negative length
    cover nothing (the view's pieces leave them out, and an interval's end before its own
    start never reaches past a later start)."""
    keep = pc.fill_null(pc.greater(ends, starts), False)
    return _Union(*merge(contiguous(pc.filter(starts, keep)), contiguous(pc.filter(ends, keep))))


def _count(sorted_times, start, end):
    """How many of `sorted_times` lie in [start, end)."""
    return bisect.bisect_left(sorted_times, end) - bisect.bisect_left(sorted_times, start)


class _Union:
    """Disjoint sorted intervals and the length of their union within any window."""

    def __init__(self, starts, ends):
        self.starts, self.ends = starts.to_pylist(), ends.to_pylist()
        self.before = [0, *pc.cumulative_sum_checked(pc.subtract(ends, starts)).to_pylist()]

    def until(self, t):
        """Length of the union before time t."""
        i = bisect.bisect_left(self.starts, t)  # intervals starting before t
        if i == 0:
            return 0
        return self.before[i] - max(0, self.ends[i - 1] - t)

    def within(self, start, end):
        return self.until(end) - self.until(start)
