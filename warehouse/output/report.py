"""`tracewh report`: one self-contained HTML file about a run, for people and nightly artifacts.

Each section is a chart (inline SVG, `charts`), a caption saying what it shows and the numbers
under it in a table, all read from the SQL library's views. The file needs no network and no
script to show its charts; one small inline script counts what each chart drew (tests read the
counts in a real browser, and a chart that drew nothing is a console error).

The charts are drawn in a thread of their own while the next sections' questions are asked:
DuckDB releases the GIL while it answers, matplotlib holds it while it draws (and imports, ~0.35
s of CPU), so with a core free the two overlap rather than add up.
"""

import collections
import concurrent.futures
import dataclasses
import datetime
import html
from dataclasses import dataclass, field
from functools import partial

from . import charts
from .demangle import demangle
from ..analyses.diff import DiffOptions, diff_runs
from ..errors import HINT, UsageError
from ..query.scope import choose_phase, rank_ranges

TOP_KERNELS = 15
TOP_GEMMS = 10
BOUND_COLORS = {"compute": "#4c78a8", "memory": "#f58518", "no peak": "#9a9a9a"}
TOP_OPS = 15
TOP_MODULES = 20
HISTOGRAM_KERNELS = 6
DIFF_ROWS = 25
NAME_WIDTH = 60  # characters of a kernel name shown; the cell's title holds all of it


@dataclass
class Section:
    """A titled chart with its caption and its numbers."""

    key: str
    title: str
    caption: str
    # its drawing (a `charts` function and its arguments, see build_report), then the SVG text
    # drawn; None when there is nothing to draw
    chart: object
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


def build_report(connection, run, phase=None, base=None, options=None, timeline=None):
    """The report of `run` as HTML text: of one phase, or of every phase of the run (then
    with a section setting the phases side by side first, and each phase's sections after
    it); with `base`, the diff against it (phase by phase). `timeline` (a TimelineChoice)
    picks the step the timeline draws. The connection is to those runs (see
    `api.Warehouse.connect_to_runs`, which checks them). Each section's chart is drawn in one
    drawing thread (matplotlib's pyplot is not made for several) as soon as the section's
    questions are answered, while the main thread asks the next ones."""
    drawing = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tracewh-charts")
    try:
        drawing.submit(charts.pyplot)  # matplotlib imports while the first questions are asked
        phases = [choose_phase(connection, run, phase)] if phase is not None else \
            _phases_of(connection, run)
        choice = timeline or TimelineChoice()
        # a rank or step some phase lacks fails here, before anything is drawn
        windows = {each: _timeline_window(connection, [run, each], choice) for each in phases}
        sections = [section if section.chart is None else
                    dataclasses.replace(section, chart=drawing.submit(section.chart))
                    for section in _sections(connection, run, phases, base, options, windows)]
        sections = [section if section.chart is None else
                    dataclasses.replace(section, chart=section.chart.result())
                    for section in sections]
    finally:
        drawing.shutdown(cancel_futures=True)  # after an error, draw nothing more
    return _page(connection, run, phases, base, sections)


def _sections(connection, run, phases, base, options, windows):
    """The report's sections in order, each made (its questions asked) when the one before
    it has been taken."""
    if len(phases) == 1:
        yield from _phase_sections(connection, run, phases[0], base, options, windows)
        return
    yield _phases_side_by_side(connection, run, phases)
    for each in phases:
        for section in _phase_sections(connection, run, each, base, options, windows):
            yield dataclasses.replace(section, key=f"{each}-{section.key}",
                                      title=f"{each}: {section.title}")


def _phases_of(connection, run):
    return [row[0] for row in connection.execute(
        "SELECT DISTINCT phase FROM traces WHERE run = ? ORDER BY phase", [run]).fetchall()]


def _phase_sections(connection, run, phase, base, options, windows):
    scope = [run, phase]
    kernels = _window_kernels(connection, scope, windows[phase])
    yield _overlap(connection, scope)
    yield _exposed(connection, scope)
    yield _gpu_time(connection, scope)
    yield _timeline(connection, scope, windows[phase], kernels)
    yield _critical_path(connection, scope, windows[phase], kernels)
    yield _top_kernels(connection, scope)
    yield _top_ops(connection, scope)
    yield _module_tree(connection, scope)
    yield _top_gemms(connection, scope)
    yield _kernel_histograms(connection, scope)
    yield _class_histograms(connection, scope)
    yield _rank_skew(connection, scope)
    yield _bus_bandwidth(connection, scope)
    yield from _stragglers_sections(connection, scope)
    yield _launch_latency(connection, scope)
    yield _steps(connection, scope)
    yield from _memory(connection, scope)
    if base is None:
        return
    if phase not in _phases_of(connection, base):
        yield Section("diff", f"Against {base}",
                      f"Run {base} has no phase {phase}: nothing to compare.", None,
                      empty="Nothing to compare.")
        return
    yield from _diff(connection, base, run,
                     dataclasses.replace(options or DiffOptions(), phase=phase))


@dataclass(frozen=True)
class TimelineChoice:
    """The window the timeline draws: a rank and a step (ProfilerStep#N), each None for the
    default (the slowest rank; its median step)."""

    rank: int | None = None
    step: str | None = None


_SUMMARY_FIGURES = (
    # (row label, phase_summary column, unit): ms for ns, % for ratios and shares
    ("ranks", "ranks", None), ("steps", "steps", None),
    ("median step (ms)", "step_time_ns", "ms"), ("GPU span (ms)", "span_ns", "ms"),
    ("busy (ms)", "busy_ns", "ms"), ("communication (ms)", "comm_ns", "ms"),
    ("computation (ms)", "compute_ns", "ms"), ("overlap (ms)", "overlap_ns", "ms"),
    ("exposed communication (ms)", "exposed_comm_ns", "ms"), ("idle (ms)", "idle_ns", "ms"),
    ("busy (% of span)", "busy_ratio", "%"), ("overlap (% of communication)",
                                              "overlap_ratio", "%"),
    ("idle (% of span)", "idle_ratio", "%"), ("kernel time (ms)", "kernel_ns", "ms"),
    ("communication (% of kernel time)", "communication_share", "%"),
    ("computation (% of kernel time)", "computation_share", "%"),
    ("memory (% of kernel time)", "memory_share", "%"),
    ("other (% of kernel time)", "other_share", "%"),
    ("top kernel", "top_kernel", "name"), ("top kernel (% of kernel time)",
                                           "top_kernel_share", "%"),
    ("memory peak, allocated (MB)", "peak_allocated_bytes", "MB"),
    ("memory peak, reserved (MB)", "peak_reserved_bytes", "MB"),
)


def _phases_side_by_side(connection, run, phases):
    """The phases of a run in columns (phase_summary): prefill beside decode."""
    columns = [c for _, c, _ in _SUMMARY_FIGURES]
    found = {row[0]: dict(zip(columns, row[1:])) for row in connection.execute(
        f"SELECT phase, {', '.join(columns)} FROM phase_summary WHERE run = ?",
        [run]).fetchall()}
    summaries = [found.get(phase, {}) for phase in phases]
    names = _names(s["top_kernel"] for s in summaries if s.get("top_kernel"))
    shown = {"ms": ms, "%": lambda v: None if v is None else 100 * v,
             "MB": lambda v: None if v is None else v / 1e6,
             "name": lambda v: None if v is None else names[v], None: lambda v: v}
    rows = [(label, *(shown[unit](s.get(column)) for s in summaries))
            for label, column, unit in _SUMMARY_FIGURES]
    series = {part: [] for part in charts.PART_COLORS}
    for s in summaries:
        for part, value in _span_parts(s).items():
            series[part].append(value)
    chart = partial(charts.bars, list(phases), series, "Where GPU time goes, per phase",
                    "% of the GPU span", stacked=True, colors=charts.PART_COLORS,
                    xlabel="phase")
    return Section(
        "phases", "Phases side by side",
        "Each phase of the run in a column (view phase_summary): GPU times summed over the "
        "phase's ranks, within each capture; the median step over all ranks' ProfilerStep#N "
        "windows; kernel time split by class (sync counted as other); the memory peak of "
        "the GPU that allocated most (empty without memory events). The chart shows each "
        "phase's GPU span as 100%: communication not hidden, overlapped, computation alone, "
        "other GPU work and idle. Compare two phases kernel by kernel with `tracewh diff "
        f"{run}:{phases[0]} {run}:{phases[1]}`.", chart, ("figure", *phases), rows)


def _span_parts(summary):
    """{part of GPU time: % of the span} of a phase_summary row, the parts of
    charts.PART_COLORS (all 0 without a span)."""
    span = summary.get("span_ns") or 0
    if not span:
        return dict.fromkeys(charts.PART_COLORS, 0.0)
    comm, compute, overlap = summary["comm_ns"], summary["compute_ns"], summary["overlap_ns"]
    parts = {"exposed communication": comm - overlap, "overlapped": overlap,
             "computation only": compute - overlap,
             "other GPU work": summary["busy_ns"] - (comm + compute - overlap),
             "idle": summary["idle_ns"]}
    return {part: 100 * parts[part] / span for part in charts.PART_COLORS}


def _window_kernels(connection, scope, window):
    """The GPU work of the timeline's window (None: none), in the order it started: what the
    timeline and the critical path draw."""
    if window is None:
        return []
    rank, trace_id, index, *_ = window
    return connection.execute(
        "SELECT stream, timeline_class, start_ns, end_ns FROM timeline_kernels WHERE run = ? "
        "AND phase = ? AND rank = ? AND trace_id = ? AND window_index IS NOT DISTINCT FROM ? "
        "ORDER BY start_ns, event_index", [*scope, rank, trace_id, index]).fetchall()


def _timeline(connection, scope, window, kernels):
    """One window (a step, or a whole capture without steps) of one rank, its streams over
    time: kernels colored by class, too short ones binned, annotations above."""
    if window is None:
        return Section("timeline", "Timeline of one step",
                       "No GPU activity: nothing to draw.", None, empty="No GPU activity.")
    rank, trace_id, index, step, start, end, default = window
    where = ("run = ? AND phase = ? AND rank = ? AND trace_id = ? "
             "AND window_index IS NOT DISTINCT FROM ?")
    keys = [*scope, rank, trace_id, index]
    annotations = connection.execute(
        f"SELECT name, start_ns, end_ns FROM timeline_annotations WHERE {where} "
        f"ORDER BY start_ns, event_index", keys).fetchall()
    left = min([start] + [k[2] for k in kernels])
    right = max([end] + [k[3] for k in kernels])
    streams = sorted({k[0] for k in kernels}, key=lambda s: (s is None, s))
    lane = {stream: i for i, stream in enumerate(streams)}
    bars = charts.bin_kernels([(lane[s], a, b, c) for s, c, a, b in kernels], left, right)
    what = f"{step} of rank {rank}" if step else f"the capture {trace_id} of rank {rank}"
    chart = partial(
        charts.timeline,
        [f"stream {s}" if s is not None else "no stream" for s in streams], bars,
        [(_short(name, 40), a, b) for name, a, b in annotations], left, right,
        f"Timeline of {_short(what, 70)}") if kernels else None
    levels = charts.pack_levels([(a, b) for _, a, b in annotations])
    hidden = sum(1 for level in levels if level >= charts.ANNOTATION_LEVELS)
    bin_us = (right - left) / charts.TIMELINE_BINS / 1e3
    chosen = ("the median step of the slowest rank" if step else
              "the median capture of the slowest rank (this phase has no ProfilerStep#N "
              "spans)") if default else "the window asked for"
    caption = (
        f"GPU streams of {what} ({chosen}; pick another with --timeline-rank and "
        f"--timeline-step), {ms(right - left):,.3f} ms from its first activity to its last: "
        "each kernel, copy and sync at its GPU time, colored by class (sync counted as "
        "other). A step holds the GPU work launched during it, which may run past its end. "
        f"Kernels shorter than a column ({bin_us:,.3f} µs, 1/{charts.TIMELINE_BINS} of the "
        "width) are drawn as the column they start in, in the color of the class with the "
        "most time there and as opaque as the share of the column they fill. Above the "
        "streams, the user annotations (record_function ranges) over the GPU work each "
        "launched, one row per nesting level, labelled where the name fits"
        + (f"; {hidden} annotations deeper than {charts.ANNOTATION_LEVELS} rows are not "
           "drawn." if hidden else "."))
    rows = []
    for stream in streams:
        own = [bar for bar in bars if bar.lane == lane[stream]]
        busy = {kind: sum(k[3] - k[2] for k in kernels if k[0] == stream and k[1] == kind)
                for kind in charts.TIMELINE_CLASSES}
        rows.append((stream, sum(1 for b in own if not b.binned),
                     sum(b.kernels for b in own if b.binned),
                     *(ms(busy[kind]) for kind in charts.TIMELINE_CLASSES)))
    return Section("timeline", "Timeline of one step", caption, chart,
                   ("stream", "kernels drawn as themselves", "short kernels in columns",
                    *(f"{kind} (ms)" for kind in charts.TIMELINE_CLASSES)), rows)


def _critical_path(connection, scope, window, kernels, top=12):
    """The job's critical path (the critical_path view) of the timeline's step, drawn over
    that timeline: the window rank's streams faded, a lane per rank the path runs on, its
    edges colored by class; the events longest on it below."""
    title = "Critical path of the step"
    if window is None:
        return Section("critical-path", title, "No GPU activity: nothing to draw.", None,
                       empty="No GPU activity.")
    rank, _, _, step, start, end, _ = window
    edges = connection.execute(
        "SELECT rank, start_ns, end_ns, bound_by, ns, name FROM critical_path "
        "WHERE run = ? AND phase = ? AND step IS NOT DISTINCT FROM ? ORDER BY seq",
        [*scope, step]).fetchall()
    if not edges:
        return Section("critical-path", title, "No critical path was measured for this "
                       "step (no host events).", None, empty="No critical path.")
    left = min([start] + [k[2] for k in kernels])  # the timeline's: the two line up
    right = max([end] + [k[3] for k in kernels])
    streams = sorted({k[0] for k in kernels}, key=lambda s: (s is None, s))
    lane = {stream: i for i, stream in enumerate(streams)}
    bars = charts.bin_kernels([(lane[s], a, b, c) for s, c, a, b in kernels], left, right)
    ranks = sorted({e[0] for e in edges if e[4] > 0})
    path_lane = {r: i for i, r in enumerate(ranks)}
    what = f"{step}" if step else "the capture"
    chart = partial(
        charts.critical_path,
        [f"rank {rank} stream {s}" if s is not None else f"rank {rank} no stream"
         for s in streams], bars, [f"path on rank {r}" for r in ranks],
        [(path_lane[r], a, b, kind) for r, a, b, kind, ns, _ in edges if ns > 0],
        left, right, f"Critical path of {_short(what, 70)} over the timeline")
    total = sum(e[4] for e in edges)
    classes = collections.Counter()
    events = collections.Counter()
    for r, _, _, kind, ns, name in edges:
        classes[kind] += ns
        events[(r, name, kind)] += ns
    parts = ", ".join(f"{kind} {ms(ns):,.3f} ms ({ns / max(total, 1):.0%})"
                      for kind, ns in classes.most_common())
    caption = (
        f"The job's critical path of {what} (the chain of work that set its length; "
        f"`tracewh critical-path` and the critical_path views) over the timeline above: "
        f"{ms(total):,.3f} ms on {len(ranks)} rank{'s' if len(ranks) != 1 else ''}: {parts}. "
        f"The streams of rank {rank} are drawn faded, on the timeline's axis (the ranks' "
        "clocks taken as one: what runs outside its window is cut); below them, a lane per "
        "rank the path runs on, each edge at its time colored by its class (a launch delay "
        "from the launch to the kernel's start, a kernel-kernel delay between two kernels). "
        f"The table: the {top} events longest on the path.")
    rows = [(r, Name(_short(name or "(launch delay)", 60), name or ""), kind, ms(ns))
            for (r, name, kind), ns in sorted(events.items(), key=lambda item: (
                -item[1], item[0][0], item[0][1] or "", item[0][2]))[:top]]
    return Section("critical-path", title, caption, chart,
                   ("rank", "event", "class", "on the path (ms)"), rows)


def _timeline_window(connection, scope, choice):
    """(rank, trace_id, window_index, step, start_ns, end_ns, is_default) of the window to
    draw, or None when the phase has no GPU activity; a rank or step the phase lacks is an
    error naming what there is."""
    windows = connection.execute(
        "SELECT rank, trace_id, window_index, step, start_ns, end_ns, is_default, slowest_rank "
        "FROM timeline_windows WHERE run = ? AND phase = ? ORDER BY rank, start_ns",
        scope).fetchall()
    if not windows:
        return None
    run, phase = scope
    if choice.rank is None and choice.step is None:
        return next(w[:7] for w in windows if w[6])
    rank = choice.rank if choice.rank is not None else \
        next(w[0] for w in windows if w[7])
    own = [w for w in windows if w[0] == rank]
    if not own:
        raise UsageError(f"run {run!r}, phase {phase!r} has no rank {rank} to draw (its "
                         f"ranks: {rank_ranges(sorted({w[0] for w in windows}))})")
    if choice.step is None:
        durations = sorted(w[5] - w[4] for w in own)
        median = durations[(len(durations) - 1) // 2]
        return next(w[:6] + (False,) for w in own if w[5] - w[4] == median)
    named = [w for w in own if w[3] == choice.step]
    if not named:
        steps = [w[3] for w in own if w[3]]
        listed = ", ".join(steps[:5]) + (f" and {len(steps) - 5} more" if len(steps) > 5
                                         else "")
        missing = f"run {run!r}, phase {phase!r}, rank {rank} has no step {choice.step!r}"
        if steps:
            raise UsageError(f"{missing} (its steps: {listed})")
        raise UsageError(f"{missing} (it has no ProfilerStep#N spans: {HINT} to draw its "
                         f"capture)", cli_hint="leave --timeline-step out",
                         library_hint="name no step")
    return named[0][:6] + (False,)


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
    chart = partial(charts.bars, [str(r[0]) for r in rows], {"overlap": ratios},
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
    chart = partial(charts.bars, [str(r[0]) for r in rows], {"exposed": [ms(r[1]) for r in rows]},
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
        SELECT rank, exposed_comm_ns, overlap_ns, compute_only_ns, other_ns, idle_ns,
               step_idle_ns, largest_gap_ns, gap_dominated, idle_span_ns
        FROM rank_gpu_parts WHERE run = ? AND phase = ? ORDER BY rank""", scope)
    parts = list(charts.PART_COLORS)
    chart = partial(charts.bars, [str(r[0]) for r in rows],
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
        SELECT short_name, class, kernels, total_ns, share_pct FROM short_kernel_stats
        WHERE run = ? AND phase = ? AND position <= {TOP_KERNELS} ORDER BY position""", scope)
    names = _names(r[0] for r in rows)
    chart = partial(
        charts.horizontal_bars,
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


def _top_ops(connection, scope):
    rows = _rows(connection, f"""
        SELECT name, calls, gpu_kernels, gpu_self_ns, gpu_self_busy_ns, gpu_total_ns,
               gpu_total_busy_ns, communication
        FROM op_phase_stats WHERE run = ? AND phase = ? AND gpu_total_ns > 0
        ORDER BY gpu_self_ns DESC, gpu_total_ns DESC, name LIMIT {TOP_OPS}""", scope)
    names = _names(r[0] for r in rows)
    kinds = {True: ("launched communication", charts.CLASS_COLORS["communication"]),
             False: ("other", charts.CLASS_COLORS["computation"])}
    chart = partial(
        charts.horizontal_bars,
        [names[r[0]].text for r in rows], [ms(r[3]) for r in rows],
        [kinds[bool(r[7])][1] for r in rows],
        f"Top {len(rows)} operators by self GPU time, all ranks", "ms",
        dict(kinds[kind] for kind in dict.fromkeys(bool(r[7]) for r in rows))
    ) if rows else None
    return Section(
        "top-ops", "Top operators",
        "The cpu_ops (aten ops, autograd nodes, c10d ops) by the GPU time they launched: self "
        "is the activity an op launched itself (its launch's innermost enclosing op), total "
        "adds what the ops it encloses launched, summed over calls (a call nested in one of "
        "the same name counts in both); busy is per call the union of those intervals "
        "(kernels at once on several streams count once). View op_phase_stats (op_stats over "
        "the ranks); GPU activity no op "
        "launched (link runtime_only or unlaunched in op_kernels) is not here.",
        chart, ("operator", "calls", "GPU activities", "self (ms)", "self busy (ms)",
                "total (ms)", "total busy (ms)", "communication"),
        [(names[r[0]], r[1], r[2], *map(ms, r[3:7]), "yes" if r[7] else "")
         for r in rows],
        empty="No operator launched GPU work in this run (no cpu_op events, or none around "
              "the launches).")


def _module_tree(connection, scope):
    rows = _rows(connection, f"""
        SELECT module_path, depth, calls, gpu_self_ns, gpu_total_ns
        FROM module_phase_stats WHERE run = ? AND phase = ? AND gpu_total_ns > 0
        ORDER BY gpu_total_ns DESC, module_path NULLS LAST LIMIT {TOP_MODULES}""", scope)
    return Section(
        "module-tree", "Module tree",
        "GPU time per nn.Module path, outer to inner (the profiler's `nn.Module: NAME` frames, "
        "recorded with with_stack or with_modules): self is the activity whose innermost "
        "module around its launch is this one, total adds the modules inside it. The row "
        "without a path is the GPU activity launched outside any module. View "
        "module_phase_stats (module_stats over the ranks).",
        None, ("module path", "depth", "calls", "self (ms)", "total (ms)"),
        [(path if path is not None else "(outside any module)", depth, calls, ms(own),
          ms(total)) for path, depth, calls, own, total in rows])


def _top_gemms(connection, scope):
    """The GEMM shapes that take the most GPU time, with the TFLOPS/s they achieve against the
    device's dense peak (op_perf)."""
    caption = (
        "GEMM calls (aten::mm, addmm, bmm, baddbmm, _scaled_mm) grouped by operand shapes, "
        "data type and device, by GPU busy time over all ranks (the calls' own and enclosed "
        "ops' GPU activity, as op_perf measures it). Achieved TFLOPS/s is the group's model "
        "FLOPs (2MNK per matrix, plus MN with a bias) over that time; the peak is the "
        "device's dense figure for the data type from sql/device_peaks.toml (or --peaks); "
        "% of roofline compares with the least time the FLOPs and bytes need at the peaks.")
    empty = ("No GEMM call with recorded shapes: profile with record_shapes=True for the "
             "ops' Input Dims.")
    rows = _rows(connection, f"""
        SELECT name, shapes, dtype, peak_device, calls, gpu_busy_ns, achieved_tflops,
               peak_tflops, pct_of_peak, pct_of_roofline, bound
        FROM gemm_shapes WHERE run = ? AND phase = ?
        ORDER BY gpu_busy_ns DESC, name, shapes LIMIT {TOP_GEMMS}""", scope)
    labels = [_short(f"{r[0]} {r[1]}") for r in rows]
    chart = partial(
        charts.horizontal_bars,
        labels, [r[8] or 0 for r in rows], [BOUND_COLORS[r[10] or "no peak"] for r in rows],
        f"Top {len(rows)} GEMM shapes by GPU time: % of the device's dense peak", "% of peak",
        {f"{bound}-bound" if bound != "no peak" else bound: color
         for bound, color in BOUND_COLORS.items()
         if bound in {r[10] or "no peak" for r in rows}}) if rows else None
    return Section(
        "top-gemms", "Top GEMMs against the device's peak", caption, chart,
        ("op", "shapes (Input Dims)", "dtype", "peak of", "calls", "GPU time (ms)",
         "achieved TFLOPS/s", "peak TFLOPS/s", "% of peak", "% of roofline", "bound"),
        [(name, Name(_short(shapes), shapes), dtype, device, calls, ms(busy), tflops, peak,
          pct_peak, pct_roofline, bound)
         for name, shapes, dtype, device, calls, busy, tflops, peak, pct_peak, pct_roofline,
         bound in rows], empty=empty)


def _kernel_histograms(connection, scope):
    rows = _rows(connection, f"""
        SELECT short_name, class, lower_ns, upper_ns, kernels FROM short_kernel_histogram
        WHERE run = ? AND phase = ? AND position <= {HISTOGRAM_KERNELS}
        ORDER BY position, lower_ns""", scope)
    labels = _names(r[0] for r in rows)
    panels = {}
    for short_name, cls, lower, _upper, kernels in rows:
        panel = panels.setdefault(short_name,
                                  [labels[short_name].text, [], [], charts.CLASS_COLORS.get(cls)])
        panel[1].append(us(lower))
        panel[2].append(kernels)
    chart = partial(charts.histograms, [tuple(p) for p in panels.values()],
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
        SELECT class, lower_ns, upper_ns, kernels, total_ns FROM kernel_class_phase_histogram
        WHERE run = ? AND phase = ? ORDER BY class, lower_ns""", scope)
    panels = {}
    for cls, lower, _upper, kernels, _total in rows:
        panel = panels.setdefault(cls, [cls, [], [], charts.CLASS_COLORS.get(cls)])
        panel[1].append(us(lower))
        panel[2].append(kernels)
    chart = partial(charts.histograms, [tuple(p) for p in panels.values()],
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
    chart = partial(charts.bars, [r[0] for r in rows],
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


def _size_label(collective, msg_bytes):
    """'all_reduce 8.20 MB' (MB = 10^6 bytes, as GB is 10^9 in the bandwidths)."""
    return f"{collective} {'unsized' if msg_bytes is None else f'{msg_bytes / 1e6:.2f} MB'}"


def _bus_bandwidth(connection, scope):
    rows = _rows(connection, """
        SELECT collective, dtype, msg_bytes, instances, matched, busbw_p50_gbps,
               busbw_p90_gbps, latency_ns
        FROM collective_summary WHERE run = ? AND phase = ?
        ORDER BY collective, msg_bytes NULLS LAST, dtype NULLS LAST""", scope)
    measured = [r for r in rows if r[5] is not None]
    chart = partial(
        charts.horizontal_bars,
        [_size_label(r[0], r[2]) for r in measured], [r[5] for r in measured],
        ["#1f77b4"] * len(measured), "Median bus bandwidth per collective and size",
        "bus bandwidth (GB/s, GB = 10^9 bytes)", {"median": "#1f77b4"}) if measured else None
    caption = (
        "Each collective and message size: the median over its instances (the same call on "
        "every rank of its group) of the bus bandwidth, nccl-tests' figure comparable with "
        "the link's peak: size / latency (the shortest duration over the ranks) times "
        "2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 "
        "for broadcast, reduce and send_recv." if measured else
        "No collective with a known size was matched on every rank of its group (a missing "
        "rank, a group of one, or sizes the trace does not record, as for DeepEP): no bus "
        "bandwidth to show; the instances are counted below.")
    return Section(
        "bus-bandwidth", "Bus bandwidth per collective and size", caption, chart,
        ("collective", "dtype", "size (bytes)", "instances", "matched",
         "bus bandwidth p50 (GB/s)", "p90 (GB/s)", "latency (ms)"),
        [(c, d, b, n, m, p50, p90, ms(latency)) for c, d, b, n, m, p50, p90, latency in rows],
        empty="No communication kernels.")


def _stragglers_sections(connection, scope):
    """The waits each rank caused and the stragglers: two sections of one question."""
    rows = _rows(connection, """
        SELECT rank, instances, times_last, last_share, wait_caused_ns, wait_ns, sync_ns
        FROM stragglers WHERE run = ? AND phase = ? ORDER BY rank""", scope)
    return _waits_caused(connection, scope, rows), _stragglers(rows)


def _waits_caused(connection, scope, stragglers):
    ranks = [(rank, caused, last, n) for rank, n, last, _, caused, _, _ in stragglers]
    if not ranks:
        return Section("waits", "Wait each rank caused",
                       "No collective was matched across two or more ranks: no rank made "
                       "another wait.", None, empty="Nothing to show.")
    if len(ranks) <= len(charts.RANK_COLORS):
        chart = partial(charts.bars, [str(r[0]) for r in ranks],
                        {"wait caused": [ms(r[1]) for r in ranks]},
                        "Wait each rank caused the others", "ms", xlabel="rank",
                        colors={"wait caused": "#d1495b"})
        caption = ("For each rank, the time the other ranks of its groups spent waiting for it "
                   "at the collectives where it arrived last. A rank far above the others is "
                   "the straggler.")
    else:
        cells = _rows(connection, """
            SELECT rank, instance, wait_caused_ns FROM collective_waits_caused
            WHERE run = ? AND phase = ?""", scope)
        columns = max(nth for _, nth, _ in cells)
        grid = {rank: [None] * columns for rank, *_ in ranks}
        for rank, nth, caused in cells:
            grid[rank][nth - 1] = ms(caused)
        chart = partial(charts.heat_map, [str(rank) for rank in grid],
                        [str(i + 1) for i in range(columns)],
                        list(grid.values()), "Wait each rank caused, per collective",
                        "collective (in time order)", "rank", "wait caused (ms)")
        caption = (f"Each of the {len(ranks)} ranks (a row) at each matched collective (a "
                   "column, in time order): the time the others waited for it where it arrived "
                   "last, else 0. A row of bright cells is a straggler.")
    return Section("waits", "Wait each rank caused", caption, chart,
                   ("rank", "wait caused (ms)", "times last", "collectives"),
                   [(rank, ms(caused), last, n) for rank, caused, last, n in ranks])


def _stragglers(stragglers):
    """The 20 ranks that caused the most wait (`stragglers` by rank: NULL waits last)."""
    rows = sorted(stragglers, key=lambda row: (row[4] is None, -(row[4] or 0), row[0]))[:20]
    return Section(
        "stragglers", "Stragglers",
        "The ranks that made the others wait most: how often each arrived last at a matched "
        "collective, the wait it caused, and its own waiting (before its last peer arrived, and "
        "inside its kernels beyond the transfer).", None,
        ("rank", "collectives", "times last", "last (%)", "wait caused (ms)",
         "own wait (ms)", "sync in kernels (ms)"),
        [(rank, n, last, 100 * share, ms(caused), ms(wait), ms(sync))
         for rank, n, last, share, caused, wait, sync in rows],
        empty="No collective was matched across two or more ranks.")


def _launch_latency(connection, scope):
    buckets = _rows(connection, """
        SELECT bucket, launches FROM launch_latency_phase_histogram
        WHERE run = ? AND phase = ? ORDER BY bucket""", scope)
    summary = _rows(connection, """
        SELECT rank, launches, p50_ns, p90_ns, max_ns, first_ns FROM launch_latency_summary
        WHERE run = ? AND phase = ? ORDER BY rank""", scope)
    lowers = [0 if bucket < 0 else 2 ** bucket / 1e3 for bucket, _ in buckets]
    chart = partial(charts.histograms, [("all ranks", lowers, [n for _, n in buckets], "#30638e")],
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
        SELECT rank, step, start_ns, dur_ns, overlap_ratio
        FROM overlap_by_step WHERE run = ? AND phase = ? ORDER BY rank, start_ns""", scope)
    first = min((start for _, _, start, _, _ in rows), default=0)
    rows = [(rank, step, start - first, duration, ratio)
            for rank, step, start, duration, ratio in rows]
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
        chart = partial(charts.lines, {f"rank {rank}": points for rank, points in series.items()},
                        "Step durations over time", "step start (ms after the first step)",
                        "step duration (ms)")
        caption = ("Each ProfilerStep#N of each rank, at its start time (a color per rank): a "
                   "step that grows or a rank that lags shows here.")
    else:
        steps = max(len(ys) for _, ys in series.values())
        chart = partial(
            charts.heat_map,
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


MEMORY_BINS = 1000  # points of the memory curve at most: each the highest level in its bin


def _memory(connection, scope):
    """The memory curve of the step holding the run's highest allocated peak, and every
    rank's peak; no section when the run has no memory events (profile_memory=True)."""
    peaks = _rows(connection, """
        SELECT rank, device_kind, device_id, peak_allocated_bytes, peak_reserved_bytes, op_name
        FROM memory_peaks WHERE run = ? AND phase = ?
        ORDER BY rank, device_kind, device_id""", scope)
    if not peaks:
        return []
    step = _rows(connection, """
        SELECT rank, trace_id, step, start_ns, end_ns FROM memory_peaks_by_step
        WHERE run = ? AND phase = ?
        ORDER BY peak_allocated_bytes DESC, rank, start_ns LIMIT 1""", scope)
    chart, caption = None, ("No ProfilerStep#N holds memory events: the peaks below are over "
                            "each rank's whole captures.")
    if step:
        rank, trace_id, name, start, end = step[0]
        chart = partial(charts.lines, _memory_curve(connection, scope, trace_id, start, end),
                        f"Memory during {name} of rank {rank}",
                        "time into the step (ms)", "MiB", steps=True)
        caption = (f"Bytes allocated and reserved by the allocator on each device during "
                   f"{name} of rank {rank}, the step with the run's highest allocated peak "
                   f"(memory_timeline; each point the highest level in 1/{MEMORY_BINS} of the "
                   "step; the CPU's curve is left out when a GPU has one). The table gives "
                   "each rank's peak over its captures (memory_peaks) "
                   "and the op active when the allocated peak was reached.")
    return [Section(
        "memory", "Memory", caption, chart,
        ("rank", "device", "peak allocated (MiB)", "peak reserved (MiB)", "op at the peak"),
        [(rank, f"{kind}:{device}", bytes_ / 2**20, reserved / 2**20, op)
         for rank, kind, device, bytes_, reserved, op in peaks])]


def _memory_curve(connection, scope, trace_id, start, end):
    """{'kind:id allocated' / 'reserved': (ms into the step, MiB)} of one step's curve, from
    the level it opens with to its end, binned to MEMORY_BINS points per series."""
    rows = connection.execute("""
        SELECT device_kind, device_id,
               (greatest(ts_ns, ?) - ?) * ? // (? - ?) AS bin,
               min(greatest(ts_ns, ?)) AS at_ns, max(allocated_bytes), max(reserved_bytes)
        FROM memory_timeline
        WHERE run = ? AND phase = ? AND trace_id = ? AND ts_ns < ?
          AND (next_ts_ns IS NULL OR next_ts_ns > ?)
        GROUP BY ALL ORDER BY device_kind, device_id, bin""",
        [start, start, MEMORY_BINS, end, start, start, *scope, trace_id, end, start]).fetchall()
    if any(kind != "cpu" for kind, *_ in rows):  # host bytes would lie flat at 0 MiB beside
        rows = [row for row in rows if row[0] != "cpu"]
    series = {}
    for kind, device, _, at, allocated, reserved in rows:
        for label, level in (("allocated", allocated), ("reserved", reserved)):
            xs, ys = series.setdefault(f"{kind}:{device} {label}", ([], []))
            xs.append(ms(at - start))
            ys.append(level / 2**20)
    for xs, ys in series.values():  # the last level holds to the step's end
        xs.append(ms(end - start))
        ys.append(ys[-1])
    return series


def _diff(connection, base, run, options):
    report = diff_runs(connection, base, run, options)
    threshold = (f"threshold {options.threshold_pct}% of total time and {options.min_ns:,} ns "
                 f"(overlap ratio: {options.threshold_pct} percentage points)")
    changed = [k for k in report["kernels"] if k["status"] in ("regressed", "improved")]
    changed = sorted(changed, key=lambda k: -abs(k["delta_ns"]))[:DIFF_ROWS]
    names = _names(k["name"] for k in changed)
    chart = partial(
        charts.horizontal_bars,
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


def _page(connection, run, phases, base, sections):
    present, world, traces, events = connection.execute(
        "SELECT list(DISTINCT rank ORDER BY rank), max(world_size), count(*), sum(events) "
        "FROM traces WHERE run = ? AND list_contains(?, phase)", [run, phases]).fetchone()
    named = (f"phase {html.escape(phases[0])}" if len(phases) == 1 else
             "phases " + ", ".join(html.escape(p) for p in phases))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    against = f", compared with run <b>{html.escape(base)}</b>" if base else ""
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>tracewh report: {html.escape(run)}</title><style>{_STYLE}</style></head><body>",
        f"<header><h1>Run {html.escape(run)}, {named}</h1>",
        f"<p class=\"facts\">{_ranks_present(present, world)}, {traces} trace file"
        f"{'s' if traces != 1 else ''}, {events:,} events{against}. Times in ms unless a "
        f"column says otherwise. Made by tracewh on {now}.</p><nav>",
        *(f"<a href=\"#{s.key}\">{html.escape(s.title)}</a>" for s in sections),
        "</nav></header>",
        *(_section(s) for s in sections),
        f"<script>{_SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)


def _ranks_present(present, world):
    """'1 of 16 ranks (world size 16; missing: 1-15)': what the run holds of its job, the
    ranks with no trace named (figures over the ranks cover only those present)."""
    if not world or world <= 0:
        return f"{len(present)} rank{'s' if len(present) != 1 else ''}"
    gaps, expected = [], 0  # (first, last) of each run of missing ranks; a world size of
    for rank in [r for r in present if r < world] + [world]:  # 2**31 - 1 is never listed
        if rank > expected:
            gaps.append(str(expected) if rank - 1 == expected else f"{expected}-{rank - 1}")
        expected = rank + 1
    gap = f"; missing: {', '.join(gaps)}" if gaps else ""
    return f"{len(present)} of {world} ranks (world size {world}{gap})"


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
