"""`tracewh tables`: what every table and column means."""

import click

from ..errors import UsageError
from ..storage.schema import PARTITION_COLUMNS, TABLES


@click.command()
@click.argument("name", required=False)
def tables(name):
    """Describe the tables and their columns (or one table, NAME)."""
    chosen = [TABLES[name]] if name in TABLES else list(TABLES.values())
    if name and name not in TABLES:
        raise UsageError(f"no table {name!r}; tables: {', '.join(TABLES)}")
    for table in chosen:
        click.echo(f"{table.name}: {table.doc}")
        for column_name, typ, doc in PARTITION_COLUMNS:
            click.echo(f"  {column_name:<22} {str(typ):<14} {doc}")
        for column in table.columns:
            click.echo(f"  {column.name:<22} {str(column.type):<14} {column.doc}")
        click.echo("")
