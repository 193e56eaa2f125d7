"""Two runs, or two phases, compared: `tracewh diff`, a regression gate. The figures come from
the SQL library (`run_phase_diff_with`, `run_phase_metric_diff_with`, `run_metrics`); this
module checks the arguments,
shapes the JSON contract and renders the report. One metric over many runs is `trend`'s.
"""

import json
from collections import Counter
from dataclasses import dataclass

from .. import output
from ..errors import UsageError
from ..storage.names import check_phase
from ..query.scope import check_scope, rank_ranges
from ..query.statements import run_query

KEYS = ("name", "short_name", "class", "op", "collective", "critical-path")
COLLECTIVE_SIZES = ("pow2", "exact")
TABLE_ROWS = 25


@dataclass
class DiffOptions:
    phase: str | None = None
    rank: int | None = None
    threshold_pct: float = 5.0
    min_ns: int = 10000
    by: str = "name"
    collective_size: str = "pow2"  # with by "collective": a power-of-two bucket, or exact


def _records(columns, rows):
    return [dict(zip(columns, row)) for row in rows]


def split_side(text):
    """(run, phase or None) of one side of a diff: `RUN` or `RUN:PHASE`. Run and phase names
    cannot hold a colon (names.SAFE_NAME), so the first colon is where the phase starts."""
    run, colon, phase = text.partition(":")
    if not colon:
        return text, None
    if not run or not phase or ":" in phase:
        raise UsageError(f"invalid side {text!r}: expected RUN or RUN:PHASE (one colon, a run "
                         "and a phase, as prefill and decode of one run: "
                         "infer:prefill infer:decode)")
    return run, check_phase(phase)


def _key_by(options):
    """The key_by of the SQL library's diff macros: 'collective_exact' for collectives keyed
    by their exact size."""
    if options.collective_size not in COLLECTIVE_SIZES:
        raise UsageError(f"unknown collective size {options.collective_size!r}: use "
                         f"{' or '.join(COLLECTIVE_SIZES)}")
    if options.by == "collective" and options.collective_size == "exact":
        return "collective_exact"
    return options.by.replace("-", "_")


def side_runs(*sides):
    """The runs that the sides of a diff name (what its connection must hold)."""
    return [split_side(side)[0] for side in sides]


def _label(run, phase):
    return run if phase is None else f"{run}:{phase}"


def diff_runs(connection, base, new, options):
    """The diff as the JSON-ready dict nightly jobs build on, over a connection to both runs
    (see `api.Warehouse.connect_to_runs`, which checks they are there). Either side may be
    `RUN:PHASE`: a side without a phase takes `options.phase`, else the other side's (so
    `infer:prefill infer:decode` compares two phases of one run, `a:prefill b` the prefill
    of two runs)."""
    (base_run, base_phase), (new_run, new_phase) = split_side(base), split_side(new)
    base_phase = base_phase or options.phase or new_phase
    new_phase = new_phase or options.phase or base_phase
    if base_run == new_run and base_phase == new_phase:
        if base_phase is None:
            raise UsageError(f"base and new are the same run: to compare two phases of it, "
                             f"name them as {base_run}:PHASE {base_run}:PHASE")
        raise UsageError(f"base and new are the same run and phase "
                         f"({_label(base_run, base_phase)})")
    check_scope(connection, [base_run], base_phase, options.rank)
    check_scope(connection, [new_run], new_phase, options.rank)
    kernels = _records(*run_query(
        connection, "SELECT * FROM run_phase_diff_with(?, ?, ?, ?, ?, ?, ?, ?)",
        params=[base_run, base_phase, new_run, new_phase, options.threshold_pct,
                options.min_ns, _key_by(options), options.rank]))
    metrics = _records(*run_query(
        connection, "SELECT * FROM run_phase_metric_diff_with(?, ?, ?, ?, ?, ?, ?)",
        params=[base_run, base_phase, new_run, new_phase, options.threshold_pct,
                options.min_ns, options.rank]))
    kernel_statuses = Counter(k["status"] for k in kernels)
    metric_statuses = Counter(m["status"] for m in metrics)
    sides = {"base": _side(connection, base_run, base_phase, options.rank),
             "new": _side(connection, new_run, new_phase, options.rank)}
    return {
        "base": base_run,
        "new": new_run,
        "base_phase": base_phase,
        "new_phase": new_phase,
        "thresholds": {"pct": options.threshold_pct, "min_ns": options.min_ns},
        "by": options.by,
        "collective_size": options.collective_size if options.by == "collective" else None,
        "phase": options.phase,
        "rank": options.rank,
        "kernels": kernels,
        "metrics": metrics,
        "summary": {
            "kernels": dict(sorted(kernel_statuses.items())),
            "metrics": dict(sorted(metric_statuses.items())),
            "regressed_kernels": kernel_statuses["regressed"],
            "regressed_metrics": metric_statuses["regressed"],
            "regression": bool(kernel_statuses["regressed"] or metric_statuses["regressed"]),
            "sides": sides,
            "warnings": _side_warnings(sides),
            "notes": _bandwidth_notes(kernels, sides) if options.by == "collective" else [],
        },
    }


def _bandwidth_notes(kernels, sides):
    """Why a side's bus bandwidth is blank when it lacks ranks of the job (one line each)."""
    notes = []
    for name, side in sides.items():
        counted = [k for k in kernels if k[f"{name}_count"]]
        world_size = max(side["world_sizes"], default=0)
        if counted and all(k[f"{name}_busbw_gbps"] is None for k in counted) and \
                len(side["ranks"]) < world_size:
            notes.append(f"{name} {side['run']}: " + bus_bandwidth_note(
                f"{len(side['ranks'])} of its {world_size} ranks", f"{name}_algbw_gbps holds"))
    return notes


def bus_bandwidth_note(captured, instead):
    """The one line that says why bus bandwidth is missing, and what one rank allows."""
    return (f"no bus bandwidth: it needs every rank of a collective's group, and {captured} "
            f"were captured; {instead} each rank's algorithm bandwidth from its own kernel "
            "durations (its waits included)")


def _side(connection, run, phase, rank):
    """What one side of a diff holds, from its traces: the devices (deviceProperties names),
    the world sizes the files declare and the ranks present."""
    _, ((devices, world_sizes, ranks),) = run_query(connection, """
        SELECT list_sort(list_distinct(flatten(list(device_names)))),
               list_sort(list_distinct(list(world_size))), list_sort(list_distinct(list(rank)))
        FROM traces
        WHERE run = ? AND (CAST(? AS VARCHAR) IS NULL OR phase = ?)
          AND (CAST(? AS INTEGER) IS NULL OR rank = ?)""",
                                                     params=[run, phase, phase, rank, rank])
    return {"run": run, "phase": phase, "devices": list(devices or []),
            "world_sizes": list(world_sizes or []), "ranks": list(ranks or [])}


def _side_warnings(sides):
    """What differs between the sides besides the figures (they are compared all the same,
    and --fail-on-regression decides on the figures): devices, world size, ranks present."""
    base, new = sides["base"], sides["new"]
    warnings = []
    for key, what in (("devices", "devices"), ("world_sizes", "world sizes"),
                      ("ranks", "ranks present")):
        if base[key] != new[key]:
            warnings.append(f"{what} differ: base {_listed(key, base[key])}, "
                            f"new {_listed(key, new[key])}")
    return warnings


def _listed(key, values):
    if not values:
        return "none recorded"
    if key == "ranks":
        return rank_ranges(values)
    return ", ".join(map(str, values))


def _side_line(name, side):
    """'base nightly-1201: ranks 0-7 of world size 8; devices Tesla V100-SXM2-32GB' (the
    device names are the trace's text: the renderers keep it on one line, or escape it)."""
    ranks = "rank" if len(side["ranks"]) == 1 else "ranks"
    return (f"{name} {_label(side['run'], side['phase'])}: {ranks} "
            f"{_listed('ranks', side['ranks'])} of world size "
            f"{_listed('world_sizes', side['world_sizes'])}; devices "
            f"{_listed('devices', side['devices'])}")


_KERNEL_COLUMNS = ("status", "name", "base_total_ns", "new_total_ns", "delta_ns", "delta_pct",
                   "base_count", "new_count", "class")
_METRIC_COLUMNS = ("status", "phase", "rank", "metric", "base_value", "new_value", "delta",
                   "delta_pct")


_BANDWIDTH_COLUMNS = ("base_busbw_gbps", "new_busbw_gbps", "base_algbw_gbps", "new_algbw_gbps")


def _kernel_columns(report):
    """The kernel table's columns: with --by collective, each side's bandwidths too."""
    return _KERNEL_COLUMNS + (_BANDWIDTH_COLUMNS if report["by"] == "collective" else ())


def _table_columns(report):
    """The terminal table's columns: what a CI log must show first (the name, cut in the
    middle to what is left, the deltas and the counts), the totals after, as the width
    allows."""
    first = ("status", "name", "delta_ns", "delta_pct", "base_count", "new_count")
    return first + tuple(c for c in _kernel_columns(report) if c not in first)


def _pct(value):
    return None if value is None else round(value, 2)


def _rows(records, columns):
    return [[_pct(r[c]) if c == "delta_pct" else r[c] for c in columns] for r in records]


def _metric_rows(records, units):
    """The metrics table's rows; with `units`, a metric in ns is shown in them under its name
    in them (exposed_comm_ns as exposed_comm_ms), its values and delta too."""
    rows = _rows(records, _METRIC_COLUMNS)
    name = _METRIC_COLUMNS.index("metric")
    values = [_METRIC_COLUMNS.index(column) for column in ("base_value", "new_value", "delta")]
    for row in rows:
        if units and row[name].endswith("_ns"):
            row[name] = output.unit_name(row[name], units)
            for index in values:
                row[index] = output.ns_in_units(row[index], units)
    return rows


def _noun(report):
    """What the rows compare: operators with --by op, critical path classes with --by
    critical-path, else kernels."""
    return {"op": "operators", "critical-path": "critical path classes"}.get(report["by"],
                                                                          "kernels")


def _sides(report):
    """'a -> b', or 'infer:prefill -> infer:decode' when the sides are different phases."""
    if report["base_phase"] == report["new_phase"]:
        return report["base"], report["new"]
    return (_label(report["base"], report["base_phase"]),
            _label(report["new"], report["new_phase"]))


def _summary_line(report):
    summary = report["summary"]
    counts = ", ".join(f"{n} {status}" for status, n in summary["kernels"].items()) or "none"
    verdict = "REGRESSION" if summary["regression"] else "no regression"
    return (f"{verdict}: {_noun(report)} {counts}; "
            f"metrics regressed {summary['regressed_metrics']} "
            f"of {len(report['metrics'])} (threshold {report['thresholds']['pct']}%, "
            f"noise floor {report['thresholds']['min_ns']} ns, by {report['by']})")


def _header_lines(report):
    """What each side holds and, when they differ, the warnings."""
    summary = report["summary"]
    return ([_side_line(name, summary["sides"][name]) for name in ("base", "new")]
            + [f"warning: {warning}" for warning in summary["warnings"]]
            + [f"note: {note}" for note in summary["notes"]])


# --format csv: one table, a row per kernel and per metric (`kind` says which); for kernels,
# base_value and new_value are total ns.
_CSV_COLUMNS = ("kind", "status", "name", "class", "phase", "rank", "base_value", "new_value",
                "delta", "delta_pct", "base_count", "new_count")


def _csv_rows(report):
    kernels = [["kernel", k["status"], k["name"], k["class"], None, None, k["base_total_ns"],
                k["new_total_ns"], k["delta_ns"], k["delta_pct"], k["base_count"],
                k["new_count"]] for k in report["kernels"]]
    metrics = [["metric", m["status"], m["metric"], None, m["phase"], m["rank"],
                m["base_value"], m["new_value"], m["delta"], m["delta_pct"], None, None]
               for m in report["metrics"]]
    return kernels + metrics


def render_diff(report, fmt, terminal=False, units=None):
    """The report in `fmt`; a table's or Markdown's times in `units` (a key of output.UNITS:
    the kernels' *_ns columns and the metrics in ns), where json and csv keep the ns."""
    if fmt == "json":
        return json.dumps(report, indent=2, default=output.json_default) + "\n"
    if fmt == "csv":
        return output.render(_CSV_COLUMNS, _csv_rows(report), "csv", terminal=terminal)
    changed = [k for k in report["kernels"] if k["status"] != "unchanged"]
    moved = [m for m in report["metrics"] if m["status"] != "unchanged"]
    if fmt == "markdown":
        base, new = _sides(report)
        parts = [f"### tracewh diff: `{base}` → `{new}`\n",
                 _summary_line(report) + "\n\n"]
        parts += [f"{output.markdown_cell(line)}\n\n"
                  for line in _header_lines(report)]
        if changed:
            parts += [f"\n**{_noun(report).capitalize()} that changed**\n\n",
                      output.render(_kernel_columns(report),
                                    _rows(changed, _kernel_columns(report)),
                                    "markdown", squeeze=("name", "new_count"), units=units)]
        if moved:
            parts += ["\n**Metrics that moved**\n\n",
                      output.render(_METRIC_COLUMNS, _metric_rows(moved, units),
                                    "markdown")]
        return "".join(parts)
    shown = changed[:TABLE_ROWS]
    parts = [" -> ".join(_sides(report)) + f": {_summary_line(report)}\n"]
    parts += [output.one_line(line) + "\n" for line in _header_lines(report)]
    if shown:
        columns = _table_columns(report)
        parts += ["\n", output.render(columns, _rows(shown, columns), "table",
                                         squeeze=("name", "new_count"), units=units)]
        if len(changed) > len(shown):
            parts.append(f"... {len(changed) - len(shown)} more changed {_noun(report)} "
                         "(--format json for all)\n")
    if moved:
        parts += ["\n", output.render(_METRIC_COLUMNS, _metric_rows(moved, units), "table")]
    return "".join(parts)


# What `diff_runs` reads: a connection for it lists these tables' files only.
DIFF_READS = ("run_phase_diff_with", "run_phase_metric_diff_with", "kernel_classes",
              "kernel_name_classes", "run_metrics", "runs", "traces")


def diff_in_warehouse(warehouse, base, new, options):
    """`diff_runs` asked of a connection over the two sides' runs of `warehouse` (an
    `api.Warehouse`, or a `prepared.PreparedWarehouse`), each checked to be there."""
    with warehouse.connect_to_runs(side_runs(base, new), reads=DIFF_READS) as connection:
        return diff_runs(connection, base, new, options)
