"""Charts of the HTML report, drawn by matplotlib as inline SVG.

SVG keeps the report one self-contained file that needs no script and no network to show its
charts, scales without blur, and keeps its text as text (searchable, small). Every chart has a
title and axis labels with units; the report puts a caption and the numbers under it.
"""

import functools
import io
import math
import re
from dataclasses import dataclass


@functools.cache
def pyplot():
    """matplotlib's pyplot, drawing to SVG with the report's style: imported on first use
    (~0.35 s of CPU), which `report.build_report` spends in its drawing thread while it asks
    its first questions."""
    import matplotlib

    matplotlib.use("Agg")  # no display: draw to files only
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "svg.fonttype": "none",  # text stays text, not paths
        "text.parse_math": False,  # a kernel name's $...$ is text, not TeX (bad TeX raised)
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titleweight": "bold",
        "axes.titlesize": 10,
        "figure.dpi": 96,
    })
    return plt


# One color per kernel class and per part of GPU time, the same in every chart.
CLASS_COLORS = {"communication": "#d1495b", "computation": "#00798c", "memory": "#edae49",
                "sync": "#8d6a9f", "other": "#9a9a9a"}
PART_COLORS = {"exposed communication": "#d1495b", "overlapped": "#edae49",
               "computation only": "#00798c", "other GPU work": "#8d6a9f", "idle": "#d9d9d9"}
SERIES_COLORS = ("#00798c", "#d1495b", "#edae49", "#30638e", "#8d6a9f", "#6a994e")
# One line per rank up to a dozen ranks, each its own color (tab10 and two more); past that,
# lines would repeat colors or blur together, and the ranks are drawn as a heat map instead.
RANK_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#8c6d31")
_XML_PROLOGUE = re.compile(r"\A.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)  # creator and date
_UNITS = ((1e6, "s"), (1e3, "ms"), (1, "µs"), (1e-3, "ns"))


def duration_label(microseconds):
    """A tick label for a duration in µs, in the unit that keeps it short: '10 ms', '100 ns'."""
    for scale, unit in _UNITS:
        if microseconds >= scale or scale == _UNITS[-1][0]:
            return f"{microseconds / scale:g} {unit}"


def _svg(figure):
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    pyplot().close(figure)
    return _METADATA.sub("", _XML_PROLOGUE.sub("", buffer.getvalue()))


def _width(count, per_item=0.22, least=6.0, most=13.0):
    return min(most, max(least, count * per_item))


def bars(labels, series, title, ylabel, stacked=False, colors=None, xlabel=None):
    """Vertical bars: one group (or stack, when `stacked`) per label, one bar per series
    ({name: values})."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(_width(len(labels)), 3.2))
    positions = range(len(labels))
    names = list(series)
    width = 0.8 if stacked or len(names) == 1 else 0.8 / len(names)
    bottom = [0.0] * len(labels)
    for index, name in enumerate(names):
        values = series[name]
        color = (colors or {}).get(name, SERIES_COLORS[index % len(SERIES_COLORS)])
        if stacked:
            axes.bar(positions, values, width, bottom=bottom, label=name, color=color)
            bottom = [b + v for b, v in zip(bottom, values)]
        else:
            offset = (index - (len(names) - 1) / 2) * width
            axes.bar([p + offset for p in positions], values, width, label=name, color=color)
    axes.set_xticks(list(positions), labels, rotation=90 if len(labels) > 16 else 0)
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    if xlabel:
        axes.set_xlabel(xlabel)
    if len(names) > 1:
        axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _svg(figure)


def horizontal_bars(labels, values, colors, title, xlabel, legend):
    """One horizontal bar per label, largest on top; `legend` maps names to colors."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(9, 0.28 * len(labels) + 1.2))
    axes.barh(range(len(labels)), values, color=colors)
    axes.set_yticks(range(len(labels)), labels)
    axes.invert_yaxis()
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    handles = [plt.Rectangle((0, 0), 1, 1, color=color) for color in legend.values()]
    axes.legend(handles, list(legend), frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _svg(figure)


def histograms(panels, title, xlabel, ylabel, zero_label="0"):
    """Small multiples of log2-bucket histograms: panels are (title, lower bounds in µs,
    counts, color); bars sit on a log x axis at their bucket's lower bound. A lower bound of 0
    is the bucket of zero durations (or, for latencies, of zero or less): it has no place on a
    log axis, so it gets its own slot a tick step left of the others, labelled `zero_label`,
    instead of being drawn over the smallest bucket."""
    columns = min(len(panels), 3)
    rows = (len(panels) + columns - 1) // columns
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    figure, grid = pyplot().subplots(rows, columns, figsize=(3.6 * columns, 2.5 * rows),
                                squeeze=False)
    for axes, (name, lowers, counts, color) in zip(grid.flat, panels):
        ticks = _decade_ticks([lower for lower in lowers if lower > 0] or [1.0])
        right = max(max(lowers) * 2, ticks[0] * 10) * 1.2
        zero_slot = ticks[0] / (ticks[1] / ticks[0]) if len(ticks) > 1 else ticks[0] / 10
        positions = [lower if lower > 0 else zero_slot for lower in lowers]
        axes.bar(positions, counts, width=[p * 0.9 for p in positions], align="edge",
                 color=color)
        axes.set_xscale("log")
        shown = ([zero_slot] if 0 in lowers else []) + ticks
        axes.xaxis.set_major_locator(FixedLocator(shown))
        axes.xaxis.set_major_formatter(FuncFormatter(
            lambda value, _position, zero=zero_slot: zero_label if value == zero
            else duration_label(value)))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xlim(shown[0] / 1.6, right)
        axes.set_title(name if len(name) <= 42 else name[:30] + "…" + name[-11:], fontsize=9)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
    for axes in list(grid.flat)[len(panels):]:
        axes.set_visible(False)
    figure.suptitle(title, fontweight="bold", fontsize=10)
    figure.tight_layout()
    return _svg(figure)


def _decade_ticks(values, most=5):
    """Powers of ten (in µs) spanning `values`, every decade or every few, at most `most`
    ticks: a panel 3.6 inches wide has room for five labels such as '100 ms', where one per
    power of two ('4,09616,384') ran into each other."""
    low = math.floor(math.log10(min(values)))
    high = max(low + 1, math.floor(math.log10(max(values) * 2)))  # a bucket ends at 2x
    step = max(1, math.ceil((high - low) / (most - 1)))
    return [10.0 ** exponent for exponent in range(low, high + 1, step)]


def lines(series, title, xlabel, ylabel, steps=False):
    """Points joined by lines, one series per name ({name: (xs, ys)}), each its own color:
    at most len(RANK_COLORS) series (`heat_map` draws more). With `steps`, each value holds
    until the next point (a level such as memory held, not a trend between samples)."""
    if len(series) > len(RANK_COLORS):
        raise ValueError(f"{len(series)} series: more than {len(RANK_COLORS)} colors")
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(9, 3.2))
    for color, (name, (xs, ys)) in zip(RANK_COLORS, series.items()):
        if steps:
            axes.plot(xs, ys, drawstyle="steps-post", linewidth=1.2, label=name, color=color)
        else:
            axes.plot(xs, ys, marker="o", markersize=3, linewidth=1, label=name, color=color)
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if len(series) > 1:
        axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _svg(figure)


def heat_map(row_labels, column_labels, values, title, xlabel, ylabel, unit):
    """One cell per (row, column), colored by its value (None: no cell): 64 or 128 ranks stay
    apart where lines would share colors. Drawn as vector cells, so the page fetches nothing."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(9, min(9.0, 1.2 + 0.09 * len(row_labels))))
    cells = [[math.nan if v is None else v for v in row] for row in values]
    mesh = axes.pcolormesh(cells, cmap="viridis", edgecolors="face", linewidth=0.5)
    colorbar = figure.colorbar(mesh, ax=axes, pad=0.01)
    colorbar.set_label(unit)
    axes.invert_yaxis()
    every = max(1, math.ceil(len(row_labels) / 16))
    axes.set_yticks([i + 0.5 for i in range(0, len(row_labels), every)],
                    row_labels[::every])
    step = max(1, math.ceil(len(column_labels) / 12))
    axes.set_xticks([i + 0.5 for i in range(0, len(column_labels), step)],
                    column_labels[::step])
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    return _svg(figure)


# -- the timeline of one step -----------------------------------------------------------------

TIMELINE_CLASSES = ("communication", "computation", "memory", "other")
TIMELINE_BINS = 400  # columns of the picture: a kernel narrower than one is drawn in its bin
ANNOTATION_LEVELS = 6  # rows of annotations drawn above the streams; deeper ones are counted


@dataclass(frozen=True)
class Bar:
    """One rectangle of a timeline lane: a kernel drawn as itself (`kernels` 1, `fill` 1), or
    a bin of kernels too short to draw, colored by the class with the most time in it and as
    opaque as the share of the bin they fill."""

    lane: int
    start_ns: int
    end_ns: int
    timeline_class: str
    kernels: int
    busy_ns: int
    fill: float
    binned: bool


def bin_kernels(kernels, start_ns, end_ns, bins=TIMELINE_BINS):
    """Bars of the kernels (lane, start_ns, end_ns, class), over the window [start_ns,
    end_ns) cut into `bins` columns: a kernel at least a column wide is a bar of its own; a
    shorter one goes to the column where it starts (integer arithmetic: column
    (start - start_ns) * bins // span), where the kernels of each lane are summed by class.
    A column's class is the one with the most time in it (ties in TIMELINE_CLASSES order), its
    fill their summed time over the column's width, at most 1. Thousands of kernels of a
    microsecond each stay visible as the share of time they take, instead of as hairlines
    drawn on top of each other. A window shorter than `bins` ns has a column per ns."""
    span = max(end_ns - start_ns, 1)
    bins = min(bins, span)
    bars, columns = [], {}
    for lane, start, end, kind in kernels:
        if (end - start) * bins >= span:
            bars.append(Bar(lane, start, end, kind, 1, end - start, 1.0, False))
            continue
        column = min(max((start - start_ns) * bins // span, 0), bins - 1)
        cell = columns.setdefault((lane, column), {})
        count, busy = cell.get(kind, (0, 0))
        cell[kind] = (count + 1, busy + end - start)
    for (lane, column), cell in sorted(columns.items()):
        kind = max(cell, key=lambda k: (cell[k][1], -TIMELINE_CLASSES.index(k)))
        left = start_ns + column * span // bins
        right = start_ns + (column + 1) * span // bins
        busy = sum(b for _, b in cell.values())
        bars.append(Bar(lane, left, right, kind, sum(n for n, _ in cell.values()), busy,
                        min(1.0, busy / max(right - left, 1)), True))
    return bars


def pack_levels(spans):
    """The row of each (start, end) span, first fit in start order: a span goes to the first
    row whose last span has ended, so nested and overlapping annotations (DualPipe's
    attn(F) beside dispatch(B)) get rows of their own and disjoint ones share a row."""
    ends, levels = [], [0] * len(spans)
    for index in sorted(range(len(spans)), key=lambda i: (spans[i][0], -spans[i][1], i)):
        start, end = spans[index]
        level = next((row for row, last in enumerate(ends) if last <= start), len(ends))
        if level == len(ends):
            ends.append(end)
        ends[level] = end
        levels[index] = level
    return levels


def time_axis(axes, start_ns, end_ns):
    """An x axis of ms from `start_ns` to `end_ns`: what a chart of one window over time
    (the timeline, a memory curve of the same step) draws its points against, at
    (t - start_ns) / 1e6, so that charts of one window line up."""
    axes.set_xlim(0, max(end_ns - start_ns, 1) / 1e6)
    axes.set_xlabel("time (ms after the window's start)")


def _lane_bars(axes, bars, start_ns, colors=CLASS_COLORS, faded=1.0):
    """Draw `bars` (Bar) on their lanes, colored by class (`colors`), each as opaque as its
    fill, all `faded` (1: not)."""
    from matplotlib.colors import to_rgba

    for kind, hue in colors.items():
        chosen = [bar for bar in bars if bar.timeline_class == kind]
        color = to_rgba(hue)
        for lane in sorted({bar.lane for bar in chosen}):
            own = [bar for bar in chosen if bar.lane == lane]
            axes.broken_barh([((b.start_ns - start_ns) / 1e6, (b.end_ns - b.start_ns) / 1e6)
                              for b in own], (lane - 0.4, 0.8),
                             facecolors=[(*color[:3], faded * (0.3 + 0.7 * b.fill))
                                         for b in own], linewidth=0)


def timeline(lanes, bars, annotations, start_ns, end_ns, title):
    """One step's streams over time: a row per lane (its label), the bars of `bin_kernels`
    colored by class, and above them the annotations ((name, start_ns, end_ns), packed into
    rows, the deepest past ANNOTATION_LEVELS left out), labelled where the name fits. The x
    axis is ms from `start_ns`."""
    levels = pack_levels([(a[1], a[2]) for a in annotations])
    rows = min(max(levels, default=-1) + 1, ANNOTATION_LEVELS)
    height = 1.3 + 0.32 * (len(lanes) + rows)
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(12, height))
    _lane_bars(axes, bars, start_ns)
    width_ms = max(end_ns - start_ns, 1) / 1e6
    points_per_ms = 12 * 72 * 0.85 / width_ms  # the axes take ~85% of the figure's width
    for (name, start, end), level in zip(annotations, levels):
        if level >= rows:
            continue
        y = level - rows  # above the streams, the first row on top
        left, width = (start - start_ns) / 1e6, max(end - start, 0) / 1e6
        axes.broken_barh([(left, width)], (y - 0.4, 0.8), facecolors="#e8e8e8",
                         edgecolors="#707070", linewidth=0.5)
        label = name if len(name) <= 24 else name[:23] + "…"
        if width * points_per_ms >= 4.1 * len(label) + 3:
            axes.text(left + width / 2, y, label, ha="center", va="center", fontsize=7,
                      clip_on=True)
    axes.set_yticks(([-rows] if rows else []) + list(range(len(lanes))),
                    (["annotations"] if rows else []) + list(lanes))
    axes.set_ylim(len(lanes) - 0.4, -rows - 0.6)  # top to bottom: annotations, then lanes
    time_axis(axes, start_ns, end_ns)
    axes.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=CLASS_COLORS[kind]) for kind in
               TIMELINE_CLASSES]
    axes.legend(handles, list(TIMELINE_CLASSES), frameon=False, loc="upper left",
                bbox_to_anchor=(1.01, 1))
    return _svg(figure)


# -- the critical path over the timeline ------------------------------------------------------

# One color per class of the critical path (rank_critical_path's bound_by).
PATH_COLORS = {"cpu_bound": "#30638e", "gpu_compute_bound": CLASS_COLORS["computation"],
               "gpu_communication_bound": CLASS_COLORS["communication"],
               "gpu_communication_wait": "#f2a7b1",
               "gpu_kernel_launch_overhead": CLASS_COLORS["memory"],
               "gpu_kernel_kernel_overhead": CLASS_COLORS["sync"], "data_loading": "#6a994e"}


def critical_path(lanes, bars, path_lanes, edges, start_ns, end_ns, title):
    """The job's critical path of one step over the timeline of the same window: the
    timeline's streams (`lanes`, `bars` of bin_kernels) faded, and below them a lane per
    rank on the path (`path_lanes`, its label) with the path's edges ((lane, start_ns,
    end_ns, bound_by), lane counted from 0 among path_lanes) colored by class."""
    height = 1.5 + 0.32 * (len(lanes) + len(path_lanes))
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(12, height))
    _lane_bars(axes, bars, start_ns, faded=0.35)
    path = [Bar(len(lanes) + lane, start, end, kind, 1, end - start, 1.0, False)
            for lane, start, end, kind in edges]
    _lane_bars(axes, path, start_ns, colors=PATH_COLORS)
    labels = list(lanes) + list(path_lanes)
    axes.set_yticks(list(range(len(labels))), labels)
    axes.set_ylim(len(labels) - 0.4, -0.6)
    time_axis(axes, start_ns, end_ns)
    axes.set_title(title)
    drawn = [kind for kind in PATH_COLORS if any(edge[3] == kind for edge in edges)]
    handles = [plt.Rectangle((0, 0), 1, 1, color=PATH_COLORS[kind]) for kind in drawn]
    axes.legend(handles, drawn, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _svg(figure)
