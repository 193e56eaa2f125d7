"""`tracewh vacuum` and `tracewh optimize`: deleting retired files, merging small ones."""

import click

from .. import maintenance
from ..names import check_name


@click.command()
@click.option("--retain", "retain_hours", type=click.IntRange(min=0),
              default=maintenance.DEFAULT_RETAIN_HOURS, show_default=True, metavar="HOURS",
              help="Keep files retired less than HOURS ago: queries and other engines still "
                   "reading an older snapshot need them.")
@click.pass_obj
def vacuum(catalog, retain_hours):
    """Delete the files no current snapshot reads.

    A --replace, an optimize or an interrupted ingest retires files without deleting them,
    so that readers of the snapshot before it (a running query, a Spark job) go on; this
    deletes those retired more than HOURS ago, and files of ingests killed before their
    commit. Delta's own VACUUM, for every table.
    """
    catalog.check_readable()
    result = maintenance.vacuum(catalog, retain_hours)
    click.echo(f"deleted {result.files:,} files ({result.bytes / 1e6:,.1f} MB) retired more "
               f"than {retain_hours} h ago")


@click.command()
@click.option("--run", help="Optimize this run only [default: all runs].")
@click.pass_obj
def optimize(catalog, run):
    """Merge each trace's small files into few large ones.

    A large trace is written one file per chunk of events; this merges them, per table and
    trace, into files of up to 128 MB. Rows and their order are unchanged; the files merged
    stay on disk for readers of older snapshots until `tracewh vacuum`.
    """
    catalog.check_readable()
    result = maintenance.optimize(catalog, check_name("run", run) if run else None)
    click.echo(f"merged {result.files_removed:,} files into {result.files_added:,} "
               f"in {result.tables} table{'' if result.tables == 1 else 's'}")
