"""Derived tables (marts): the answers of the main views, as Delta tables under
`<warehouse>/marts/<view>/`, for tools that read Parquet or Delta but cannot run the library
(Spark jobs, polars, BI tools over files).

A mart holds its view's rows at the warehouse's snapshot (compacted: below), and three
columns for dashboards:

  start_ns        the rank's first GPU activity (for rank_skew, the earliest of the phase's
                  ranks), ns, on the trace's clock (as `capture_spans.first_ns`)
  start_time      start_ns as a TIMESTAMP (UTC, microseconds); NULL when the time is relative
  relative_time   true when the trace's clock does not count from the Unix epoch (start_ns
                  before 2000-01-01: a trace written with time from its own start)

A refresh computes the rows of the runs committed since the mart's last refresh only (each
mart commit records the warehouse's commit sequence number it reflects), and drops runs the
warehouse no longer holds (the commands that remove runs mark them for recompute); a mart
written from other SQL or other kernel rules is rebuilt.

Compaction. A mart is not partitioned: a partition per run would make a file per run, and a
question over every run of a thousand would open a thousand files. Its files hold the rows of
consecutive runs in run order, each file's statistics the first and last run of it (engines
skip files on them, as on partitions). Each refresh writes one file: the new rows, the rows
kept of the files that hold a run it recomputes or drops (the run within their bounds and in
their `run` column), and the small files (under TARGET_BYTES) it merges by tier. A file's tier
is its rows' order of magnitude in base MAX_SMALL_FILES (with 8: 1-7 rows, 8-63, 64-511, ...):
when the file a refresh writes would make MAX_SMALL_FILES files of its tier, it takes in the
others of that tier, and, grown into the next tier, those of that one likewise. So a mart
keeps at most MAX_SMALL_FILES - 1 small files per tier, plus one per TARGET_BYTES of rows:
its file count grows with the logarithm of its rows, not with runs; and a row is rewritten
about once per tier it climbs, never with every refresh (merging every small file at once
rewrote nearly the whole mart each MAX_SMALL_FILES refreshes: 2.7-3.5 s instead of 0.9 s at
1,000 runs).
"""

import collections
import concurrent.futures
import shutil
import uuid
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import storage
from ..storage import delta
from ..storage.base import ChangedObject
from ..storage.delta_log import LOG_DIR
from ..storage.delta import DataFile
from ..query.connection import connect, copy_runs
from ..query.engine_memory import give_back_engine_memory, give_back_freed_memory
from ..storage.layout import DUCKDB_FILE, MARTS_DIR
from ..query.library import (helper_select, helpers_read, is_internal, library_fingerprint,
                             library_modules_in_order, live_helpers, module_select,
                             modules_read_by, tables_read_by)
from ..query.prepared import attach_library, file_shape
from ..query.statements import confine
from ..storage.parquet import parquet_writer
from .job_path import job_path_rows
from .library_template import cached_template, template_shape

# graph_replay_kernels: the matching of replayed graphs to their capture, a run's
# question that op_kernels reads, made once per refresh rather than by every query
# critical_path: the job's path across ranks, a walk through every rank's collectives that
# its view's recursive SQL took minutes for over 64 ranks (see job_path), made once per refresh
MARTS = ("overlap", "kernel_stats", "run_metrics", "gpu_idle", "rank_skew",
         "launch_latency_summary", "kernel_class_histogram", "graph_replay_kernels",
         "critical_path")
# The marts whose rows are computed in Python, not asked of their views (whose SQL answers
# where the mart is not current): {mart: function(connection, live helpers) -> rows}.
COMPUTED = {"critical_path": job_path_rows}
STATE_KEY = "tracewhMart"  # the commitInfo key of a mart's state
FORMAT = 2  # of the marts' files (2: not partitioned, compacted): a change rebuilds them
TARGET_BYTES = 8 << 20  # a file this large is no longer merged with new rows
MAX_SMALL_FILES = 8  # files of one tier that a refresh merges (see Compaction; at least 2)
# What a refresh copies into memory, once, rather than have each mart's view read the files:
# the per-trace summaries the marts read, always (0.40 -> 0.33 s for the views of the 254 MB
# trace, the copy 0.035 s; the marts of 299 8-rank runs derived at once: 57.9 -> 21.7 s, peak
# RSS 1,313 -> 1,186 MB); the event tables too for runs of at most IN_MEMORY_EVENTS events in
# all (0.44 -> 0.22 s for an 8-rank run of 26,538 events, the copy 0.04 s; at 199,000 events
# both ways take 0.49 s and the copy holds 30 MB more; for the 299 runs 23.4 s, 2,954 MB).
SUMMARIES = ("traces", "gpu_time", "gpu_intervals", "kernel_names")
IN_MEMORY_EVENTS = 100_000
# Runs derived on one connection: more at once hold more in memory and save nothing (the 299
# runs above: 23.0 s and 653 MB by 64, 23.0 s and 1,267 MB all at once; 29.9 s by 16).
# The marts' views are asked one after another: two at once, each on a cursor of its own,
# held both questions' working memory (the refresh after the 254 MB trace into a new
# warehouse rose 155-206 MB over what the ingest left; one by one, with the job path's
# memory given back between its questions, 116-152 MB), and they are not the refresh's
# longest path there: `tracewh.duckdb`'s library, defined beside them, is.
RUNS_AT_ONCE = 64
# The memory DuckDB's allocator may keep freed after a mart's question (see engine_memory):
# more is given back before the next question, not piled up under it (the questions after
# the 254 MB trace left 50-60 MB freed under the critical path's). Given back after every
# question, the peak was no lower and the refresh took ~8% more CPU (the next questions
# fault the pages in again); above 32 MB, the peak as low (220-225 MB against 229-236 MB
# for a refresh of that trace alone) at 3-5% more CPU (64 MB: 245-256 MB in the ingest of
# that trace into a new warehouse, against 233-236 MB, at ~3% less CPU).
FREED_KEPT = 32 << 20
# The views that the marts' views read over and over (the library inlines a helper into each
# view that reads it, and a view into each query), computed once per connection over runs
# copied whole, into a table of its memory that the view then reads. The demo's 8 ranks: the
# seven views asked one by one 0.196 s, these six 0.066 s then the seven 0.046 s (run_metrics
# alone 0.082 -> 0.007 s: it reads overlap twice and collective_waits' rows twice). The
# helper _collective_matches too: collective_waits is a projection of it, and the job's
# critical path reads it (job_path): computed once for both, 0.026 + 0.033 s of CPU -> 0.03 s.
SHARED = ("_collective_matches", "kernel_name_classes", "kernel_classes", "kernel_launches",
          "capture_spans", "rank_gpu_time", "collective_waits")
# Rows a mart's file is written at a time (its text from dictionaries): a row
# group each, whose `run` statistics let engines skip within the file too.
WRITE_ROWS = 65_536
# Stretches of rows already in run order that a row group is written from as slices, no copy
# (see _ordered); more, and it is copied row by row.
MAX_SLICES = 64
RELATIVE_BEFORE_NS = 946_684_800 * 10**9  # 2000-01-01T00:00:00Z


@dataclass
class MartPlan:
    """What a refresh does to one mart."""

    version: int | None  # the mart's newest version; None when it is to be created
    rebuild: bool  # created again (other SQL, rules or format): every run recomputed
    recompute: set = field(default_factory=set)  # runs whose rows are computed again
    drop: set = field(default_factory=set)  # runs the warehouse no longer holds (marked)
    live: list = field(default_factory=list)  # the mart's files at `version` (DataFile)
    # An object store's mart whose state is of another snapshot: committed again with this
    # one's, rows or not (what tells a reader there that the mart is current)
    restate: bool = False
    superseded: bool = False  # of a newer snapshot already (an object store's: see _plan)

    @property
    def needed(self):
        return bool(self.rebuild or self.recompute or self.drop or self.restate)


@dataclass
class MartsRefresh:
    runs: list  # the runs recomputed (in any mart)
    marts: int  # marts committed
    files: dict = field(default_factory=dict)  # {mart: [DataFile]}: live after the refresh


def mart_path(root, name):
    return root / MARTS_DIR / name


def mart_paths(root):
    """The marts' Delta tables that exist."""
    return [mart_path(root, name) for name in MARTS if delta.is_table(mart_path(root, name))]


def remove_mart(path):
    """Delete a mart's table whole (damaged: it is made again)."""
    store = storage.of(path)
    if store.local:
        shutil.rmtree(path)
        return
    for name in store.names(path / LOG_DIR):
        store.delete(path / LOG_DIR / name)
    for name in store.names(path):
        if name != LOG_DIR:
            store.delete(path / name)


def current_mart_files(root, snapshot, rules, only=None):
    """{mart: the paths of its live files} of the marts written from the library under
    `rules`, by the same tracewh, at `snapshot` or before it (a refresh committing meanwhile
    for a newer one makes its marts not current), whose newest commit is readable: the caller
    has established that the last refresh derived them from `snapshot`. Read only: a damaged
    mart (a file of another size than its commit's: a stat each) is left for the next
    refresh to make again (it is not current). With `only`, of those marts alone.

    On an object store, where no lock orders refreshes, a mart is current when its newest
    commit is of `snapshot` itself (each refresh there commits every mart's state), and its
    files are the local copies DuckDB reads, checked against their sizes in the log (a
    mart with a file missing or of another size is not current)."""
    fingerprint = _fingerprint(rules)
    local = storage.of(root).local
    current = {}
    for name in MARTS if only is None else [name for name in MARTS if name in only]:
        path = mart_path(root, name)
        try:
            if not delta.is_table(path):
                continue
            version = delta.latest_version(path)
            state = delta.commit_info(path, version).get(STATE_KEY)
            if (state is None or state["fingerprint"] != fingerprint
                    or not (state["seq"] <= snapshot.seq if local
                            else state["seq"] == snapshot.seq)):
                continue
            if local:
                if not delta.changed_files(path, version):
                    current[name] = delta.live_paths(path, version)
            else:
                current[name] = storage.of(path).local_copies(
                    delta.live_paths(path, version), delta.live_sizes(path, version))
        except (delta.DamagedLog, ChangedObject, FileNotFoundError):
            continue
    return current


def mart_listing(root, files):
    """{mart: [(path, size)]} of the marts' live files as the refresh left them (`files`,
    {mart: [DataFile]}, see MartsRefresh), their sizes as their commits recorded them: what
    tracewh.duckdb records for the queries it answers to read (and check) instead of
    computing the views. A mart with a file of another size on disk (changed outside
    tracewh: a stat each) is left out, as `current_mart_files` leaves it: not current until
    a refresh makes it again. From the refresh's own plans and commits, not the marts' logs
    loaded again (delta-rs: ~5 ms of CPU a mart, more as its log grows)."""
    listing = {}
    for name, live in files.items():
        found = [(mart_path(root, name) / f.path, f.size) for f in live]
        if all(storage.has_size(path, size) for path, size in found):
            listing[name] = [(str(path), size) for path, size in found]
    return listing


def changed_marts(root):
    """{mart: (its first file not as its commit wrote it, the problem)}, every byte of every
    mart read (sha256): a refresh makes them again. A mart whose log is damaged is made
    again by the refresh anyway (see _plan)."""
    changed = {}
    for path in mart_paths(root):
        try:
            files = delta.changed_files(path, delta.latest_version(path), read=True)
        except delta.DamagedLog:
            continue
        if files:
            changed[path.name] = files[0]
    return changed


def _fingerprint(rules):
    return f"{FORMAT}-{library_fingerprint(rules)}"


def refresh_marts(catalog, snapshot, rules, recompute=(), since=None):
    """Bring every mart to `snapshot` under the kernel `rules` (under the writers' lock,
    which the caller holds); the runs in `recompute` are computed again in any case (or
    dropped, when gone). `since`: the snapshot the last refresh derived every mart from,
    when known (see _files_since)."""
    with _LibraryBeside(catalog, snapshot, rules) as library:
        held = _runs_held(catalog, snapshot)
        newest, events = held.newest, held.events
        fingerprint = _fingerprint(rules)
        local = catalog.store.local
        with concurrent.futures.ThreadPoolExecutor(4) as pool:  # delta-rs releases the GIL
            plans = dict(zip(MARTS, pool.map(
                lambda name: _plan(mart_path(catalog.root, name), newest, snapshot, fingerprint,
                                   local),
                MARTS)))
        for plan in [plan for plan in plans.values() if not plan.superseded]:
            plan.recompute |= set(recompute) & set(newest)
            plan.drop |= set(recompute) - set(newest)
        runs = set().union(*(plan.recompute for plan in plans.values()))
        files = {name: plan.live for name, plan in plans.items() if not plan.superseded}
        if not any(plan.needed for plan in plans.values()):
            return MartsRefresh([], 0, files)
        needed = {name: plan for name, plan in plans.items() if plan.needed}
        computed = {name: [] for name in needed}
        ordered = sorted(runs)
        # no run to compute (only runs to drop): one batch of empty rows
        batches = [ordered[i:i + RUNS_AT_ONCE]
                   for i in range(0, len(ordered), RUNS_AT_ONCE)] or [[]]

        def commit(name):
            # The rows are held as dictionaries from here on, the plain ones let go: the
            # critical_path mart of one 254 MB trace is 89 MB of text held three times over,
            # the commit's peak of memory (its rows come as dictionaries already). Of the
            # runs any mart recomputes, this mart keeps those of its own (a filter copies
            # every row: only where some go).
            plan, rows = needed[name], pa.concat_tables(computed.pop(name))
            schema = _plain_text(rows.schema)
            rows = rows.cast(_text_as_dictionaries(schema))
            kept = pc.is_in(rows["run"],
                            value_set=pa.array(sorted(plan.recompute), pa.string()))
            if not pc.all(kept).as_py():
                rows = rows.filter(kept)
            return _commit(mart_path(catalog.root, name), plan, rows, schema,
                           {"seq": snapshot.seq, "fingerprint": fingerprint})

        # each mart's commit syncs a file or two (0.27 s of a small run's refresh one after
        # the other, on a loaded machine): the marts are separate tables, each committed as
        # soon as its last batch's rows are computed, while the next marts' questions run
        # (~0.03 s of a small run's ~0.3 s refresh no longer after them)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            committed = {}
            for index, batch in enumerate(batches):
                listed = _files_since(catalog, since, snapshot, batch, held.oldest)
                for name, rows in _compute(catalog, snapshot, rules, batch, events, needed,
                                           listed, library):
                    computed[name].append(rows)
                    del rows  # held there alone: the commit lets the plain text go
                    give_back_engine_memory(FREED_KEPT)
                    if index == len(batches) - 1:
                        committed[name] = pool.submit(commit, name)
            files.update({name: future.result() for name, future in committed.items()})
    give_back_freed_memory()  # the rows committed, not under tracewh.duckdb's last steps
    return MartsRefresh(sorted(runs), len(needed), files)


def _compute(catalog, snapshot, rules, runs, events, marts, listed=None, library=None):
    """(mart, its view's rows of `runs`) for each of `marts`, as each is computed, on one
    connection. `listed`: the files of `runs` when known already (see _files_since);
    `library`: a _LibraryBeside."""
    tables = tables_read_by(*MARTS, "capture_spans")
    small = sum(events[run] for run in runs) <= IN_MEMORY_EVENTS
    live = live_helpers(snapshot, rules)
    copied = tables if small else SUMMARIES
    attached = _attached_library(catalog, snapshot, rules, runs, tables, copied, listed,
                                 library)
    if attached is not None:
        with attached as connection:
            if small:
                _compute_once(connection, SHARED, live, temporary=True)
            for name in marts:
                yield name, _rows(connection, name, live)
            return
    with connect(catalog, snapshot, rules, runs=set(runs), tables=tables,
                 modules=modules_read_by(*MARTS, "capture_spans"),
                 copied=copied) as connection:
        if small:
            _compute_once(connection, SHARED, live)
        for name in marts:
            yield name, _rows(connection, name, live)


def _attached_library(catalog, snapshot, rules, runs, tables, copied, listed=None,
                      library=None):
    """A connection to the library as `tracewh.duckdb` defines it, attached (~0.1 s of CPU
    saved after a small run, ~0.2 s after the 254 MB trace: defining the marts' 27 modules
    binds each view), its `tables` over the files of `runs`, those `copied` copied into
    memory (TEMP tables and views); None when the file is not of this library, rules and
    live helpers (or not there: a new warehouse), where `connect` defines the library. The
    file of any snapshot serves (the one being written beside, or the one before it): its
    tables are not read. An object store's warehouse holds no such file (see `refresh
    --duckdb-file`).
    `library`: a _LibraryBeside, whose file attached already this takes."""
    if not catalog.store.local:
        return None
    connection = (_attach(catalog, snapshot, rules) if library is None else library.take())
    if connection is None:
        return None
    try:
        # one thread for a run copied whole: a small run's questions are planning more than
        # work, and the file being written beside has the other core (CPU of the copies and
        # questions of the 8-rank run 0.41 -> 0.33 s)
        if set(copied) == set(tables):
            connection.execute("SET threads = 1")
        connection.execute("SET enable_progress_bar = false")
        paths = copy_runs(connection, catalog, snapshot, set(runs), tables, listed, copied)
        confine(connection, [path for found in paths.values() for path in found])
    except BaseException:
        connection.close()
        raise
    return connection


def _attach(catalog, snapshot, rules):
    """A connection to `tracewh.duckdb`'s library, attached (see _attached_library), else to
    the library's template (a new warehouse's, whose file is being written beside: see
    library_template), or None."""
    root = catalog.root.resolve()
    live = live_helpers(snapshot, rules)
    connection = attach_library(root / DUCKDB_FILE, file_shape(root, rules, live))
    if connection is None:
        shape = template_shape(rules, live)
        template = cached_template(shape)
        connection = None if template is None else attach_library(template, shape)
    return connection


class _LibraryBeside:
    """`tracewh.duckdb`'s library attached on a thread of its own while the refresh reads the
    traces' log and plans the marts, for the first connection to take (see
    _attached_library): the attach is ~0.03 s of the ~0.3 s that the marts of a small run
    take one step after another on one core, the other mostly idle. Connections after the
    first attach their own; one not taken (nothing is to be computed) is closed. An object
    store's warehouse holds no such file: nothing is attached."""

    def __init__(self, catalog, snapshot, rules):
        self._arguments = (catalog, snapshot, rules)
        self._pool = concurrent.futures.ThreadPoolExecutor(1) if catalog.store.local else None
        self._pending = (None if self._pool is None
                         else self._pool.submit(_attach, *self._arguments))

    def take(self):
        pending, self._pending = self._pending, None
        return _attach(*self._arguments) if pending is None else pending.result()

    def close(self):
        """Close the connection attached if it was not taken."""
        pending, self._pending = self._pending, None
        if self._pool is None:
            return
        # an attach that failed is not this refresh's failure: the file is not needed then
        if pending is not None and pending.exception() is None and pending.result():
            pending.result().close()
        self._pool.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def _compute_once(connection, views, live, temporary=False):
    """Have each of `views` read a table of its rows, computed now (each after the views it
    reads: then from their tables), instead of computing them in every question that reads
    them: the same rows, since the connection's tables do not change. `live`: the library's
    live helpers. `temporary`: as TEMP table and view (those of a connection to an attached
    catalog, which cannot be written; a cursor does not see them)."""
    kind = "TEMP " if temporary else ""
    for name in [module for module in library_modules_in_order() if module in views]:
        connection.execute(f"CREATE {kind}TABLE computed_{name} AS "
                           f"{_shared_select(name, views, live)}")
        connection.execute(f"CREATE OR REPLACE {kind}VIEW {name} AS "
                           f"SELECT * FROM computed_{name}")


def _shared_select(name, computed, live):
    """What a view of `computed` (see _compute_once) is computed by: a helper's own SELECT (a
    connection defines no helper: its public views inline them); a view whose helpers are all
    computed, its SELECT as written, reading them; any other, the view as defined."""
    if is_internal(name):
        return helper_select(name, live)
    helpers = helpers_read(name, live)
    if helpers and set(helpers) <= set(computed):
        return module_select(name, live)
    return f"SELECT * FROM {name}"


@dataclass
class RunsHeld:
    """Of each run the snapshot holds: its traces' newest and oldest ingest_seq, and their
    events."""

    newest: dict
    oldest: dict
    events: collections.Counter


def _runs_held(catalog, snapshot):
    """The RunsHeld of `snapshot`, from the `traces` log's statistics."""
    rows = catalog.trace_rows(snapshot)
    if rows is None:  # files without statistics: from the rows
        triples = [(t.run, t.ingest_seq, t.events)
                   for t in catalog.stored_traces(None, snapshot=snapshot)]
    else:
        triples = zip(*(rows[name].to_pylist() for name in ("run", "ingest_seq", "events")))
    held = RunsHeld({}, {}, collections.Counter())
    for run, seq, count in triples:
        held.newest[run] = max(seq, held.newest.get(run, seq))
        held.oldest[run] = min(seq, held.oldest.get(run, seq))
        held.events[run] += count
    return held


def _files_since(catalog, since, snapshot, runs, oldest):
    """{table: [(path, size)]} of the files of `runs` at `snapshot` in the tables the marts
    read, from the commits since `since` (the snapshot the last refresh derived from) alone,
    when every trace of those runs was committed after it (a new run, the usual refresh):
    each of their files was then added by one of those commits, and none of them removed
    since (Delta's net adds). The tables' logs are not loaded, which costs delta-rs more as
    a table grows (~10 ms of CPU a table at 10 runs, ~45 ms at 1,000), not as the new run
    does. None otherwise (a local warehouse's refresh only: see refresh_derived)."""
    if (since is None or not runs or since.seq > snapshot.seq
            or any(oldest[run] <= since.seq for run in runs)):
        return None
    listed, wanted = {}, set(runs)
    for table in tables_read_by(*MARTS, "capture_spans"):
        first, last = since.versions.get(table), snapshot.versions.get(table)
        if first is None or last is None or first > last:
            return None
        try:
            changes = delta.changes(catalog.table_path(table), first, last)
        except delta.DamagedLog:  # listed from the log whole, which says what is wrong
            return None
        if changes is None:  # a commit file gone (log cleanup)
            return None
        listed[table] = [(f"{catalog.table_path(table)}/{name}", size)
                         for name, run, size in changes[0] if run in wanted]
    return listed


def _plan(path, newest, snapshot, fingerprint, local=True):
    """What a refresh to `snapshot` does to the mart at `path`. On an object store (not
    `local`), a mart of a newer snapshot is left as it is: another writer's refresh, which
    no lock ordered after this one, derived it."""
    try:
        if not delta.is_table(path):
            return MartPlan(None, True, set(newest))
        version = delta.latest_version(path)
        state = delta.commit_info(path, version).get(STATE_KEY)
        if (not local and state is not None and state["fingerprint"] == fingerprint
                and state["seq"] > snapshot.seq):
            return MartPlan(version, False, superseded=True)
        if state is None or state["fingerprint"] != fingerprint or state["seq"] > snapshot.seq:
            return MartPlan(version, True, set(newest))
        live = _live_files(path, version, state)
    except delta.DamagedLog:  # damaged from outside; what it derives is made again whole
        remove_mart(path)
        return MartPlan(None, True, set(newest))
    return MartPlan(version, False, {run for run, seq in newest.items() if seq > state["seq"]},
                    live=live, restate=not local and state["seq"] != snapshot.seq)


def _live_files(path, version, state):
    """The mart's live files at `version`, its newest, as that commit's `state` lists them
    (every refresh's commit records them: a mart keeps few files), its log checked for
    damage as loading it checks it (a stat a commit); loaded from the log (delta-rs, ~5 ms
    of CPU a mart) for a state without them, an earlier tracewh's."""
    if "files" not in state:
        return delta.live_files(path, version)
    delta.check_commits(path, delta.first_replayed(path, version), version)
    return [DataFile(name, None, None, None, rows, size, runs=(first, last))
            for name, rows, size, first, last in state["files"]]


def _rows(connection, name, live=()):
    """The view's rows (of the runs the connection holds), with the extra columns; `live`:
    the library's live helpers. A view with a start_ns of its own (critical_path: each
    edge's) keeps it, and its start_time is that."""
    if name in COMPUTED:
        table = COMPUTED[name](connection, live)
    else:
        keys = "run, phase" if name == "rank_skew" else "run, phase, rank"
        on = " AND ".join(f"v.{key} = s.{key}" for key in keys.split(", "))
        table = connection.sql(
            f"SELECT v.*, s.start_ns FROM {name} v LEFT JOIN "
            f"(SELECT {keys}, min(first_ns) AS start_ns FROM capture_spans GROUP BY ALL) s "
            f"ON {on}").to_arrow_table()
    start = table["start_ns"]
    relative = pc.less(start, RELATIVE_BEFORE_NS)
    start_time = pc.if_else(relative, pa.scalar(None, pa.timestamp("us", tz="UTC")),
                            pc.cast(pc.divide(start, 1000), pa.timestamp("us", tz="UTC")))
    return table.append_column("start_time", start_time).append_column("relative_time",
                                                                      relative)


def _commit(path, plan, rows, schema, state):
    """Commit the rows computed of the recomputed runs (`schema`, held as
    _text_as_dictionaries of it) in place of those runs' rows: the files that hold a
    recomputed or dropped run are rewritten without it, and the small files of the new
    file's tier merged when they are full (see the module's docstring), all in one new
    file, whose commit records the mart's `state` and live files after it (see _live_files).
    Return those files."""
    version = plan.version
    names = sorted(plan.recompute | plan.drop)
    gone = pa.array(names, pa.string())
    if plan.rebuild:  # a new schema; every file removed
        version = (delta.create_table(path, schema) if version is None
                   else delta.replace_schema(path, version, schema))
        removed, live = [], []
    else:
        removed = _files_holding(path, plan.live, gone)
        live = plan.live
    kept = [_read(path, f, rows.schema, without=gone) for f in removed
            if not _only_of(f, names)]
    merging = files_to_merge([f for f in live if f not in removed and f.size < TARGET_BYTES],
                             rows.num_rows + sum(table.num_rows for table in kept))
    merged = pa.concat_tables([*kept, *(_read(path, f, rows.schema) for f in merging), rows])
    actions = [delta.remove_action(f) for f in removed + merging]
    added = [_write(path, merged)] if merged.num_rows else []
    after = [f for f in live if f not in removed and f not in merging] + added
    files = [[f.path, f.rows, f.size, *(f.runs or (None, None))] for f in after]
    delta.commit(path, version + 1, [*actions, *map(delta.add_action, added)], "WRITE",
                 {STATE_KEY: {**state, "files": files}})
    return after


def _text_as_dictionaries(schema):
    """`schema` with its text columns but `run` (which rows are sorted by) as dictionaries:
    what a commit holds the rows it rewrites as. A mart's names repeat run after run: at
    1,000 runs kernel_stats's 624,000 rows take 4.7 MB on disk but 365 MB as plain text, and
    rewriting them (`ingest --replace` of one run) peaked at 1.38-1.53 GB; as dictionaries,
    the replaced runs dropped as they are read and the file written from the dictionaries,
    at 0.35 GB, in 0.84-0.89 s instead of 1.4-3.3 s."""
    return pa.schema([field.with_type(pa.dictionary(pa.int32(), field.type))
                      if pa.types.is_string(field.type) and field.name != "run" else field
                      for field in schema])


def _plain_text(schema):
    """`schema` with its dictionary columns as their values' type: a mart's own schema, of
    rows computed with some text as dictionaries (see job_path)."""
    return pa.schema([field.with_type(field.type.value_type)
                      if pa.types.is_dictionary(field.type) else field for field in schema])


def _read(path, data_file, schema, without=None):
    """A mart file's rows as `schema`, its dictionary columns read as such; but those of the
    runs `without` (a string array), dropped a batch at a time as they are read."""
    encoded = [field.name for field in schema if pa.types.is_dictionary(field.type)]
    source = pq.ParquetFile(delta.parquet_source(path / data_file.path),
                            read_dictionary=encoded)
    batches = source.iter_batches()
    if without is not None:
        batches = (batch.filter(pc.invert(pc.is_in(batch["run"], value_set=without)))
                   for batch in batches)
    return pa.Table.from_batches(batches, schema=source.schema_arrow).cast(schema)


def _files_holding(path, live, runs):
    """The live files that hold one of `runs` (a string array). A file may hold a run within
    its bounds (or any, without bounds); its `run` column says whether it does: a new run whose
    name sorts between two others (a hash, say) is in no file, and no file is rewritten for
    it."""
    names = runs.to_pylist()
    return [f for f in live
            if _only_of(f, names)
            or ((f.runs is None or None in f.runs
                 or any(f.runs[0] <= run <= f.runs[1] for run in names))
                and pc.any(pc.is_in(pq.ParquetFile(delta.parquet_source(path / f.path)).read(
                    columns=["run"])["run"], value_set=runs)).as_py())]


def _only_of(data_file, runs):
    """Whether the mart file holds rows of one of `runs` (names) only, as its bounds say: a
    file of one run (the newest refresh's, most often), which a recompute of that run
    replaces whole without reading it (the 254 MB trace's critical path: 292,827 rows)."""
    bounds = data_file.runs
    return bounds is not None and bounds[0] == bounds[1] and bounds[0] in runs


def files_to_merge(small, rows):
    """The files of `small` that a new file of `rows` rows takes in: while its tier would hold
    MAX_SMALL_FILES files with it, the others of that tier (the new file grows, maybe into the
    next tier, and is looked at again)."""
    merging = []
    while True:
        peers = [f for f in small if f not in merging and tier(f.rows) == tier(rows)]
        if len(peers) + 1 < MAX_SMALL_FILES:
            return merging
        merging += peers
        rows += sum(f.rows for f in peers)


def tier(rows):
    """The order of magnitude of `rows` in base MAX_SMALL_FILES: 0 below it, 1 below its
    square, ..."""
    order = 0
    while rows >= MAX_SMALL_FILES:
        rows //= MAX_SMALL_FILES
        order += 1
    return order


def _write(path, rows):
    """Write `rows` in run order (stable: a view's order within a run stays) as a new file of
    the mart, a row group of WRITE_ROWS at a time: its DataFile. Text held as dictionaries
    is written from them, one per column (chunks of other dictionaries, as the job path's
    batches or merged files come, would each change the column's dictionary within a row
    group: a larger file), and read back as plain text (no Arrow schema stored)."""
    rows = rows.unify_dictionaries()
    order = pc.sort_indices(rows, sort_keys=[("run", "ascending")]).to_numpy()
    name = f"{uuid.uuid4().hex}.parquet"
    with delta.written(path / name) as local:
        with parquet_writer(local, rows.schema, store_schema=False) as writer:
            for start in range(0, rows.num_rows, WRITE_ROWS):
                writer.write_table(_ordered(rows, order[start:start + WRITE_ROWS]))
        size, sha256 = delta.file_digest(local)
    bounds = pc.min_max(rows["run"])
    return DataFile(name, None, None, None, rows.num_rows, size,
                    runs=(bounds["min"].as_py(), bounds["max"].as_py()), sha256=sha256)


def _ordered(rows, positions):
    """The rows at `positions` (sort indices, numpy), in that order: slices of `rows` where
    the positions run on in a few stretches (rows in run order already: one run's, each
    merged file's), a copy of each row (a take) otherwise. A take of each row group
    concatenated every column of the rows beside them (11-13 MB more for the 254 MB trace's
    critical path: the refresh's peak of memory), and took 1.6x the CPU."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    if len(breaks) >= MAX_SLICES:
        return rows.take(pa.array(positions))
    bounds = [0, *breaks.tolist(), len(positions)]
    return pa.concat_tables([rows.slice(positions[first], last - first)
                             for first, last in zip(bounds, bounds[1:])])
