"""An ingest whose files are decoded by an engine's workers (see `engines`), on this machine or
a cluster's, which write the Parquet straight into the warehouse's storage.

Each job stages one file as the in-process path does (the same pipeline, in one process),
then writes its parts into their partitions under the names the in-process commit gives them
(`<table>/run=/phase=/rank=/<trace_id>-<part>.parquet`), and returns the file's IngestOutcome
and a WrittenTrace: its DataFiles (path, size, rows, sha256, partition values) and the schema
read back from each table's file. This process, the driver, commits them all at once
(`storage.batch`): one commit per table, `traces` last with the ingest's Delta transaction,
so a driver run again with the same transaction id commits nothing twice. A job whose worker
died is run again by the engine, under a new trace id: the files the dead attempt wrote are
named by no commit, and `vacuum` removes them.
"""

import os
import signal
import uuid

from tracewh.storage.batch import Transaction, commit_written, discard_written, write_trace
from tracewh.storage.catalog import Catalog

from .pipeline import IngestOutcome, _Committer, _stage_file, _unchanged

# Tests only: a directory, whose first job to see it marks it and kills its own worker
# (SIGKILL), as a machine lost mid-task would; the engine runs the job again.
KILL_FIRST_JOB = "TRACEWH_TEST_KILL_FIRST_JOB"


def new_transaction(name=None):
    """The ingest's transaction: `name` (APP or APP:VERSION, given again by a driver run
    again), or a new one of its own."""
    if name is None:
        return Transaction(f"tracewh-ingest:{uuid.uuid4().hex}")
    app, _, version = name.rpartition(":")
    if app and version.isdigit():
        return Transaction(f"tracewh-ingest:{app}", int(version))
    return Transaction(f"tracewh-ingest:{name}")


def decode_job(root, path, options, kill_marker=None):
    """Stage the file `path` and write its parts into the warehouse at `root`: (IngestOutcome,
    WrittenTrace), or (the failed IngestOutcome, None). Runs in an engine's worker."""
    catalog = Catalog(root)
    staged = _stage_file(catalog, path, options)
    if isinstance(staged, IngestOutcome):
        return staged, None
    try:
        written = write_trace(catalog, staged.trace, staged.staging)
    finally:
        staged.discard()
    if kill_marker is not None:
        _die_first_time(kill_marker)
    return staged.outcome, written


def _die_first_time(marker):
    try:
        os.close(os.open(os.path.join(marker, "killed"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


def ingest_with_engine(catalog, paths, options, engine, transaction=None, on_done=None):
    """Ingest every path, each decoded by a job of `engine`, committed here at once; return
    their outcomes in input order. `on_done(outcome)` as each job finishes (its status is
    final once this returns). With `options.strict`, one failure commits nothing: the other
    files are `skipped`."""
    transaction = transaction or new_transaction()
    with catalog.locked():  # every table exists, an interrupted commit is undone
        replace_up_to = catalog.snapshot().seq
    committer = _Committer(catalog, options, replace_up_to)
    outcomes = [committer.known(path) for path in paths]
    todo = [index for index, known in enumerate(outcomes) if known is None]
    for known in filter(None, outcomes):
        if on_done:
            on_done(known)
    written = {}
    kill_marker = os.environ.get(KILL_FIRST_JOB)
    jobs = [(catalog.root, paths[index], options, kill_marker) for index in todo]
    for position, (outcome, trace) in engine.map(decode_job, jobs):
        index = todo[position]
        outcomes[index] = outcome
        if trace is not None:
            written[index] = trace
        if on_done:
            on_done(outcome)
    if options.strict and any(outcome.status == "failed" for outcome in outcomes):
        discard_written(catalog, written.values())
        for index in written:
            outcomes[index] = IngestOutcome(outcomes[index].path, "skipped")
        return outcomes
    # in input order, as the in-process path numbers them (ingest_seq)
    results, _ = commit_written(catalog, [written[index] for index in sorted(written)],
                                transaction,
                                options.replace, replace_up_to)
    for index, trace in written.items():
        result = results[trace.staged.trace_id]
        if result.trace is not None:
            outcomes[index] = _unchanged(paths[index], result.trace)
        else:
            outcomes[index].status = result.status
    return outcomes
