"""`tracewh report`: one self-contained HTML file about a run, for people and nightly artifacts.

Each section is a chart (inline SVG, `charts`), a caption saying what it shows and the numbers
under it in a table, all read from the SQL library's views. The file needs no network and no
script to show its charts; one small inline script counts what each chart drew (tests read the
counts in a real browser, and a chart that drew nothing is a console error).
"""

import dataclasses
import datetime
import html
from dataclasses import dataclass, field

from . import charts
from .diff import DiffOptions, diff_runs
from .scope import check_runs, choose_phase, known_runs

TOP_KERNELS = 15
HISTOGRAM_KERNELS = 6
DIFF_ROWS = 25


@dataclass
class Section:
    """A titled chart with its caption and its numbers."""

    key: str
    title: str
    caption: str
    chart: str | None  # SVG text, or None when there is nothing to draw
    columns: tuple = ()
    rows: list = field(default_factory=list)


def ms(ns):
    return None if ns is None else ns / 1e6


def us(ns):
    return None if ns is None else ns / 1e3


def build_report(connection, run, phase=None, base=None, options=None):
    """The report of `run` (one phase) as HTML text; with `base`, the diff against it."""
    check_runs(known_runs(connection), run, *([base] if base else []))
    phase = choose_phase(connection, run, phase)
    scope = [run, phase]
    sections = [
        _overlap(connection, scope),
        _exposed(connection, scope),
        _gpu_time(connection, scope),
        _top_kernels(connection, scope),
        _kernel_histograms(connection, scope),
        _class_histograms(connection, scope),
        _rank_skew(connection, scope),
        _launch_latency(connection, scope),
        _steps(connection, scope),
    ]
    if base is not None:
        sections += _diff(connection, base, run,
                          dataclasses.replace(options or DiffOptions(), phase=phase))
    return _page(connection, run, phase, base, sections)


def _rows(connection, sql, scope):
    return connection.execute(sql, scope).fetchall()


def _overlap(connection, scope):
    rows = _rows(connection, "SELECT rank, comm_ns, overlap_ns, overlap_ratio FROM overlap "
                             "WHERE run = ? AND phase = ? ORDER BY rank", scope)
    ratios = [100 * (ratio or 0) for *_, ratio in rows]
    chart = charts.bars([str(r[0]) for r in rows], {"overlap": ratios},
                        "Communication hidden under computation", "% of communication time",
                        xlabel="rank") if rows else None
    return Section(
        "overlap", "Overlap per rank",
        "Share of each rank's communication time (NCCL, RCCL, DeepEP... kernels, all streams "
        "pooled) during which computation kernels also ran. Higher is better.", chart,
        ("rank", "communication (ms)", "overlapped (ms)", "overlap (%)"),
        [(rank, ms(comm), ms(overlap), None if ratio is None else 100 * ratio)
         for rank, comm, overlap, ratio in rows])


def _exposed(connection, scope):
    rows = _rows(connection, "SELECT rank, exposed_comm_ns, comm_ns FROM overlap "
                             "WHERE run = ? AND phase = ? ORDER BY rank", scope)
    chart = charts.bars([str(r[0]) for r in rows], {"exposed": [ms(r[1]) for r in rows]},
                        "Exposed communication", "ms", colors={"exposed": "#d1495b"},
                        xlabel="rank") if rows else None
    return Section(
        "exposed", "Exposed communication per rank",
        "Communication time not hidden under computation: the GPU waits on the network. "
        "Lower is better; a rank far above the others is a straggler or a hot expert.", chart,
        ("rank", "exposed communication (ms)", "communication (ms)"),
        [(rank, ms(exposed), ms(comm)) for rank, exposed, comm in rows])


def _gpu_time(connection, scope):
    rows = _rows(connection, """
        SELECT t.rank, t.comm_ns - t.overlap_ns, t.overlap_ns, t.compute_ns - t.overlap_ns,
               t.busy_ns - (t.comm_ns + t.compute_ns - t.overlap_ns), t.span_ns - t.busy_ns
        FROM rank_gpu_time AS t
        WHERE t.run = ? AND t.phase = ? AND t.span_ns IS NOT NULL ORDER BY t.rank""", scope)
    parts = list(charts.PART_COLORS)
    chart = charts.bars([str(r[0]) for r in rows],
                        {part: [ms(r[i + 1]) for r in rows] for i, part in enumerate(parts)},
                        "GPU time per rank", "ms", stacked=True, colors=charts.PART_COLORS,
                        xlabel="rank") if rows else None
    return Section(
        "gpu-time", "Where each rank's GPU time goes",
        "From the first to the last GPU activity of each capture (all streams pooled): "
        "communication not hidden, communication overlapped with computation, computation "
        "alone, other GPU work (memory copies, sync) and idle time. The bars sum to the span.",
        chart, ("rank", *(f"{part} (ms)" for part in parts)),
        [(r[0], *map(ms, r[1:])) for r in rows])


def _top_kernels(connection, scope):
    rows = _rows(connection, f"""
        SELECT short_name, class, sum(count) AS kernels, sum(total_ns) AS total_ns,
               100.0 * sum(total_ns) / sum(sum(total_ns)) OVER () AS share
        FROM kernel_stats WHERE run = ? AND phase = ?
        GROUP BY short_name, class ORDER BY total_ns DESC, short_name LIMIT {TOP_KERNELS}""",
                 scope)
    chart = charts.horizontal_bars(
        [_short(r[0]) for r in rows], [ms(r[3]) for r in rows],
        [charts.CLASS_COLORS.get(r[1], "#9a9a9a") for r in rows],
        f"Top {len(rows)} kernels by total time, all ranks", "ms",
        {c: charts.CLASS_COLORS[c] for c in dict.fromkeys(r[1] for r in rows)
         if c in charts.CLASS_COLORS}) if rows else None
    return Section(
        "top-kernels", "Top kernels",
        "GPU kernels, copies and syncs by total time over all ranks, grouped by short name "
        "(template arguments removed) and colored by class. GPU annotation ranges are windows, "
        "not work, and are left out.", chart,
        ("kernel", "class", "executions", "total (ms)", "share of kernel time (%)"),
        [(name, cls, count, ms(total), share) for name, cls, count, total, share in rows])


def _kernel_histograms(connection, scope):
    rows = _rows(connection, f"""
        WITH top AS (
          SELECT name, min(short_name) AS short_name, min(class) AS class,
                 sum(total_ns) AS total_ns
          FROM kernel_stats WHERE run = $1 AND phase = $2
          GROUP BY name ORDER BY total_ns DESC, name LIMIT {HISTOGRAM_KERNELS}
        )
        SELECT t.short_name, t.class, h.lower_ns, h.upper_ns, sum(h.kernels) AS kernels,
               t.total_ns, t.name
        FROM kernel_histogram AS h JOIN top AS t ON t.name = h.name
        WHERE h.run = $1 AND h.phase = $2
        GROUP BY ALL ORDER BY t.total_ns DESC, t.name, h.lower_ns""", scope)
    labels = _distinct_labels(dict.fromkeys((name, short_name) for short_name, *_, name in rows))
    panels = {}
    for _short_name, cls, lower, _upper, kernels, _total, name in rows:
        panel = panels.setdefault(name, [labels[name], [], [], charts.CLASS_COLORS.get(cls)])
        panel[1].append(us(lower))
        panel[2].append(kernels)
    chart = charts.histograms([tuple(p) for p in panels.values()],
                              "Duration histograms of the top kernels",
                              "duration (µs, log scale)", "kernels") if panels else None
    return Section(
        "kernel-histograms", "Duration histograms of the top kernels",
        f"How the durations of the {len(panels)} kernels with the most total time spread, all "
        "ranks together, in power-of-two buckets. Two humps mean two behaviours (message "
        "sizes, contention).", chart,
        ("kernel", "class", "from (µs)", "to (µs)", "kernels"),
        [(labels[name], cls, us(lower), us(upper), kernels)
         for _short_name, cls, lower, upper, kernels, _total, name in rows])


def _distinct_labels(names):
    """{full name: short name}, numbered where kernels of different full names share a short
    name (template instances): 'vectorized_elementwise_kernel (2)'."""
    seen = {}
    labels = {}
    for name, short_name in names:
        seen[short_name] = seen.get(short_name, 0) + 1
        labels[name] = short_name if seen[short_name] == 1 else f"{short_name} ({seen[short_name]})"
    return labels


def _class_histograms(connection, scope):
    rows = _rows(connection, """
        SELECT class, lower_ns, upper_ns, sum(kernels) AS kernels, sum(total_ns) AS total_ns
        FROM kernel_class_histogram WHERE run = ? AND phase = ?
        GROUP BY ALL ORDER BY class, lower_ns""", scope)
    panels = {}
    for cls, lower, _upper, kernels, _total in rows:
        panel = panels.setdefault(cls, [cls, [], [], charts.CLASS_COLORS.get(cls)])
        panel[1].append(us(lower))
        panel[2].append(kernels)
    chart = charts.histograms([tuple(p) for p in panels.values()],
                              "Duration histograms per class", "duration (µs, log scale)",
                              "kernels") if panels else None
    return Section(
        "class-histograms", "Duration histograms per class",
        "Durations of all GPU work of each class, all ranks together, in power-of-two "
        "buckets.", chart, ("class", "from (µs)", "to (µs)", "kernels", "total (ms)"),
        [(cls, us(lower), us(upper), kernels, ms(total))
         for cls, lower, upper, kernels, total in rows])


def _rank_skew(connection, scope):
    rows = _rows(connection, """
        SELECT class, ranks, min_ns, median_ns, max_ns, slowest_rank, max_over_median
        FROM rank_skew WHERE run = ? AND phase = ? AND level = 'class' ORDER BY class""", scope)
    chart = charts.bars([r[0] for r in rows],
                        {"min": [ms(r[2]) for r in rows], "median": [ms(r[3]) for r in rows],
                         "max": [ms(r[4]) for r in rows]},
                        "Per-rank total time of each class", "ms") if rows else None
    slowest = "; ".join(f"{r[0]}: rank {r[5]} ({r[6]:.2f}x the median)" for r in rows
                        if r[6] is not None)
    return Section(
        "rank-skew", "Rank skew",
        "The smallest, median and largest per-rank total of each class: a large max/median "
        f"points at a straggler or load imbalance. Slowest ranks: {slowest or 'none'}.", chart,
        ("class", "ranks", "min (ms)", "median (ms)", "max (ms)", "slowest rank",
         "max / median"),
        [(c, n, ms(a), ms(m), ms(b), s, ratio) for c, n, a, m, b, s, ratio in rows])


def _launch_latency(connection, scope):
    buckets = _rows(connection, """
        WITH latencies AS (
          SELECT CASE WHEN launch_latency_ns > 0
                      THEN CAST(floor(log2(launch_latency_ns)) AS BIGINT) ELSE -1 END AS bucket
          FROM launch_latency WHERE run = ? AND phase = ?
        )
        SELECT bucket, count(*) FROM latencies GROUP BY bucket ORDER BY bucket""", scope)
    summary = _rows(connection, """
        SELECT rank, launches, p50_ns, p90_ns, max_ns FROM launch_latency_summary
        WHERE run = ? AND phase = ? ORDER BY rank""", scope)
    lowers = [0 if bucket < 0 else 2 ** bucket / 1e3 for bucket, _ in buckets]
    chart = charts.histograms([("all ranks", lowers, [n for _, n in buckets], "#30638e")],
                              "Launch latency", "from launch call to kernel start (µs, log "
                              "scale)", "kernels") if buckets else None
    return Section(
        "launch-latency", "Launch latency",
        "Time from the runtime call that launched each GPU activity to its start on the GPU, "
        "in power-of-two buckets (a bucket at 0 holds latencies of 0 or less, from clock "
        "offsets). A long tail means the GPU queue was full; short latencies with idle time "
        "mean the CPU could not keep up.", chart,
        ("rank", "launches", "p50 (µs)", "p90 (µs)", "max (µs)"),
        [(rank, n, us(p50), us(p90), us(top)) for rank, n, p50, p90, top in summary])


def _steps(connection, scope):
    rows = _rows(connection, """
        SELECT rank, step, start_ns - min(start_ns) OVER () AS offset_ns, dur_ns,
               overlap_ratio
        FROM overlap_by_step WHERE run = ? AND phase = ? ORDER BY rank, start_ns""", scope)
    series = {}
    for rank, _step, offset, duration, _ratio in rows:
        xs, ys = series.setdefault(f"rank {rank}", ([], []))
        xs.append(ms(offset))
        ys.append(ms(duration))
    chart = charts.lines(series, "Step durations over time",
                         "step start (ms after the first step)", "step duration (ms)") \
        if series else None
    return Section(
        "steps", "Steps over time",
        "Each ProfilerStep#N of each rank, at its start time: a step that grows or a rank "
        "that lags shows here." if rows else
        "This run has no ProfilerStep#N spans (the profiler's schedule adds them).", chart,
        ("rank", "step", "start (ms after the first)", "duration (ms)", "overlap (%)"),
        [(rank, step, ms(offset), ms(duration), None if ratio is None else 100 * ratio)
         for rank, step, offset, duration, ratio in rows])


def _diff(connection, base, run, options):
    report = diff_runs(connection, base, run, options)
    threshold = (f"threshold {options.threshold_pct}% of total time and {options.min_ns:,} ns "
                 f"(overlap ratio: {options.threshold_pct} percentage points)")
    changed = [k for k in report["kernels"] if k["status"] in ("regressed", "improved")]
    changed = sorted(changed, key=lambda k: -abs(k["delta_ns"]))[:DIFF_ROWS]
    chart = charts.horizontal_bars(
        [_short(k["name"]) for k in changed], [ms(k["delta_ns"]) for k in changed],
        ["#d1495b" if k["status"] == "regressed" else "#6a994e" for k in changed],
        f"Kernels that changed against {base}", "change of total time (ms)",
        {"regressed": "#d1495b", "improved": "#6a994e"}) if changed else None
    moved = [m for m in report["metrics"] if m["status"] != "unchanged"]
    verdict = "a regression" if report["summary"]["regression"] else "no regression"
    return [
        Section("diff-kernels", f"Against {base}: kernels",
                f"{verdict.capitalize()} by the nightly gate's rules: {threshold}. Kernels "
                f"whose total time moved past it, largest moves first (of "
                f"{len(report['kernels'])} compared).", chart,
                ("status", "kernel", "class", f"{base} (ms)", f"{run} (ms)", "change (ms)",
                 "change (%)"),
                [(k["status"], k["name"], k["class"], ms(k["base_total_ns"]),
                  ms(k["new_total_ns"]), ms(k["delta_ns"]), k["delta_pct"]) for k in changed]),
        Section("diff-metrics", f"Against {base}: metrics",
                f"Per-rank metrics that moved past the {threshold} (of "
                f"{len(report['metrics'])} compared). ns metrics in ms.", None,
                ("status", "rank", "metric", base, run, "change (%)"),
                [(m["status"], m["rank"], m["metric"], _metric(m["metric"], m["base_value"]),
                  _metric(m["metric"], m["new_value"]), m["delta_pct"]) for m in moved]),
    ]


def _metric(name, value):
    return value if value is None or not name.endswith("_ns") else ms(value)


def _short(name, width=60):
    return name if len(name) <= width else name[: width - 1] + "…"


# -- HTML ---------------------------------------------------------------------------------------

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 24px;
       color: #222; }
header { border-bottom: 1px solid #ddd; margin-bottom: 8px; }
h1 { font-size: 22px; margin: 20px 0 4px; } h2 { font-size: 17px; margin: 28px 0 4px; }
.facts { color: #555; margin: 0 0 12px; }
nav { display: flex; flex-wrap: wrap; gap: 4px 14px; padding-bottom: 10px; }
nav a { white-space: nowrap; }
figure.chart { margin: 8px 0; overflow-x: auto; }
figure.chart svg { max-width: 100%; height: auto; }
p.caption { color: #444; max-width: 900px; margin: 4px 0 8px; }
.numbers { max-height: 320px; overflow: auto; border: 1px solid #eee; margin-bottom: 8px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 2px 10px; border-bottom: 1px solid #f0f0f0; text-align: left; }
th { position: sticky; top: 0; background: #fafafa; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.empty { color: #888; font-style: italic; }
"""

# Counts what each chart drew once the page has laid out; tests read the counts.
_SCRIPT = """
window.addEventListener("load", function () {
  var figures = document.querySelectorAll("figure.chart"), total = 0;
  figures.forEach(function (figure) {
    var drawn = 0;
    figure.querySelectorAll("svg path, svg rect, svg line, svg use").forEach(function (shape) {
      var box = shape.getBBox();
      if (box.width > 0 || box.height > 0) { drawn += 1; }
    });
    figure.setAttribute("data-drawn", drawn);
    total += drawn;
    if (drawn === 0) { console.error("chart " + figure.id + " drew nothing"); }
  });
  document.body.setAttribute("data-charts", figures.length);
  document.body.setAttribute("data-drawn", total);
});
"""


def _page(connection, run, phase, base, sections):
    ranks, traces, events = connection.execute(
        "SELECT count(DISTINCT rank), count(*), sum(events) FROM traces "
        "WHERE run = ? AND phase = ?", [run, phase]).fetchone()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    against = f", compared with run <b>{html.escape(base)}</b>" if base else ""
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>tracewh report: {html.escape(run)}</title><style>{_STYLE}</style></head><body>",
        f"<header><h1>Run {html.escape(run)}, phase {html.escape(phase)}</h1>",
        f"<p class=\"facts\">{ranks} rank{'s' if ranks != 1 else ''}, {traces} trace file"
        f"{'s' if traces != 1 else ''}, {events:,} events{against}. Times in ms unless a "
        f"column says otherwise. Made by tracewh on {now}.</p><nav>",
        *(f"<a href=\"#{s.key}\">{html.escape(s.title)}</a>" for s in sections),
        "</nav></header>",
        *(_section(s) for s in sections),
        f"<script>{_SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)


def _section(section):
    out = [f"<section id=\"{section.key}\"><h2>{html.escape(section.title)}</h2>"]
    if section.chart is not None:
        out.append(f"<figure class=\"chart\" id=\"chart-{section.key}\">{section.chart}</figure>")
    out.append(f"<p class=\"caption\">{html.escape(section.caption)}</p>")
    if section.rows:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in section.columns)
        decimals = [_decimals(column) for column in zip(*section.rows)]
        body = "".join("<tr>" + "".join(_cell(v, d) for v, d in zip(row, decimals)) + "</tr>"
                       for row in section.rows)
        out.append(f"<div class=\"numbers\"><table><thead><tr>{head}</tr></thead>"
                   f"<tbody>{body}</tbody></table></div>")
    else:
        out.append("<p class=\"empty\">Nothing to show.</p>")
    out.append("</section>")
    return "".join(out)


def _decimals(values):
    """Decimals a column of figures needs, at most 3 (ms and µs to the ns): 0 for whole µs."""
    floats = [v for v in values if isinstance(v, float)]
    return max((len(f"{v:.3f}".rstrip("0").partition(".")[2]) for v in floats), default=0)


def _cell(value, decimals=3):
    if value is None:
        return "<td></td>"
    if isinstance(value, float):
        return f"<td class=\"n\">{value:,.{decimals}f}</td>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<td class=\"n\">{value:,}</td>"
    return f"<td>{html.escape(str(value))}</td>"
