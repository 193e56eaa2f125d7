"""One metric over many runs: `tracewh trend`, the median over ranks of each run and phase, in
commit order or by a tag's value, from the SQL library's `run_metrics` (or a kernel's time, or an
operator's self GPU time)."""

from .. import output
from .diff import bus_bandwidth_note
from ..errors import UsageError
from ..storage.names import did_you_mean
from ..query.statements import run_query

METRICS = ("overlap_ratio", "exposed_comm_ns", "step_time_ns", "gpu_idle_ns", "busbw_gbps",
           "collective_wait_ns")
# What one rank allows where busbw_gbps needs every rank of a group: the mean over the rank's
# collective calls of their collective_waits.rank_algbw_gbps (over exact decimals, as
# run_metrics' busbw_gbps, so that the order of the calls does not change the last bit)
ALGBW = ("SELECT run, phase, rank, "
         "CAST(avg(CAST(rank_algbw_gbps AS DECIMAL(38, 9))) AS DOUBLE) AS value "
         "FROM collective_waits WHERE rank_algbw_gbps IS NOT NULL GROUP BY run, phase, rank")
# The classes of the critical path (rank_critical_path_breakdown.bound_by) trend can follow.
PATH_CLASSES = ("cpu_bound", "data_loading", "gpu_compute_bound", "gpu_communication_bound",
                "gpu_kernel_launch_overhead", "gpu_kernel_kernel_overhead")


def trend_reads(metric):
    """What `trend` of `metric` reads: a connection for it lists the files of the tables
    these read only, and defines these modules only (op_calls' call tree costs seconds to
    define and to ask, which no other metric needs)."""
    if metric.startswith("kernel:"):
        return ("kernel_classes", "kernel_name_classes", "runs")
    if metric.startswith("op:"):
        return ("op_stats", "cpu_ops", "runs")
    if metric.startswith("critical_path:"):
        return ("rank_critical_path_breakdown", "runs")
    return ("collective_waits", "runs") if metric == "algbw_gbps" else ("run_metrics", "runs")


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
    elif metric.startswith("op:"):
        source = ("SELECT run, phase, rank, CAST(sum(gpu_self_ns) AS DOUBLE) AS value "
                  "FROM op_stats WHERE name = ? GROUP BY run, phase, rank")
        params = [metric[len("op:"):]]
    elif metric.startswith("critical_path:") and metric[len("critical_path:"):] in PATH_CLASSES:
        # the rank's own path's time in the class, over the steps of its captures
        source = ("SELECT run, phase, rank, CAST(sum(ns) AS DOUBLE) AS value "
                  "FROM rank_critical_path_breakdown WHERE bound_by = ? "
                  "GROUP BY run, phase, rank")
        params = [metric[len("critical_path:"):]]
    elif metric in METRICS:
        source = "SELECT run, phase, rank, value FROM run_metrics WHERE metric = ?"
        params = [metric]
    elif metric == "algbw_gbps":
        source, params = ALGBW, []
    else:
        raise UsageError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}, "
                         "algbw_gbps, "
                         f"critical_path:CLASS (CLASS one of {', '.join(PATH_CLASSES)}: the "
                         "time of each rank's critical path in it), "
                         "kernel:NAME (a kernel's total time, by full or short name) or "
                         "op:NAME (an operator's self GPU time)")
    sort_key = "NULL"
    if order_by_tag is not None:
        # runs without the tag are left out (`trend_notes` counts them), not sorted first
        sort_key = "json_extract_string(r.tags, ?)"
        params.append(_tag_path(order_by_tag))
    filters = []
    if phase is not None:
        filters.append("p.phase = ?")
        params.append(phase)
    if tag is not None:
        filters.append("json_extract_string(r.tags, ?) = ?")
        params += [_tag_path(tag[0]), tag[1]]
    where = ("WHERE " + " AND ".join(filters)) if filters else ""
    sql = f"""
        WITH m AS ({source}),
        per_run AS (
          SELECT run, phase, count(*) AS ranks,
                 percentile_disc(0.5) WITHIN GROUP (ORDER BY value) AS value,
                 min(value) AS min_value, max(value) AS max_value
          FROM m GROUP BY run, phase
        ),
        chosen AS (
          SELECT p.*, r.tags, r.first_seq, {sort_key} AS sort_key
          FROM per_run AS p JOIN runs AS r ON r.run = p.run
          {where}
        )
        SELECT run, phase, ranks, value,
               value - lag(value) OVER previous AS delta,
               CASE WHEN lag(value) OVER previous <> 0
                    THEN 100.0 * (value - lag(value) OVER previous) / lag(value) OVER previous
               END AS delta_pct,
               min_value, max_value, tags
        FROM chosen
        {"WHERE sort_key IS NOT NULL" if order_by_tag is not None else ""}
        WINDOW previous AS (PARTITION BY phase ORDER BY sort_key, first_seq)
        ORDER BY sort_key, first_seq, phase"""
    columns, rows = run_query(connection, sql, params=params)
    if not rows and metric.startswith("kernel:") and check_kernel:
        _check_kernel(connection, metric[len("kernel:"):])
    if not rows and metric.startswith("op:") and check_kernel:
        _check_op(connection, metric[len("op:"):])
    return columns, _last_runs(rows, last)


def _last_runs(rows, last):
    """The rows of the last `last` runs of `rows` (all, when None)."""
    if last is None:
        return rows
    keep = list(dict.fromkeys(row[0] for row in rows))[-last:]
    return [row for row in rows if row[0] in keep]


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


def _check_op(connection, name):
    """Refuse an operator name that no run has, with close names."""
    names = [row[0] for row in connection.execute(
        "SELECT DISTINCT name FROM cpu_ops WHERE category = 'cpu_op'").fetchall()]
    if name not in names:
        raise UsageError(f"no operator named {name!r} in any run{did_you_mean(name, names)}")


def trend_in_warehouse(warehouse, metric, last=None, tag=None, order_by_tag=None, phase=None):
    """`trend` of an `api.Warehouse` (or a `prepared.PreparedWarehouse`), asked of the newest runs only: the last `last` runs in
    trend order (from the `traces` log, no data read) and the one before them (the first's
    delta), the window doubled until it holds `last` + 1 runs with the metric or every run.
    At 1,000 runs, the 31 newest are read instead of all."""
    reads = trend_reads(metric)
    if last is None:
        with warehouse.connect_over_every_run(reads) as connection:
            return trend(connection, metric, None, tag, order_by_tag, phase)
    order = _trend_order(warehouse.run_infos(), tag, order_by_tag, phase)
    window = last + 1
    while True:
        every_run = window >= len(order)  # then over the whole warehouse, as without --last
        with (warehouse.connect_over_every_run(reads) if every_run
              else warehouse.connect_over_runs(set(order[-window:]), reads)) as connection:
            columns, rows = trend(connection, metric, None, tag, order_by_tag, phase,
                                  check_kernel=every_run)
        # counted before the last `last` are kept: they never hold last + 1 runs
        if len({row[0] for row in rows}) >= last + 1 or every_run:
            return columns, _last_runs(rows, last)
        window *= 2


def _tag_value(info, key):
    value = info.tags.get(key)
    return None if value is None else str(value)


def _chosen(runs, tag, phase):
    """The runs (RunInfo) with the tag and phase asked for."""
    return [info for info in runs
            if (phase is None or phase in info.phases)
            and (tag is None or _tag_value(info, tag[0]) == tag[1])]


def _trend_order(runs, tag, order_by_tag, phase):
    """Run names in the order `trend` sorts them (tag value, then first commit), keeping those
    with the tag and phase asked for, and with the tag they are ordered by."""
    chosen = _chosen(runs, tag, phase)
    if order_by_tag is not None:
        chosen = sorted((info for info in chosen if _tag_value(info, order_by_tag) is not None),
                        key=lambda info: (_tag_value(info, order_by_tag), info.first_seq))
    return [info.run for info in chosen]


def trend_notes(warehouse, metric, rows, tag=None, order_by_tag=None, phase=None):
    """The lines `tracewh trend` prints on stderr: how many runs --order-by-tag left out for
    lacking the tag, and why busbw_gbps has no rows when the runs lack ranks of their
    groups."""
    notes = []
    if order_by_tag is not None:
        left_out = sum(_tag_value(info, order_by_tag) is None
                       for info in _chosen(warehouse.run_infos(), tag, phase))
        if left_out:
            notes.append(f"{left_out} run{'s' if left_out != 1 else ''} without the tag "
                         f"{order_by_tag!r} left out")
    if metric == "busbw_gbps" and not rows:
        with warehouse.connect() as connection:
            (ranks, group_size), = connection.execute(
                "SELECT max(ranks), max(group_size) FROM collective_instances "
                "WHERE unmatched_reason = 'missing ranks'").fetchall()
        if ranks is not None:
            notes.append(bus_bandwidth_note(f"{ranks} of the {group_size} ranks of a group",
                                            "`tracewh trend algbw_gbps` gives"))
    return [f"trend: {note}" for note in notes]


SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values):
    """Values as block characters, the lowest ▁ and the highest █ (all ▄ when they are equal;
    a missing value is a space)."""
    known = [v for v in values if v is not None]
    low, high = (min(known), max(known)) if known else (0, 0)

    def block(value):
        if value is None:
            return " "
        if high == low:
            return SPARKS[3]
        return SPARKS[round((value - low) / (high - low) * (len(SPARKS) - 1))]

    return "".join(map(block, values))


# The columns of `trend` that hold the metric's figures (not delta_pct, a ratio).
_FIGURES = ("value", "delta", "min_value", "max_value")


def in_ns(metric):
    """Whether a metric's figures are ns: a `*_ns` metric, a kernel's or an op's time."""
    return metric.endswith("_ns") or metric.startswith(("kernel:", "op:"))


def render_trend(columns, rows, fmt, terminal=False, units=None, metric=""):
    """`trend`'s rows in `fmt`; a table ends with a sparkline of each phase's values, oldest
    first (csv and json hold the values only; csv escaped for a `terminal`). With `units` a
    table or Markdown shows a metric in ns in that unit (value as value_ms)."""
    value, phase = columns.index("value"), columns.index("phase")  # phases are safe names
    shown = columns
    if units and fmt in ("table", "markdown") and in_ns(metric):
        shown = [f"{c}_ns" if c in _FIGURES else c for c in columns]
    text = output.render(shown, rows, fmt, terminal=terminal, units=units)
    if fmt != "table" or not rows:
        return text
    lines = [f"{name}: {sparkline([r[value] for r in rows if r[phase] == name])} (oldest to "
             "newest)\n" for name in dict.fromkeys(r[phase] for r in rows)]
    return text + "".join(lines)
