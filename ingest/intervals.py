"""Per-trace GPU interval unions, computed once at ingest: the `gpu_intervals` table.

Union lengths over millions of kernels are what the rank-level views spend their time on (a
sorted window pass per set). A trace's unions do not change after ingest, so they are merged
here, with Arrow, into a few disjoint intervals per kind:

    busy            all GPU activity but gpu_user_annotation ranges (rule-independent)
    communication   kernels of that class under the default rules
    computation     likewise

Class unions depend on the rules: rows carry the default rules' fingerprint, and the query
layer uses them only when the effective rules are those defaults (see warehouse.query).
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


def gpu_intervals(kernel_files, trace_id):
    """The gpu_intervals rows of one trace, from its staged kernels parts."""
    kernels = pq.read_table(kernel_files, columns=["category", "name", "ts_ns", "dur_ns"],
                            read_dictionary=["name"])
    kernels = kernels.filter(pc.is_valid(kernels["dur_ns"])).combine_chunks()
    rules = default_rules()
    fingerprint = rules_fingerprint(rules)
    starts = _array(kernels["ts_ns"])
    ends = pc.add(starts, _array(kernels["dur_ns"]))
    pieces = [("busy", pc.not_equal(_array(kernels["category"]), "gpu_user_annotation"))]
    classes = _classes(kernels, rules)
    pieces += [(kind, pc.equal(classes, kind)) for kind in CLASS_KINDS]
    columns = {"kind": [], "start_ns": [], "end_ns": []}
    for kind, mask in pieces:
        mask = pc.fill_null(mask, False)
        merged_starts, merged_ends = merge(pc.filter(starts, mask), pc.filter(ends, mask))
        columns["kind"] += [kind] * len(merged_starts)
        columns["start_ns"] += merged_starts.to_pylist()
        columns["end_ns"] += merged_ends.to_pylist()
    rows = len(columns["kind"])
    table = pa.table({"trace_id": [trace_id] * rows, **columns, "rules": [fingerprint] * rows})
    return table.cast(TABLES["gpu_intervals"].schema), fingerprint


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
