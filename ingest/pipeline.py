"""Ingesting trace files: read, normalise, stage, commit.

One file: its chunks are normalised in lanes of threads when it is large (the native core and
Parquet's writes run with the GIL released), each lane writing the chunks it takes into one
part file per table in a staging directory. Several files: each is staged whole by one worker
process, `jobs` at a time. This process commits each staged file to the catalog, which makes
every table's rows visible at once. A file that fails leaves nothing behind; the others go on
unless `strict`.
"""

import concurrent.futures
import contextlib
import functools
import os
import re
import shutil
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import msgspec
import pyarrow as pa

from tracewh.allocator import release_between_phases, release_freed_memory
from tracewh.storage.catalog import StagedTrace
from tracewh.errors import TraceError, TracewhError, printable
from tracewh.storage.names import check_name, check_phase, check_rank
from tracewh.rules import default_rules

from . import call_tree, critical_path, identity, ops, reader, steps, windows
from .jobs import JobSignature, first_start
from .metadata import base_time_ns, decode_metadata, device_rows, trace_row
from .decoder import normalize
from .normalize import EventProblem
from .reader import (TraceReader, UnconfirmedChunk, check_unconfirmed,
                     decode_error_position, describe_decode_error)
from .secrets import redact
from .sources import (HashedTrace, file_digest, file_state, input_size, is_object,
                      json_size_limit, source_name, stored_position)
from .summaries import KernelSummary, combine_summaries, default_fingerprint, summarize_chunk
from .workers import thread_lanes, worker_pool
from .writer import (PartFiles, guess_base_time, merge_small_parts, rebase_part,
                     shift_times, staged_distinct, write_part, write_whole)


HASH_FIRST_LIMIT = 64 << 20
# A file whose chunks are decoded in this process (by the command's lanes or the worker
# process staging it) is read in blocks of this size, at most the reader's BLOCK_SIZE, which
# chunks sent to a cluster's tasks keep (each chunk there is a task to schedule and a PUT per
# large table). Each chunk in flight is held several times over while a lane decodes it (its
# bytes, the core's columns, its tables), beside the block the reader holds to cut it: with
# two lanes, the command's peak while the 254 MB trace's chunks were staged was 244-249 MB
# at 16 MB, 220 MB at 12 MB and 195-197 MB at 8 MB; but each block less is a row group more
# per table, and at 8 MB the measures after the chunks, reading twice the row groups (and
# their dictionaries), took ~0.06 s more CPU and up to 15 MB more memory. At 12 MB they are
# as at 16.
LOCAL_BLOCK_SIZE = 12 << 20


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
    embedded: bool = False  # in a process tracewh does not own: see workers.worker_pool
    max_event_size: int = reader.MAX_EVENT_SIZE  # the largest event or top-level value
    max_json_size: int | None = None  # the most JSON per file; None: see json_size_limit


def ingest_options(run=None, phase=None, rank=None, tags=None, replace=False, strict=False,
                   keep_secrets=False, jobs=1, embedded=False,
                   max_event_size=reader.MAX_EVENT_SIZE, max_json_size=None):
    """IngestOptions with the run, phase, rank and tags checked (they become paths and
    literals), before anything is read or written."""
    tags = {check_name("tag key", key): check_name("tag value", value)
            for key, value in (tags or {}).items()}
    return IngestOptions(run=None if run is None else check_name("run", run),
                         phase=None if phase is None else check_phase(phase),
                         rank=None if rank is None else check_rank(rank),
                         tags=tags, replace=replace, strict=strict, keep_secrets=keep_secrets,
                         jobs=jobs, embedded=embedded, max_event_size=max_event_size,
                         max_json_size=max_json_size)


@dataclass
class IngestOutcome:
    path: str
    status: str  # ingested, replaced, unchanged, failed, skipped (after a failure, strict)
    run: str | None = None
    phase: str | None = None
    rank: int | None = None
    events: int = 0
    bytes: int = 0
    error: str | None = None  # why it failed, in the library's terms
    cli_error: str | None = None  # the same as the command line says it, where it differs
    warnings: list = field(default_factory=list)
    job: JobSignature | None = None  # what the trace says of the job that wrote it
    tags: dict = field(default_factory=dict)  # the tags the trace is stored with


@dataclass
class ChunkSummary:
    chunk: int  # its position in the file
    part: int  # the part files its rows went into
    rows: dict
    events: int
    warnings: Counter
    kernels: KernelSummary | None = None
    first_ns: int | None = None  # the earliest start of a CPU op, runtime call or kernel
    secrets: int = 0  # values redacted


def process_chunk(path, chunk, index, trace_id, files, base_guess, redact_secrets):
    """Normalise the file's chunk number `index` into `files` (PartFiles). Problems are
    raised as TraceError, with the file's event index or byte offset; an unconfirmed chunk
    that is not what its cut promised raises UnconfirmedChunk (see `reader`)."""
    result = _normalized(path, chunk, trace_id, redact_secrets)
    check_unconfirmed(chunk, result.events)
    tables = {name: shift_times(table, base_guess) for name, table in result.tables.items()}
    for name, table in tables.items():
        files.write(name, table)
    rows = {name: table.num_rows for name, table in tables.items()}
    kernels = summarize_chunk(tables["kernels"]) if "kernels" in tables else None
    return ChunkSummary(index, files.part, rows, result.events, result.warnings, kernels,
                        first_start(tables), result.secrets)


def _normalized(path, chunk, trace_id, redact_secrets):
    """The chunk's ChunkResult, its problems raised as `process_chunk` says. Its bytes are
    let go on return, before the tables are written: held through the writes, they were as
    much memory again as the chunk in each lane."""
    data = chunk.load(path)
    try:
        result = normalize(data, trace_id, chunk.first_event, redact_secrets)
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
    except RecursionError:
        raise reader.nesting_error(path, data, chunk.offset) from None
    except MemoryError:
        raise TraceError(path, f"out of memory decoding the {chunk.length:,} bytes of events "
                               f"at byte {chunk.offset}") from None
    return result


def normalize_in_lane(chunks, path, trace_id, staging, base_guess, redact_secrets):
    """Normalise the (index, chunk) pairs a Lane takes (see `workers`) into one part file per
    table, numbered after its first chunk; return their summaries and the first failure
    (index, TraceError or UnconfirmedChunk), if any, after which it takes no more."""
    summaries = []
    files = None
    try:
        for index, chunk in chunks:
            files = files or PartFiles(staging, index)
            try:
                summaries.append(process_chunk(path, chunk, index, trace_id, files,
                                               base_guess, redact_secrets))
            except (TraceError, UnconfirmedChunk) as error:
                chunks.fail_at(index)
                return summaries, (index, error)
    finally:
        if files is not None:
            files.close()
        release_freed_memory()  # the chunks' heap, before the measures
    return summaries, None


def _index_in_message(error):
    """The event index in a msgspec ValidationError's path (`... - at `$[12]``)."""
    match = re.search(r"\$\[(\d+)\]", str(error))
    return int(match.group(1)) if match else 0


def ingest_paths(catalog, paths, options, on_done=None, on_bytes=None):
    """Ingest every path; return their outcomes in input order. `on_done(outcome)` is called
    as each finishes, and, when files are ingested one after another, `on_bytes(path, done)`
    as the bytes of a file (as stored) are read and normalised: for progress. With
    `options.strict`, the first failure stops the rest: files not committed by then are
    `skipped`, and none of them is written. Worker processes and threads only stage files;
    this thread commits them, so it alone touches the Delta logs."""
    parallel_files = options.jobs > 1 and len(paths) > 1
    try:
        with contextlib.ExitStack() as stack:
            pool = None
            if parallel_files:
                _share_with_workers()
                # Forked first, before this process starts threads (hashing, delta-rs).
                pool = stack.enter_context(worker_pool(options.jobs,
                                                       embedded=options.embedded))
            elif options.jobs > 1 and any(is_large(path) for path in paths):
                pool = stack.enter_context(thread_lanes(options.jobs))
            with catalog.locked():  # every table exists, an interrupted commit is undone
                replace_up_to = catalog.snapshot().seq
            committer = _Committer(catalog, options, replace_up_to)
            if parallel_files:
                return _ingest_files_in_parallel(committer, paths, pool, on_done)
            return _ingest_files_in_turn(committer, paths, pool, on_done, on_bytes)
    except KeyboardInterrupt:  # the workers are gone: so are their staging files
        catalog.clean_up()
        raise


def _share_with_workers():
    """Read and check the default kernel rules, which every chunk's summary classifies by,
    once here before the workers are forked (this process needs them later anyway), rather
    than again in each worker on its first chunk: 0.1-0.4 s of CPU each, as checking opens a
    DuckDB."""
    default_rules()


def is_large(path):
    try:
        return input_size(path) > reader.BLOCK_SIZE
    except (OSError, TracewhError):  # reported by the reading that follows
        return False


def _ingest_files_in_turn(committer, paths, pool, on_done, on_bytes):
    outcomes = []
    for path in paths:
        if committer.options.strict and any(o.status == "failed" for o in outcomes):
            outcomes.append(IngestOutcome(printable(path), "skipped"))
            continue
        outcome = committer.known(path)
        if outcome is None:
            file_progress = functools.partial(on_bytes, path) if on_bytes else None
            outcome = committer.commit(_stage_file(committer.catalog, path, committer.options,
                                                   pool, file_progress))
        outcomes.append(outcome)
        if on_done:
            on_done(outcome)
    return outcomes


def _ingest_files_in_parallel(committer, paths, pool, on_done):
    """Each file staged whole in a worker, `jobs` at a time, and committed here as it comes.
    Under strict, the first failure (in time) cancels the files not started, and files
    staged after it are not committed."""
    outcomes = [IngestOutcome(printable(path), "skipped") for path in paths]
    futures = {}
    for index, path in enumerate(paths):
        known = committer.known(path)
        if known is not None:
            outcomes[index] = known
            continue
        futures[pool.submit(_stage_file, committer.catalog, path, committer.options)] = index
    for index, outcome in enumerate(outcomes):
        if outcome.status == "unchanged" and on_done:
            on_done(outcome)
    stopped = False
    for future in concurrent.futures.as_completed(futures):
        if future.cancelled():
            continue
        index = futures[future]
        staged = future.result()
        if stopped:
            staged.discard()
            continue
        outcome = outcomes[index] = committer.commit(staged)
        if on_done:
            on_done(outcome)
        if committer.options.strict and outcome.status == "failed":
            stopped = True
            for rest in futures:
                rest.cancel()
    return outcomes


class _Committer:
    """Commits staged files in this process; knows which files the warehouse already holds."""

    def __init__(self, catalog, options, replace_up_to):
        self.catalog = catalog
        self.options = options
        self.replace_up_to = replace_up_to

    def known(self, path):
        """The outcome `unchanged` when a small file is already stored in its run/phase (and
        rank, when given): known without parsing it. Larger files are hashed while they are
        parsed, and the commit finds out."""
        if self.options.replace or is_object(path):  # an object: read once, as it is parsed
            return None
        try:
            if os.path.getsize(path) > HASH_FIRST_LIMIT:
                return None
            sha256, _ = file_digest(path)
        except OSError:
            return None  # staging reports it
        run = identity.resolve_run(self.options.run, path)
        phase = identity.resolve_phase(self.options.phase, path)
        phases = [phase] if self.options.phase else [phase, identity.CAPTURE_PHASE]
        for trace in (t for each in phases for t in self.catalog.traces_of(run, each)):
            if trace.sha256 == sha256 and self.options.rank in (None, trace.rank):
                return _unchanged(path, trace)
        return None

    def commit(self, staged):
        if isinstance(staged, IngestOutcome):  # failed
            return staged
        try:
            result = self.catalog.commit(
                staged.trace, staged.staging, replace=self.options.replace,
                replace_up_to=self.replace_up_to)
        except OSError as error:  # the warehouse side: disk full, no permission
            staged.discard()
            return _warehouse_failure(staged.outcome.path, self.catalog, error)
        except Exception:  # a busy lock (WarehouseBusy): a long-lived caller goes on
            staged.discard()
            raise
        if result.status == "unchanged":
            return _unchanged(staged.outcome.path, result.trace)
        outcome = staged.outcome
        outcome.status = result.status
        return outcome


def _unchanged(path, trace):
    return IngestOutcome(printable(path), "unchanged", trace.run, trace.phase, trace.rank,
                         trace.events, trace.bytes, tags=trace.tags)


def _warehouse_failure(path, catalog, error):
    return IngestOutcome(path, "failed",
                         error=f"{path}: cannot write to the warehouse "
                               f"{printable(catalog.root)}: {error.strerror or error}")


@dataclass
class StagedFile:
    """A file read, normalised and staged, with the outcome it will have once committed."""

    trace: StagedTrace
    staging: object  # Path of the staging directory
    outcome: IngestOutcome

    def discard(self):
        shutil.rmtree(self.staging, ignore_errors=True)


def _stage_file(catalog, path, options, pool=None, on_bytes=None):
    """Stage one file: a StagedFile, or a failed IngestOutcome (its staging removed)."""
    return staged_or_failed(catalog, path, stage_file, options, pool, on_bytes)


def staged_or_failed(catalog, path, stage, options, *arguments):
    """`stage(path, options, staging, *arguments)` into a new staging directory: its
    StagedFile, or the failed IngestOutcome of a TraceError (or a warehouse that cannot be
    written), its staging removed."""
    staging = None
    try:
        staging = catalog.new_staging_dir()
        return stage(path, options, staging, *arguments)
    except (TraceError, OSError, RecursionError, MemoryError) as error:
        outcome = failed_outcome(catalog, path, error)
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    return outcome


def failed_outcome(catalog, path, error):
    """The failed IngestOutcome of `path` for `error`: a TraceError; an OSError of the
    warehouse side (disk full, no permission); a RecursionError or MemoryError where no byte
    offset is known (metadata)."""
    if isinstance(error, TraceError):
        return IngestOutcome(printable(path), "failed", error=str(error),
                             cli_error=error.cli_message())
    if isinstance(error, OSError):
        return _warehouse_failure(printable(path), catalog, error)
    problem = "out of memory" if isinstance(error, MemoryError) else "nesting too deep"
    return IngestOutcome(printable(path), "failed",
                         error=f"{printable(path)}: {problem} to ingest it")


@dataclass(frozen=True)
class TraceStart:
    """What is settled of a file before its events are read: its new trace id, its run and
    phase (as the options and its path say), its file_state, and the base time guessed."""

    trace_id: str
    run: str
    phase: str
    state: tuple
    base_guess: int


def start_trace(path, options):
    """The file's TraceStart (file_state taken before it is opened: see _check_unchanged)."""
    return TraceStart(uuid.uuid4().hex[:16], identity.resolve_run(options.run, path),
                      identity.resolve_phase(options.phase, path), file_state(path),
                      guess_base_time(path))


def stage_file(path, options, staging, pool=None, on_bytes=None):
    """Read, normalise and stage one file into `staging`; raise TraceError if it cannot be.
    `on_bytes(done)` is told how many bytes of the file (as stored) are behind each
    normalised chunk."""
    start = start_trace(path, options)
    try:
        staged = _stage_chunks(path, start, staging, pool, options, confirm_cuts=False,
                               on_bytes=on_bytes)
    except UnconfirmedChunk:  # an odd layout or a malformed file: read it the careful way
        for leftover in staging.iterdir():
            leftover.unlink()
        staged = _stage_chunks(path, start, staging, pool, options, confirm_cuts=True,
                               on_bytes=on_bytes)
    _check_unchanged(path, start.state, staged.size)
    return finish_staging(path, options, staging, start, staged, pool)


def finish_staging(path, options, staging, start, staged, pool=None):
    """Stage what follows a file's chunks, whose parts are in `staging` (StagedChunks): the
    parts rebased when the base time guessed was wrong, the per-trace tables (summaries,
    op_time, critical path, call tree, steps, devices) measured and the small parts merged,
    its `traces` row made: a StagedFile. `pool`: the ThreadLanes of which one thread merges
    while this one measures, or None."""
    trace_id, run, phase, base_guess = start.trace_id, start.run, start.phase, start.base_guess
    parts, warnings, events = staged.parts, staged.warnings, staged.events
    kernel_summaries = staged.kernel_summaries
    metadata = decode_metadata(staged.metadata)
    base_time = base_time_ns(metadata)
    if base_time != base_guess:
        for name, numbers in parts.items():
            for part in numbers:
                rebase_part(staging, name, part, base_time - base_guess)
    interval_rules, summaries = "", {}
    if kernel_summaries:
        summaries, interval_rules = combine_summaries(kernel_summaries, trace_id,
                                                      base_time - base_guess)
    # The per-trace tables are measured here from the parts as staged (where Ctrl-C stops them
    # at once), one after another, each heap given back before the next (or, on one heap,
    # reused by it: see release_between_phases), as each holds columns of the whole trace
    # (200-250 MB of heap for the 254 MB trace): two at once were the ingest's peak of memory.
    # A thread of the pool merges the small parts (with no pool, first) beside the lightest,
    # window_time and the steps, only: beside op_time they were the ingest's peak (287-300 MB
    # for the 254 MB trace; 261-276 MB after, in the refresh, and the ingest as fast). The
    # steps are measured here after window_time, not by that thread after its merges: where no
    # part is small enough to merge (the 1 GB trace) they ran beside window_time, the ingest's
    # peak (557 MB), and elsewhere this thread waited for them (~0.1 s of the 254 MB trace's).
    beside_merges = (
        ("window_time", windows.measure,
         (dict(parts), trace_id, summaries.get("kernel_names"), default_fingerprint())),
        ("step_time", steps.measure,
         (dict(parts), trace_id, summaries.get("gpu_intervals"), default_fingerprint())))
    after_merges = (
        (None, ops.measure,
         (dict(parts), trace_id, summaries.get("kernel_names"), default_fingerprint())),
        (None, critical_path.measure,
         (dict(parts), trace_id, summaries.get("kernel_names"))),
        (None, call_tree.measure, (dict(parts), trace_id)))
    merging = _in_thread(pool, _merged, staging, parts, None if options.phase else phase)
    try:
        written = _measured_in_turn(staging, beside_merges, pool)
        merging.result()  # its error first
        written += _measured_in_turn(staging, after_merges, pool)
        # the measures' heap, before the commit and the refresh (and, in a worker process
        # staging a whole file, while the ingest's other processes may be at their peak)
        release_freed_memory()
    finally:  # the thread writes into staging: it ends before staging can be removed
        concurrent.futures.wait([merging])
    merged, captured = merging.result()
    phase = captured or phase
    for name in written:
        parts[name] = [0]
    for replaced in merged:  # read by the measures until now
        replaced.unlink()
    for name, table in summaries.items():
        write_part(staging, name, 0, table)
        parts[name] = [0]
    secrets = staged.secrets
    if not options.keep_secrets:
        metadata, found = redact(metadata)
        secrets += found
    distributed = metadata.get("distributedInfo")
    distributed = distributed if isinstance(distributed, dict) else {}
    rank = identity.resolve_rank(options.rank, distributed, path)
    null_rank = identity.null_rank_note(options.rank, distributed, path)
    if null_rank is not None:
        warnings[null_rank] += 1
    if events == 0:
        warnings["the trace has no events"] += 1
    notes = [f"{text} ({count})" for text, count in sorted(warnings.items())]
    sha256, size = staged.sha256, staged.size
    row = trace_row(metadata, trace_id=trace_id, sha256=sha256,
                    source_path=source_name(path), size=size, events=events,
                    world_size=identity.world_size(distributed), tags=options.tags,
                    warnings=notes, secrets_redacted=secrets)
    devices = device_rows(metadata, trace_id)
    if devices:
        write_whole(staging, "devices", devices)
        parts["devices"] = [0]

    trace = StagedTrace(trace_id=trace_id, sha256=sha256, run=run, phase=phase, rank=rank,
                        parts=dict(parts), class_rules=interval_rules, row=row)
    job = JobSignature(row["world_size"], tuple(row["device_names"] or ()),
                       None if staged.first_ns is None
                       else staged.first_ns + base_time - base_guess)
    outcome = IngestOutcome(printable(path), "staged", run, phase, rank, events, size,
                            warnings=notes, job=job, tags=options.tags)
    return StagedFile(trace, staging, outcome)


def _merged(staging, parts, capture_from):
    """Merge the small parts of each table (`parts` updated): (the part files replaced, to be
    removed once the measures have read them; the phase the runtime names capture, when
    `capture_from` is the phase to capture from)."""
    merged = []
    for name in list(parts):  # one file per table where the data fits
        parts[name], replaced = merge_small_parts(staging, name, parts[name])
        merged += replaced
    release_freed_memory()  # the merges' heap, while the measures go on
    captured = None
    if capture_from is not None:  # the names only: a dictionary read of the runtime parts
        captured = identity.capture_phase(None, capture_from,
                                          staged_distinct(staging, parts, "runtime", "name"))
    return merged, captured


def _measured_into(staging, name, function, *arguments, pool=None):
    """Write `function(staging, *arguments)`, the table `name` (or None), or, when `name` is
    None, (table, rows or None) pairs, a table's rows in as many pieces as it comes in (a row
    group each), into `staging`; return the names of the tables written. Each piece is
    written as it comes, not held: the critical path of a 254 MB trace is 84 MB of Arrow.
    With a `pool`, a thread of it writes each piece while this one makes the next (see
    _WritesBehind). The memory the measure freed is then given back to the system before
    the next measure where that one would not reuse it (see release_between_phases)."""
    measured = function(staging, *arguments)
    written = []
    with PartFiles(staging, 0) as files, _WritesBehind(pool) as behind:
        for table_name, table in measured if name is None else [(name, measured)]:
            if table is not None:
                behind.call(files.write, table_name, table)
                if table_name not in written:
                    written.append(table_name)
            del table  # written or being written: not held while the next piece is made
    release_between_phases()
    return written


class _WritesBehind:
    """Calls made one at a time, in order, by a thread of `pool` while the caller goes on
    (without a pool, at once): a measure's Parquet writes (encoding and compression, with the
    GIL released) beside the making of its next piece. The measures run on one thread while
    the other core has only the merges to do: their writes were a third of their time (the
    call tree of a 254 MB trace, 1.56M rows). At most one call is in flight, so at most one
    piece more is held; on leaving, the call in flight has ended (on an error too: its file
    is closed next)."""

    def __init__(self, pool):
        self.pool = pool
        self.pending = None

    def call(self, function, *arguments):
        self.wait()
        self.pending = _in_thread(self.pool, function, *arguments)

    def wait(self):
        """Wait for the call in flight; raise its error. Interrupted (Ctrl-C), the call is
        still in flight, for leaving to wait for."""
        pending = self.pending
        if pending is not None:
            concurrent.futures.wait([pending])
            self.pending = None
            pending.result()

    def __enter__(self):
        return self

    def __exit__(self, error_type, *_):
        if error_type is None:
            self.wait()
        elif self.pending is not None:  # the error raised is the caller's
            concurrent.futures.wait([self.pending])
            self.pending = None


def _measured_in_turn(staging, measures, pool=None):
    """_measured_into of each (name, function, arguments) of `measures` in turn, writing by
    `pool`'s threads when given; the names of all the tables written."""
    return [written for name, function, arguments in measures
            for written in _measured_into(staging, name, function, *arguments, pool=pool)]


def _in_thread(pool, function, *arguments):
    """A future of `function(*arguments)`: run by one of the pool's threads, or here and now
    without a pool (a file staged in a worker process itself, or a single-thread ingest)."""
    if pool is not None:
        return pool.submit(function, *arguments)
    done = concurrent.futures.Future()
    done.set_result(function(*arguments))
    return done


def _check_unchanged(path, before, size_read):
    """Fail the file if it was written while it was read: its size, mtime or ctime differ
    from `before` (file_state before it was opened), or the bytes read (and hashed) are not
    its size. Its chunks were parsed from what the reader hashed or, read by reference, from
    the file by the workers: either way only an unchanged file makes the recorded sha256 that
    of the bytes parsed, which a later ingest of the same file is matched by."""
    if file_state(path) != before or size_read != before[0]:
        raise TraceError(path, "the file changed while it was read")


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
    secrets: int = 0
    sha256: str = ""  # of the file's bytes as read (stored, compressed or not)
    size: int = 0  # bytes read

    def add(self, summary):
        """Count in a chunk's ChunkSummary (its part numbers kept sorted)."""
        for name in summary.rows:
            if summary.part not in self.parts[name]:
                self.parts[name].append(summary.part)
                self.parts[name].sort()
        self.warnings.update(summary.warnings)
        self.events += summary.events
        self.secrets += summary.secrets
        if summary.first_ns is not None and (self.first_ns is None
                                             or summary.first_ns < self.first_ns):
            self.first_ns = summary.first_ns
        if summary.kernels is not None:
            self.kernel_summaries.append(summary.kernels)


def _stage_chunks(path, start, staging, pool, options, confirm_cuts, on_bytes=None):
    """Read the file's chunks and stage their parts; UnconfirmedChunk when a chunk cut without
    confirmation is not what it seemed (the staged parts are then to be discarded)."""
    staged = StagedChunks()
    with HashedTrace(path) as trace_file:
        stream = trace_file.stream
        trace_reader = open_reader(trace_file, path, options, confirm_cuts, elsewhere=False)
        for summary in _summaries(_progress(trace_reader.chunks(), stream, on_bytes), path,
                                  start.trace_id, staging, start.base_guess, pool, options):
            staged.add(summary)
        staged.sha256, staged.size = trace_file.finish()
    staged.metadata = trace_reader.metadata
    return staged


def open_reader(trace_file, path, options, confirm_cuts, elsewhere):
    """The TraceReader of a HashedTrace: an uncompressed file's chunks by reference (read
    by the process that normalises them), a compressed one's with their bytes; an
    uncompressed object's by reference only when other processes normalise them
    (`elsewhere`), each with a ranged GET: here, the bytes streamed are used, not fetched
    again. Blocks are smaller when the chunks are decoded here (LOCAL_BLOCK_SIZE)."""
    plain = not trace_file.compressed
    block_size = reader.BLOCK_SIZE if elsewhere else min(reader.BLOCK_SIZE, LOCAL_BLOCK_SIZE)
    return TraceReader(trace_file.stream, path, block_size=block_size,
                       by_reference=plain and (elsewhere or not is_object(path)),
                       confirm_cuts=confirm_cuts, max_event_size=options.max_event_size,
                       max_json_size=json_size_limit(path, not plain, options.max_json_size))


def _progress(chunks, stream, on_bytes):
    """The chunks, telling `on_bytes` the bytes read (as stored) once each is taken."""
    for chunk in chunks:
        yield chunk
        if on_bytes is not None:
            on_bytes(stored_position(stream))


def _summaries(chunks, path, trace_id, staging, base_guess, pool, options):
    """Normalise the chunks, in every lane at once when there is a pool, and return their
    summaries in file order; raise the first chunk's failure in file order."""
    redact_secrets = not options.keep_secrets
    if pool is None:
        with PartFiles(staging, 0) as files:
            return [process_chunk(path, chunk, index, trace_id, files, base_guess,
                                  redact_secrets)
                    for index, chunk in enumerate(chunks)]
    lanes = pool.in_lanes(normalize_in_lane,
                          (path, trace_id, staging, base_guess, redact_secrets), chunks)
    failures = [failure for _, failure in lanes if failure is not None]
    if failures:
        raise min(failures, key=lambda failure: failure[0])[1]
    return sorted((summary for summaries, _ in lanes for summary in summaries),
                  key=lambda summary: summary.chunk)
