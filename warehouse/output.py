"""Rendering result rows as a terminal table, CSV, JSON or Markdown.

JSON keeps integers as integers (nanoseconds are never turned into floats); the terminal table
right-aligns numbers, shortens long cells with an ellipsis and drops columns that do not fit the
terminal's width, saying so.
"""

import csv
import datetime
import decimal
import io
import json
import shutil

FORMATS = ("table", "csv", "json", "markdown")
MAX_CELL = 48


def json_default(value):
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))  # a whole number of ns stored as a double
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=json_default)
    return str(value)


def _numeric(value):
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def render(columns, rows, fmt="table", width=None):
    if fmt == "json":
        return json.dumps([dict(zip(columns, row)) for row in rows], indent=2,
                          default=json_default) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_cell(v) for v in row] for row in rows])
        return buffer.getvalue()
    if fmt == "markdown":
        return _markdown(columns, rows)
    return _table(columns, rows, width or shutil.get_terminal_size((120, 24)).columns)


def _markdown(columns, rows):
    def escape(text):
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(escape(c) for c in columns) + " |",
             "|" + "|".join("---:" if rows and _numeric(rows[0][i]) else "---"
                            for i in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(escape(_cell(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _shorten(text):
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _table(columns, rows, width):
    cells = [[_shorten(_cell(v)) for v in row] for row in rows]
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
    footer = f"({len(rows)} row{'s' if len(rows) != 1 else ''}"
    if hidden:
        footer += f"; {hidden} more column{'s' if hidden != 1 else ''} not shown: use --format"
    out.append(footer + ")")
    return "\n".join(out) + "\n"
