"""Per-trace tables derived from a trace's kernels: `kernel_names`, `gpu_intervals` and
`gpu_time`.

`kernel_names` is the trace's distinct GPU activity names by name_id, the small dimension that
per-name work (classification, short names, naming kernel_stats) reads. Union lengths over
millions of kernels are what the rank-level views spend their time on (a sorted window pass per
set). A trace's unions do not change after ingest, so they are merged here, with Arrow, into a
few disjoint intervals per kind:

    busy            all GPU activity but gpu_user_annotation ranges (rule-independent)
    communication   kernels of that class under the default rules
    computation     likewise

and their lengths (and that of communication or computation together) go into one `gpu_time`
row, which the rank-level views sum. Class unions depend on the rules: rows carry the default
rules' fingerprint, and the query layer uses them only when the effective rules are those
defaults (see tracewh.query.define).

The work is split like the ingest: each worker summarises the kernels of its chunk
(`summarize_chunk`: names, merged intervals per kind) while it has them in memory, and the
parent combines the chunks' summaries (`combine_summaries`), so nothing is read back from the
staged files and little is left to do after the last chunk.
"""

import functools
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tracewh.rules import default_rules, matches, rules_fingerprint

from tracewh.storage.schema import TABLES

from .keyed import contiguous, distinct_rows, left_join

KINDS = ("busy", "communication", "computation")
CLASS_KINDS = ("communication", "computation")


@dataclass
class KernelSummary:
    """What one chunk's kernels contribute: their distinct (category, name_id, name) and, per
    kind, their merged intervals (starts, ends)."""

    names: pa.Table
    intervals: dict


def merge(starts, ends):
    """Disjoint sorted intervals covering the same points as [starts[i], ends[i]).

    Sorted by start, an interval opens a new merged interval when it starts past the furthest
    end so far (`reach`); a merged interval ends at the reach of its last member, the one
    before the next opening."""
    if len(starts) == 0:
        return pa.array([], pa.int64()), pa.array([], pa.int64())
    order = pc.sort_indices(starts)
    starts, ends = pc.take(starts, order), pc.take(ends, order)
    reach = pc.cumulative_max(ends)
    previous = pa.concat_arrays([pa.array([None], pa.int64()), reach.slice(0, len(reach) - 1)])
    opens = pc.fill_null(pc.greater(starts, previous), True)
    closes = pa.concat_arrays([opens.slice(1), pa.array([True])])
    return pc.filter(starts, opens), pc.filter(reach, closes)


def classify(category, name, rules):
    """The class the first matching rule gives (the SQL view kernel_classes does the same, with
    the same regular-expression engine)."""
    for target, rule_category, pattern, value in rules:
        if target != "class":
            continue
        if rule_category is not None and rule_category != category:
            continue
        if pattern is not None and not matches(pattern, (name or "").lower()):
            continue
        return value
    return "other"


@functools.cache
def _default_rules():
    rules = default_rules()
    return rules, rules_fingerprint(rules)


def default_fingerprint():
    """The fingerprint of the default kernel rules, which the stored classes follow."""
    return _default_rules()[1]


@functools.cache
def default_class(category, name):
    """classify() under the default rules, remembered: every chunk holds mostly the same names."""
    return classify(category, name, _default_rules()[0])


def summarize_chunk(kernels):
    """The KernelSummary of one chunk's kernels table (category, name_id, name, ts_ns, dur_ns)."""
    names = distinct_rows(kernels.select(["category", "name_id", "name"]))
    timed = kernels.filter(pc.is_valid(kernels["dur_ns"]))
    timed = with_classes(timed, names)
    starts = contiguous(timed["ts_ns"])
    ends = pc.add(starts, contiguous(timed["dur_ns"]))
    masks = {"busy": pc.not_equal(contiguous(timed["category"]), "gpu_user_annotation")}
    masks.update((kind, pc.equal(contiguous(timed["class"]), kind)) for kind in CLASS_KINDS)
    intervals = {}
    for kind, mask in masks.items():
        mask = pc.fill_null(mask, False)
        intervals[kind] = merge(pc.filter(starts, mask), pc.filter(ends, mask))
    return KernelSummary(names, intervals)


def combine_summaries(summaries, trace_id, delta=0):
    """One trace's kernel_names, gpu_intervals and gpu_time tables ({name: table}) from the
    KernelSummary of each of its chunks, with times shifted by `delta` ns (the base time was
    guessed wrong while the chunks were read), and the fingerprint of the rules behind the
    classes."""
    fingerprint = default_fingerprint()
    names = distinct_rows(pa.concat_tables([summary.names for summary in summaries]))
    merged = {}
    for kind in KINDS:
        starts, ends = (pa.concat_arrays([summary.intervals[kind][i] for summary in summaries])
                        for i in (0, 1))
        if delta:
            starts, ends = pc.add_checked(starts, delta), pc.add_checked(ends, delta)
        merged[kind] = merge(starts, ends)
    rows = sum(len(kind_starts) for kind_starts, _ in merged.values())
    intervals = pa.table({
        "trace_id": pa.array([trace_id] * rows, pa.string()),
        "kind": pa.concat_arrays([pa.array([kind] * len(kind_starts), pa.string())
                                  for kind, (kind_starts, _) in merged.items()]),
        "start_ns": pa.concat_arrays([kind_starts for kind_starts, _ in merged.values()]),
        "end_ns": pa.concat_arrays([kind_ends for _, kind_ends in merged.values()]),
        "rules": pa.array([fingerprint] * rows, pa.string()),
    })
    both = merge(*(pa.concat_arrays([merged[kind][i] for kind in CLASS_KINDS]) for i in (0, 1)))
    busy_starts, busy_ends = merged["busy"]
    time = {"trace_id": trace_id,
            "first_ns": pc.min(busy_starts).as_py(), "last_ns": pc.max(busy_ends).as_py(),
            "busy_ns": _length(merged["busy"]),
            "comm_ns": _length(merged["communication"]),
            "compute_ns": _length(merged["computation"]),
            "comm_or_compute_ns": _length(both), "rules": fingerprint}
    names = names.append_column("trace_id", pa.array([trace_id] * len(names), pa.string()))
    tables = {"kernel_names": names.select(TABLES["kernel_names"].schema.names),
              "gpu_intervals": intervals,
              "gpu_time": pa.Table.from_pylist([time])}
    return {name: table.cast(TABLES[name].schema) for name, table in tables.items()}, fingerprint


def _length(intervals):
    """Total length of disjoint intervals (exact: integer sum)."""
    starts, ends = intervals
    return pc.sum(pc.subtract(ends, starts)).as_py() or 0


def with_classes(kernels, names, columns=("ts_ns", "dur_ns")):
    """`kernels`' `columns` with a `class` column (rows in their order): each distinct
    (category, name) is classified once, in Python, and joined back on (category, name_id); a
    missing name has name_id 0 here, as name_key in the SQL view kernel_name_classes."""
    classes = [default_class(category, name) for category, name in
               zip(names["category"].to_pylist(), names["name"].to_pylist())]
    classified = pa.table({"category": names["category"],
                           "name_key": pc.fill_null(names["name_id"], 0),
                           "class": pa.array(classes, pa.string())})
    keyed = pa.table({"category": kernels["category"],
                      "name_key": pc.fill_null(kernels["name_id"], 0),
                      **{column: kernels[column] for column in columns}})
    return left_join(keyed, classified, ["category", "name_key"])
