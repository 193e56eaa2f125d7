"""The catalog: which Parquet files of a warehouse are committed.

Layout of a warehouse directory:

    <table>/run=<run>/phase=<phase>/rank=<rank>/<trace_id>.parquet   Hive partitions
    _tracewh/manifest.json    the committed traces (and the files each one has)
    _tracewh/staging/<pid>-<random>/    files being written by an ingest
    _tracewh/lock             flock'ed by writers while they commit

An ingest writes every table of a trace into its own staging directory first; the commit then
moves the files into their partitions and replaces the manifest by an atomic rename, under the
lock. Readers take the file list from the manifest, so a trace becomes visible in every table
at once, and a crash leaves at worst files that no manifest names: the next command that opens
the warehouse for writing removes them (the journal `_tracewh/pending.json` says which), along
with staging directories of processes that no longer run. Directories starting with `_` are
skipped by Spark, Hive and Trino, so tools reading the partitions directly are not confused.
"""

import contextlib
import datetime
import fcntl
import json
import os
import shutil
import signal
import threading
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import WarehouseError

STATE_DIR = "_tracewh"
MANIFEST = "manifest.json"
PENDING = "pending.json"
FORMAT_VERSION = 4  # 2: name_id and kernel_names; 3: gpu_intervals; 4: gpu_time


@dataclass
class TraceEntry:
    """One committed trace: where its rows are and what it was."""

    trace_id: str
    sha256: str
    run: str
    phase: str
    rank: int
    parts: dict  # {table: [part numbers]}
    events: int
    bytes: int
    source_path: str
    tags: dict = field(default_factory=dict)
    seq: int = 0
    committed_at: str = ""
    interval_rules: str = ""  # fingerprint of the rules behind its gpu_intervals classes

    def partition(self):
        return f"run={self.run}/phase={self.phase}/rank={self.rank}"

    def file_of(self, table, part):
        return f"{table}/{self.partition()}/{self.trace_id}-{part:05d}.parquet"

    def files(self):
        """(table, part, relative path) of every file of the trace."""
        return [(table, part, self.file_of(table, part))
                for table, parts in self.parts.items() for part in parts]


@dataclass
class CommitResult:
    entry: TraceEntry
    status: str  # "ingested", "unchanged" (same file already there) or "replaced"
    replaced: list = field(default_factory=list)


def staged_name(table, part):
    """A part's file name in a staging directory."""
    return f"{table}.{part:05d}.parquet"


def default_location():
    return Path(os.environ.get("TRACEWH_WAREHOUSE") or "warehouse")


class Catalog:
    def __init__(self, root):
        self.root = Path(root)
        self.state = self.root / STATE_DIR

    # -- reading ------------------------------------------------------------------------------

    def check_readable(self):
        """Refuse to read a directory that does not exist or is not a warehouse: a mistyped
        --warehouse would otherwise answer every query with no rows."""
        if not self.root.is_dir():
            raise WarehouseError(f"no warehouse at {self.root}: the directory does not exist "
                                 "(ingest traces into it first, or pass --warehouse DIR)")
        self.check_not_foreign()

    def check_not_foreign(self):
        """Refuse a directory that holds other things (a source tree, say), for reading or
        writing: a warehouse is a new or empty directory, or one with the catalog's state."""
        # One listing decides: a concurrent first ingest creates _tracewh/ before anything else.
        names = {path.name for path in self.root.iterdir()} if self.root.is_dir() else set()
        if names and STATE_DIR not in names:
            raise WarehouseError(f"{self.root} is not a tracewh warehouse: it holds other files "
                                 f"and no {STATE_DIR}/ (pass --warehouse DIR)")

    def entries(self):
        """The committed traces, in commit order. An absent warehouse has none."""
        path = self.state / MANIFEST
        try:
            text = path.read_text()
        except FileNotFoundError:
            return []
        except OSError as error:
            raise WarehouseError(f"{path}: cannot read the manifest: {error.strerror}") from None
        try:
            document = json.loads(text)
            version = document.get("format")
            entries = [TraceEntry(**item) for item in document["traces"]]
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise WarehouseError(f"{path}: corrupt manifest ({error})") from None
        if version != FORMAT_VERSION:
            raise WarehouseError(f"{self.root}: warehouse format {version}, this tracewh reads "
                                 f"format {FORMAT_VERSION}: ingest the traces into a new one")
        return entries

    def snapshot(self):
        """(entries, {table: [committed file paths]}) from one reading of the manifest, so
        that every table of a query sees the same set of traces."""
        entries = self.entries()
        files = {}
        for entry in entries:
            for table, _, path in entry.files():
                files.setdefault(table, []).append(self.root / path)
        return entries, files

    # -- writing ------------------------------------------------------------------------------

    def new_staging_dir(self):
        path = self.state / "staging" / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        path.mkdir(parents=True)
        return path

    @contextlib.contextmanager
    def locked(self):
        """Hold the writers' lock; recover from an interrupted commit first."""
        self.state.mkdir(parents=True, exist_ok=True)
        with open(self.state / "lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self._recover()
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def clean_up(self):
        """Remove what interrupted writers left (files of a commit they did not publish, their
        staging directories), as the next writer would."""
        with self.locked():
            pass

    def find(self, entries, run, phase, rank, sha256):
        for entry in entries:
            if (entry.run, entry.phase, entry.rank, entry.sha256) == (run, phase, rank, sha256):
                return entry
        return None

    def commit(self, entry, staging, replace=False, before_publish=None):
        """Move a staged trace into its partitions and publish it. Under the lock, so
        concurrent ingests serialise here (and only here). `before_publish(entry)` runs once
        the entry has its commit sequence number, to stage files that record it."""
        with self.locked():
            entries = self.entries()
            existing = self.find(entries, entry.run, entry.phase, entry.rank, entry.sha256)
            if existing is not None and not replace:
                shutil.rmtree(staging, ignore_errors=True)
                return CommitResult(existing, "unchanged")
            next_seq = max((e.seq for e in entries), default=0) + 1
            replaced = []
            if replace:
                replaced = [e for e in entries
                            if (e.run, e.phase, e.rank) == (entry.run, entry.phase, entry.rank)]
                entries = [e for e in entries if e not in replaced]
            entry.seq = next_seq
            entry.committed_at = datetime.datetime.now(datetime.timezone.utc).isoformat()
            moves = [(staging / staged_name(table, part), self.root / path)
                     for table, part, path in entry.files()]
            stale = [self.root / path for e in replaced for _, _, path in e.files()]
            if before_publish is not None:
                before_publish(entry)
            with _interrupt_deferred():
                self._write_json(PENDING, {"added": [str(d) for _, d in moves]})
                for source, target in moves:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(source, target)
                self._publish(entries + [entry])
                (self.state / PENDING).unlink()
            for path in stale:
                if path not in {d for _, d in moves}:
                    path.unlink(missing_ok=True)
            shutil.rmtree(staging, ignore_errors=True)
            return CommitResult(entry, "replaced" if replaced else "ingested", replaced)

    def _publish(self, entries):
        self._write_json(MANIFEST, {"format": FORMAT_VERSION,
                                    "traces": [asdict(e) for e in entries]})

    def _write_json(self, name, document):
        temporary = self.state / f".{name}.{os.getpid()}.tmp"
        with open(temporary, "w") as handle:
            json.dump(document, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.state / name)

    def _recover(self):
        """Undo an interrupted commit and drop staging directories of dead processes."""
        pending = self.state / PENDING
        if pending.exists():
            try:
                journal = json.loads(pending.read_text())
                published = {str(self.root / path)
                             for e in self.entries() for _, _, path in e.files()}
                for path in journal["added"]:
                    if path not in published:
                        Path(path).unlink(missing_ok=True)
            except (ValueError, KeyError, OSError):
                pass
            pending.unlink(missing_ok=True)
        staging_root = self.state / "staging"
        if staging_root.is_dir():
            for directory in staging_root.iterdir():
                pid = directory.name.split("-", 1)[0]
                if not pid.isdigit() or not _process_alive(int(pid)):
                    shutil.rmtree(directory, ignore_errors=True)
        for temporary in self.state.glob(".*.tmp"):
            pid = temporary.name.rsplit(".", 2)[-2]
            if not pid.isdigit() or not _process_alive(int(pid)):
                temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def _interrupt_deferred():
    """Hold Ctrl-C while a commit moves files and publishes them: the commit completes, then
    the interrupt is raised, so an interrupted ingest leaves no moved-but-unpublished files.
    Python runs signal handlers in the main thread only, so only there is there one to hold."""
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
