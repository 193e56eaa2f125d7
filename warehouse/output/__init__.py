"""Rendering result rows as a terminal table, CSV, JSON or Markdown.

JSON keeps integers as integers (nanoseconds are never turned into floats) and CSV, JSON and
Parquet keep every digit of a value; the terminal table and Markdown are for reading: integers
with thousands separators, a double in a `*_ns` column as whole nanoseconds (a mean of integer
times), other doubles with one number of decimals per column (four significant digits of its
largest value, or as many more as it takes to tell the column's values apart), in plain
notation; with `units` (us, ms, s) every `*_ns` column is shown in that unit, exactly (at most
to the ns), under its name with the unit's suffix (dur_ns -> dur_ms). Booleans are `true` and `false` in every text format, as DuckDB's own CSV
writer and JSON print them. The terminal table right-aligns
numbers, shortens long cells with an ellipsis, can stop after a number of rows, and drops columns
that do not fit the terminal's width, saying what it left out.

Markdown is pasted into pull-request and CI comments, where trace content (kernel names, any
string a query returns) must stay text: every cell goes through `markdown_cell`, which escapes
it and never cuts it (a name cut with an ellipsis is no name to search for). The terminal
table caps a cell at MAX_CELL characters (a diff's names are cut in the middle to what the
width leaves); csv and json keep every character (csv printed to a terminal shows control
characters as \\xNN, as the table does: an ESC in a kernel name would drive the terminal).

Every file a command writes (--out, an export, a report) is written by `write_atomically`.
"""

import csv
import datetime
import decimal
import io
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..errors import UsageError, escaped, printable

FORMATS = ("table", "csv", "json", "markdown")
MAX_CELL = 48  # characters of a terminal table's cell
UNITS = {"ns": 0, "us": 3, "ms": 6, "s": 9}  # a unit for `*_ns` columns: its power of ten in ns


def json_default(value):
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


def _cell(value, exact=False):
    """A value as text, every digit of it (csv; and the cells that are not numbers)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))  # a whole number of ns stored as a double
        return repr(value) if exact else format(decimal.Decimal(repr(value)), "f")
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=json_default)
    return str(value)


def _figure(value):
    """A finite number as an exact Decimal, or None (not a number, NaN, infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    number = decimal.Decimal(value)  # exact: a double's every binary digit
    return number if number.is_finite() else None


def _decimals(figures, most):
    """The decimals a column shows: 0 for whole numbers; else four significant digits of the
    largest, or more while different values would look alike; at most `most`."""
    if all(f == f.to_integral_value() for f in figures):
        return 0
    largest = max(abs(f) for f in figures)
    places = max(0, 4 - (largest.adjusted() + 1)) if largest else 0
    distinct = set(figures)
    while places < most and len({round(f, places) for f in distinct}) < len(distinct):
        places += 1
    return min(places, most)


def _column_cells(name, values, units=None):
    """The column's values as text for a table or Markdown, one number of decimals for the
    whole column (`_decimals`), thousands separated; a `*_ns` column in whole ns, or in
    `units` to the ns (a double, a mean of ns, to the ns too)."""
    figures = [_figure(v) for v in values]
    numbers = [f for f in figures if f is not None]
    if not numbers:
        return [_cell(v) for v in values]
    timed = name.endswith("_ns")
    scale = UNITS[units] if timed and units else 0
    if scale:
        figures = [f if f is None else f.scaleb(-scale) for f in figures]
        numbers = [f.scaleb(-scale) for f in numbers]
    places = _decimals(numbers, scale if timed else 17)
    return [_cell(v) if f is None else f"{round(f, places):,.{places}f}"
            for v, f in zip(values, figures)]


def unit_name(name, units):
    """A column's (or a metric's) name as a table shows it: `*_ns` with the unit's suffix when
    converted."""
    return f"{name[:-3]}_{units}" if units and name.endswith("_ns") else name


def ns_in_units(value, units):
    """A number of ns in `units` (a key of UNITS), exactly (a Decimal); None stays None."""
    figure = _figure(value)
    return figure if figure is None else figure.scaleb(-UNITS[units])


def _rows_as_text(columns, rows, units=None):
    """[[cell text]] of the rows, each column formatted as a whole (see _column_cells)."""
    by_column = [_column_cells(str(name), [row[i] for row in rows], units)
                 for i, name in enumerate(columns)]
    return [list(cells) for cells in zip(*by_column)] if rows else []


def _numeric(value):
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def render(columns, rows, fmt="table", width=None, max_rows=0, squeeze=None, terminal=False,
           units=None):
    """The rows as text in `fmt`. A table shows at most `max_rows` rows (0: all) and says how
    many it left out; the other formats always hold every row. csv keeps every character, but
    for a `terminal`, where it shows its cells' control characters as \\xNN (as the table).
    `squeeze`, a pair of column names (a long text column, the last column that must show),
    makes a table cut the first in the middle to what the columns up to the second leave of the
    width (a diff's kernel names beside their deltas and counts in an 80-column CI log).
    `units` (a key of UNITS) shows a table's or Markdown's `*_ns` columns in that unit; csv and
    json keep the ns."""
    if fmt == "json":
        return json.dumps([dict(zip(columns, row)) for row in rows], indent=2,
                          default=json_default) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        shown = escaped if terminal else str
        writer.writerow(map(shown, columns))
        writer.writerows([[shown(_cell(v, exact=True)) for v in row] for row in rows])
        return buffer.getvalue()
    if fmt == "markdown":
        return _markdown(columns, rows, units)
    return _table(columns, rows, width or shutil.get_terminal_size((120, 24)).columns, max_rows,
                  squeeze, units)


def _markdown(columns, rows, units=None):
    lines = ["| " + " | ".join(markdown_cell(unit_name(str(c), units)) for c in columns) + " |",
             "|" + "|".join("---:" if rows and _numeric(rows[0][i]) else "---"
                            for i in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |"
              for row in _rows_as_text(columns, rows, units)]
    return "\n".join(lines) + "\n"


# GitHub links `@name` (and `@org/team`) when `@` is directly followed by a letter or digit,
# `#123` to an issue, and autolinks `www.` and `scheme://` (GFM's autolink extension) and
# `a@b.c` (as mailto:), all in the rendered text, so backslash escapes and entities such as
# `&#64;` do not stop them: a WORD JOINER (U+2060, invisible) after the `@`, `#` or `:` and
# before the `.` of `www.` does.
WORD_JOINER = "\u2060"
_LINKS = re.compile(r"(@|#(?=\d)|:(?=//)|www(?=\.))", re.IGNORECASE)
# ASCII punctuation that can start emphasis, strikethrough, code, math, a link or an image, a
# heading, or end a table cell; CommonMark reads each escaped by a backslash as itself.
_PUNCTUATION = re.compile(r"([\\`*_~\[\]()!#$|])")
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def markdown_cell(text):
    """`text` as inert GitHub-flavoured Markdown in one table cell: on one line, whole (never
    cut), no HTML, no emphasis, code, link, image, autolink, mention or issue reference; it
    renders as the same visible characters. A kernel name is the profiled program's text, and
    a diff goes into shared comments."""
    text = _LINKS.sub(r"\1" + WORD_JOINER, _shorten(text, math.inf))
    return _PUNCTUATION.sub(r"\\\1", text).translate(_HTML)


_LINE_BREAKS = re.compile(r"\r\n?|\n|\t")


def one_line(text):
    """`text` on one line (a `\\r` would also end a Markdown line, or rewrite a terminal's), its
    control characters visible as escapes."""
    return escaped(_LINE_BREAKS.sub(" ", text))


def _shorten(text, limit=MAX_CELL):
    """`text` on one line, at most `limit` characters, the last an ellipsis when cut."""
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shorten_middle(text, limit=MAX_CELL):
    """`text` on one line, at most `limit` characters, cut in the middle with an ellipsis: a
    kernel's name keeps its head (what it is) and its tail (its arguments), where names that
    share a long prefix differ."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail > 0 else "")


def _distinct_width(column, shorten=_shorten):
    """The width to shorten a column's cells to: MAX_CELL characters, or wider where that would
    make distinct values look the same (GEMMs whose names differ past the 48th character)."""
    width, distinct = MAX_CELL, set(column)
    longest = max(map(len, distinct), default=0)
    while width < longest and len({shorten(t, width) for t in distinct}) < len(distinct):
        width += 8
    return width


def _shortened(column):
    width = _distinct_width(column)
    return [_shorten(text, width) for text in column]


MIN_SQUEEZED = 16  # characters a squeezed column keeps however narrow the terminal


def _squeezed(column, room):
    """A column's cells cut in the middle to `room` characters (MIN_SQUEEZED at least), or to
    what `_distinct_width` allows when that is less."""
    width = min(_distinct_width(column, shorten_middle), max(room, MIN_SQUEEZED))
    return [shorten_middle(text, width) for text in column]


def _table(columns, rows, width, max_rows=0, squeeze=None, units=None):
    total = len(rows)
    if max_rows and total > max_rows:
        rows = rows[:max_rows]
    text = _rows_as_text(columns, rows, units)
    squeezed = columns.index(squeeze[0]) if squeeze else None
    last_shown = columns.index(squeeze[1]) if squeeze else None
    columns = [unit_name(str(c), units) for c in columns]
    columns_text = [[row[i] for row in text] for i in range(len(columns))]
    columns_text = [column if i == squeezed else _shortened(column)
                    for i, column in enumerate(columns_text)]

    def width_of(i):
        return max([len(str(columns[i]))] + [len(cell) for cell in columns_text[i]])

    if squeeze:
        others = range(last_shown + 1)
        room = width - sum(width_of(i) + 2 for i in others if i != squeezed)
        columns_text[squeezed] = _squeezed(columns_text[squeezed], room)
    cells = [list(row) for row in zip(*columns_text)] if rows else []
    widths = [width_of(i) for i in range(len(columns))]
    shown, used = [], 0
    for index, column_width in enumerate(widths):
        if shown and used + column_width > width:
            break
        shown.append(index)
        used += column_width + 2
    numeric = [any(_numeric(row[i]) for row in rows) for i in range(len(columns))]

    def line(values):
        parts = [values[i].rjust(widths[i]) if numeric[i] else values[i].ljust(widths[i])
                 for i in shown]
        return "  ".join(parts).rstrip()

    out = [line(list(columns)), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    hidden = len(columns) - len(shown)
    footer = f"({total:,} row{'s' if total != 1 else ''}"
    if total > len(rows):
        footer += (f", the first {len(rows):,} shown: --max-rows 0 shows all, --format or --out "
                   "writes all")
    if hidden:
        footer += f"; {hidden} more column{'s' if hidden != 1 else ''} not shown: use --format"
    out.append(footer + ")")
    return "\n".join(out) + "\n"


def write_atomically(path, write):
    """Write a file by `write(binary file object)`, then rename it into place: a reader sees
    the old file or the whole new one, never half. The temporary file beside it is made by
    mkstemp (O_CREAT|O_EXCL|O_NOFOLLOW, a random name) and written through its descriptor, so
    no link planted at a name tracewh would use is followed. A failure is one error line (the
    disk is full, the directory is not writable), the temporary file gone."""
    path = Path(path)
    temporary = None
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                                 dir=path.parent)
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(descriptor, 0o666 & ~_umask())  # mkstemp's 0600: the modes of open()'s
            write(handle)
        os.replace(temporary, path)
    except BaseException as error:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        if not isinstance(error, OSError):
            raise
        raise UsageError(f"{printable(path)}: cannot write: {error.strerror or error}") from None


def _umask():
    """The process's umask (reading it means setting it: set back at once)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
