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

import numpy as np
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
    steps = _step_windows(staged["cpu_ops"])
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
    linked = work.filter(pc.is_valid(work["launch"]))
    marks = _sorted(work["fed"])
    with_launch = _sorted(linked["launch"])
    short = _sorted(linked.filter(linked["short"])["launch"])

    indexes, names, starts, ends = steps
    durations = ends - starts
    return pa.table({
        "trace_id": pa.array([trace_id] * len(names), pa.string()),
        "event_index": indexes, "step": names, "start_ns": starts, "end_ns": ends,
        "kernels": _count(marks, starts, ends),
        "kernels_with_launch": _count(with_launch, starts, ends),
        "short_kernels": _count(short, starts, ends),
        "gpu_busy_ns": busy.within(starts, ends),
        "host_wait_ns": durations - fed.within(starts, ends),
        "empty_queue_ns": durations - pending.within(starts, ends),
        "exposed_comm_ns": either.within(starts, ends) - computation.within(starts, ends),
        "rules": pa.array([rules] * len(names), pa.string()),
    }).cast(TABLES["step_time"].schema)


def _steps(cpu_ops):
    """[(event_index, name, start, end)] of the ProfilerStep#N events with a duration (names
    plain or dictionaries), or None without any."""
    found = _step_windows(cpu_ops)
    if found is None:
        return None
    indexes, names, starts, ends = found
    return list(zip(indexes.to_pylist(), names.to_pylist(), starts.tolist(), ends.tolist()))


def _step_windows(cpu_ops):
    """The event_index and name columns, and start and end int64 numpy arrays, of the
    ProfilerStep#N events with a duration (names plain or dictionaries), or None."""
    mask = pc.and_(starts_with(cpu_ops["name"], STEP_PREFIX),
                   pc.fill_null(pc.greater(cpu_ops["dur_ns"], 0), False))
    found = cpu_ops.filter(mask)
    if not len(found):
        return None
    names = contiguous(found["name"])
    if pa.types.is_dictionary(names.type):
        names = names.cast(pa.string())
    starts = contiguous(found["ts_ns"]).to_numpy()
    return (contiguous(found["event_index"]), names, starts,
            starts + contiguous(found["dur_ns"]).to_numpy())


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


def _sorted(times):
    """The non-null values of an int64 column, sorted, as a numpy array."""
    return np.sort(contiguous(pc.drop_null(times)).to_numpy())


def _count(sorted_times, starts, ends):
    """How many of `sorted_times` lie in [starts[i], ends[i]), for each i."""
    return (np.searchsorted(sorted_times, ends, side="left")
            - np.searchsorted(sorted_times, starts, side="left"))


class _Union:
    """Disjoint sorted intervals and the length of their union within any windows."""

    def __init__(self, starts, ends):
        self.starts, self.ends = starts.to_numpy(), ends.to_numpy()
        lengths = pc.cumulative_sum_checked(pc.subtract(ends, starts))  # no silent overflow
        self.before = np.concatenate([[0], lengths.to_numpy()]).astype(np.int64)

    def until(self, times):
        """Length of the union before each of `times`."""
        count = np.searchsorted(self.starts, times, side="left")  # intervals starting before
        last = np.maximum(count - 1, 0)
        overhang = (np.maximum(0, self.ends[last] - times) if len(self.ends)
                    else np.zeros(len(times), np.int64))
        return np.where(count == 0, 0, self.before[count] - overhang)

    def within(self, starts, ends):
        return self.until(ends) - self.until(starts)
