"""The `tracewh` command line: a thin click layer over the library.

Each command parses its options, calls one library function and prints. Errors a user can cause
arrive as TracewhError and are printed as one line, `error: ...`, with exit status 2.
"""

import os
import shutil
import sys
from collections import defaultdict

import click

from ingest.pipeline import IngestOptions, ingest_paths
from ingest.schema import PARTITION_COLUMNS, TABLES
from ingest.sources import expand_inputs

from . import output
from .catalog import Catalog, default_location
from .errors import TracewhError, UsageError
from .names import check_name, parse_tag
from .diff import KEYS, DiffOptions, diff_runs, render_diff, trend
from .query import connect, library, query_warehouse, transpile

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(output.FORMATS),
                             default="table", show_default=True, help="Output format.")


RULES_OPTION = click.option(
    "--rules", type=click.Path(exists=True, dir_okay=False),
    help="TOML file of kernel classification rules, tried before the defaults "
         "(see sql/kernel_rules.toml).")


class TracewhGroup(click.Group):
    """Turns TracewhError into one line on stderr and an exit status, without a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TracewhError as error:
            click.echo(f"error: {error}", err=True)
            ctx.exit(error.exit_code)


@click.group(cls=TracewhGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--warehouse", "warehouse_dir", type=click.Path(file_okay=False),
              help="Warehouse directory [default: $TRACEWH_WAREHOUSE, else ./warehouse].")
@click.version_option(package_name="tracewh")
@click.pass_context
def cli(ctx, warehouse_dir):
    """tracewh: a columnar trace warehouse with SQL for PyTorch Profiler (Kineto) traces.

    \b
    Typical session:
      tracewh ingest traces/run42/ --run run42 --phase train
      tracewh runs
      tracewh query "SELECT * FROM overlap"
      tracewh views             # the SQL library: overlap, kernel_stats, gpu_idle...
      tracewh tables            # what every table and column means
      tracewh diff run41 run42 --fail-on-regression
      tracewh trend overlap_ratio --last 30
    """
    ctx.obj = Catalog(warehouse_dir or default_location())


def _echo(text, out_path=None):
    if out_path:
        with open(out_path, "w") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--run", help="Run name [default: the input's directory name].")
@click.option("--phase", help="Phase: train, prefill, decode... [default: from the file name, "
                              "else unknown].")
@click.option("--rank", type=click.IntRange(min=0),
              help="Rank [default: distributedInfo.rank, else a number in the file name "
                   "(rank-3, worker3), else 0].")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE",
              help="Tag stored with the run (git sha, model, config); repeatable.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default=True, help="Worker processes.")
@click.option("--replace", is_flag=True,
              help="Replace what the run/phase/rank already holds.")
@click.option("--strict", is_flag=True, help="Stop at the first file that fails.")
@click.option("--keep-secrets", is_flag=True,
              help="Do not redact metadata values that look like secrets.")
@click.pass_obj
def ingest(catalog, paths, run, phase, rank, tags, jobs, replace, strict, keep_secrets):
    """Ingest trace files into the warehouse.

    PATHS are files (.json, .json.gz, .pt.trace.json[.gz]), directories (every trace under
    them) or globs. Both Chrome forms are accepted: an object with traceEvents, and a bare
    array of events. Re-ingesting a file already in its run/phase/rank does nothing.

    \b
    Examples:
      tracewh ingest worker*.pt.trace.json.gz --run nightly-2026-11-29 --phase train
      tracewh ingest traces/ --tag git=3f2a1c --tag model=dsv3 --jobs 4
    """
    options = IngestOptions(
        run=check_name("run", run) if run is not None else None,
        phase=check_name("phase", phase) if phase is not None else None,
        rank=rank, tags=dict(parse_tag(t) for t in tags), replace=replace, strict=strict,
        keep_secrets=keep_secrets, jobs=jobs)
    files = expand_inputs(paths)
    show_bar = sys.stderr.isatty() and len(files) > 1
    with click.progressbar(length=len(files), label="ingesting", file=sys.stderr,
                           hidden=not show_bar) as bar:
        outcomes = ingest_paths(catalog, files, options, on_done=lambda _: bar.update(1))
    failed = _report_ingest(outcomes)
    if failed:
        sys.exit(2)


def _report_ingest(outcomes):
    """Print a line per failed or unchanged file and a summary per run; return #failures."""
    by_run = defaultdict(lambda: {"files": 0, "events": 0, "bytes": 0, "seconds": 0.0,
                                  "unchanged": 0})
    failed = 0
    for outcome in outcomes:
        if outcome.status == "failed":
            failed += 1
            click.echo(f"error: {outcome.error}", err=True)
            continue
        summary = by_run[outcome.run]
        if outcome.status == "unchanged":
            summary["unchanged"] += 1
            click.echo(f"unchanged: {outcome.path} is already in run {outcome.run}, phase "
                       f"{outcome.phase}, rank {outcome.rank}", err=True)
            continue
        summary["files"] += 1
        summary["events"] += outcome.events
        summary["bytes"] += outcome.bytes
        summary["seconds"] += outcome.seconds
        for warning in outcome.warnings:
            click.echo(f"warning: {outcome.path}: {warning}", err=True)
    for run, s in by_run.items():
        line = (f"run {run}: {s['files']} file{'s' if s['files'] != 1 else ''} ingested, "
                f"{s['events']:,} events, {s['bytes'] / 1e6:.1f} MB, {s['seconds']:.1f} s")
        if s["unchanged"]:
            line += f" ({s['unchanged']} unchanged)"
        click.echo(line)
    if failed:
        click.echo(f"{failed} file{'s' if failed != 1 else ''} failed; nothing was written "
                   "for them", err=True)
    return failed


@cli.command()
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
    _echo(output.render(columns, rows, fmt), out_path)


@cli.command()
@FORMAT_OPTION
@click.pass_obj
def runs(catalog, fmt):
    """List the runs: phases, ranks, files, events and tags."""
    columns, rows = query_warehouse(catalog.root, "SELECT * FROM runs ORDER BY first_seq")
    _echo(output.render(columns, rows, fmt))


@cli.command()
@click.argument("name", required=False)
@click.pass_obj
def tables(catalog, name):
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


@cli.command()
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


@cli.command()
@click.argument("base")
@click.argument("new")
@click.option("--phase", help="Compare this phase only.")
@click.option("--rank", type=click.IntRange(min=0), help="Compare this rank only.")
@click.option("--threshold", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Percent a kernel's total time (or a metric) must move to count; for "
                   "overlap_ratio, percentage points.")
@click.option("--min-ns", type=click.IntRange(min=0), default=10000, show_default=True,
              help="Noise floor: smaller moves in ns never count.")
@click.option("--by", type=click.Choice(KEYS), default="name", show_default=True,
              help="Match kernels by full name, by short name (other builds, other hardware) "
                   "or compare classes.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]),
              default="table", show_default=True, help="json is the contract for scripts; "
                                                       "markdown reads well in a PR comment.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a kernel or a metric regressed.")
@RULES_OPTION
@click.pass_obj
def diff(catalog, base, new, phase, rank, threshold, min_ns, by, fmt, fail_on_regression,
         rules):
    """Compare run NEW against run BASE: kernels and metrics that got slower or faster.

    Per kernel: count, total, mean, p50, p90 on both sides, delta and a status (added,
    removed, regressed, improved, unchanged). Per phase and rank: overlap_ratio,
    exposed_comm_ns, step_time_ns and gpu_idle_ns. Runs with different numbers of ranks are
    compared by per-rank medians. Exit status: 0 no regression (or no --fail-on-regression),
    1 a regression, 2 a usage or input error.

    \b
    Nightly gate:
      tracewh diff nightly-1128 nightly-1129 --fail-on-regression --format markdown > diff.md
    """
    options = DiffOptions(phase=phase, rank=rank, threshold_pct=threshold, min_ns=min_ns, by=by)
    report = diff_runs(connect(catalog.root, rules), base, new, options)
    _echo(render_diff(report, fmt))
    if fail_on_regression and report["summary"]["regression"]:
        sys.exit(1)


@cli.command(name="trend")
@click.argument("metric")
@click.option("--last", type=click.IntRange(min=1), help="Only the last N runs.")
@click.option("--tag", metavar="KEY=VALUE", help="Only runs with this tag.")
@click.option("--order-by-tag", metavar="KEY",
              help="Order runs by this tag's value (a nightly date, say) instead of ingest "
                   "order.")
@click.option("--phase", help="This phase only.")
@FORMAT_OPTION
@click.pass_obj
def trend_command(catalog, metric, last, tag, order_by_tag, phase, fmt):
    """Follow METRIC across runs: drift over many nights, not just two.

    METRIC is overlap_ratio, exposed_comm_ns, step_time_ns, gpu_idle_ns, or kernel:NAME (a
    kernel's total time, by full or short name). One row per run and phase: the median over
    ranks, with the min and max.

    \b
    Examples:
      tracewh trend overlap_ratio --last 30
      tracewh trend kernel:ncclDevKernel_AllReduce_Sum_f32_RING_LL --order-by-tag date
    """
    columns, rows = trend(connect(catalog.root), metric, last=last,
                          tag=parse_tag(tag) if tag else None, order_by_tag=order_by_tag,
                          phase=phase)
    _echo(output.render(columns, rows, fmt))


def main():
    cli(prog_name="tracewh")
