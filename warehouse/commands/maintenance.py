"""`tracewh vacuum`, `optimize` and `refresh`: deleting retired files, merging small ones,
deriving the marts and the DuckDB file again."""

import click

from .. import maintenance
from ..catalog import STATE_DIR
from ..derived import refresh_derived
from ..duckdb_file import FILE_NAME
from ..integrity import check_counts
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


@click.command()
@click.pass_obj
def refresh(catalog):
    """Bring the marts and tracewh.duckdb up to date with the tables.

    Every ingest, optimize and vacuum does this itself, for the runs it changed: run it after
    editing the warehouse's kernel rules (_tracewh/kernel_rules.toml), which every mart's
    classes follow, or after a command was killed before it was done. It checks the tables'
    logs against the traces they hold, rebuilds a damaged tracewh.duckdb, and recreates a
    deleted _tracewh/.
    """
    if catalog.restore_state():
        click.echo(f"recreated {STATE_DIR}/, which was gone (the kernel rules it held, if any, "
                   f"must be put back as {STATE_DIR}/kernel_rules.toml)", err=True)
    catalog.check_readable()
    check_counts(catalog.root, catalog.snapshot())
    result = refresh_derived(catalog)
    if result.up_to_date:
        click.echo(f"up to date: marts/ and {FILE_NAME} were derived from the newest snapshot")
        return
    runs = len(result.runs)
    click.echo(f"recomputed the marts of {runs:,} run{'' if runs == 1 else 's'} in "
               f"{result.marts_seconds:.2f} s; wrote {FILE_NAME} in {result.file_seconds:.2f} s")
