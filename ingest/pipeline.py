"""Ingesting trace files: read, normalise, stage, commit.

One file: its chunks are normalised in worker processes when it is large (the JSON decoding and
column building are CPU-bound), written to a staging directory in order, and committed to the
catalog, which makes every table's rows visible at once. Several files: each is ingested whole
by one worker, `jobs` at a time. A file that fails leaves nothing behind; the others go on
unless `strict`.
"""

import concurrent.futures
import contextlib
import datetime
import functools
import io
import os
import re
import shutil
import time
import uuid
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

import msgspec
import pyarrow as pa

from warehouse.catalog import TraceEntry
from warehouse.errors import TraceError, printable

from . import identity, reader
from .jobs import JobSignature, first_start
from .metadata import base_time_ns, decode_metadata, device_rows, redact, trace_row
from .normalize import EventProblem, normalize_chunk
from .reader import (TraceReader, UnconfirmedChunk, check_unconfirmed,
                     decode_error_position, describe_decode_error)
from .sources import file_digest, open_trace, stored_position
from .summaries import KernelSummary, combine_summaries, summarize_chunk
from .workers import fork_context, worker_pool
from .writer import guess_base_time, rebase_part, shift_times, write_part, write_whole


HASH_FIRST_LIMIT = 64 << 20


@dataclass
class IngestOptions:
    run: str | None = None
    phase: str | None = None
    rank: int | None = None
    tags: dict = field(default_factory=dict)
    replace: bool = False
    keep_secrets: bool = False
    strict: bool = False
    jobs: int = 1


@dataclass
class IngestOutcome:
    path: str
    status: str  # ingested, replaced, unchanged, failed, skipped (after a failure, strict)
    run: str | None = None
    phase: str | None = None
    rank: int | None = None
    events: int = 0
    bytes: int = 0
    started: float = 0.0  # time.monotonic(): one clock for every process of the machine
    finished: float = 0.0
    error: str | None = None
    warnings: list = field(default_factory=list)
    job: JobSignature | None = None  # what the trace says of the job that wrote it
    tags: dict = field(default_factory=dict)  # the tags the trace is stored with


@dataclass
class ChunkSummary:
    part: int
    rows: dict
    events: int
    warnings: Counter
    kernels: KernelSummary | None = None
    first_ns: int | None = None  # the earliest start of a CPU op, runtime call or kernel


def process_chunk(path, chunk, part, trace_id, staging, base_guess):
    """Normalise one chunk and stage its part files; runs in a worker process. Problems are
    raised as TraceError, with the file's event index or byte offset; an unconfirmed chunk
    that is not what its cut promised raises UnconfirmedChunk (see `reader`)."""
    data = chunk.load(path)
    try:
        result = normalize_chunk(msgspec.json.format(data, indent=-1), trace_id,
                                 chunk.first_event)
    except EventProblem as problem:
        raise TraceError(path, f"event {problem.index}: {problem.problem}") from None
    except msgspec.ValidationError as error:
        index = chunk.first_event + _index_in_message(error)
        raise TraceError(path, f"event {index}: not a trace event: "
                               + str(error).split(" - at ")[0]) from None
    except msgspec.DecodeError:
        if not chunk.confirmed:  # perhaps the cut, not the file: the caller reads it again
            raise UnconfirmedChunk(chunk.first_event) from None
        try:  # positions in the compacted text mean nothing to the user: find it in the original
            msgspec.json.decode(data)
        except msgspec.DecodeError as error:
            position = decode_error_position(error)
            where = "" if position is None else f" at byte {chunk.offset + position}"
            raise TraceError(path, describe_decode_error(error) + where) from None
        raise
    except pa.ArrowInvalid as error:
        raise TraceError(path, f"invalid text in event args ({error})") from None
    check_unconfirmed(chunk, result.events)
    tables = {name: shift_times(table, base_guess) for name, table in result.tables.items()}
    for name, table in tables.items():
        write_part(staging, name, part, table)
    rows = {name: table.num_rows for name, table in tables.items()}
    kernels = summarize_chunk(tables["kernels"]) if "kernels" in tables else None
    return ChunkSummary(part, rows, result.events, result.warnings, kernels,
                        first_start(tables))


def _index_in_message(error):
    """The event index in a msgspec ValidationError's path (`... - at `$[12]``)."""
    match = re.search(r"\$\[(\d+)\]", str(error))
    return int(match.group(1)) if match else 0


def ingest_paths(catalog, paths, options, on_done=None, on_bytes=None):
    """Ingest every path; return their outcomes in input order. `on_done(outcome)` is called
    as each finishes, and, when files are ingested one after another, `on_bytes(path, done)`
    as the bytes of a file (as stored) are read and normalised: for progress. With
    `options.strict`, the first failure stops the rest: files not committed by then are
    `skipped`, and none of them is written."""
    if options.jobs > 1 and len(paths) > 1:
        try:
            return _ingest_files_in_parallel(catalog, paths, options, on_done)
        except KeyboardInterrupt:  # the workers are gone: so are their staging files
            catalog.clean_up()
            raise
    outcomes = []
    pool = None
    with contextlib.ExitStack() as stack:
        for path in paths:
            if options.strict and any(o.status == "failed" for o in outcomes):
                outcomes.append(IngestOutcome(printable(path), "skipped"))
                continue
            if pool is None and options.jobs > 1 and os.path.getsize(path) > reader.BLOCK_SIZE:
                pool = stack.enter_context(worker_pool(options.jobs))
            outcomes.append(_ingest_one(catalog, path, options, pool, on_bytes))
            if on_done:
                on_done(outcomes[-1])
    return outcomes


# In a worker of a parallel ingest of several files: set once a file has failed under strict,
# so that files still running do not commit (see _ingest_files_in_parallel).
_stop_committing = None


def _share_stop_event(event):
    global _stop_committing
    _stop_committing = event


def _commit_stopped():
    return _stop_committing is not None and _stop_committing.is_set()


def _ingest_files_in_parallel(catalog, paths, options, on_done):
    """Each file whole in a worker, `jobs` at a time. Under strict, the first failure (in
    time) cancels the files not started and tells the running ones not to commit."""
    stop = fork_context().Event()
    outcomes = [IngestOutcome(printable(path), "skipped") for path in paths]
    with worker_pool(options.jobs, _share_stop_event, (stop,)) as pool:
        futures = {pool.submit(_ingest_one, catalog, path, options, None): index
                   for index, path in enumerate(paths)}
        for future in concurrent.futures.as_completed(futures):
            if future.cancelled():
                continue
            outcome = outcomes[futures[future]] = future.result()
            if on_done:
                on_done(outcome)
            if options.strict and outcome.status == "failed":
                stop.set()
                for rest in futures:
                    rest.cancel()
    return outcomes


def _ingest_one(catalog, path, options, pool, on_bytes=None):
    started = time.monotonic()
    staging = None
    try:
        staging = catalog.new_staging_dir()
        file_progress = functools.partial(on_bytes, path) if on_bytes else None
        outcome = ingest_file(catalog, path, options, staging, pool, file_progress)
    except TraceError as error:
        outcome = IngestOutcome(printable(path), "failed", error=str(error))
    except OSError as error:  # the warehouse side: disk full, no permission
        outcome = IngestOutcome(printable(path), "failed",
                                error=f"{printable(path)}: cannot write to the warehouse "
                                      f"{printable(catalog.root)}: {error.strerror or error}")
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    outcome.started, outcome.finished = started, time.monotonic()
    return outcome


def ingest_file(catalog, path, options, staging, pool=None, on_bytes=None):
    """Ingest one file through `staging`; raise TraceError if it cannot be. `on_bytes(done)`
    is told how many bytes of the file (as stored) are behind each normalised chunk."""
    trace_id = uuid.uuid4().hex[:16]
    run = identity.resolve_run(options.run, path)
    phase = identity.resolve_phase(options.phase, path)
    try:
        size = os.path.getsize(path)
    except OSError as error:
        raise TraceError(path, f"cannot read: {error.strerror}") from None
    hashing = concurrent.futures.ThreadPoolExecutor(1)
    digest = hashing.submit(file_digest, path)
    hashing.shutdown(wait=False)
    if size <= HASH_FIRST_LIMIT:
        # Cheap enough to know before parsing whether the file is already there. Larger files
        # are hashed while they are parsed (hashlib releases the GIL); the commit then finds
        # out, and a re-ingest costs a parse.
        known = [e for e in catalog.entries()
                 if e.sha256 == _digest(digest, path)[0] and (e.run, e.phase) == (run, phase)
                 and (options.rank is None or e.rank == options.rank)]
        if known and not options.replace:
            entry = known[0]
            return IngestOutcome(printable(path), "unchanged", entry.run, entry.phase, entry.rank,
                                 entry.events, entry.bytes, tags=entry.tags)

    base_guess = guess_base_time(path)
    try:
        staged = _stage_chunks(path, trace_id, staging, base_guess, pool, options.jobs,
                               confirm_cuts=False, on_bytes=on_bytes)
    except UnconfirmedChunk:  # an odd layout or a malformed file: read it the careful way
        for leftover in staging.iterdir():
            leftover.unlink()
        staged = _stage_chunks(path, trace_id, staging, base_guess, pool, options.jobs,
                               confirm_cuts=True, on_bytes=on_bytes)
    parts, warnings, events = staged.parts, staged.warnings, staged.events
    kernel_summaries = staged.kernel_summaries
    metadata = decode_metadata(staged.metadata)
    base_time = base_time_ns(metadata)
    if base_time != base_guess:
        for name, numbers in parts.items():
            for part in numbers:
                rebase_part(staging, name, part, base_time - base_guess)
    interval_rules = ""
    if kernel_summaries:
        summaries, interval_rules = combine_summaries(kernel_summaries, trace_id,
                                                      base_time - base_guess)
        for name, table in summaries.items():
            write_part(staging, name, 0, table)
            parts[name] = [0]
    secrets = 0
    if not options.keep_secrets:
        metadata, secrets = redact(metadata)
    distributed = metadata.get("distributedInfo")
    distributed = distributed if isinstance(distributed, dict) else {}
    rank = identity.resolve_rank(options.rank, distributed, path)
    if events == 0:
        warnings["the trace has no events"] += 1
    notes = [f"{text} ({count})" for text, count in sorted(warnings.items())]
    sha256, size = _digest(digest, path)
    row = trace_row(metadata, trace_id=trace_id, sha256=sha256,
                    source_path=printable(os.path.abspath(path)), size=size, events=events,
                    world_size=identity.world_size(distributed), tags=options.tags,
                    warnings=notes, secrets_redacted=secrets)
    devices = device_rows(metadata, trace_id)
    if devices:
        write_whole(staging, "devices", devices)
        parts["devices"] = [0]
    parts["traces"] = [0]

    def stage_trace_row(entry):
        row["ingest_seq"] = entry.seq
        row["ingested_at"] = datetime.datetime.fromisoformat(entry.committed_at)
        write_whole(staging, "traces", [row])

    entry = TraceEntry(trace_id=trace_id, sha256=sha256, run=run, phase=phase, rank=rank,
                       parts=dict(parts), events=events, bytes=size,
                       interval_rules=interval_rules,
                       source_path=printable(os.path.abspath(path)), tags=options.tags)
    if _commit_stopped():  # another file failed under strict while this one was read
        return IngestOutcome(printable(path), "skipped")
    result = catalog.commit(entry, staging, replace=options.replace,
                            before_publish=stage_trace_row)
    job = JobSignature(row["world_size"], tuple(row["device_names"] or ()),
                       None if staged.first_ns is None
                       else staged.first_ns + base_time - base_guess)
    return IngestOutcome(printable(path), result.status, run, phase, rank, events, size,
                         warnings=notes, job=job, tags=result.entry.tags)


def _digest(future, path):
    try:
        return future.result()
    except OSError as error:
        raise TraceError(path, f"cannot read: {error.strerror}") from None


@dataclass
class StagedChunks:
    """What staging a file's chunks produced: part numbers per table, the events and warnings
    of all chunks, their kernel summaries and the document's other top-level keys (raw)."""

    parts: dict = field(default_factory=lambda: defaultdict(list))
    warnings: Counter = field(default_factory=Counter)
    events: int = 0
    kernel_summaries: list = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    first_ns: int | None = None


def _stage_chunks(path, trace_id, staging, base_guess, pool, jobs, confirm_cuts,
                  on_bytes=None):
    """Read the file's chunks and stage their parts; UnconfirmedChunk when a chunk cut without
    confirmation is not what it seemed (the staged parts are then to be discarded)."""
    staged = StagedChunks()
    with open_trace(path) as stream:
        trace_reader = TraceReader(stream, path,
                                   by_reference=isinstance(stream, io.BufferedReader),
                                   confirm_cuts=confirm_cuts)
        for summary in _summaries(trace_reader, path, trace_id, staging, base_guess, pool, jobs):
            for name in summary.rows:
                staged.parts[name].append(summary.part)
            staged.warnings.update(summary.warnings)
            staged.events += summary.events
            if summary.first_ns is not None and (staged.first_ns is None
                                                 or summary.first_ns < staged.first_ns):
                staged.first_ns = summary.first_ns
            if summary.kernels is not None:
                staged.kernel_summaries.append(summary.kernels)
            if on_bytes is not None:
                on_bytes(stored_position(stream))
    staged.metadata = trace_reader.metadata
    return staged


def _summaries(trace_reader, path, trace_id, staging, base_guess, pool, jobs):
    """Process the chunks, in worker processes when there is a pool, and yield their summaries
    in file order."""
    pending = deque()
    try:
        for part, chunk in enumerate(trace_reader.chunks()):
            arguments = (path, chunk, part, trace_id, staging, base_guess)
            if pool is None:
                yield process_chunk(*arguments)
                continue
            pending.append(pool.submit(process_chunk, *arguments))
            if len(pending) > 2 * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # on a failure: no task may still write into staging when this returns
        for future in pending:
            future.cancel()
        concurrent.futures.wait(pending)
