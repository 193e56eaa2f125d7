"""Independent pure-Python reference of the operator attribution rules (issue: which op,
module and annotation launched the GPU time), written without SQL and with another
algorithm: one stack pass per thread instead of the views' depth counting and per-level
window passes.

Input is the raw rows of the stored tables (cpu_ops, runtime, kernels, instants as dicts);
the rules are those the README states:

- per (trace, pid, tid), events in order of start, longer first, then event_index; a member
  is open from its start until its end, and closed for anything starting at its end or later;
  zero-duration events never open;
- an event's parent is the last-started member still open at its start (the top of the
  stack once the closed ones are removed), its depth the number of open members; where
  events nest, that is the innermost one enclosing it;
- a launch is the earliest runtime event of the trace carrying the activity's correlation
  (not 0); its op, module and annotation are its parents in the cpu_op, nn.Module and
  user_annotation trees; without an enclosing op, the last-started cpu_op of the trace with the
  activity's External id stands in.
"""

from collections import defaultdict

from .reference import union_length

NOT_ACTIVITY = ("gpu_user_annotation", "cuda_sync")  # every other category is attributed


def _span(row):
    return max(row["dur_ns"] or 0, 0)


def parents(events, is_member):
    """{event_index: (parent event_index or None, depth, partial)} of `events` (rows of one
    trace), members being those `is_member` accepts; `partial` when the event ends after its
    parent does."""
    threads = defaultdict(list)
    for row in events:
        threads[(row["pid"], row["tid"])].append(row)
    placed = {}
    for rows in threads.values():
        rows.sort(key=lambda r: (r["ts_ns"], -_span(r), r["event_index"]))
        stack = []  # (end_ns, event_index) of the open members, in order of start
        for row in rows:
            stack = [entry for entry in stack if entry[0] > row["ts_ns"]]
            end = row["ts_ns"] + _span(row)
            parent = stack[-1] if stack else None
            placed[row["event_index"]] = (parent and parent[1], len(stack),
                                          bool(parent and parent[0] < end))
            if is_member(row) and _span(row) > 0:
                stack.append((end, row["event_index"]))
    return placed


def is_op(row):
    return row.get("source") == "cpu_ops" and row["category"] == "cpu_op"


def is_module(row):
    return (row.get("source") == "cpu_ops" and row["category"] == "python_function"
            and (row["name"] or "").startswith("nn.Module: "))


def is_annotation(row):
    return row.get("source") == "cpu_ops" and row["category"] == "user_annotation"


def _layer(host, runtime, is_member):
    """The placement of the members and the runtime events of one layer."""
    return parents([r for r in host if is_member(r)] + runtime, is_member)


def attribution(cpu_ops, runtime, kernels):
    """One trace's op_kernels in a dict by the activity's event_index: launch, op, top op,
    module, annotation (event indexes) and link; and the op tree {op: parent op}."""
    host = [dict(r, source="cpu_ops") for r in cpu_ops]
    launches = [dict(r, source="runtime") for r in runtime]
    op_tree = _layer(host, launches, is_op)
    module_tree = _layer(host, launches, is_module)
    annotation_tree = _layer(host, launches, is_annotation)
    first_launch = {}
    for row in sorted(launches, key=lambda r: (r["ts_ns"], r["event_index"])):
        if row["correlation"] not in (None, 0):
            first_launch.setdefault(row["correlation"], row["event_index"])
    by_external = {}
    for row in sorted((r for r in host if is_op(r) and r["external_id"] not in (None, 0)),
                      key=lambda r: (r["ts_ns"], r["event_index"])):
        by_external[row["external_id"]] = row["event_index"]
    op_parent = {row["event_index"]: op_tree[row["event_index"]][0]
                 for row in host if is_op(row)}

    def top(op):
        while op_parent.get(op) is not None:
            op = op_parent[op]
        return op

    result = {}
    for kernel in kernels:
        if kernel["category"] in NOT_ACTIVITY:
            continue
        launch = first_launch.get(kernel["correlation"])
        op = op_tree[launch][0] if launch is not None else None
        link = "containment" if op is not None else None
        if op is None and kernel["external_id"] in by_external:
            op, link = by_external[kernel["external_id"]], "external_id"
        if link is None:
            link = "runtime_only" if launch is not None else "unlaunched"
        result[kernel["event_index"]] = {
            "launch_event_index": launch, "op_event_index": op,
            "top_op_event_index": top(op) if op is not None else None,
            "module_event_index": module_tree[launch][0] if launch is not None else None,
            "annotation_event_index":
                annotation_tree[launch][0] if launch is not None else None,
            "link": link}
    return result, op_parent


def op_calls(cpu_ops, runtime, kernels):
    """{op event_index: (gpu_self_ns, gpu_self_busy_ns, gpu_total_ns, gpu_total_busy_ns)} of
    one trace: each activity counts for its op and every op above it."""
    linked, op_parent = attribution(cpu_ops, runtime, kernels)
    intervals = {kernel["event_index"]: (kernel["ts_ns"], kernel["ts_ns"] + (kernel["dur_ns"] or 0))
                 for kernel in kernels}
    own, total = defaultdict(list), defaultdict(list)
    for index, link in linked.items():
        op = link["op_event_index"]
        if op is None:
            continue
        own[op].append(intervals[index])
        while op is not None:
            total[op].append(intervals[index])
            op = op_parent.get(op)
    return {op: (sum(e - s for s, e in own[op]), union_length(own[op]),
                 sum(e - s for s, e in total[op]), union_length(total[op]))
            for op in op_parent}
