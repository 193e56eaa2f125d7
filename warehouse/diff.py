"""Cross-run comparison: `tracewh diff` (two runs, a regression gate) and `tracewh trend` (one
metric over many runs). The figures come from the SQL library (`run_diff_with`,
`run_metric_diff_with`, `run_metrics`); this module checks the arguments, shapes the JSON
contract and renders the report.
"""

import json
from collections import Counter
from dataclasses import dataclass

from . import output
from .errors import UsageError
from .catalog import Catalog
from .query import connect, run_query, tables_read_by
from .scope import check_runs, check_scope, did_you_mean, known_runs

KEYS = ("name", "short_name", "class")
METRICS = ("overlap_ratio", "exposed_comm_ns", "step_time_ns", "gpu_idle_ns")
TABLE_ROWS = 25


@dataclass
class DiffOptions:
    phase: str | None = None
    rank: int | None = None
    threshold_pct: float = 5.0
    min_ns: int = 10000
    by: str = "name"


def _records(columns, rows):
    return [dict(zip(columns, row)) for row in rows]


def diff_runs(connection, base, new, options):
    """The diff as the JSON-ready dict nightly jobs build on."""
    check_runs(known_runs(connection), base, new)
    if base == new:
        raise UsageError("base and new are the same run")
    check_scope(connection, (base, new), options.phase, options.rank)
    kernels = _records(*run_query(
        connection, "SELECT * FROM run_diff_with(?, ?, ?, ?, ?, ?, ?)",
        params=[base, new, options.threshold_pct, options.min_ns, options.by, options.phase,
                options.rank]))
    metrics = _records(*run_query(
        connection, "SELECT * FROM run_metric_diff_with(?, ?, ?, ?, ?, ?)",
        params=[base, new, options.threshold_pct, options.min_ns, options.phase,
                options.rank]))
    kernel_statuses = Counter(k["status"] for k in kernels)
    metric_statuses = Counter(m["status"] for m in metrics)
    return {
        "base": base,
        "new": new,
        "thresholds": {"pct": options.threshold_pct, "min_ns": options.min_ns},
        "by": options.by,
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
        },
    }


_KERNEL_COLUMNS = ("status", "name", "base_total_ns", "new_total_ns", "delta_ns", "delta_pct",
                   "base_count", "new_count", "class")
_METRIC_COLUMNS = ("status", "phase", "rank", "metric", "base_value", "new_value", "delta",
                   "delta_pct")


def _pct(value):
    return None if value is None else round(value, 2)


def _rows(records, columns):
    return [[_pct(r[c]) if c == "delta_pct" else r[c] for c in columns] for r in records]


def _summary_line(report):
    summary = report["summary"]
    counts = ", ".join(f"{n} {status}" for status, n in summary["kernels"].items()) or "none"
    verdict = "REGRESSION" if summary["regression"] else "no regression"
    return (f"{verdict}: kernels {counts}; metrics regressed {summary['regressed_metrics']} "
            f"of {len(report['metrics'])} (threshold {report['thresholds']['pct']}%, "
            f"noise floor {report['thresholds']['min_ns']} ns, by {report['by']})")


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


def render_diff(report, fmt):
    if fmt == "json":
        return json.dumps(report, indent=2, default=output.json_default) + "\n"
    if fmt == "csv":
        return output.render(_CSV_COLUMNS, _csv_rows(report), "csv")
    changed = [k for k in report["kernels"] if k["status"] != "unchanged"]
    moved = [m for m in report["metrics"] if m["status"] != "unchanged"]
    if fmt == "markdown":
        parts = [f"### tracewh diff: `{report['base']}` → `{report['new']}`\n",
                 _summary_line(report) + "\n"]
        if changed:
            parts += ["\n**Kernels that changed**\n\n",
                      output.render(_KERNEL_COLUMNS, _rows(changed, _KERNEL_COLUMNS),
                                    "markdown")]
        if moved:
            parts += ["\n**Metrics that moved**\n\n",
                      output.render(_METRIC_COLUMNS, _rows(moved, _METRIC_COLUMNS),
                                    "markdown")]
        return "".join(parts)
    shown = changed[:TABLE_ROWS]
    parts = [f"{report['base']} -> {report['new']}: {_summary_line(report)}\n"]
    if shown:
        parts += ["\n", output.render(_KERNEL_COLUMNS, _rows(shown, _KERNEL_COLUMNS), "table")]
        if len(changed) > len(shown):
            parts.append(f"... {len(changed) - len(shown)} more changed kernels "
                         "(--format json for all)\n")
    if moved:
        parts += ["\n", output.render(_METRIC_COLUMNS, _rows(moved, _METRIC_COLUMNS), "table")]
    return "".join(parts)


# What `diff_runs` and `trend` read: a connection for them lists these tables' files only.
DIFF_READS = ("run_diff_with", "run_metric_diff_with", "kernel_classes", "kernel_name_classes",
              "run_metrics", "runs", "traces")
TREND_READS = ("kernel_classes", "kernel_name_classes", "run_metrics", "runs")


def trend(connection, metric, last=None, tag=None, order_by_tag=None, phase=None,
          check_kernel=True):
    """(columns, rows): the metric per run and phase (median over ranks), in ingest order or
    by the value of a tag; the last `last` runs. A kernel no run has is an error, unless not
    `check_kernel` (the connection holding only some runs)."""
    if metric.startswith("kernel:"):
        source = ("SELECT run, phase, rank, CAST(sum(dur_ns) AS DOUBLE) AS value "
                  "FROM kernel_classes WHERE name = ? OR short_name = ? "
                  "GROUP BY run, phase, rank")
        params = [metric[len("kernel:"):]] * 2
    elif metric in METRICS:
        source = "SELECT run, phase, rank, value FROM run_metrics WHERE metric = ?"
        params = [metric]
    else:
        raise UsageError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)} "
                         "or kernel:NAME (a kernel's total time, by full or short name)")
    filters = []
    if phase is not None:
        filters.append("p.phase = ?")
        params.append(phase)
    if tag is not None:
        filters.append("json_extract_string(r.tags, ?) = ?")
        params += [_tag_path(tag[0]), tag[1]]
    order = "r.first_seq"
    if order_by_tag is not None:
        order = "json_extract_string(r.tags, ?) NULLS FIRST, r.first_seq"
        params.append(_tag_path(order_by_tag))
    where = ("WHERE " + " AND ".join(filters)) if filters else ""
    sql = f"""
        WITH m AS ({source}),
        per_run AS (
          SELECT run, phase, count(*) AS ranks,
                 percentile_disc(0.5) WITHIN GROUP (ORDER BY value) AS value,
                 min(value) AS min_value, max(value) AS max_value
          FROM m GROUP BY run, phase
        )
        SELECT p.run, p.phase, p.ranks, p.value, p.min_value, p.max_value, r.tags
        FROM per_run AS p JOIN runs AS r ON r.run = p.run
        {where}
        ORDER BY {order}, p.phase"""
    columns, rows = run_query(connection, sql, params=params)
    if not rows and metric.startswith("kernel:") and check_kernel:
        _check_kernel(connection, metric[len("kernel:"):])
    if last is not None:
        keep = list(dict.fromkeys(row[0] for row in rows))[-last:]
        rows = [row for row in rows if row[0] in keep]
    return columns, rows


def _tag_path(key):
    return '$."' + key.replace('"', "") + '"'


def _check_kernel(connection, name):
    """Refuse a kernel name that no run has (by full or short name), with close short names."""
    (found,) = connection.execute("SELECT count(*) FROM kernel_name_classes "
                                  "WHERE name = ? OR short_name = ?", [name, name]).fetchone()
    if found:
        return
    names = [row[0] for row in connection.execute(
        "SELECT DISTINCT short_name FROM kernel_name_classes WHERE short_name IS NOT NULL")
        .fetchall()]
    raise UsageError(f"no kernel named {name!r} in any run (by full or short name)"
                     f"{did_you_mean(name, names)}")


def trend_in_warehouse(root, metric, last=None, tag=None, order_by_tag=None, phase=None):
    """`trend` asked of the newest runs only: the last `last` runs in trend order (from the
    `traces` log, no data read), the window doubled until it holds `last` runs with the
    metric or every run. At 1,000 runs, the 30 newest are read instead of all."""
    catalog = Catalog(root)
    catalog.check_readable()
    if last is None:
        return trend(connect(root), metric, None, tag, order_by_tag, phase)
    order = _trend_order(catalog.runs(), tag, order_by_tag, phase)
    window = last
    while True:
        every_run = window >= len(order)  # then over the whole warehouse, as without --last
        connection = (connect(root) if every_run else
                      connect(root, runs=set(order[-window:]),
                              tables=tables_read_by(*TREND_READS)))
        columns, rows = trend(connection, metric, last, tag, order_by_tag, phase,
                              check_kernel=every_run)
        if len({row[0] for row in rows}) >= last or every_run:
            return columns, rows
        window *= 2


def _trend_order(runs, tag, order_by_tag, phase):
    """Run names in the order `trend` sorts them (tag value, nulls first, then first commit),
    keeping those with the tag and phase asked for."""
    def tag_value(info, key):
        value = info.tags.get(key)
        return None if value is None else str(value)

    chosen = [info for info in runs
              if (phase is None or phase in info.phases)
              and (tag is None or tag_value(info, tag[0]) == tag[1])]
    if order_by_tag is not None:
        chosen.sort(key=lambda info: (tag_value(info, order_by_tag) is not None,
                                      tag_value(info, order_by_tag) or "", info.first_seq))
    return [info.run for info in chosen]
