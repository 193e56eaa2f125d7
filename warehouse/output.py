"""Rendering result rows as a terminal table, CSV, JSON or Markdown.

JSON keeps integers as integers (nanoseconds are never turned into floats) and CSV and JSON keep
every digit of a double; the terminal table and Markdown show doubles to four significant
digits in plain notation (no exponent beside integer columns). The terminal table right-aligns
numbers, shortens long cells with an ellipsis, can stop after a number of rows, and drops columns
that do not fit the terminal's width, saying what it left out.
"""

import csv
import datetime
import decimal
import io
import json
import math
import shutil

FORMATS = ("table", "csv", "json", "markdown")
MAX_CELL = 48


def json_default(value):
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


def _cell(value, exact=False):
    """A value as text; doubles to four significant digits, or every digit when `exact`."""
    if value is None:
        return ""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))  # a whole number of ns stored as a double
        if exact or not math.isfinite(value):
            return repr(value)
        return format(decimal.Decimal(f"{value:.4g}"), "f")  # 1.234e+07 -> 12340000
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=json_default)
    return str(value)


def _numeric(value):
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def render(columns, rows, fmt="table", width=None, max_rows=0):
    """The rows as text in `fmt`. A table shows at most `max_rows` rows (0: all) and says how
    many it left out; the other formats always hold every row."""
    if fmt == "json":
        return json.dumps([dict(zip(columns, row)) for row in rows], indent=2,
                          default=json_default) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_cell(v, exact=True) for v in row] for row in rows])
        return buffer.getvalue()
    if fmt == "markdown":
        return _markdown(columns, rows)
    return _table(columns, rows, width or shutil.get_terminal_size((120, 24)).columns, max_rows)


def _markdown(columns, rows):
    def escape(text):
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(escape(c) for c in columns) + " |",
             "|" + "|".join("---:" if rows and _numeric(rows[0][i]) else "---"
                            for i in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(escape(_cell(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _shorten(text, width=MAX_CELL):
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _shortened(column):
    """A column's cells shortened to MAX_CELL characters, or wider where that would make
    distinct values look the same (GEMMs whose names differ past the 48th character)."""
    width, distinct = MAX_CELL, set(column)
    longest = max(map(len, distinct), default=0)
    while width < longest and len({_shorten(t, width) for t in distinct}) < len(distinct):
        width += 8
    return [_shorten(text, width) for text in column]


def _table(columns, rows, width, max_rows=0):
    total = len(rows)
    if max_rows and total > max_rows:
        rows = rows[:max_rows]
    columns_text = [_shortened([_cell(row[i]) for row in rows]) for i in range(len(columns))]
    cells = [list(row) for row in zip(*columns_text)] if rows else []
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
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
