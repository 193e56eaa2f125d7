"""`tracewh ingest`: trace files into the warehouse."""

import contextlib
import json
import os
import sys
import time
from collections import defaultdict

import click

from tracewh.ingest.jobs import mixed_job_warnings
from tracewh.ingest.pipeline import ingest_options
from tracewh.ingest.reader import MAX_EVENT_SIZE, format_size
from tracewh.ingest.sources import (GZIP_LIMIT_FLOOR, GZIP_RATIO_LIMIT, expand_inputs,
                                    input_size)

from ..cli import STARTED
from ..errors import escaped, printable
from ..storage.names import RANK_MAX, parse_tag
from .options import (ByteSize, exit_after_follow_up, pass_warehouse, phase_option,
                      work_then_follow_up)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--run", help="Run name [default: the input's directory name].")
@phase_option("Phase: train, prefill, decode... (stored lower-case) [default: a phase word "
              "of the file name, else unknown].")
@click.option("--rank", type=int,  # checked by ingest_options, as the API's
              help=f"Rank, 0..{RANK_MAX} [default: distributedInfo.rank, else a number in "
                   "the file name (rank-3, worker3), else 0].")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE",
              help="Tag stored with the run (git sha, model, config); repeatable.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default=True, help="Worker processes (for one large file: threads).")
@click.option("--replace", is_flag=True,
              help="Replace what the run/phase/rank already holds.")
@click.option("--strict", is_flag=True,
              help="Stop at the first file that fails: files not committed by then are skipped.")
@click.option("--keep-secrets", is_flag=True,
              help="Do not redact values that look like secrets (in metadata and events).")
@click.option("--max-event-size", type=ByteSize(), default=MAX_EVENT_SIZE,
              envvar="TRACEWH_MAX_EVENT_SIZE",
              help="Refuse a file with an event or top-level value larger than this "
                   f"[default: {format_size(MAX_EVENT_SIZE)}; env TRACEWH_MAX_EVENT_SIZE].")
@click.option("--max-json-size", type=ByteSize(), envvar="TRACEWH_MAX_JSON_SIZE",
              help="Refuse a file holding more JSON text than this, decompressed [default: "
                   f"{GZIP_RATIO_LIMIT}x a gzipped file's size, at least "
                   f"{format_size(GZIP_LIMIT_FLOOR)}; none for plain files; env "
                   "TRACEWH_MAX_JSON_SIZE].")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              show_default=True,
              help="Where files are decoded: tracewh's own worker processes (--jobs), or Ray "
                   "tasks writing straight into the warehouse, committed at once (the ray "
                   "extra).")
@click.option("--address", help="With --engine ray: the Ray cluster to join [default: start "
                                "a local Ray on this machine's cores, stopped at the end].")
@click.option("--txn-id", metavar="ID[:N]",
              help="With --engine ray: the ingest's transaction (Delta txn app id, version N "
                   "or 0): a run again with the same ID, or an N not above the one "
                   "committed, commits nothing [default: a new one].")
@pass_warehouse
def ingest(warehouse, paths, run, phase, rank, tags, jobs, replace, strict, keep_secrets,
           max_event_size, max_json_size, engine, address, txn_id):
    """Ingest trace files into the warehouse.

    PATHS are files (.json, .json.gz, .pt.trace.json[.gz]), directories (every trace under
    them), globs, or s3://BUCKET/KEY URLs (an object, every trace object under the prefix,
    or the objects a glob in KEY matches, as a local glob would; credentials from the AWS
    variables, as for the warehouse). Both Chrome forms are
    accepted: an object with traceEvents, and a bare array of events. Re-ingesting a file already in its run/phase/rank does nothing (with other
    --tag values it is an error: --replace re-ingests it with them).

    Name runs with --run: the default, the input's directory name, puts every trace under one
    directory (and directories of the same name) into one run, whose figures then add up as
    one job's. A warning says when traces of one ingest look like different jobs (world sizes,
    devices, start times days apart).

    \b
    Examples:
      tracewh ingest worker*.pt.trace.json.gz --run nightly-2026-11-29 --phase train
      tracewh ingest traces/ --tag git=3f2a1c --tag model=dsv3 --jobs 4
      tracewh --warehouse s3://team/traces ingest traces/ --engine ray --address auto
    """
    options = ingest_options(run, phase, rank, dict(parse_tag(t) for t in tags), replace,
                             strict, keep_secrets, jobs, max_event_size=max_event_size,
                             max_json_size=max_json_size)
    if engine == "local" and (address or txn_id):
        raise click.UsageError("--address and --txn-id go with --engine ray")
    warehouse.writable()  # before reading what may be thousands of paths
    files = expand_inputs(paths)
    with _progress(files, engine) as progress, _engine(engine, address) as running:
        outcomes, follow_up = work_then_follow_up(
            lambda: warehouse.ingest_files(files, options, **progress, engine=running,
                                           transaction=_transaction(running, txn_id)))
    started = click.get_current_context().meta.get(STARTED)
    failed = _report_ingest(outcomes, options.tags,
                            None if started is None else time.monotonic() - started)
    for line in mixed_job_warnings(outcomes, run_given=run is not None, run_option="--run"):
        click.echo(f"warning: {escaped(line)}", err=True)
    exit_after_follow_up(follow_up, failed)


# A single file at least this large shows a bar of its bytes (on a terminal).
BYTE_BAR_MIN = 16 << 20


@contextlib.contextmanager
def _engine(name, address):
    """The engine (tracewh.ingest.engines) that decodes the files, None for tracewh's own
    workers: Ray is imported only here."""
    if name == "local":
        yield None
        return
    from tracewh.ingest.engines import engine

    with engine(name, address) as running:
        yield running


def _transaction(running, txn_id):
    if running is None:
        return None
    from tracewh.ingest.distributed import new_transaction

    return new_transaction(txn_id)


@contextlib.contextmanager
def _progress(files, engine="local"):
    """The progress callbacks of ingest_paths, drawing on stderr when it is a terminal: a bar
    of files for several, a bar of bytes for one large file (not with an engine, whose
    workers report no bytes)."""
    terminal = sys.stderr.isatty()
    size = input_size(files[0]) if len(files) == 1 and engine == "local" else 0
    if size >= BYTE_BAR_MIN:
        label = f"ingesting {printable(files[0].name)} ({size / 1e6:,.0f} MB)"
        with click.progressbar(length=size, file=sys.stderr, hidden=not terminal,
                               label=label) as bar:
            yield {"on_bytes": lambda _path, done: bar.update(done - bar.pos)}
        return
    with click.progressbar(length=len(files), label="ingesting", file=sys.stderr,
                           hidden=not terminal or len(files) == 1) as bar:
        yield {"on_done": lambda _outcome: bar.update(1)}


def _report_ingest(outcomes, tags, seconds):
    """Print a line per failed or unchanged file, a summary per run and the count of files
    skipped after a failure (--strict); return #failures. An unchanged file stored with other
    tags than `tags` is a failure: the tags were not applied. `seconds`: the command's wall
    time so far (reading, committing and the refresh after), said once."""
    by_run = defaultdict(lambda: {"files": 0, "events": 0, "bytes": 0, "unchanged": 0})
    failed = skipped = 0
    for outcome in outcomes:
        if outcome.status == "failed":
            failed += 1
            click.echo(f"error: {outcome.cli_error or outcome.error}", err=True)
            continue
        if outcome.status == "skipped":
            skipped += 1
            continue
        if outcome.status == "unchanged" and tags and outcome.tags != tags:
            failed += 1
            click.echo(f"error: {outcome.path}: --tag not applied: the file is already in run "
                       f"{outcome.run}, phase {outcome.phase}, rank {outcome.rank} with tags "
                       f"{json.dumps(outcome.tags, sort_keys=True)}; --replace re-ingests it "
                       "with the new tags", err=True)
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
        for warning in outcome.warnings:
            click.echo(f"warning: {outcome.path}: {escaped(warning)}", err=True)
    for index, (run, s) in enumerate(by_run.items()):
        line = (f"run {run}: {s['files']} file{'s' if s['files'] != 1 else ''} ingested, "
                f"{s['events']:,} events, {s['bytes'] / 1e6:.1f} MB")
        if seconds is not None and index == len(by_run) - 1:
            line += f", {seconds:.1f} s" + (" in all" if len(by_run) > 1 else "")
        if s["unchanged"]:
            line += f" ({s['unchanged']} unchanged)"
        click.echo(line)
    if failed:
        click.echo(f"{failed} file{'s' if failed != 1 else ''} failed; nothing was written "
                   "for them", err=True)
    if skipped:
        click.echo(f"{skipped} file{'s' if skipped != 1 else ''} skipped: --strict stops at "
                   "the first failure; nothing was written for them", err=True)
    return failed
