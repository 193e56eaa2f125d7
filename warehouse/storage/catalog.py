"""The catalog: every table of a warehouse is a Delta Lake table, and one commit of `traces`
says which version of every table makes a consistent snapshot.

Layout of a warehouse directory (the data files' paths: see `layout`):

    <table>/_delta_log/                         the table's Delta log
    <table>/run=<run>/phase=<phase>/rank=<rank>/<trace_id>-<part>.parquet
    _tracewh/staging/<pid>-<random>/            files being written by an ingest
    _tracewh/lock                               flock'ed by writers while they commit

A trace is committed table by table, `traces` last: its rows in the event tables first, each
table one Delta commit, then its `traces` row (written here, once its sequence number is
known), in a commit whose commitInfo carries the
versions of all the other tables at that moment (`"tracewh": {"versions": ...}`: the
*pointer*). tracewh reads every table at the versions of the newest pointer, so a query sees
each trace whole or not at all, and a --replace old or new, never both. A reader of one raw
table sees its newest version: rows of a trace being committed can be there a moment before
its `traces` row (join on `traces` to exclude them), and after a writer was killed, until the
next writer rolls the tables back to the pointer with Delta remove and add actions.

Every file tracewh writes is named after its trace, so what a trace owns is known from the
log alone. Files a commit retires stay on disk (older versions still name them) until
`vacuum`. Directories starting with `_` are skipped by Spark, Hive and Trino.
"""

import concurrent.futures
import contextlib
import dataclasses
import datetime
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import delta, directory, layout, links
from .. import storage
from .delta import DataFile
from .directory import COMMITTING, DAMAGED, LOCK, STAGING, STATE_DIR, TRACES
from ..errors import UsageError, WarehouseBusy, WarehouseError, printable
from .names import check_partition
from .run_info import RunInfo
from .parquet import write_table
from .schema import PARTITION_COLUMNS, TABLES

FORMAT_VERSION = 5  # 5: Delta Lake tables (4 and before: _tracewh/manifest.json)


@dataclass
class StagedTrace:
    """A trace whose files are staged, ready to commit, and its `traces` row: all of it but
    ingest_seq and ingested_at, which the commit sets."""

    trace_id: str
    sha256: str
    run: str
    phase: str
    rank: int
    parts: dict  # {table: [part numbers]}, `traces` aside
    class_rules: str = ""  # fingerprint of the rules behind its gpu_intervals/gpu_time classes
    row: dict = field(default_factory=dict)

    def __post_init__(self):
        # The last guard: a partition value Delta cannot parse back would make every later
        # read of the table fail.
        check_partition(self.run, self.phase, self.rank)

    def partition(self):
        return layout.partition(self.run, self.phase, self.rank)

    def part_path(self, part):
        """Where a part's file is, relative to its table."""
        return f"{self.partition()}/{layout.part_file(self.trace_id, part)}"

    def data_file(self, table, part, file, row=None):
        """The DataFile of a part, from `file`, its bytes (on local disk)."""
        path = self.part_path(part)
        size, sha256 = delta.file_digest(file)
        return DataFile(path, self.run, self.phase, self.rank,
                        pq.ParquetFile(file).metadata.num_rows, size, row, sha256=sha256)


@dataclass(frozen=True)
class PlacedTrace:
    """A staged trace whose files are in their partitions already, to be committed
    (Catalog.publish): its event tables' DataFiles, and the ids of the traces of its
    run/phase/rank it replaces."""

    staged: StagedTrace
    files: dict  # {table: [DataFile]}, `traces` aside
    replaced: frozenset = frozenset()


@dataclass
class StoredTrace:
    """A committed trace, as its `traces` row says."""

    trace_id: str
    sha256: str
    run: str
    phase: str
    rank: int
    events: int
    bytes: int
    tags: dict
    ingest_seq: int


@dataclass
class CommitResult:
    trace: StoredTrace | None  # the trace already there, when "unchanged"
    status: str  # "ingested", "unchanged" (same file already there) or "replaced"


@dataclass
class Snapshot:
    """A consistent state of every table: the pointer's versions and the commit count."""

    versions: dict  # {table: version}
    seq: int
    class_rules: tuple  # fingerprints of the class rules any live trace was stored with
    # On an object store, the traces the snapshot holds: writers there take no lock, so a
    # table's version can hold files of a trace another writer has not committed yet (or
    # never will, killed): readers see the files of these traces only. None: every file.
    trace_ids: frozenset | None = None

    def files(self, root, runs=None):
        """{table: [DataFile]} at the snapshot's versions (optionally of some runs only)."""
        return self._each_table(root, lambda path, version: delta.files_of(delta.of_traces(
            delta.add_actions(path, version, runs), self.trace_ids)))

    def paths(self, root, runs=None, tables=None):
        """{table: [path of each live file]} at the snapshot's versions (optionally of some
        runs, some tables only)."""
        return self._each_table(root, lambda path, version: delta.live_paths(
            path, version, runs, self.trace_ids), tables)

    def sizes(self, root, runs=None, tables=None):
        """{table: [size of each live file]}, in the order of `paths`, from the Delta log."""
        return self._each_table(root, lambda path, version: delta.live_sizes(
            path, version, runs, self.trace_ids), tables)

    def _each_table(self, root, read, tables=None):
        # Tables of the snapshot only: a warehouse being created has some tables already
        # and no pointer yet (its snapshot is empty).
        tables = [name for name in (TABLES if tables is None else tables)
                  if name in self.versions]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:  # delta-rs releases the GIL
            found = pool.map(lambda name: read(storage.location(root) / name,
                                               self.versions[name]), tables)
            return dict(zip(tables, found))


EMPTY_SNAPSHOT = Snapshot({}, 0, ())


# scheme://...: an object store's address (s3://bucket/path), not a local directory's name
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")


def local_root(root):
    """`root` as a Path, unless it is a URL: until tracewh reads object storage, one would be
    taken for a local directory named `s3:` (made, then answered from as if empty)."""
    if isinstance(root, str) and _URL.match(root):
        raise UsageError(f"{printable(root)}: a URL: the warehouse is a local directory "
                         "(object storage is not supported yet)")
    return Path(root)


class Catalog:
    """A warehouse: a local directory, or a prefix of an object store's bucket (`storage`),
    where writers take no lock (see `commit`)."""

    def __init__(self, root, lock_timeout=None):
        self.root = storage.location(root)
        self.store = storage.of(self.root)
        # Seconds a writer waits for the lock before WarehouseBusy; None waits as long as it
        # takes (the CLI). A training job's trace handler must not stall a step for long.
        self.lock_timeout = lock_timeout
        self.state = self.root / STATE_DIR
        self._traces = {}  # {(run, phase): (traces version, [StoredTrace])}: see traces_of
        self._run_files = {}  # {(table, run): ((version, creation mark), [DataFile])}
        self._lock = threading.RLock()  # this process's threads, in turn, hold the flock
        self._lock_depth = 0  # how many `locked` of this catalog's thread are open
        self._logs_checked = False  # by this object's first lock: see locked

    def __getstate__(self):
        """A catalog sent to a worker process (which stages files): without this process's
        lock."""
        return {**self.__dict__, "_lock": None, "_lock_depth": 0}

    def __setstate__(self, state):
        self.__dict__.update(state, _lock=threading.RLock())

    def live_files(self, table, version, runs=None):
        """A table's live files at `version` (optionally of some runs only)."""
        return delta.live_files(self.table_path(table), version, runs)

    def table_path(self, table):
        return self.root / table

    # -- reading ------------------------------------------------------------------------------

    def check_readable(self):
        """See `directory.check_readable`."""
        directory.check_readable(self.root, TABLES, self.lost_state)

    def check_not_foreign(self):
        """See `directory.check_not_foreign`."""
        directory.check_not_foreign(self.root, TABLES, self.lost_state)

    def control_paths(self):
        """See `directory.control_paths`."""
        return directory.control_paths(self.root, TABLES)

    def lost_state(self):
        """True when the state directory is gone but the tables are a tracewh warehouse's
        (its `traces` log holds a pointer): everything in it but the kernel rules is made
        again by a writer (lock, derived.json) or not needed (staging files of dead ingests;
        the commit marker, whose loss the first lock's check of every table covers)."""
        return (self.store.local and not self.state.exists()
                and self.snapshot() is not EMPTY_SNAPSHOT)

    def restore_state(self):
        """Recreate a lost state directory (see lost_state); True if it was."""
        if not self.lost_state():
            return False
        self.state.mkdir()
        return True

    def snapshot(self):
        """The newest consistent snapshot; an empty one for a warehouse not yet written."""
        newest = directory.newest_pointer(self.root)
        if newest is None:
            return EMPTY_SNAPSHOT
        version, pointer = newest
        return Snapshot({**pointer["versions"], TRACES: version}, pointer["seq"],
                        tuple(pointer["class_rules"]),
                        None if self.store.local else self._trace_ids(version))

    def _trace_ids(self, version):
        """The ids of the traces `traces` holds at `version`."""
        actions = delta.add_actions(self.table_path(TRACES), version)
        return frozenset(map(layout.trace_id_of, actions["path"].to_pylist()))

    def stored_traces(self, run, phase=None, snapshot=None):
        """The committed traces of a run (and phase), from their `traces` rows."""
        snapshot = snapshot or self.snapshot()
        if TRACES not in snapshot.versions:
            return []
        files = [f for f in self.live_files(TRACES, snapshot.versions[TRACES],
                                            None if run is None else [run])
                 if phase is None or f.phase == phase]
        traces = []
        for data_file in files:
            for row in ([data_file.row] if data_file.row is not None else  # from the log
                        pq.read_table(self.table_path(TRACES) / data_file.path).to_pylist()):
                traces.append(StoredTrace(row["trace_id"], row["sha256"], data_file.run,
                                          data_file.phase, data_file.rank, row["events"],
                                          row["bytes"], json.loads(row["tags"] or "{}"),
                                          row["ingest_seq"]))
        return sorted(traces, key=lambda t: t.ingest_seq)

    def trace_rows(self, snapshot=None):
        """The `traces` rows' partition and ROW_STATS columns (Arrow), from the log alone:
        1,000 runs (8,000 files) read no data file. None when a file has no statistics
        (written by another engine)."""
        snapshot = snapshot or self.snapshot()
        columns = {c.name: c.type for c in TABLES[TRACES].columns}
        schema = pa.schema([(name, type_) for name, type_, _ in PARTITION_COLUMNS]
                           + [(name, columns[name]) for name in delta.ROW_STATS])
        if TRACES not in snapshot.versions:
            return schema.empty_table()
        return delta.row_table(self.table_path(TRACES), snapshot.versions[TRACES], schema)

    def runs(self, snapshot=None):
        """The runs, in the order of their first commit: [RunInfo]."""
        rows = self.trace_rows(snapshot)
        if rows is None:  # no statistics: from the rows themselves
            traces = [(t.run, t.phase, t.ingest_seq, t.tags)
                      for t in self.stored_traces(None, snapshot=snapshot)]
        else:
            traces = zip(rows["run"].to_pylist(), rows["phase"].to_pylist(),
                         rows["ingest_seq"].to_pylist(),
                         (json.loads(tags or "{}") for tags in rows["tags"].to_pylist()))
        found = {}
        for run, phase, seq, tags in sorted(traces, key=lambda trace: trace[2]):
            found.setdefault(run, RunInfo(run, seq, set(), tags)).phases.add(phase)
        return list(found.values())

    # -- writing ------------------------------------------------------------------------------

    def new_staging_dir(self):
        """A directory to stage an ingest's files in: the warehouse's own (moved into place
        at the commit), or for an object store a local temporary one (uploaded from)."""
        parent = (self.state if self.store.local
                  else Path(tempfile.gettempdir()) / "tracewh-s3") / STAGING
        path = parent / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        path.mkdir(parents=True)
        return path


    @contextlib.contextmanager
    def locked(self, check_all=False, recover=True):
        """Hold the writers' lock, with every table created and the tables back at the
        newest pointer, undoing what an interrupted commit wrote: one whose marker file is
        still there, or any commit without a pointer with `check_all` and at the first lock
        of a command, which also checks the logs for damage before anything is written on
        them (probing every table's log costs ~2 ms per table at 8,000 commits, too much to
        pay at every commit).

        Re-entrant, so that a command holds it across everything it commits (a vacuum's
        deletes and its refresh, an optimize's commits and its refresh) while what it calls
        takes it too: a writer let in between would find versions taken past the pointer
        it read. Not to be taken inside `committing`, whose commit it would roll back.
        `recover=False` touches no table: a vacuum on a full disk, where no rollback can be
        written, still deletes."""
        with self._lock:
            handle = None
            if not self._lock_depth:
                handle = self._take_flock() if self.store.local else self._check_writable()
            self._lock_depth += 1
            try:
                if recover:
                    self._create_tables()
                    if self.store.local:  # an object store's writers are not rolled back
                        self._recover(check_all or not self._logs_checked
                                      or (self.state / COMMITTING).exists())
                    self._logs_checked = True
                yield
            finally:
                self._lock_depth -= 1
                if handle is not None:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    os.close(handle)

    def _check_writable(self):
        """An object store's writers take no lock (see `commit`): the prefix checked to be a
        warehouse, or to become one (its state marked, the store's conditional writes
        probed by the first create)."""
        self.check_not_foreign()
        mark = self.state / "format"
        with contextlib.suppress(FileExistsError):
            self.store.create(mark, json.dumps({"format": FORMAT_VERSION}).encode())

    def _take_flock(self):
        """The lock file's descriptor, flock'ed (not through a link: see `links`). Opening it
        is the first write of every writer, so a warehouse that cannot be written is refused
        here, in one line."""
        self.check_not_foreign()
        try:
            self.state.mkdir(parents=True, exist_ok=True)
            handle = links.open_no_follow(self.state / LOCK, os.O_RDWR | os.O_CREAT)
        except OSError as error:
            if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            raise WarehouseError(f"cannot write to the warehouse {self.root}: read-only "
                                 f"({error.strerror}: {error.filename}); commands that only "
                                 "read it still work") from None
        try:
            self._acquire(handle)
        except BaseException:
            os.close(handle)
            raise
        return handle

    def _acquire(self, handle):
        """flock the lock file, giving up after `lock_timeout` seconds when there is one."""
        if self.lock_timeout is None:
            fcntl.flock(handle, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseBusy(f"{self.root} is busy: another writer has held its lock "
                                        f"for more than {self.lock_timeout:g} s") from None
                time.sleep(0.05)

    def clean_up(self):
        """Undo what interrupted writers left (commits without a pointer, staging
        directories), as the next writer would."""
        with self.locked(check_all=True):
            pass

    @contextlib.contextmanager
    def committing(self):
        """Mark a commit under way, so that the next writer checks the tables if it dies.
        An object store's writers need none: a commit without its `traces` row is never
        read (see Snapshot.trace_ids)."""
        if not self.store.local:
            yield
            return
        links.touch(self.state / COMMITTING)
        yield
        (self.state / COMMITTING).unlink()

    def commit(self, staged, staging, replace=False, replace_up_to=None):
        """Commit a staged trace: the event tables, then `traces` with the new pointer. Under
        the lock, so concurrent ingests serialise here (and only here). With `replace`, the
        traces of the same run/phase/rank committed up to sequence number `replace_up_to`
        (all, when None) are removed in the same commits."""
        with self.locked():
            snapshot = self.snapshot()
            stored = self.traces_of(staged.run, staged.phase, snapshot)
            same_rank = [t for t in stored if t.rank == staged.rank]
            existing = [t for t in same_rank if t.sha256 == staged.sha256]
            if existing and not replace:
                shutil.rmtree(staging, ignore_errors=True)
                return CommitResult(existing[0], "unchanged")
            replaced = [t for t in same_rank
                        if replace and (replace_up_to is None or t.ingest_seq <= replace_up_to)]
            with _interrupt_deferred(), self.committing():
                placed = PlacedTrace(staged, self._place(staged, staging),
                                     frozenset(t.trace_id for t in replaced))
                version = self.publish([placed], snapshot, staging)
            if not self.store.local:  # its sequence number is that of the version it won
                self._traces.pop((staged.run, staged.phase), None)
            else:
                row = staged.row
                self._traces[staged.run, staged.phase] = (version, [
                    *(t for t in stored if t not in replaced),
                    StoredTrace(staged.trace_id, staged.sha256, staged.run, staged.phase,
                                staged.rank, row["events"], row["bytes"],
                                json.loads(row["tags"] or "{}"), snapshot.seq + 1)])
            shutil.rmtree(staging, ignore_errors=True)
            return CommitResult(None, "replaced" if replaced else "ingested")

    @staticmethod
    def _stage_trace_row(staged, staging, seq):
        """Write the trace's `traces` row, complete with its sequence number and commit time,
        as the staged part 0 of `traces`; return the row."""
        row = {**staged.row, "ingest_seq": seq,
               "ingested_at": datetime.datetime.now(datetime.timezone.utc)}
        write_table(pa.Table.from_pylist([row], schema=TABLES[TRACES].schema),
                    staging / layout.staged_name(TRACES, 0))
        return row

    def traces_of(self, run, phase, snapshot=None):
        """stored_traces(run, phase) at `snapshot` (the newest by default), kept from one call
        to the next and brought up to date by this process's own commits: re-reading the
        `traces` log costs ~75 ms at 8,000 files, at every file an ingest checks or commits.
        Another writer's commit (a newer version) means reading it again."""
        snapshot = snapshot or self.snapshot()
        version = snapshot.versions.get(TRACES)
        known = self._traces.get((run, phase))
        if known is None or known[0] != version:
            known = self._traces[run, phase] = (version,
                                                self.stored_traces(run, phase, snapshot))
        return known[1]

    def _place(self, staged, staging):
        """Move the staged parts of `staged` (upload them, to an object store) into their
        partitions: {table: [DataFile]}."""
        files = {table: [staged.data_file(table, part, staging / layout.staged_name(table, part))
                         for part in numbers] for table, numbers in staged.parts.items()}
        for table in files:  # each run=/phase=/rank= directory, before any move
            self.prepare_partition(table, staged)
        for table, numbers in staged.parts.items():
            for part, data_file in zip(numbers, files[table]):
                source = staging / layout.staged_name(table, part)
                target = self.table_path(table) / data_file.path
                if self.store.local:
                    os.replace(source, target)
                else:
                    self.store.put_file(source, target)
        return files

    def publish(self, traces, snapshot, staging, actions=(), committed=None):
        """Commit `traces` ([PlacedTrace]) after `snapshot`: each event table's files and the
        removal of the traces they replace, then `traces`: their rows (numbered after the
        snapshot's seq; written here, through `staging`, into their partitions), the removal
        of the replaced ones' rows, `actions` (an ingest's Delta transaction) and the new
        pointer. Return the version of `traces`; or None, nothing committed, when another
        writer won its version and `committed(that version)` says it recorded these traces
        already (a driver run twice at once). Under the lock (a local warehouse) each table
        is committed at the version after the snapshot's; on an object store see
        _publish_unlocked."""
        if self.store.local:
            return self._publish_locked(traces, snapshot, staging, actions)
        return self._publish_unlocked(traces, snapshot, staging, actions, committed)

    def _publish_locked(self, traces, snapshot, staging, actions):
        versions = dict(snapshot.versions)
        runs = sorted({trace.staged.run for trace in traces})
        replaced = frozenset().union(*(trace.replaced for trace in traces))
        if replaced:  # every table's at once: delta-rs releases the GIL
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda each: self.run_files(each[0], versions[each[0]], each[1]),
                              [(table, run) for table in TABLES for run in runs]))
        for table in [name for name in TABLES if name != TRACES] + [TRACES]:
            info, more = None, []
            if table == TRACES:
                adds, rules = self._trace_rows(traces, snapshot, staging)
                info = self.pointer(versions, snapshot.seq + len(traces), rules)
                more = list(actions)
            else:
                adds = [f for trace in traces for f in trace.files.get(table, ())]
            removes = [f for run in runs for f in self.run_files(table, versions[table], run)
                       if f.trace_id in replaced] if replaced else []
            if table != TRACES and not adds and not removes:
                continue
            committed = delta.commit(self.table_path(table), versions[table] + 1,
                                     [*map(delta.remove_action, removes),
                                      *map(delta.add_action, adds), *more], "WRITE", info)
            for run in runs:
                self._follow_run_files(table, run, versions[table], committed,
                                       [f for f in removes if f.run == run],
                                       [f for f in adds if f.run == run])
            versions[table] = committed
        return versions[TRACES]

    def _trace_rows(self, traces, snapshot, staging):
        """The `traces` rows of `traces`, numbered after the snapshot's seq, written into
        their partitions: (their DataFiles, the class rules of the new pointer)."""
        adds, rules = [], set(snapshot.class_rules)
        for seq, trace in enumerate(traces, snapshot.seq + 1):
            staged = trace.staged
            row = self._stage_trace_row(staged, staging, seq)
            source = staging / layout.staged_name(TRACES, 0)
            added = staged.data_file(TRACES, 0, source,
                                     {name: row[name] for name in delta.ROW_STATS})
            self.prepare_partition(TRACES, staged)
            self.store.put_file(source, self.table_path(TRACES) / added.path)
            adds.append(added)
            rules |= {staged.class_rules} - {""}
        return adds, rules

    def prepare_partition(self, table, staged):
        """The run=/phase=/rank= directory of `staged` in a local `table` (make_partition),
        before a file is put there; an object store has none."""
        if self.store.local:
            self.make_partition(table, staged)

    def make_partition(self, table, staged):
        """The run=/phase=/rank= directory of `staged` (a StagedTrace) in a local `table`,
        made and checked to be no link (see `links`) before and after: mkdir would follow
        one out of the warehouse. Return it."""
        target = self.table_path(table) / staged.partition()
        directories = [target.parents[1], target.parent, target]
        links.check_no_links(directories)
        target.mkdir(parents=True, exist_ok=True)
        links.check_no_links(directories)
        return target

    # -- an object store's commits: no lock ----------------------------------------------------

    def _publish_unlocked(self, traces, snapshot, staging, actions, committed):
        """publish on an object store, where writers take no lock and Delta's protocol orders
        them (each version created only if absent). The files are in place under names no
        other writer uses (a trace id is new to its ingest); each event table gets an append
        of them, retried at the next version when another writer took its version (appends
        never conflict); then `traces` gets their rows, and the removal of the rows they
        replace, with a pointer made from the newest one: each table's version the newest of
        the pointer's and these appends'. A reader sees the files of the traces `traces`
        holds only (Snapshot.trace_ids), so the event tables' files of a trace being
        committed, replaced or killed are never read. Lost the `traces` version: made again
        from the new pointer, unless what won it conflicts (the same trace committed, or a
        trace one of these replaces replaced already: a WarehouseError) or recorded these
        traces (`committed`): then the appends are withdrawn. Committed: the files of the
        traces replaced retired from the event tables (retire_traces)."""
        files = {table: [f for trace in traces for f in trace.files.get(table, ())]
                 for table in TABLES if table != TRACES}
        runs = sorted({trace.staged.run for trace in traces})
        replaced = frozenset().union(*(trace.replaced for trace in traces))
        appended = {}
        try:
            for table, adds in files.items():
                if adds:
                    appended[table] = self.append(table, snapshot.versions[table],
                                                  [delta.add_action(f) for f in adds], "WRITE")
            now = snapshot
            while True:
                if now.versions[TRACES] != snapshot.versions[TRACES]:
                    if committed is not None and committed(now.versions[TRACES]):
                        self._withdraw(appended, files)
                        return None
                    for trace in traces:
                        self._check_no_conflict(trace.staged, now, trace.replaced)
                adds, rules = self._trace_rows(traces, now, staging)
                removes = ([f for f in self.live_files(TRACES, now.versions[TRACES], runs)
                            if f.trace_id in replaced] if replaced else [])
                versions = {table: max(version, appended.get(table, version))
                            for table, version in now.versions.items()}
                try:
                    version = delta.commit(
                        self.table_path(TRACES), now.versions[TRACES] + 1,
                        [*map(delta.remove_action, removes), *map(delta.add_action, adds),
                         *actions],
                        "WRITE", self.pointer(versions, now.seq + len(traces), rules))
                    break
                except delta.VersionTaken:
                    now = self.snapshot()
        except BaseException:
            self._withdraw(appended, files)
            raise
        for run in runs:
            self.retire_traces(run, frozenset().union(*(trace.replaced for trace in traces
                                                        if trace.staged.run == run)), "WRITE")
        return version

    def retire_traces(self, run, trace_ids, operation):
        """Remove the files of `trace_ids` (of `run`), which `traces` no longer holds, from
        every other table of an object store, each at its first free version, then a pointer
        past them: return how many files, from how many tables. Unread already (see
        Snapshot.trace_ids): retired for `vacuum`, and for engines reading a table whole."""
        files, versions = 0, {}
        for name in [name for name in TABLES if name != TRACES] if trace_ids else ():
            latest = delta.latest_version(self.table_path(name))
            gone = [f for f in self.live_files(name, latest, [run]) if f.trace_id in trace_ids]
            if gone:
                versions[name] = self.append(name, latest, list(map(delta.remove_action, gone)),
                                             operation)
                files += len(gone)
        self.advance_pointer(versions, operation)
        return files, len(versions)

    def advance_pointer(self, versions, operation):
        """Commit a pointer to `traces` (an object store's, no lock) whose version of each
        table is the newest of the newest pointer's and `versions`' ({table: version} this
        writer committed), made again from the newest pointer until it wins a version."""
        while versions:
            now = self.snapshot()
            merged = {table: max(version, versions.get(table, version))
                      for table, version in now.versions.items()}
            try:
                delta.commit(self.table_path(TRACES), now.versions[TRACES] + 1, [], operation,
                             self.pointer(merged, now.seq, now.class_rules))
                return
            except delta.VersionTaken:
                continue

    def append(self, table, version, actions, operation):
        """Commit `actions` as the version after `version`, or the first free one after it."""
        path = self.table_path(table)
        while True:
            try:
                return delta.commit(path, version + 1, actions, operation)
            except delta.VersionTaken:
                version = delta.latest_version(path)

    def _check_no_conflict(self, staged, now, replaced_ids):
        """Refuse a commit that what another writer committed meanwhile conflicts with."""
        same_rank = [t for t in self.stored_traces(staged.run, staged.phase, now)
                     if t.rank == staged.rank]
        where = (f"run {staged.run}, phase {staged.phase}, rank {staged.rank} of "
                 f"{self.root}")
        if not replaced_ids and any(t.sha256 == staged.sha256 for t in same_rank):
            raise WarehouseError(f"{where}: another ingest committed the same trace meanwhile: "
                                 "not committed twice")
        if not replaced_ids <= {t.trace_id for t in same_rank}:
            raise WarehouseError(f"{where}: another writer replaced or deleted the traces this "
                                 "ingest replaces meanwhile: not committed (ingest it again)")

    def _withdraw(self, appended, files):
        """Remove the files of a refused or failed commit from the tables it appended them to
        (unread anyway: no `traces` row names their trace), as far as the store lets it."""
        for table, version in appended.items():
            with contextlib.suppress(WarehouseError, OSError):
                self.append(table, version,
                            [delta.remove_action(f) for f in files[table]], "WITHDRAW")


    def run_files(self, table, version, run):

        """live_files(table, version, [run]), kept from one call to the next and brought up to
        date by this process's own commits, as traces_of is: replacing a run removes its old
        files from every table at each rank's commit, and loading a table costs delta-rs
        ~45 ms at 8,000 files (an 8-rank run replaced at 1,000 runs loaded tables 107 times,
        4.6 s). Another writer's commit (another version), or a table made again at the same
        path, means reading it again."""
        key = (version, delta.creation_mark(self.table_path(table)))
        known = self._run_files.get((table, run))
        if known is None or known[0] != key:
            known = self._run_files[table, run] = (key, self.live_files(table, version, [run]))
        return known[1]

    def _follow_run_files(self, table, run, before, after, removes, adds):
        """Bring run_files' copy of the table's files of `run` at version `before`, if it has
        one, to version `after`, which this process committed with `removes` and `adds`."""
        known = self._run_files.get((table, run))
        if known is None or known[0][0] != before:
            return
        gone = {f.path for f in removes}
        self._run_files[table, run] = ((after, known[0][1]),
                                       [f for f in known[1] if f.path not in gone] + adds)

    @staticmethod
    def pointer(versions, seq, class_rules):
        return {"tracewh": {"format": FORMAT_VERSION, "seq": seq,
                            "class_rules": sorted(class_rules),
                            "versions": {t: v for t, v in versions.items() if t != TRACES}}}

    def _create_tables(self):
        """Create every table (empty ones too: readers need a table to read), then the first
        pointer."""
        traces = self.table_path(TRACES)
        snapshot = self.snapshot() if delta.is_table(traces) else EMPTY_SNAPSHOT
        if snapshot is not EMPTY_SNAPSHOT:
            missing = [name for name in TABLES if name not in snapshot.versions]
            if missing:  # its older traces have no rows there: adding the tables would lie
                raise WarehouseError(
                    f"{printable(self.root)}: this warehouse was made before the tables "
                    f"{', '.join(missing)} existed: it answers queries (computing what they "
                    "would hold) but takes no writes; ingest its traces into a new warehouse "
                    "(tracewh --warehouse NEW ingest ...) to write and to have them stored")
            return
        for name, table in TABLES.items():
            delta.create(self.table_path(name), table)
        versions = {name: delta.latest_version(self.table_path(name)) for name in TABLES}
        try:
            delta.commit(traces, versions[TRACES] + 1, [], "CREATE TRACEWH WAREHOUSE",
                         self.pointer(versions, 0, ()))
        except delta.VersionTaken:  # another writer created it (an object store's: no lock)
            if self.snapshot() is EMPTY_SNAPSHOT:
                raise


    def _checked_latest(self, table, committed):
        """The table's newest version, its log checked for damage (DamagedLog): the commits
        that the snapshot's version replays are not empty, its own and those after it are
        whole. A damaged newest commit after it, of a writer killed before its pointer,
        is what a rollback would undo: it is set aside in _tracewh/damaged/ (unless a
        checkpoint was made of it)."""
        path = self.table_path(table)
        latest = delta.latest_version(path)
        delta.check_commits(path, delta.first_replayed(path, committed), committed - 1)
        try:
            delta.check_commits(path, committed, latest, read="end")
        except delta.DamagedLog as damage:
            if (damage.version != latest or latest == committed  # the snapshot reads it
                    or latest % delta.CHECKPOINT_INTERVAL == 0):
                raise
            aside = self.state / DAMAGED
            aside.mkdir(exist_ok=True)
            os.replace(delta.commit_file(path, latest), aside / f"{table}-{latest:020d}.json")
            latest -= 1
        return latest

    def _recover(self, check_tables):
        """Roll every table back to the newest pointer's version (Delta removes of files a
        killed commit added, re-adds of files it removed), then drop staging directories of
        dead processes. Commits of other writers (a vacuum) change no files: they only move
        the pointer on."""
        snapshot = self.snapshot()
        versions = dict(snapshot.versions)
        moved = False
        for table in TABLES if check_tables else ():
            path = self.table_path(table)
            latest = self._checked_latest(table, versions[table])
            if latest == versions[table]:
                continue
            before = {f.path: f for f in self.live_files(table, versions[table])}
            after = {f.path: f for f in self.live_files(table, latest)}
            again = [f for p, f in before.items() if p not in after]
            if again:  # with the sha256 their first commits recorded
                hashes = delta.recorded_hashes(path, versions[table])
                again = [dataclasses.replace(f, sha256=hashes.get(f.path)) for f in again]
            actions = ([delta.remove_action(f) for p, f in after.items() if p not in before]
                       + [delta.add_action(f) for f in again])
            versions[table] = (delta.commit(path, latest + 1, actions, "ROLLBACK")
                               if actions else latest)
            moved = True
        if moved:
            delta.commit(self.table_path(TRACES), versions[TRACES] + 1, [], "ROLLBACK",
                         self.pointer(versions, snapshot.seq, snapshot.class_rules))
        (self.state / COMMITTING).unlink(missing_ok=True)
        if not (self.state / STAGING).is_dir():
            return
        # Through the directory's descriptor: a link swapped in for it is not followed (and
        # rmtree does not follow the links inside).
        with links.directory(self.state / STAGING) as staging:
            for name in os.listdir(staging):
                pid = name.split("-", 1)[0]
                if not pid.isdigit() or not _process_alive(int(pid)):
                    shutil.rmtree(name, dir_fd=staging, ignore_errors=True)


@contextlib.contextmanager
def _interrupt_deferred():
    """Hold Ctrl-C while a commit moves files and publishes them: the commit completes, then
    the interrupt is raised, so an interrupted ingest leaves no half-committed trace. Python
    runs signal handlers in the main thread only, so only there is there one to hold."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    received = []
    signal.signal(signal.SIGINT, lambda *_: received.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if received:
        raise KeyboardInterrupt


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
