"""Charts of the HTML report, drawn by matplotlib as inline SVG.

SVG keeps the report one self-contained file that needs no script and no network to show its
charts, scales without blur, and keeps its text as text (searchable, small). Every chart has a
title and axis labels with units; the report puts a caption and the numbers under it.
"""

import io
import re

import matplotlib

matplotlib.use("Agg")  # no display: draw to files only

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import FuncFormatter, NullLocator  # noqa: E402

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

# One color per kernel class and per part of GPU time, the same in every chart.
CLASS_COLORS = {"communication": "#d1495b", "computation": "#00798c", "memory": "#edae49",
                "sync": "#8d6a9f", "other": "#9a9a9a"}
PART_COLORS = {"exposed communication": "#d1495b", "overlapped": "#edae49",
               "computation only": "#00798c", "other GPU work": "#8d6a9f", "idle": "#d9d9d9"}
SERIES_COLORS = ("#00798c", "#d1495b", "#edae49", "#30638e", "#8d6a9f", "#6a994e")
_XML_PROLOGUE = re.compile(r"\A.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)  # creator and date
_PLAIN = FuncFormatter(lambda value, _position: f"{value:,g}")


def _svg(figure):
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    return _METADATA.sub("", _XML_PROLOGUE.sub("", buffer.getvalue()))


def _width(count, per_item=0.22, least=6.0, most=13.0):
    return min(most, max(least, count * per_item))


def bars(labels, series, title, ylabel, stacked=False, colors=None, xlabel=None):
    """Vertical bars: one group (or stack, when `stacked`) per label, one bar per series
    ({name: values})."""
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
    figure, axes = plt.subplots(figsize=(9, 0.28 * len(labels) + 1.2))
    axes.barh(range(len(labels)), values, color=colors)
    axes.set_yticks(range(len(labels)), labels)
    axes.invert_yaxis()
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    handles = [plt.Rectangle((0, 0), 1, 1, color=color) for color in legend.values()]
    axes.legend(handles, list(legend), frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _svg(figure)


def histograms(panels, title, xlabel, ylabel):
    """Small multiples of log2-bucket histograms: panels are (title, lower bounds, counts,
    color); bars sit on a log x axis at their bucket's lower bound."""
    columns = min(len(panels), 3)
    rows = (len(panels) + columns - 1) // columns
    figure, grid = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.5 * rows),
                                squeeze=False)
    for axes, (name, lowers, counts, color) in zip(grid.flat, panels):
        positions = [max(lower, 0.5) for lower in lowers]
        axes.bar(positions, counts, width=[p * 0.9 for p in positions], align="edge",
                 color=color)
        axes.set_xscale("log", base=2)
        axes.xaxis.set_major_formatter(_PLAIN)  # 4096, not 2^12 (and no slow mathtext)
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_title(name if len(name) <= 42 else name[:30] + "…" + name[-11:], fontsize=9)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
    for axes in list(grid.flat)[len(panels):]:
        axes.set_visible(False)
    figure.suptitle(title, fontweight="bold", fontsize=10)
    figure.tight_layout()
    return _svg(figure)


def lines(series, title, xlabel, ylabel):
    """Points joined by lines, one series per name ({name: (xs, ys)})."""
    figure, axes = plt.subplots(figsize=(9, 3.2))
    for index, (name, (xs, ys)) in enumerate(series.items()):
        axes.plot(xs, ys, marker="o", markersize=3, linewidth=1, label=name,
                  color=SERIES_COLORS[index % len(SERIES_COLORS)])
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if 1 < len(series) <= 16:
        axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _svg(figure)
