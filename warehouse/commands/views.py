"""`tracewh views`: the SQL library, listed, printed in a dialect, or as a runnable script."""

import shutil
import textwrap

import click

from ..query.dialects import DIALECTS, SPARK_SCRIPT_SETTINGS, script, script_text, transpile
from ..errors import UsageError
from ..query.library import public_library
from .options import PEAKS_OPTION, RULES_OPTION, pass_warehouse


@click.command()
@click.argument("name", required=False)
@click.option("--dialect", type=click.Choice(DIALECTS),
              help="Print the views' SQL, transpiled to this dialect by sqlglot.")
@click.option("--script", "as_script", is_flag=True,
              help="Print one runnable script (duckdb or spark) that defines the warehouse's "
                   "tables at its newest snapshot, the rules and device peaks tables, then "
                   "every view and "
                   "macro in dependency order.")
@RULES_OPTION
@PEAKS_OPTION
@pass_warehouse
def views(warehouse, name, dialect, as_script, rules, peaks):
    """List the SQL library's public views with their purpose (or print their SQL).

    Spark gets temporary views, and SQL table functions for the table macros (Spark 4);
    percentiles stay exact in every dialect (the nearest-rank value, never an approximation).

    \b
    Examples:
      tracewh views                       # name and purpose of every view
      tracewh views overlap --dialect trino
      tracewh views --dialect spark --script > tracewh.sql && spark-sql -f tracewh.sql
      tracewh views --dialect duckdb --script | duckdb
    """
    modules = public_library()
    if name is not None and name not in modules:
        raise UsageError(f"no view {name!r}; views: {', '.join(modules)}")
    if as_script:
        if name is not None or dialect is None:
            raise UsageError("--script prints the whole library: give --dialect duckdb or "
                             "spark, and no view name")
        warehouse = warehouse.with_rules(rules).with_peaks(peaks)
        settings = SPARK_SCRIPT_SETTINGS if dialect == "spark" else ()
        click.echo(script_text([*settings, *script(
            dialect, warehouse.snapshot, warehouse.path.resolve(), warehouse.kernel_rules,
            warehouse.device_peaks)]), nl=False)
        return
    chosen = {name: modules[name]} if name else modules
    if dialect is None and name is None:
        width = max(shutil.get_terminal_size((100, 24)).columns, 60)
        for view_name, (description, _) in chosen.items():  # wrapped, never cut
            click.echo(textwrap.fill(f"{view_name:<24} {description}", width,
                                     subsequent_indent=" " * 25, break_long_words=False))
        return
    for view_name, (_, text) in chosen.items():
        click.echo(transpile(text, dialect or "duckdb"))
