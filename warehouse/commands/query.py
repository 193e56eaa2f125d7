"""`tracewh query` and `tracewh runs`: SQL over the warehouse."""

import click

from .. import output
from ..query import query_warehouse
from .options import FORMAT_OPTION, RULES_OPTION, echo


@click.command()
@click.argument("sql")
@FORMAT_OPTION
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the result to this file instead of stdout.")
@click.option("--allow-write", is_flag=True,
              help="Allow statements other than SELECT (COPY, ATTACH, INSTALL, SET...).")
@RULES_OPTION
@click.pass_obj
def query(catalog, sql, fmt, out_path, allow_write, rules):
    """Run SQL over every table and view; print the result.

    \b
    Examples:
      tracewh query "SELECT run, rank, count(*) FROM kernels GROUP BY ALL"
      tracewh query --format json "SELECT * FROM overlap" > overlap.json
    """
    columns, rows = query_warehouse(catalog.root, sql, rules, allow_write=allow_write)
    echo(output.render(columns, rows, fmt), out_path)


@click.command()
@FORMAT_OPTION
@click.pass_obj
def runs(catalog, fmt):
    """List the runs: phases, ranks, files, events and tags."""
    columns, rows = query_warehouse(catalog.root, "SELECT * FROM runs ORDER BY first_seq")
    echo(output.render(columns, rows, fmt))
