"""An ingest whose files are decoded by an engine's workers (see `engines`), on this machine or
a cluster's, which write the Parquet straight into the warehouse's storage.

A file up to the pipeline's large-file size is one job, which stages it as the in-process
path does (the same pipeline, in one process). A larger one is cut into chunks here, as the
in-process ingest's parent cuts it (reading and hashing every byte, the one pass that cannot
be shared), and each chunk is normalised by a job of its own (an uncompressed file's chunk
is read by the job itself, from the file), which writes its part files into the warehouse,
in the partition the trace is expected in (its run and phase, and the rank known before its
events: `expected_place`) under the names the commit gives them, and sends back its summary
and their sha256: only small files' bytes pass through the engine (SENT_BELOW_BYTES). One
more job reads the chunks' files back and measures the per-trace tables from them (`pipeline.finish_staging`, which
also rebases the times when the base time guessed was wrong, and merges small parts); it
writes what the chunks' files are not: the measured tables, merged and rebased parts under
part numbers of their own, and every part of a trace found to belong to another partition.
Either way the trace's last job returns the file's IngestOutcome and a WrittenTrace: its
DataFiles (path, size, rows, sha256, partition values), the schema read back from each
table's file, and the chunks' files it does not name (deleted once it is committed). This
process, the driver, commits them all at once (`storage.batch`): one commit per table,
`traces` last with the ingest's Delta transaction, so a driver run again with the same
transaction id commits nothing twice. A job whose worker died is run again by the engine: a
whole file's under a new trace id (the files the dead attempt wrote are named by no commit,
and `vacuum` removes them once older than its window for ingests in flight), a chunk's
under its trace's id (the same files written again), a large file's last job likewise,
reading the chunks' files as they were written (it never writes over one).
"""

import os
import signal
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tracewh.errors import TraceError
from tracewh.storage.batch import (Transaction, commit_written, discard_leftovers,
                                   discard_written, write_trace)
from tracewh.storage.catalog import Catalog, StagedTrace
from tracewh.storage.layout import staged_name

from . import identity
from .metadata import decode_metadata
from .pipeline import (IngestOutcome, StagedChunks, _check_unchanged, _Committer, _stage_file,
                       _unchanged, failed_outcome, finish_staging, is_large, open_reader,
                       process_chunk, staged_or_failed, start_trace)
from .reader import UnconfirmedChunk
from .sources import HashedTrace
from .writer import PartFiles

# The chunks of one file queued for an engine's workers at most, per worker: an uncompressed
# file's chunks are a few numbers each, a compressed one's carry 16 MB of JSON.
CHUNKS_QUEUED_PER_SLOT = 2

# A chunk's part file smaller than this is sent back with its summary rather than written
# into the warehouse: a table with few rows is most often merged by the trace's job, and a
# file written there is a PUT, a GET by that job and a DELETE once merged. The 64-rank bench's
# 32 MB ranks are cut into 4 chunks, whose 22 part files (3-110 KB) were 16 merged: written
# each, its 64 ranks took 1.09-1.18x as long to ingest into SeaweedFS as with each sent.
SENT_BELOW_BYTES = 256 << 10

# Tests only: a directory, whose first job to see it marks it and kills its own worker
# (SIGKILL), as a machine lost mid-task would; the engine runs the job again. The same for a
# large file's first chunk job, killed after writing its part files, before it returns.
KILL_FIRST_JOB = "TRACEWH_TEST_KILL_FIRST_JOB"
KILL_FIRST_CHUNK = "TRACEWH_TEST_KILL_FIRST_CHUNK"


@dataclass
class ChunkParts:
    """A chunk's part files as its job left them: written into the warehouse ({table: their
    sha256}), or, below SENT_BELOW_BYTES, sent back ({table: their bytes})."""

    stored: dict = field(default_factory=dict)
    sent: dict = field(default_factory=dict)

    def in_place(self, place, part):
        """{(table, path): sha256} of the files written, chunk number `part`'s, at `place`."""
        return {(name, place.part_path(part)): sha256 for name, sha256 in self.stored.items()}


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
    return _written(catalog, _stage_file(catalog, path, options), kill_marker)


def chunk_job(root, path, chunk, index, place, base_guess, redact_secrets, sent_below,
              kill_marker=None):
    """Normalise the chunk number `index` of a large file and write its part files into the
    warehouse at `root`, in the partition of `place` (a StagedTrace without parts: where the
    trace is expected) under the names its commit gives them, but for those smaller than
    `sent_below` bytes (SENT_BELOW_BYTES): (its ChunkSummary, its ChunkParts), or (None, the
    TraceError or UnconfirmedChunk it raised). Runs in an engine's worker; a job run again
    writes the same files again. `kill_marker`: tests only (KILL_FIRST_CHUNK)."""
    catalog = Catalog(root)
    with tempfile.TemporaryDirectory(prefix="tracewh-chunk-") as directory:
        directory = Path(directory)
        try:
            with PartFiles(directory, index) as files:
                summary = process_chunk(path, chunk, index, place.trace_id, files, base_guess,
                                        redact_secrets)
        except (TraceError, UnconfirmedChunk) as error:
            return None, error
        parts = ChunkParts()
        for name in summary.rows:
            source = directory / staged_name(name, index)
            if source.stat().st_size < sent_below:
                parts.sent[name] = source.read_bytes()
                continue
            data_file = place.data_file(name, index, source)
            catalog.prepare_partition(name, place)
            catalog.store.put_file(source, catalog.table_path(name) / data_file.path)
            parts.stored[name] = data_file.sha256
        if kill_marker is not None:
            _die_first_time(kill_marker)
        return summary, parts


def trace_job(root, path, options, start, read, place, kill_marker, *chunks):
    """Stage a large file from its chunks' results (chunk_job's, in file order: their part
    files are read back from the warehouse) and what reading it found (`read`: StagedChunks
    with its metadata, sha256 and size), then write its parts into the warehouse at `root`,
    but for the chunks' files that are its parts as they are: as decode_job; or (None, None)
    when a chunk cut unconfirmed was not what it seemed (the file is to be cut again,
    confirming each cut). The first failure in file order is the file's, as in the
    in-process ingest."""
    catalog = Catalog(root)
    in_place = {where: sha256 for summary, parts in chunks if summary is not None
                for where, sha256 in parts.in_place(place, summary.part).items()}
    failures = [failure for summary, failure in chunks if summary is None]
    if failures:
        _delete(catalog, in_place)
        if isinstance(failures[0], UnconfirmedChunk):
            return None, None
        return failed_outcome(catalog, path, failures[0]), None
    staged = staged_or_failed(catalog, path, _from_chunks, options, start, read, catalog,
                              place, chunks)
    if isinstance(staged, IngestOutcome):
        _delete(catalog, in_place)
    return _written(catalog, staged, kill_marker, in_place)


def _delete(catalog, in_place):
    """Delete the chunks' files of a trace that failed: nothing will commit them."""
    for name, relative in in_place:
        catalog.store.delete(catalog.table_path(name) / relative)


def _discard_chunks(engine, catalog, place, chunks):
    """Delete the files of the chunks of a file that failed while it was cut: each chunk's
    job (few are queued) is let finish, then what it wrote is deleted."""
    for handle in chunks:
        try:
            summary, parts = engine.result(handle)
        except Exception:  # noqa: BLE001 - the job's own failure, after the file's (the one
            continue  # reported): what it wrote, if anything, is vacuum's
        if summary is not None:
            _delete(catalog, parts.in_place(place, summary.part))


def _from_chunks(path, options, staging, start, read, catalog, place, chunks):
    """finish_staging of the chunks' part files, read back from the warehouse: the
    per-trace tables are measured from the whole trace's columns."""
    for summary, parts in chunks:
        for name in parts.stored:
            where = catalog.table_path(name) / place.part_path(summary.part)
            (staging / staged_name(name, summary.part)).write_bytes(
                catalog.store.read_bytes(where))
        for name, data in parts.sent.items():
            (staging / staged_name(name, summary.part)).write_bytes(data)
        read.add(summary)
    return finish_staging(path, options, staging, start, read)


def _written(catalog, staged, kill_marker, in_place=None):
    """(IngestOutcome, WrittenTrace) of a StagedFile written into its partitions (its
    staging removed; `in_place`: see write_trace), or (the failed IngestOutcome, None)."""
    if isinstance(staged, IngestOutcome):
        return staged, None
    try:
        written = write_trace(catalog, staged.trace, staged.staging, in_place)
    finally:
        staged.discard()
    if kill_marker is not None:
        _die_first_time(kill_marker)
    return staged.outcome, written


def submit_large(engine, catalog, path, options, kill_marker=None, confirm_cuts=False,
                 chunk_kill_marker=None):
    """Cut the large file `path` here (hashing it), each chunk normalised by a chunk_job,
    then its trace_job: the trace_job's handle, or the file's failed IngestOutcome.
    `kill_marker`, `chunk_kill_marker`: tests only (KILL_FIRST_JOB, KILL_FIRST_CHUNK)."""
    chunks, place = [], None
    try:
        start = start_trace(path, options)
        with HashedTrace(path) as trace_file:
            trace_reader = open_reader(trace_file, path, options, confirm_cuts,
                                       elsewhere=True)
            queued = CHUNKS_QUEUED_PER_SLOT * engine.slots()
            for index, chunk in enumerate(trace_reader.chunks()):
                place = place or expected_place(path, options, start, trace_reader.metadata)
                engine.throttle(chunks, queued)
                chunks.append(engine.submit(chunk_job, catalog.root, path, chunk, index, place,
                                            start.base_guess, not options.keep_secrets,
                                            SENT_BELOW_BYTES, chunk_kill_marker))
            place = place or expected_place(path, options, start, trace_reader.metadata)
            read = StagedChunks(metadata=trace_reader.metadata)
            read.sha256, read.size = trace_file.finish()
        _check_unchanged(path, start.state, read.size)
    except (TraceError, OSError, RecursionError, MemoryError) as error:
        _discard_chunks(engine, catalog, place, chunks)
        return failed_outcome(catalog, path, error)
    return engine.submit(trace_job, catalog.root, path, options, start, read, place,
                         kill_marker, *chunks)


def expected_place(path, options, start, metadata):
    """Where a large file's chunks are written, before its events are read: a StagedTrace
    without parts, in the run and phase of `start` and the rank that the options, the
    distributedInfo of the `metadata` read so far (the keys before traceEvents, raw) or the
    file's name give. A trace found elsewhere once read (a capture's phase, a
    distributedInfo after its events) has its files written again where it belongs."""
    distributed = decode_metadata({key: raw for key, raw in metadata.items()
                                   if key == "distributedInfo"}).get("distributedInfo")
    try:
        rank = identity.resolve_rank(options.rank, distributed
                                     if isinstance(distributed, dict) else {}, path)
    except TraceError:  # the trace's own job fails it, naming the problem
        rank = 0
    return StagedTrace(start.trace_id, "", start.run, start.phase, rank, {})


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
    chunk_kill_marker = os.environ.get(KILL_FIRST_CHUNK)

    def submit(index, confirm_cuts=False):
        if is_large(paths[index]):
            return submit_large(engine, catalog, paths[index], options, kill_marker,
                                confirm_cuts, chunk_kill_marker)
        return engine.submit(decode_job, catalog.root, paths[index], options, kill_marker)

    def done(index, outcome, trace):
        outcomes[index] = outcome
        if trace is not None:
            written[index] = trace
        if on_done:
            on_done(outcome)

    pending = {}  # {handle: index}
    try:
        for index in todo:
            job = submit(index)
            if isinstance(job, IngestOutcome):
                done(index, job, None)
            else:
                pending[job] = index
        while pending:
            job = engine.first_done(pending)
            index = pending.pop(job)
            outcome, trace = engine.result(job)
            if outcome is None:  # a cut to confirm: the file read again the careful way
                again = submit(index, confirm_cuts=True)
                if isinstance(again, IngestOutcome):
                    done(index, again, None)
                else:
                    pending[again] = index
            else:
                done(index, outcome, trace)
    finally:  # stopped early (an error, Ctrl-C): what is left would write for nobody
        engine.cancel(pending)
    if options.strict and any(outcome.status == "failed" for outcome in outcomes):
        discard_written(catalog, written.values())
        discard_leftovers(catalog, written.values())
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
