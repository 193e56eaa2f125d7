"""The per-trace table `window_time`: the communication and computation time launched in
each step and user-annotation window of a trace, measured once at ingest.

`overlap_by_step` and `overlap_by_annotation` measure, per window, the unions of the
communication kernels, of the computation kernels and of both among the kernels launched in
it. In SQL that is a join of every kernel of a rank with every window of its trace (a range
condition beside the equalities, which DuckDB checks pair by pair: over 64 ranks of
DeepSeek's trace scaled x64, 58 s for 2,624 windows), then an ordered pass per window. A
trace's windows and kernels never change after ingest, so the lengths are measured here
and the views read them (sql/_window_time.sql; sql/live/_window_time.sql computes them from
the kernels when the kernel rules are not the defaults). The rules are the views' (see
sql/_overlap_intervals.sql), written without SQL:

- windows: cpu_ops named ProfilerStep#... (scope step) or of category user_annotation
  (scope annotation) with a duration, [start, start + dur);
- kernels: GPU activity of class communication (side first) or computation (second) under
  the default kernel rules, of positive duration; one counts in a window when its launch
  (the earliest runtime call of its correlation id, `_launch_calls`), else its own start,
  lies in the window;
- a window in which no such kernel was launched has no row.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracewh.storage.schema import TABLES

from .keyed import left_join
from .ops import _array, _dictionary, _mask, _matching, _union_lengths
from .steps import STEP_PREFIX, launches, starts_with
from .summaries import with_classes
from .writer import read_staged

# The staged columns window_table reads.
COLUMNS = {"cpu_ops": ["event_index", "category", "name", "ts_ns", "dur_ns"],
           "kernels": ["category", "name_id", "ts_ns", "dur_ns", "correlation"],
           "runtime": ["event_index", "ts_ns", "dur_ns", "correlation"]}
# The cpu_ops text read as Parquet's dictionaries: a few windows are looked for among every
# cpu_op, whose names and categories need not be held as a string per row.
DICTIONARIES = ("category", "name")
SIDES = ("communication", "computation")  # first, second
# (window, kernel) pairs measured at a time: a kernel counts in each window it was launched in
# (a step and the annotations within it), and the pairs' unions took a dozen arrays of twice
# their number at once; by batches of windows they are bounded. (With the dictionaries above:
# the 1 GB trace's window_time peak 374 -> 356-361 MB.)
PAIR_ROWS = 1 << 20


def measure(staging, parts, trace_id, kernel_names, rules):
    """The window_time rows (or None) of the trace staged in `staging` as `parts`."""
    return window_table(read_staged(staging, parts, COLUMNS, dictionaries=DICTIONARIES),
                        trace_id, kernel_names, rules)


def window_table(staged, trace_id, kernel_names, rules):
    """The trace's window_time rows, from its staged tables ({table: at least COLUMNS}) and
    its kernel_names (None: no GPU activity); None when no window has a kernel launched in
    it. `rules`: the fingerprint of the default rules the classes follow."""
    windows = _windows(staged["cpu_ops"])
    if kernel_names is None or not len(windows):
        return None
    fed, starts, ends, first = _kernels(staged["kernels"], staged["runtime"], kernel_names)
    order = np.argsort(fed, kind="stable")
    fed, starts, ends, first = fed[order], starts[order], ends[order], first[order]
    window_starts = _array(windows["ts_ns"])
    window_ends = window_starts + _array(windows["dur_ns"])
    low = np.searchsorted(fed, window_starts, side="left")
    high = np.maximum(np.searchsorted(fed, window_ends, side="left"), low)
    counts = high - low
    first_ns, second_ns, union_ns = (np.zeros(len(windows), np.int64) for _ in range(3))
    for begin, end in _batches(counts, PAIR_ROWS):
        size, launched = end - begin, counts[begin:end]
        # one (window, kernel) pair per kernel launched in each window of the batch
        group = np.repeat(np.arange(size), launched)
        kernel = (np.arange(launched.sum())
                  - np.repeat(np.cumsum(launched) - launched - low[begin:end], launched))
        first_side, pair_starts, pair_ends = first[kernel], starts[kernel], ends[kernel]
        first_ns[begin:end] = _union_lengths(group[first_side], pair_starts[first_side],
                                             pair_ends[first_side], size)
        second_ns[begin:end] = _union_lengths(group[~first_side], pair_starts[~first_side],
                                              pair_ends[~first_side], size)
        union_ns[begin:end] = _union_lengths(group, pair_starts, pair_ends, size)
    held = counts > 0
    if not held.any():
        return None
    kept = windows.filter(pa.array(held))
    names = kept["name"]
    return pa.table({
        "trace_id": pa.array([trace_id] * len(kept), pa.string()),
        "scope": pc.if_else(pc.fill_null(pc.starts_with(names, STEP_PREFIX), False), "step",
                            "annotation"),
        "event_index": kept["event_index"],
        "name": names,
        "start_ns": pa.array(window_starts[held]),
        "end_ns": pa.array(window_ends[held]),
        "comm_ns": pa.array(first_ns[held]),
        "compute_ns": pa.array(second_ns[held]),
        "union_ns": pa.array(union_ns[held]),
        "rules": pa.array([rules] * len(kept), pa.string()),
    }).cast(TABLES["window_time"].schema)


def _batches(counts, limit):
    """(begin, end) of consecutive windows whose `counts` (kernels launched in each) add up to
    at most `limit`, or of one window alone that holds more."""
    totals = np.cumsum(counts)
    begin = 0
    while begin < len(counts):
        before = totals[begin - 1] if begin else 0
        end = max(begin + 1, int(np.searchsorted(totals, before + limit, side="right")))
        yield begin, end
        begin = end


def _windows(cpu_ops):
    """The step and annotation windows: the cpu_ops rows that are one, with a duration (their
    names as plain text; the staged names and categories plain or dictionaries)."""
    named = _mask(starts_with(cpu_ops["name"], STEP_PREFIX))
    annotation = _matching(_dictionary(cpu_ops["category"]), pc.equal, "user_annotation")
    timed = _mask(pc.and_(pc.is_valid(cpu_ops["ts_ns"]), pc.is_valid(cpu_ops["dur_ns"])))
    found = cpu_ops.filter(pa.array((named | annotation) & timed))
    return found.set_column(found.schema.get_field_index("name"), "name",
                            found["name"].cast(pa.string()))


def _kernels(kernels, runtime, kernel_names):
    """Of the kernels of either side with a positive duration: fed (the launch, else the
    start), start, end and first (communication) numpy arrays."""
    classified = with_classes(kernels, kernel_names, ("ts_ns", "dur_ns", "correlation"))
    sided = pc.fill_null(pc.is_in(classified["class"], pa.array(SIDES)), False)
    timed = pc.and_(pc.fill_null(pc.greater(classified["dur_ns"], 0), False),
                    pc.is_valid(classified["ts_ns"]))
    classified = classified.filter(pc.and_(sided, timed))
    joined = left_join(classified, launches(runtime), ["correlation"])
    starts = _array(joined["ts_ns"])
    fed = _array(pc.coalesce(joined["launch"], joined["ts_ns"]))
    ends = starts + _array(joined["dur_ns"])
    return fed, starts, ends, _mask(pc.equal(joined["class"], SIDES[0]))
