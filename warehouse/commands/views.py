"""`tracewh views`: the SQL library, listed or printed in a dialect."""

import shutil

import click

from ..errors import UsageError
from ..query import library, transpile


@click.command()
@click.argument("name", required=False)
@click.option("--dialect", type=click.Choice(["duckdb", "spark", "trino"]),
              help="Print the views' SQL, transpiled to this dialect by sqlglot.")
def views(name, dialect):
    """List the SQL library's views with their descriptions (or print their SQL).

    \b
    Examples:
      tracewh views                       # name and purpose of every view
      tracewh views overlap --dialect duckdb
      tracewh views --dialect spark > tracewh_views.sql
    """
    modules = library()
    if name is not None and name not in modules:
        raise UsageError(f"no view {name!r}; views: {', '.join(modules)}")
    chosen = {name: modules[name]} if name else modules
    if dialect is None and name is None:
        width = shutil.get_terminal_size((100, 24)).columns
        for view_name, (description, _) in chosen.items():
            line = f"{view_name:<24} {description}"
            click.echo(line if len(line) <= width else line[: width - 1] + "…")
        return
    for view_name, (_, text) in chosen.items():
        click.echo(transpile(text, dialect or "duckdb"))
