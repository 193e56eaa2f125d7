"""Rendering result rows as a terminal table, CSV, JSON or Markdown.

JSON keeps integers as integers (nanoseconds are never turned into floats) and CSV and JSON keep
every digit of a double; the terminal table and Markdown show a double in a `*_ns` column as
whole nanoseconds (a mean of integer times), and other doubles to four significant digits, or as
many more as it takes to tell the column's values apart, in plain notation (no exponent beside
integer columns). Booleans are `true` and `false` in every text format, as DuckDB's own CSV
writer and JSON print them. The terminal table right-aligns
numbers, shortens long cells with an ellipsis, can stop after a number of rows, and drops columns
that do not fit the terminal's width, saying what it left out.

Markdown is pasted into pull-request and CI comments, where trace content (kernel names, any
string a query returns) must stay text: every cell goes through `markdown_cell`, which escapes
it and caps it at MARKDOWN_CELL characters (a diff's names at MARKDOWN_WHOLE). The terminal
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

from .errors import UsageError, escaped, printable

FORMATS = ("table", "csv", "json", "markdown")
MAX_CELL = 48  # characters of a terminal table's cell
MARKDOWN_CELL = 200  # characters of a Markdown cell (before escaping); the full text is in json
# characters of a Markdown cell that must not be cut (a diff's kernel names): real names run
# to a few thousand (1,956 in HTA's trace_filter); a longer one is hostile, and a pull-request
# comment holds 65,536 characters in all
MARKDOWN_WHOLE = 16_384


def json_default(value):
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


def _cell(value, exact=False, digits=4, whole=False):
    """A value as text. A double: every digit when `exact`, else rounded to whole units when
    `whole` (nanoseconds), else to `digits` significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))  # a whole number of ns stored as a double
        if exact:
            return repr(value)
        if whole:
            return str(round(value))
        return format(decimal.Decimal(f"{value:.{digits}g}"), "f")  # 1.234e+07 -> 12340000
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=json_default)
    return str(value)


def _column_cells(name, values):
    """The column's values as text for a table or Markdown: `*_ns` doubles in whole ns, other
    doubles to the fewest significant digits (4 at least) that keep different values apart
    (0.0247 and 0.02470007 are not shown alike)."""
    whole = name.endswith("_ns")
    doubles = {v for v in values if isinstance(v, float) and math.isfinite(v)}
    digits = 4
    while not whole and digits < 17 and len({_cell(v, digits=digits) for v in doubles}) < len(
            doubles):
        digits += 1
    return [_cell(v, digits=digits, whole=whole) for v in values]


def _rows_as_text(columns, rows):
    """[[cell text]] of the rows, each column formatted as a whole (see _column_cells)."""
    by_column = [_column_cells(str(name), [row[i] for row in rows])
                 for i, name in enumerate(columns)]
    return [list(cells) for cells in zip(*by_column)] if rows else []


def _numeric(value):
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def render(columns, rows, fmt="table", width=None, max_rows=0, squeeze=None, terminal=False):
    """The rows as text in `fmt`. A table shows at most `max_rows` rows (0: all) and says how
    many it left out; the other formats always hold every row. csv keeps every character, but
    for a `terminal`, where it shows its cells' control characters as \\xNN (as the table).
    `squeeze`, a pair of column names (a long text column, the last column that must show),
    makes a table cut the first in the middle to what the columns up to the second leave of the
    width (a diff's kernel names beside their deltas and counts in an 80-column CI log), and
    Markdown keep it whole (up to MARKDOWN_WHOLE characters)."""
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
        return _markdown(columns, rows, whole=squeeze[0] if squeeze else None)
    return _table(columns, rows, width or shutil.get_terminal_size((120, 24)).columns, max_rows,
                  squeeze)


def _markdown(columns, rows, whole=None):
    """Markdown's table; the column `whole` is cut at MARKDOWN_WHOLE characters only."""
    limits = [MARKDOWN_WHOLE if c == whole else MARKDOWN_CELL for c in columns]
    lines = ["| " + " | ".join(markdown_cell(str(c)) for c in columns) + " |",
             "|" + "|".join("---:" if rows and _numeric(rows[0][i]) else "---"
                            for i in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(markdown_cell(cell, limit) for cell, limit in zip(row, limits))
              + " |" for row in _rows_as_text(columns, rows)]
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


def markdown_cell(text, limit=MARKDOWN_CELL):
    """`text` as inert GitHub-flavoured Markdown in one table cell: on one line, at most
    `limit` characters (with an ellipsis), no HTML, no emphasis, code, link,
    image, autolink, mention or issue reference; it renders as the same visible characters.
    A kernel name is the profiled program's text, and a diff goes into shared comments."""
    text = _LINKS.sub(r"\1" + WORD_JOINER, _shorten(text, limit))
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


def _table(columns, rows, width, max_rows=0, squeeze=None):
    total = len(rows)
    if max_rows and total > max_rows:
        rows = rows[:max_rows]
    text = _rows_as_text(columns, rows)
    columns_text = [[row[i] for row in text] for i in range(len(columns))]
    squeezed = columns.index(squeeze[0]) if squeeze else None
    columns_text = [column if i == squeezed else _shortened(column)
                    for i, column in enumerate(columns_text)]

    def width_of(i):
        return max([len(str(columns[i]))] + [len(cell) for cell in columns_text[i]])

    if squeeze:
        others = range(columns.index(squeeze[1]) + 1)
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
