"""`tracewh snapshot`: the table versions that make the warehouse's newest consistent state."""

import json

import click

from .options import pass_warehouse


@click.command()
@pass_warehouse
def snapshot(warehouse):
    """Print the Delta version of every table in the newest consistent snapshot, as JSON.

    Engines that read the tables directly see each table's newest version; reading each at
    these versions gives exactly what tracewh queries see: every trace whole, none being
    committed, never both sides of a --replace.

    \b
    Examples:
      polars:  pl.scan_delta("wh/kernels", version=versions["kernels"])
      Spark:   spark.read.format("delta").option("versionAsOf", v).load("wh/kernels")
    """
    state = warehouse.snapshot
    click.echo(json.dumps({"seq": state.seq, "versions": dict(sorted(state.versions.items()))},
                          indent=1))
