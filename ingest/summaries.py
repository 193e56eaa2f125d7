"""Per-trace tables derived from a trace's kernels once they are all staged: `kernel_names`,
`gpu_intervals` and `gpu_time`.

`kernel_names` is the trace's distinct GPU activity names by name_id, the small dimension that
per-name work (classification, short names, naming kernel_stats) reads. Union lengths over millions of kernels are what the rank-level views spend their time on (a
sorted window pass per set). A trace's unions do not change after ingest, so they are merged
here, with Arrow, into a few disjoint intervals per kind:

    busy            all GPU activity but gpu_user_annotation ranges (rule-independent)
    communication   kernels of that class under the default rules
    computation     likewise

and their lengths (and that of communication or computation together) go into one `gpu_time`
row, which the rank-level views sum. Class unions depend on the rules: rows carry the default
rules' fingerprint, and the query layer uses them only when the effective rules are those
defaults (see warehouse.query).
"""

import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from warehouse.rules import default_rules, rules_fingerprint

from .schema import TABLES

CLASS_KINDS = ("communication", "computation")


def merge(starts, ends):
    """Disjoint sorted intervals covering the same points as [starts[i], ends[i])."""
    if len(starts) == 0:
        return pa.array([], pa.int64()), pa.array([], pa.int64())
    order = pc.sort_indices(starts)
    starts, ends = pc.take(starts, order), pc.take(ends, order)
    reach = pc.cumulative_max(ends)
    previous = pa.concat_arrays([pa.array([None], pa.int64()), reach.slice(0, len(reach) - 1)])
    opens = pc.fill_null(pc.greater(starts, previous), True)
    group = pc.cumulative_sum(pc.cast(opens, pa.int64()))
    merged = pa.table({"g": group, "s": starts, "e": ends}).group_by("g").aggregate(
        [("s", "min"), ("e", "max")]).sort_by("s_min")
    return merged["s_min"].combine_chunks(), merged["e_max"].combine_chunks()


def classify(category, name, rules):
    """The class the first matching rule gives (the SQL view kernel_classes does the same)."""
    for target, rule_category, pattern, value in rules:
        if target != "class":
            continue
        if rule_category is not None and rule_category != category:
            continue
        if pattern is not None and not re.search(pattern, (name or "").lower()):
            continue
        return value
    return "other"


def summarize_kernels(kernel_files, trace_id):
    """One trace's kernel_names, gpu_intervals and gpu_time tables ({name: table}) from its
    staged kernels parts, and the fingerprint of the rules behind their classes."""
    kernels = pq.read_table(kernel_files,
                            columns=["category", "name_id", "name", "ts_ns", "dur_ns"],
                            read_dictionary=["name"]).unify_dictionaries()
    names = kernels.group_by(["category", "name_id", "name"]).aggregate([])
    names = names.append_column("trace_id", pa.array([trace_id] * len(names), pa.string()))
    kernels = kernels.filter(pc.is_valid(kernels["dur_ns"])).combine_chunks()
    rules = default_rules()
    fingerprint = rules_fingerprint(rules)
    starts = _array(kernels["ts_ns"])
    ends = pc.add(starts, _array(kernels["dur_ns"]))
    masks = {"busy": pc.not_equal(_array(kernels["category"]), "gpu_user_annotation")}
    classes = _classes(kernels, rules)
    masks.update((kind, pc.equal(classes, kind)) for kind in CLASS_KINDS)
    merged = {kind: merge(pc.filter(starts, pc.fill_null(mask, False)),
                          pc.filter(ends, pc.fill_null(mask, False)))
              for kind, mask in masks.items()}
    columns = {"kind": [], "start_ns": [], "end_ns": []}
    for kind, (merged_starts, merged_ends) in merged.items():
        columns["kind"] += [kind] * len(merged_starts)
        columns["start_ns"] += merged_starts.to_pylist()
        columns["end_ns"] += merged_ends.to_pylist()
    rows = len(columns["kind"])
    intervals = pa.table({"trace_id": [trace_id] * rows, **columns, "rules": [fingerprint] * rows})
    both = merge(*(pa.concat_arrays([merged[kind][i] for kind in CLASS_KINDS]) for i in (0, 1)))
    busy_starts, busy_ends = merged["busy"]
    time = {"trace_id": trace_id,
            "first_ns": pc.min(busy_starts).as_py(), "last_ns": pc.max(busy_ends).as_py(),
            "busy_ns": _length(merged["busy"]),
            "comm_ns": _length(merged["communication"]),
            "compute_ns": _length(merged["computation"]),
            "comm_or_compute_ns": _length(both), "rules": fingerprint}
    tables = {"kernel_names": names.select(TABLES["kernel_names"].schema.names),
              "gpu_intervals": intervals,
              "gpu_time": pa.Table.from_pylist([time])}
    return {name: table.cast(TABLES[name].schema) for name, table in tables.items()}, fingerprint


def _length(intervals):
    """Total length of disjoint intervals (exact: integer sum)."""
    starts, ends = intervals
    return pc.sum(pc.subtract(ends, starts)).as_py() or 0


def _array(column):
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _classes(kernels, rules):
    """Per kernel, its class, classifying each distinct (category, name) once."""
    keys = pc.binary_join_element_wise(
        pc.fill_null(_array(kernels["category"]), ""),
        pc.fill_null(pc.cast(_array(kernels["name"]), pa.string()), ""), "\x00")
    distinct = pc.unique(keys)
    names = {}
    for key in distinct.to_pylist():
        category, _, name = key.partition("\x00")
        names[key] = classify(category or None, name, rules)
    return pc.take(pa.array([names[k] for k in distinct.to_pylist()], pa.string()),
                   pc.index_in(keys, distinct))
