"""`tracewh query` and `tracewh runs`: SQL over the warehouse."""

import sys

import click

from .. import output
from ..errors import printable
from .options import (FORMAT_OPTION, PEAKS_OPTION, RULES_OPTION, UNITS_OPTION,
                      current_warehouse, echo, pass_warehouse, to_terminal, warehouse_location)

# Rows a result shows in a terminal unless --max-rows says otherwise (DuckDB's CLI shows 40).
TERMINAL_ROWS = 40


@click.command()
@click.argument("sql")
@FORMAT_OPTION
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the result to this file instead of stdout (every row); a name "
                   "ending in .parquet writes Parquet with the result's types (--format is "
                   "then not used).")
@click.option("--max-rows", type=click.IntRange(min=0),
              help=f"Rows of a table to print; the rest are counted, not shown; 0 prints all. "
                   f"[default: {TERMINAL_ROWS} on a terminal, else all; csv, json, markdown "
                   f"and --out always hold every row]")
@click.option("--allow-write", is_flag=True,
              help="Give the SQL DuckDB's full access: statements other than SELECT "
                   "(COPY, ATTACH, INSTALL, SET...) and files and URLs outside the "
                   "warehouse's tables, which a query otherwise cannot read.")
@UNITS_OPTION
@RULES_OPTION
@PEAKS_OPTION
def query(sql, fmt, out_path, max_rows, allow_write, units, rules, peaks):
    """Run SQL over every table and view; print the result.

    SQL is one or more statements; `-` reads them from stdin. A table (or Markdown) shows the
    result of every statement; csv and json hold one result, the last statement's.

    \b
    Examples:
      tracewh query "SELECT run, rank, count(*) FROM kernels GROUP BY ALL"
      tracewh query --format json "SELECT * FROM overlap" > overlap.json
      tracewh query - < report.sql
      tracewh query "SELECT * FROM kernel_stats" --out kernel_stats.parquet
    """
    if sql == "-":
        sql = sys.stdin.read()
    to_parquet = out_path is not None and out_path.endswith(".parquet")
    results = None
    if not (allow_write or rules or peaks or to_parquet):
        from ..query.prepared import prepared_query  # no pyarrow, no delta-rs: see `prepared`

        results = prepared_query(warehouse_location(), sql)
    if results is None:
        warehouse = current_warehouse().with_rules(rules).with_peaks(peaks)
        if to_parquet:
            rows = warehouse.query_to_parquet(sql, out_path, allow_write=allow_write)
            click.echo(f"wrote {rows:,} rows to {printable(out_path)}", err=True)
            return
        results = warehouse.query(sql, allow_write=allow_write)
    if max_rows is None:
        max_rows = TERMINAL_ROWS if to_terminal(out_path) else 0
    if fmt in ("table", "markdown"):
        text = "\n".join(output.render(columns, rows, fmt, max_rows=max_rows, units=units)
                         for columns, rows in results)
    else:
        if len(results) > 1:
            click.echo(f"note: {len(results)} statements returned rows; {fmt} holds one "
                       "result: the last statement's", err=True)
        text = output.render(*results[-1], fmt, terminal=to_terminal(out_path))
    echo(text, out_path)


@click.command()
@FORMAT_OPTION
@UNITS_OPTION
@pass_warehouse
def runs(warehouse, fmt, units):
    """List the runs: phases, ranks of the world size and those missing, files, events and
    tags."""
    columns, rows = warehouse.runs_table()
    echo(output.render(columns, rows, fmt, terminal=to_terminal(), units=units))
