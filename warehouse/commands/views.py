"""`tracewh views`: the SQL library, listed, printed in a dialect, or as a runnable script."""

import shutil

import click

from ..dialects import DIALECTS, script, script_text, transpile
from ..errors import UsageError
from ..query import library
from ..rules import effective_rules
from .options import RULES_OPTION


@click.command()
@click.argument("name", required=False)
@click.option("--dialect", type=click.Choice(DIALECTS),
              help="Print the views' SQL, transpiled to this dialect by sqlglot.")
@click.option("--script", "as_script", is_flag=True,
              help="Print one runnable script (duckdb or spark) that defines the warehouse's "
                   "tables at its newest snapshot, the rules table, then every view and "
                   "macro in dependency order.")
@RULES_OPTION
@click.pass_obj
def views(catalog, name, dialect, as_script, rules):
    """List the SQL library's views with their descriptions (or print their SQL).

    Spark gets temporary views, and SQL table functions for the table macros (Spark 4);
    percentiles stay exact in every dialect (the nearest-rank value, never an approximation).

    \b
    Examples:
      tracewh views                       # name and purpose of every view
      tracewh views overlap --dialect trino
      tracewh views --dialect spark --script > tracewh.sql && spark-sql -f tracewh.sql
      tracewh views --dialect duckdb --script | duckdb
    """
    modules = library()
    if name is not None and name not in modules:
        raise UsageError(f"no view {name!r}; views: {', '.join(modules)}")
    if as_script:
        if name is not None or dialect is None:
            raise UsageError("--script prints the whole library: give --dialect duckdb or "
                             "spark, and no view name")
        catalog.check_readable()
        root = catalog.root.resolve()
        click.echo(script_text(script(dialect, catalog.snapshot(), root,
                                      effective_rules(root, rules))), nl=False)
        return
    chosen = {name: modules[name]} if name else modules
    if dialect is None and name is None:
        width = shutil.get_terminal_size((100, 24)).columns
        for view_name, (description, _) in chosen.items():
            line = f"{view_name:<24} {description}"
            click.echo(line if len(line) <= width else line[: width - 1] + "…")
        return
    for view_name, (_, text) in chosen.items():
        click.echo(transpile(text, dialect or "duckdb"))
