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
from .demangle import demangle
from .diff import DiffOptions, diff_runs
from .scope import check_runs, choose_phase, known_runs

TOP_KERNELS = 15
HISTOGRAM_KERNELS = 6
DIFF_ROWS = 25
NAME_WIDTH = 60  # characters of a kernel name shown; the cell's title holds all of it


@dataclass
class Section:
    """A titled chart with its caption and its numbers."""

    key: str
    title: str
    caption: str
    chart: str | None  # SVG text, or None when there is nothing to draw
    columns: tuple = ()
    rows: list = field(default_factory=list)
    warnings: list = field(default_factory=list)  # figures not to read at face value
    empty: str = "Nothing to show."  # said in place of the table when there are no rows


@dataclass(frozen=True)
class Name:
    """A kernel name as shown (demangled, shortened) and the exact stored name (the table
    cell's title, for the tooltip and for copying into a query)."""

    text: str
    full: str


def _names(names):
    """{stored name: Name} for display: mangled C++ names demangled, long ones shortened."""
    names = list(dict.fromkeys(names))
    readable = demangle(names)
    return {name: Name(_short(readable.get(name, name), NAME_WIDTH), name) for name in names}


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


NO_COMMUNICATION = ("This run has no communication kernels (no NCCL, RCCL, DeepEP... kernel "
                    "in the communication class): there is no communication to overlap or "
                    "expose.")


def _overlap(connection, scope):
    rows = _rows(connection, "SELECT rank, comm_ns, overlap_ns, overlap_ratio FROM overlap "
                             "WHERE run = ? AND phase = ? ORDER BY rank", scope)
    if not any(comm for _, comm, *_ in rows):
        return Section("overlap", "Overlap per rank", NO_COMMUNICATION, None,
                       empty="No communication: nothing to chart.")
    ratios = [100 * (ratio or 0) for *_, ratio in rows]
    chart = charts.bars([str(r[0]) for r in rows], {"overlap": ratios},
                        "Communication hidden under computation", "% of communication time",
                        xlabel="rank")
    return Section(
        "overlap", "Overlap per rank",
        "Share of each rank's communication time (NCCL, RCCL, DeepEP... kernels, all streams "
        "pooled) during which computation kernels also ran. Higher is better.", chart,
        ("rank", "communication (ms)", "overlapped (ms)", "overlap (%)"),
        [(rank, ms(comm), ms(overlap), "no communication" if ratio is None else 100 * ratio)
         for rank, comm, overlap, ratio in rows])


def _exposed(connection, scope):
    rows = _rows(connection, "SELECT rank, exposed_comm_ns, comm_ns FROM overlap "
                             "WHERE run = ? AND phase = ? ORDER BY rank", scope)
    if not any(comm for *_, comm in rows):
        return Section("exposed", "Exposed communication per rank", NO_COMMUNICATION, None,
                       empty="No communication: nothing to chart.")
    chart = charts.bars([str(r[0]) for r in rows], {"exposed": [ms(r[1]) for r in rows]},
                        "Exposed communication", "ms", colors={"exposed": "#d1495b"},
                        xlabel="rank")
    return Section(
        "exposed", "Exposed communication per rank",
        "Communication time not hidden under computation: the GPU waits on the network. "
        "Lower is better; a rank far above the others is a straggler or a hot expert.", chart,
        ("rank", "exposed communication (ms)", "communication (ms)"),
        [(rank, ms(exposed), ms(comm)) for rank, exposed, comm in rows])


def _gpu_time(connection, scope):
    rows = _rows(connection, """
        SELECT t.rank, t.comm_ns - t.overlap_ns, t.overlap_ns, t.compute_ns - t.overlap_ns,
               t.busy_ns - (t.comm_ns + t.compute_ns - t.overlap_ns), t.span_ns - t.busy_ns,
               i.step_idle_ns, i.largest_gap_ns, i.gap_dominated, i.span_ns
        FROM rank_gpu_time AS t
        JOIN rank_idle AS i ON i.run = t.run AND i.phase = t.phase AND i.rank = t.rank
        WHERE t.run = ? AND t.phase = ? AND t.span_ns IS NOT NULL ORDER BY t.rank""", scope)
    parts = list(charts.PART_COLORS)
    chart = charts.bars([str(r[0]) for r in rows],
                        {part: [ms(r[i + 1]) for r in rows] for i, part in enumerate(parts)},
                        "GPU time per rank", "ms", stacked=True, colors=charts.PART_COLORS,
                        xlabel="rank") if rows else None
    stretched = [r for r in rows if r[8]]
    steps = [ms(r[6]) for r in stretched if r[6] is not None]
    warnings = [
        f"{_ranks(stretched)}: one gap of {_span([ms(r[7]) for r in stretched], '{:,.3f} ms')} "
        f"makes {_span([100 * r[7] / r[5] for r in stretched], '{:.1f}%')} of the idle time "
        f"({_span([100 * r[7] / r[9] for r in stretched], '{:.1f}%')} of the span): the "
        "span's idle time and utilisation describe that pause (stray activity far apart, a "
        "wait before the first kernel), not the workload; "
        + (f"inside the steps the GPU was idle {_span(steps, '{:,.3f} ms')}." if steps else
           "there is no ProfilerStep#N window to measure the idle time inside.")
    ] if stretched else []
    return Section(
        "gpu-time", "Where each rank's GPU time goes",
        "From the first to the last GPU activity of each capture (all streams pooled): "
        "communication not hidden, communication overlapped with computation, computation "
        "alone, other GPU work (memory copies, sync) and idle time. The bars sum to the span. "
        "Beside the idle time of the whole span, the table gives the idle time inside the "
        "ProfilerStep#N windows and the largest single gap.",
        chart, ("rank", *(f"{part} (ms)" for part in parts), "idle within steps (ms)",
                "largest gap (ms)"),
        [(r[0], *map(ms, r[1:6]), "no steps" if r[6] is None else ms(r[6]), ms(r[7]))
         for r in rows], warnings)


def _top_kernels(connection, scope):
    rows = _rows(connection, f"""
        SELECT short_name, class, sum(count) AS kernels, sum(total_ns) AS total_ns,
               100.0 * sum(total_ns) / sum(sum(total_ns)) OVER () AS share
        FROM kernel_stats WHERE run = ? AND phase = ?
        GROUP BY short_name, class ORDER BY total_ns DESC, short_name LIMIT {TOP_KERNELS}""",
                 scope)
    names = _names(r[0] for r in rows)
    chart = charts.horizontal_bars(
        [names[r[0]].text for r in rows], [ms(r[3]) for r in rows],
        [charts.CLASS_COLORS.get(r[1], "#9a9a9a") for r in rows],
        f"Top {len(rows)} kernels by total time, all ranks", "ms",
        {c: charts.CLASS_COLORS[c] for c in dict.fromkeys(r[1] for r in rows)
         if c in charts.CLASS_COLORS}) if rows else None
    return Section(
        "top-kernels", "Top kernels",
        "GPU kernels, copies and syncs by total time over all ranks, grouped by short name "
        "(template arguments and parameters removed but the first template argument's name, "
        "so that kernels sharing a wrapper template such as cutlass::device_kernel stay apart; "
        "the same names as `tracewh diff --by short_name`) and colored by class. Mangled C++ "
        "names are shown demangled and long names shortened: a name's cell holds the exact "
        "name as its tooltip. GPU annotation ranges are windows, not work, and are left out.",
        chart, ("kernel", "class", "executions", "total (ms)", "share of kernel time (%)"),
        [(names[name], cls, count, ms(total), share)
         for name, cls, count, total, share in rows])


def _kernel_histograms(connection, scope):
    rows = _rows(connection, f"""
        WITH top AS (
          SELECT short_name, min(class) AS class, sum(total_ns) AS total_ns
          FROM kernel_stats WHERE run = $1 AND phase = $2
          GROUP BY short_name ORDER BY total_ns DESC, short_name LIMIT {HISTOGRAM_KERNELS}
        ),
        named AS (
          SELECT DISTINCT s.name, t.short_name
          FROM kernel_stats AS s JOIN top AS t ON t.short_name = s.short_name
          WHERE s.run = $1 AND s.phase = $2
        )
        SELECT t.short_name, t.class, h.lower_ns, h.upper_ns, sum(h.kernels) AS kernels
        FROM kernel_histogram AS h
        JOIN named AS n ON n.name = h.name
        JOIN top AS t ON t.short_name = n.short_name
        WHERE h.run = $1 AND h.phase = $2
        GROUP BY ALL ORDER BY max(t.total_ns) DESC, t.short_name, h.lower_ns""", scope)
    labels = _names(r[0] for r in rows)
    panels = {}
    for short_name, cls, lower, _upper, kernels in rows:
        panel = panels.setdefault(short_name,
                                  [labels[short_name].text, [], [], charts.CLASS_COLORS.get(cls)])
        panel[1].append(us(lower))
        panel[2].append(kernels)
    chart = charts.histograms([tuple(p) for p in panels.values()],
                              "Duration histograms of the top kernels",
                              "duration (log scale)", "kernels") if panels else None
    return Section(
        "kernel-histograms", "Duration histograms of the top kernels",
        f"How the durations of the {len(panels)} kernels with the most total time spread "
        "(by short name, as in the top kernels), all ranks together, in power-of-two buckets "
        "(a bucket at 0 holds zero durations). Two humps mean two behaviours (message sizes, "
        "contention).", chart,
        ("kernel", "class", "from (µs)", "to (µs)", "kernels"),
        [(labels[short_name], cls, us(lower), us(upper), kernels)
         for short_name, cls, lower, upper, kernels in rows])


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
                              "Duration histograms per class", "duration (log scale)",
                              "kernels") if panels else None
    return Section(
        "class-histograms", "Duration histograms per class",
        "Durations of all GPU work of each class, all ranks together, in power-of-two "
        "buckets; the bucket at 0 holds zero durations (empty memsets...).", chart,
        ("class", "from (µs)", "to (µs)", "kernels", "total (ms)"),
        [(cls, us(lower), us(upper), kernels, ms(total))
         for cls, lower, upper, kernels, total in rows])


def _rank_skew(connection, scope):
    rows = _rows(connection, """
        SELECT class, ranks, min_ns, median_ns, max_ns, slowest_rank, max_over_median
        FROM rank_skew WHERE run = ? AND phase = ? AND level = 'class' ORDER BY class""", scope)
    if all(ranks < 2 for _, ranks, *_ in rows):
        return Section("rank-skew", "Rank skew",
                       "One rank: rank skew compares the per-rank totals of each class across "
                       "ranks, and needs two or more.", None,
                       empty="A single rank has no skew.")
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
        SELECT rank, launches, p50_ns, p90_ns, max_ns, first_ns FROM launch_latency_summary
        WHERE run = ? AND phase = ? ORDER BY rank""", scope)
    lowers = [0 if bucket < 0 else 2 ** bucket / 1e3 for bucket, _ in buckets]
    chart = charts.histograms([("all ranks", lowers, [n for _, n in buckets], "#30638e")],
                              "Launch latency", "from launch call to kernel start (log scale)",
                              "kernels", zero_label="≤ 0") if buckets else None
    return Section(
        "launch-latency", "Launch latency",
        "Time from the runtime call that launched each GPU activity to its start on the GPU, "
        "in power-of-two buckets (a bucket at 0 holds latencies of 0 or less, from clock "
        "offsets). A long tail means the GPU queue was full; short latencies with idle time "
        "mean the CPU could not keep up.", chart,
        ("rank", "launches", "p50 (µs)", "p90 (µs)", "max (µs)", "first launch (µs)"),
        [(rank, n, us(p50), us(p90), us(top), us(first))
         for rank, n, p50, p90, top, first in summary], _latency_warnings(summary))


QUEUED_NS = 1_000_000  # a median launch latency past 1 ms is a queue, not launch overhead
OUTLIER_RATIO = 100  # a longest latency 100x the median is a few outliers


def _latency_warnings(summary):
    """What not to read at face value in the launch latencies: a median that measures a
    queue (the first launch already waiting, or the CPU far ahead of the GPU), and maxima
    that are a few outliers."""
    queued = [r for r in summary if r[2] >= QUEUED_NS]
    first = [r for r in queued if r[5] is not None and 2 * r[5] >= r[2]]
    ahead = [r for r in queued if r not in first]
    outliers = [r for r in summary
                if r[4] >= QUEUED_NS and r[4] >= OUTLIER_RATIO * max(r[2], 1)]
    warnings = []
    if first:
        warnings.append(
            f"{_ranks(first)}: the first launch already waited "
            f"{_span([ms(r[5]) for r in first], '{:,.3f} ms')} before its activity started, "
            "and later activities queued behind it: the median launch latency "
            f"({_span([ms(r[2]) for r in first], '{:,.3f} ms')}) measures that queue, not "
            "launch overhead.")
    if ahead:
        warnings.append(
            f"{_ranks(ahead)}: the median launch latency "
            f"({_span([ms(r[2]) for r in ahead], '{:,.3f} ms')}) is over 1 ms: the CPU ran "
            "that far ahead of the GPU and these latencies measure queued work, not launch "
            "overhead.")
    if outliers:
        warnings.append(
            f"{_ranks(outliers)}: the longest launch latency is "
            f"{_span([r[4] / max(r[2], 1) for r in outliers], '{:,.0f}x')} the median: a few "
            "outliers, not the usual latency (the launch_latency view lists them, longest "
            "first, with the export command of each).")
    return warnings


def _ranks(rows, listed=8):
    """'Rank 3', 'Ranks 0, 1, 5', or '64 ranks (0 to 63)' past `listed` ranks."""
    ranks = [row[0] for row in rows]
    if len(ranks) == 1:
        return f"Rank {ranks[0]}"
    if len(ranks) <= listed:
        return "Ranks " + ", ".join(map(str, ranks))
    return f"{len(ranks)} ranks ({min(ranks)} to {max(ranks)})"


def _span(values, form):
    """One figure, or the range of several: '7.836 ms', '0.320 ms to 1.083 ms'."""
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low} to {high}"


def _steps(connection, scope):
    rows = _rows(connection, """
        SELECT rank, step, start_ns - min(start_ns) OVER () AS offset_ns, dur_ns,
               overlap_ratio
        FROM overlap_by_step WHERE run = ? AND phase = ? ORDER BY rank, start_ns""", scope)
    series = {}
    for rank, _step, offset, duration, _ratio in rows:
        xs, ys = series.setdefault(rank, ([], []))
        xs.append(ms(offset))
        ys.append(ms(duration))
    if len(rows) < 2:
        chart = None
        caption = ("One step of one rank: a chart of steps over time needs two or more; its "
                   "figures are below." if rows else
                   "This run has no ProfilerStep#N spans (the profiler's schedule adds them).")
    elif len(series) <= len(charts.RANK_COLORS):
        chart = charts.lines({f"rank {rank}": points for rank, points in series.items()},
                             "Step durations over time", "step start (ms after the first step)",
                             "step duration (ms)")
        caption = ("Each ProfilerStep#N of each rank, at its start time (a color per rank): a "
                   "step that grows or a rank that lags shows here.")
    else:
        steps = max(len(ys) for _, ys in series.values())
        chart = charts.heat_map(
            [str(rank) for rank in series], [str(i + 1) for i in range(steps)],
            [ys + [None] * (steps - len(ys)) for _, ys in series.values()],
            "Step durations per rank", "step (in time order)", "rank", "step duration (ms)")
        caption = (f"Each ProfilerStep#N of each of the {len(series)} ranks, in time order, "
                   "colored by its duration (a line per rank would repeat colors past a dozen "
                   "ranks): a step that grows or a rank that lags stands out.")
    return Section(
        "steps", "Steps over time", caption, chart,
        ("rank", "step", "start (ms after the first)", "duration (ms)", "overlap (%)"),
        [(rank, step, ms(offset), ms(duration), None if ratio is None else 100 * ratio)
         for rank, step, offset, duration, ratio in rows])


def _diff(connection, base, run, options):
    report = diff_runs(connection, base, run, options)
    threshold = (f"threshold {options.threshold_pct}% of total time and {options.min_ns:,} ns "
                 f"(overlap ratio: {options.threshold_pct} percentage points)")
    changed = [k for k in report["kernels"] if k["status"] in ("regressed", "improved")]
    changed = sorted(changed, key=lambda k: -abs(k["delta_ns"]))[:DIFF_ROWS]
    names = _names(k["name"] for k in changed)
    chart = charts.horizontal_bars(
        [names[k["name"]].text for k in changed], [ms(k["delta_ns"]) for k in changed],
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
                [(k["status"], names[k["name"]], k["class"], ms(k["base_total_ns"]),
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
p.warning { background: #fff4e5; border-left: 4px solid #edae49; max-width: 900px;
            margin: 4px 0 8px; padding: 4px 8px; }
"""

# Counts what each chart drew once the page has laid out, and the x tick labels that run into
# the next one or touch it ('4,09616,384'); tests read the counts, and either fault is a
# console error.
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
    var overlaps = 0;
    figure.querySelectorAll('g[id^="axes_"]').forEach(function (axes) {
      var boxes = Array.prototype.map.call(axes.querySelectorAll('g[id^="xtick_"] text'),
        function (text) { return text.getBoundingClientRect(); })
        .filter(function (box) { return box.width > 0; })
        .sort(function (a, b) { return a.left - b.left; });
      for (var i = 1; i < boxes.length; i++) {
        if (boxes[i].left < boxes[i - 1].right + 2) { overlaps += 1; }  // 2 px apart at least
      }
    });
    figure.setAttribute("data-overlaps", overlaps);
    if (overlaps > 0) { console.error("chart " + figure.id + ": tick labels overlap"); }
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
    out += [f"<p class=\"warning\">{html.escape(w)}</p>" for w in section.warnings]
    if section.rows:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in section.columns)
        decimals = [_decimals(column) for column in zip(*section.rows)]
        body = "".join("<tr>" + "".join(_cell(v, d) for v, d in zip(row, decimals)) + "</tr>"
                       for row in section.rows)
        out.append(f"<div class=\"numbers\"><table><thead><tr>{head}</tr></thead>"
                   f"<tbody>{body}</tbody></table></div>")
    else:
        out.append(f"<p class=\"empty\">{html.escape(section.empty)}</p>")
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
    if isinstance(value, Name):
        return f"<td title=\"{html.escape(value.full)}\">{html.escape(value.text)}</td>"
    return f"<td>{html.escape(str(value))}</td>"
