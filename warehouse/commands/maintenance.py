"""`tracewh vacuum`, `optimize`, `refresh`, `delete` and `repair`: deleting retired files,
merging small ones, deriving the marts and the DuckDB file again, removing a run, removing what
no command can read."""

import sys

import click

from ..derived import maintenance
from ..storage.catalog import STATE_DIR
from ..derived import refresh_derived
from ..derived.duckdb_file import FILE_NAME, write_duckdb_file
from ..rules import effective_rules
from ..errors import printable
from ..storage.integrity import check_counts, check_files
from ..storage.names import check_name
from .options import exit_after_follow_up, pass_warehouse, phase_option, work_then_follow_up


@click.command()
@click.option("--retain", "retain_hours", type=click.IntRange(min=0),
              default=maintenance.DEFAULT_RETAIN_HOURS, show_default=True, metavar="HOURS",
              help="Keep files retired less than HOURS ago: queries and other engines still "
                   "reading an older snapshot need them.")
@click.option("--retain-uncommitted", "uncommitted_hours", type=click.IntRange(min=0),
              default=maintenance.DEFAULT_UNCOMMITTED_HOURS, show_default=True,
              metavar="HOURS",
              help="Keep files that no commit names written less than HOURS ago: an ingest "
                   "still in flight writes its files before it commits them.")
@pass_warehouse
def vacuum(warehouse, retain_hours, uncommitted_hours):
    """Delete the files no current snapshot reads.

    A --replace, an optimize or an interrupted ingest retires files without deleting them,
    so that readers of the snapshot before it (a running query, a Spark job) go on; this
    deletes those retired more than HOURS ago, and files of ingests killed before their
    commit, once older than --retain-uncommitted. Delta's own VACUUM, for every table; on
    an object store too, with no lock (see docs/object-storage.md).
    """
    catalog = warehouse.readable()
    result, follow_up = work_then_follow_up(lambda: maintenance.vacuum(catalog, retain_hours,
                                                                  uncommitted_hours))
    click.echo(f"deleted {result.files:,} files ({result.bytes / 1e6:,.1f} MB) retired more "
               f"than {retain_hours} h ago")
    exit_after_follow_up(follow_up)


@click.command()
@click.option("--run", help="Optimize this run only [default: all runs].")
@pass_warehouse
def optimize(warehouse, run):
    """Merge each trace's small files into few large ones.

    A large trace is written one file per chunk of events; this merges them, per table and
    trace, into files of up to 128 MB. Rows and their order are unchanged; the files merged
    stay on disk for readers of older snapshots until `tracewh vacuum`.
    """
    catalog = warehouse.readable()
    result, follow_up = work_then_follow_up(
        lambda: maintenance.optimize(catalog, check_name("run", run) if run else None))
    click.echo(f"merged {result.files_removed:,} files into {result.files_added:,} "
               f"in {result.tables} table{'' if result.tables == 1 else 's'}")
    exit_after_follow_up(follow_up)


@click.command()
@click.option("--duckdb-file", "duckdb_file", metavar="PATH",
              type=click.Path(dir_okay=False, writable=True, resolve_path=True),
              help="Also write a DuckDB database file for BI tools at PATH, on this machine. "
                   "An object store's warehouse keeps none in its bucket: this one reads local "
                   "copies of the snapshot's files, downloaded now; it stores no credential.")
@pass_warehouse
def refresh(warehouse, duckdb_file):
    """Bring the marts and tracewh.duckdb up to date with the tables.

    Every ingest, optimize and vacuum does this itself, for the runs it changed: run it after
    editing the warehouse's kernel rules (_tracewh/kernel_rules.toml), which every mart's
    classes follow, or after a command was killed before it was done. It checks the tables'
    logs against the traces they hold and every file's bytes against the sha256 its commit
    recorded, makes a damaged mart again, rebuilds a damaged tracewh.duckdb, and recreates a
    deleted _tracewh/. On an object store it writes the marts in the bucket, and no
    tracewh.duckdb but the one --duckdb-file asks for.
    """
    if warehouse.catalog.restore_state():
        click.echo(f"recreated {STATE_DIR}/, which was gone (the kernel rules it held, if any, "
                   f"must be put back as {STATE_DIR}/kernel_rules.toml)", err=True)
    check_counts(warehouse.readable().root, warehouse.snapshot)
    check_files(warehouse.catalog.root, warehouse.snapshot)
    result = refresh_derived(warehouse.catalog, verify=True)
    for name, (file, problem) in result.remade.items():
        click.echo(f"{printable(file)}: {problem}: mart {name} made again", err=True)
    local = warehouse.catalog.store.local
    if result.up_to_date:
        click.echo(f"up to date: marts/{f' and {FILE_NAME}' if local else ''} were derived "
                   "from the newest snapshot")
    else:
        runs = len(result.runs)
        click.echo(f"recomputed the marts of {runs:,} run{'' if runs == 1 else 's'} in "
                   f"{result.marts_seconds:.2f} s"
                   + (f"; wrote {FILE_NAME} in {result.file_seconds:.2f} s" if local else ""))
    if duckdb_file is not None:
        catalog = warehouse.catalog
        write_duckdb_file(catalog, catalog.snapshot(), effective_rules(catalog.root),
                          duckdb_file)
        click.echo(f"wrote {printable(duckdb_file)}")


@click.command()
@click.argument("run")
@phase_option("Delete this phase of the run only [default: every phase].")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation on a terminal.")
@pass_warehouse
def delete(warehouse, run, phase, yes):
    """Remove a run (or one phase of it) from every table and mart.

    One commit per table removes its files from the snapshot: queries, marts and
    tracewh.duckdb no longer see the run. The files stay on disk for readers of older
    snapshots until `tracewh vacuum`. On a terminal it asks first, unless --yes; in a script
    (no terminal) it does not ask.

    \b
    Examples:
      tracewh delete mixed-up-run
      tracewh delete nightly-2026-11-29 --phase eval --yes
    """
    catalog = warehouse.readable()
    run = check_name("run", run)
    what = f"run {run}" + (f", phase {phase}" if phase else "")
    if not yes and on_terminal():
        click.confirm(f"delete {what} from {printable(catalog.root)}?", abort=True, err=True)
    result, follow_up = work_then_follow_up(lambda: maintenance.delete(catalog, run, phase))
    click.echo(f"deleted {what}: {result.traces:,} capture{'' if result.traces == 1 else 's'}, "
               f"{result.files:,} files removed from {result.tables} tables (on disk until "
               "`tracewh vacuum`)")
    exit_after_follow_up(follow_up)


def on_terminal():
    """Whether a person may be there to answer (stdin is a terminal)."""
    return sys.stdin.isatty()


@click.command()
@pass_warehouse
def repair(warehouse):
    """Remove the traces filed under a rank Delta cannot read.

    An earlier tracewh accepted ranks beyond 2147483647 (from --rank or a number in the file
    name) and committed them as partition values that Delta cannot parse: every command then
    fails on the table, saying so. This removes those traces (every other stays as it was)
    and says which files to ingest again, with --rank.
    """
    catalog = warehouse.readable()
    result, follow_up = work_then_follow_up(lambda: maintenance.repair(catalog))
    if not result.traces:
        click.echo("nothing to repair: Delta can read every partition value")
        return
    for trace in result.traces:
        source = f" (from {printable(trace.source_path)})" if trace.source_path else ""
        click.echo(f"removed trace {trace.trace_id} of run {printable(trace.run)}, phase "
                   f"{printable(trace.phase)}, "
                   f"rank {trace.rank!r}{source}: {trace.files} file"
                   f"{'' if trace.files == 1 else 's'}; ingest it again with --rank")
    count = len(result.traces)
    click.echo(f"repaired: {count} trace{'' if count == 1 else 's'} removed from "
               f"{result.tables} table{'' if result.tables == 1 else 's'}; their files stay "
               "on disk until `tracewh vacuum`")
    exit_after_follow_up(follow_up)
