"""Delta Lake tables: creating them, appending commits to their logs, reading their snapshots.

A table's live files at a version (`add_actions`) are replayed from its log by tracewh (see
`delta_replay`: the last checkpoint's Parquet, then the JSON commits after it), as delta-rs's
flattened add actions; delta-rs (`deltalake`, ~50-65 MB of a command's pages) is imported
only where it is needed: to write a checkpoint, to read a table's transaction versions
(`batch`), and in maintenance (`open_table`). Commits are written here, as the protocol
defines them: one `_delta_log/<version>.json` file of newline-delimited actions, created
only if absent (so two writers can never both win a version): a link on a local disk, a
conditional put on an object store (see `storage`). A table's creation is such a commit
too, its version 0 (the protocol and metaData actions that delta-rs writes: see
`delta_schema`), and so is a mart's new schema. delta-rs's own commit
(`create_write_transaction`) loads the table's whole file list first and checks it for
conflicts: 70 ms per table at 8,000 files, 0.9 s per trace for 13 tables, where this costs
about a millisecond whatever the table holds. tracewh's writers are serialised by the
warehouse lock, so there is nothing to check; a version taken by someone else is an error.

Every 100th version gets a checkpoint (what delta-rs does by default), so readers replay at
most 99 commit files.
"""

import concurrent.futures
import contextlib
import datetime
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from . import delta_replay
from .delta_log import (CHECKPOINT_INTERVAL, LOG_DIR, DamagedLog, changed_problem, check_commits,
                        commit_file, commit_info, first_replayed, is_table, last_checkpoint,
                        latest_version, size_problem)
from .delta_log import actions as _actions, exists as _exists, log_dir as _log
from .delta_schema import PROTOCOL, metadata_action, same_table
from ..errors import WarehouseError
from .layout import trace_id_of
from .schema import PARTITION_COLUMNS

# The `traces` columns whose values each file's statistics hold (its one row's).
ROW_STATS = ("trace_id", "sha256", "events", "bytes", "tags", "ingest_seq", "ingested_at",
             "world_size")
# The add action's tag of its file's sha256 (the hex digest of its bytes), which `refresh`
# checks every live file against: a file rewritten with the same rows and size has another.
HASH_TAG = "sha256"
PARTITION_NAMES = [name for name, _, _ in PARTITION_COLUMNS]


@dataclass(frozen=True)
class DataFile:
    """A live file of a table: its path relative to the table, partition and row count.
    Marts are not partitioned (see tracewh.derived.marts): their files have no run, phase and rank
    but the first and last run they hold (`runs`), which their statistics give."""

    path: str
    run: str | None
    phase: str | None
    rank: int | None
    rows: int
    size: int
    row: dict | None = None  # a one-row file's values of ROW_STATS columns (traces files)
    runs: tuple | None = None  # a mart file's (first, last) run
    sha256: str | None = None  # of its bytes, when written (see file_digest)

    @property
    def trace_id(self):
        return trace_id_of(self.path)


def table_schema(table):
    """The Delta schema of a table: its partition columns, then the columns of its files."""
    partitions = [pa.field(name, type_) for name, type_, _ in PARTITION_COLUMNS]
    return pa.schema(partitions + list(table.schema))


def create(path, table):
    """Create a warehouse table (see create_table)."""
    create_table(path, table_schema(table), PARTITION_NAMES)


def create_table(path, schema, partition_by=()):
    """Create the table at `path` of `schema` (an Arrow schema), partitioned by
    `partition_by`, if there is none: its version 0, the protocol and metaData actions,
    created only if absent as every commit is. A writer beside this one (no lock: an object
    store's) may create it first: its table is taken when it is of the same schema, and is an
    error otherwise. Return the table's newest version."""
    actions = [PROTOCOL, metadata_action(schema, partition_by)]
    log = _log(path)
    if storage.of(log).local:
        Path(log).mkdir(parents=True, exist_ok=True)
    try:
        commit(path, 0, actions, "CREATE TABLE")
    except VersionTaken:
        found = next((action["metaData"] for action in _actions(path, 0)
                      if "metaData" in action), {})
        if not same_table(found, schema, partition_by):
            raise TableExists(f"{path}: a Delta table of another schema is there (created "
                              "by another writer, or another version of tracewh)") from None
    return latest_version(path)


def replace_schema(path, version, schema):
    """Give the unpartitioned table at `path`, at `version` (its newest), `schema` instead of
    its own, every file removed, as version + 1 (a mart made again: see
    tracewh.derived.marts); return it. Its live files are those its log lists (see
    _live_adds): the table is not loaded."""
    removes = [{"remove": {**{key: add[key] for key in ("path", "partitionValues", "size")},
                           "dataChange": True, "deletionTimestamp": int(time.time() * 1000),
                           "extendedFileMetadata": True}}
               for add in _live_adds(path, version).values()]
    return commit(path, version + 1, [PROTOCOL, metadata_action(schema), *removes],
                  "CREATE OR REPLACE TABLE")


class TableExists(WarehouseError):
    """A table created first by another writer, with another schema."""


def add_action(data_file, data_change=True):
    tags = {} if data_file.sha256 is None else {"tags": {HASH_TAG: data_file.sha256}}
    return {"add": {
        **_file_fields(data_file, data_change),
        "modificationTime": int(time.time() * 1000),
        "stats": json.dumps(_stats(data_file)), **tags,
    }}


def file_digest(path):
    """(size, sha256 hex digest) of a file just written, from one read of its bytes (from the
    page cache: ~3 ms per MB here, 0.9 MB for the demo's 8 ranks), for its add action: the
    size is that of the bytes hashed, not a separate stat's. (An object's: downloaded.)"""
    if isinstance(path, storage.Location):
        data = storage.of(path).read_bytes(path)
        return len(data), hashlib.sha256(data).hexdigest()
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
        return handle.tell(), digest.hexdigest()


def parquet_source(where):
    """What pyarrow opens a data file at `where` from: its local path, or an object's bytes
    (the files tracewh rewrites, a mart's or a trace's, are small)."""
    if isinstance(where, storage.Location):
        return pa.BufferReader(storage.of(where).read_bytes(where))
    return where


@contextlib.contextmanager
def written(where):
    """A local path to write the data file `where` at: `where` itself, or for an object
    store a temporary file, uploaded as `where` when the block ends without an error."""
    if not isinstance(where, storage.Location):
        yield where
        return
    with tempfile.TemporaryDirectory(prefix="tracewh-") as folder:
        local = Path(folder) / where.name
        yield local
        storage.of(where).put_file(local, where)


def recorded_hashes(path, version):
    """{path: sha256} of the files live at `version` whose add action recorded one (HASH_TAG),
    from the log itself (its checkpoint, then the JSON commits after it): delta-rs keeps the
    tags of add actions in its checkpoints but does not give them out. Files of an earlier
    tracewh or of another engine have none."""
    hashes = {name: (add.get("tags") or {}).get(HASH_TAG)
              for name, add in _live_adds(path, version).items()}
    return {name: digest for name, digest in hashes.items() if digest is not None}


def _live_adds(path, version):
    """{path: its add action} of the files live at `version`, from the log itself (see
    delta_replay.replay), in plain Python: a file's path decoded; a checkpoint's maps
    (partitionValues, tags) as dicts."""
    return {add["path"]: add for add in delta_replay.replay(path, version).as_dicts()}


def changed_files(path, version, runs=None, read=False):
    """[(path, problem)] of the live files at `version` (of `runs`) that are not as their
    commit wrote them: of another size than their add action's (a stat each: cut, or
    rewritten), or with `read`, bytes whose sha256 is not the recorded one (every byte read).
    A missing file is left to its reader (see integrity.missing_file_error)."""
    actions = add_actions(path, version, runs)
    hashes = recorded_hashes(path, version) if read else {}

    def change(name, recorded):
        file = storage.location(path) / name
        try:
            found, digest = (file_digest(file) if name in hashes
                             else (storage.of(file).size(file), None))
        except FileNotFoundError:
            return None
        if found != recorded:
            return size_problem(found, recorded)
        if digest != hashes.get(name):
            return "its bytes are not those its sha256 was taken of"
        return None

    names, sizes = actions["path"].to_pylist(), actions["size_bytes"].to_pylist()
    if read:  # on both cores: hashlib releases the GIL
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            problems = list(pool.map(change, names, sizes))
    else:
        problems = list(map(change, names, sizes))
    return [(storage.location(path) / name, changed_problem(problem))
            for name, problem in zip(names, problems) if problem is not None]


def remove_action(data_file, data_change=True):
    return {"remove": {
        **_file_fields(data_file, data_change),
        "deletionTimestamp": int(time.time() * 1000),
        "extendedFileMetadata": True,
    }}


def _stats(data_file):
    """numRecords, and for a one-row file (a `traces` row) the bounds of its ROW_STATS
    columns, which are its values: listing runs and what they hold reads them from the log
    instead of thousands of files (and engines skip files on them); for a mart's file, the
    bounds of its `run` column (which engines skip files on, and a refresh finds a run's
    files by)."""
    stats = {"numRecords": data_file.rows}
    if data_file.row is not None:
        values = {name: (_timestamp_text(value) if isinstance(value, datetime.datetime)
                         else value) for name, value in data_file.row.items()}
        stats.update(minValues=values, maxValues=values,
                     nullCount={name: int(value is None) for name, value in values.items()})
    if data_file.runs is not None:
        first, last = data_file.runs
        stats.update(minValues={"run": first}, maxValues={"run": last}, nullCount={"run": 0})
    return stats


def _timestamp_text(value):
    """A timestamp as Delta statistics write it: UTC, ISO 8601, microseconds."""
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _file_fields(data_file, data_change):
    """What add and remove actions say alike of a file."""
    partitions = {"run": data_file.run, "phase": data_file.phase, "rank": data_file.rank}
    return {"path": data_file.path,
            "partitionValues": {name: str(value) for name, value in partitions.items()
                                if value is not None},
            "size": data_file.size, "dataChange": data_change}


def commit(path, version, actions, operation, info=None):
    """Write `actions` as version `version` of the table (the one after its latest); return it.
    `info` adds keys to the commitInfo action (tracewh's own under "tracewh")."""
    commit_info_action = {"commitInfo": {
        "timestamp": int(time.time() * 1000), "operation": operation,
        "operationParameters": {}, **({"readVersion": version - 1} if version else {}),
        "isBlindAppend": not any("remove" in action for action in actions),
        "engineInfo": "tracewh", **(info or {})}}
    text = "".join(json.dumps(action, separators=(",", ":")) + "\n"
                   for action in [commit_info_action, *actions])
    file = commit_file(path, version)
    try:
        storage.of(file).create(file, text.encode())  # fails if the version exists
    except FileExistsError:
        raise VersionTaken(f"{path}: version {version} was written by another writer "
                           "(is something other than tracewh writing to the table?)") from None
    if version and version % CHECKPOINT_INTERVAL == 0:
        checkpoint(path, version)
    return version


class VersionTaken(WarehouseError):
    """A commit lost its version to another writer's."""


def changes(path, first, last):
    """(files added: [(path, run, size)], paths removed) by versions first+1..last of a
    table, net (a file added then removed in between is neither), from their JSON commit
    files; None when one of them is missing (log cleanup) and the live files must be listed
    whole."""
    added, removed, sizes = set(), set(), {}
    for version in range(first + 1, last + 1):
        if not _exists(commit_file(path, version)):
            return None
        actions = _actions(path, version)
        if not actions:
            raise DamagedLog(path, version, "empty")
        for action in actions:
            for kind, gains, losses in (("add", added, removed), ("remove", removed, added)):
                if kind in action:
                    name = unquote(action[kind]["path"])
                    if kind == "add":
                        sizes[name] = ((action[kind].get("partitionValues") or {}).get("run"),
                                       action[kind]["size"])
                    if name in losses:  # undoes an earlier action of the range
                        losses.remove(name)
                    else:
                        gains.add(name)
    return [(name, *sizes[name]) for name in sorted(added)], sorted(removed)


def checkpoint(path, version):
    open_table(path, version).create_checkpoint()


def _kept(path, version):
    """The flattened add actions of the table at `version` (see add_actions), replayed if
    they are not those kept: once, where two threads ask at once (a refresh's marts and
    `tracewh.duckdb` both read `traces`: its log replayed twice on the two cores was ~0.03 s
    of a small run's refresh). A command reads `traces` for its runs and again for the
    snapshot's files, an ingest at every commit."""
    key = (version, creation_mark(path))
    with _loading(path):
        kept = _LOADED.get(str(path))
        if kept is None or kept[0] != key:
            kept = _LOADED[str(path)] = (key, _replayed(path, version))
    return kept[1]


def _replayed(path, version):
    """The flattened add actions of the table at `version`, from its log (see
    delta_replay), checked as open_table checks what delta-rs loads: an emptied commit file
    is DamagedLog, not a commit of no actions; a partition value Delta cannot read, or any
    other log delta-rs would refuse, is one WarehouseError line."""
    check_commits(path, first_replayed(path, version), version)
    try:
        return delta_replay.flattened(delta_replay.replay(path, version))
    except (delta_replay.UnparsablePartition, pa.ArrowInvalid, KeyError, TypeError) as error:
        problem = f"{type(error).__name__}: {error}".splitlines()[0]
    _refuse_unreadable(path, version)
    raise WarehouseError(f"{path}: cannot read version {version} of the Delta table "
                         f"({problem})")


def _loading(path):
    """The lock under which a table's entry of _LOADED is loaded or completed."""
    return _LOADING.setdefault(str(path), threading.Lock())  # setdefault: atomic


# {table path: ((version, creation mark), its add actions flattened)}: the last version this
# process read.
_LOADED = {}
_LOADING = {}  # {table path: threading.Lock}
# a forked worker starts with none held (a lock that another thread held at the fork would
# stay held in the child)
os.register_at_fork(after_in_child=_LOADING.clear)


def creation_mark(path):
    """What tells a table from another created later at the same path: its first commit's
    modification time."""
    first = commit_file(path, 0)
    return storage.of(first).mark(first)


def live_files(path, version, runs=None):
    """The table's live files at `version` (optionally of some runs only)."""
    return files_of(add_actions(path, version, runs))


def live_paths(path, version, runs=None, trace_ids=None):
    """The paths of the table's live files at `version` (optionally of some runs only, of
    some traces only), as text: what a query needs, without a Python object per file."""
    prefix = f"{path}/"
    return [prefix + name for name in
            of_traces(add_actions(path, version, runs), trace_ids)["path"].to_pylist()]


def live_sizes(path, version, runs=None, trace_ids=None):
    """The sizes of the files `live_paths` lists, in its order, as their add actions
    recorded them: what an object store's files are checked against without a request each
    (see objects.ObjectStorage.local_copies)."""
    return of_traces(add_actions(path, version, runs), trace_ids)["size_bytes"].to_pylist()


def of_traces(actions, trace_ids):
    """The add actions of the files of `trace_ids` (all when None): on an object store, what
    a snapshot reads of a table (see catalog.Snapshot.trace_ids)."""
    if trace_ids is None:
        return actions
    names = pc.struct_field(pc.extract_regex(actions["path"], TRACE_ID), "trace_id")
    return actions.filter(pc.is_in(names, value_set=pa.array(sorted(trace_ids), pa.string())))


TRACE_ID = r"(?:^|/)(?P<trace_id>[^/]+?)-[^/]*$"  # every file is <trace_id>-<part>.parquet



def row_table(path, version, schema):
    """The rows of a table of one-row files (`traces`), as `schema` (partition columns, then
    ROW_STATS columns), built from its log's statistics in Arrow; None if a file has none."""
    actions = add_actions(path, version)
    names = [f"partition.{name}" for name in PARTITION_NAMES] + [f"min.{n}" for n in ROW_STATS]
    if (any(name not in actions.column_names for name in names)
            or actions["min.ingest_seq"].null_count):
        return None
    return pa.table([actions[name] for name in names], names=schema.names).cast(schema)


def add_actions(path, version, runs=None):
    """The table's add actions at `version`, flattened as delta-rs flattens them (see
    delta_replay), of some runs only (chosen in Arrow). The last version read of each table
    is kept: a query lists the files, and counts their rows (`integrity`), from the same
    actions (~70 ms a table at 8,000 files past a checkpoint, as delta-rs's load)."""
    if isinstance(runs, str):
        raise TypeError("runs is a collection of run names, not one name")
    actions = _kept(path, version)
    if runs is not None:
        actions = actions.filter(pc.is_in(actions["partition.run"],
                                          value_set=pa.array(sorted(runs), pa.string())))
    return actions


def files_of(actions):
    """The live files of a table's add actions (of some runs only, chosen before any Python
    object is made, which at 8,000 files is most of the cost)."""
    columns = actions.to_pydict()
    named = [name for name in ROW_STATS if f"min.{name}" in columns]
    rows = ([dict(zip(named, values)) for values in zip(*(columns[f"min.{n}"] for n in named))]
            if len(named) == len(ROW_STATS) else [None] * actions.num_rows)
    absent = [None] * actions.num_rows  # a mart's files: not partitioned
    ranks = columns.get("partition.rank", absent)
    runs = (list(zip(columns["min.run"], columns["max.run"])) if "min.run" in columns
            else absent)
    return [DataFile(*fields) for fields in zip(
        columns["path"], columns.get("partition.run", absent),
        columns.get("partition.phase", absent),
        [None if rank is None else int(rank) for rank in ranks],
        [int(n or 0) for n in columns["num_records"]],
        map(int, columns["size_bytes"]), rows, runs)]


# -- partition values Delta cannot read ----------------------------------------------------------

# The integer partition columns and their bounds: a value outside them (a rank of 2**32, which
# tracewh committed before it checked ranks) makes delta-rs refuse to load the table at all.
_INTEGER_PARTITIONS = {name: (-(2 ** (type_.bit_width - 1)), 2 ** (type_.bit_width - 1) - 1)
                       for name, type_, _ in PARTITION_COLUMNS if pa.types.is_integer(type_)}
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,40}")


@dataclass(frozen=True)
class UnreadableFile:
    """A live file whose add action has a partition value Delta cannot parse as its column's
    type."""

    version: int  # of the commit that added it
    path: str  # as its add action spells it
    partition_values: dict
    column: str
    value: str


def open_table(path, version=None):
    """delta-rs's table at `version` (the newest by default), its log checked first: delta-rs
    reads an emptied commit file as a commit of no actions (its rows silently gone), so every
    commit it replays is checked to be non-empty (a stat each, at most 99). Where delta-rs
    fails, a WarehouseError names the cause in one line instead of a Rust error with its
    backtrace: a commit that is not JSON lines, or a live file with a partition value Delta
    cannot read (an earlier tracewh did not check ranks: `tracewh repair` removes it)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    last = latest_version(path) if version is None else version
    first = first_replayed(path, last)
    check_commits(path, first, last)
    try:
        return DeltaTable(str(path), version=version,
                          storage_options=storage.of(storage.location(path)).delta_options())
    except DeltaError as error:
        problem = str(error).splitlines()[0] if str(error) else type(error).__name__
    _refuse_unreadable(path, last)
    raise WarehouseError(f"{path}: cannot read version {last} of the Delta table ({problem})")


def _refuse_unreadable(path, version):
    """Where a table's version could not be read: DamagedLog for a commit that is not JSON
    lines, a WarehouseError naming a live file with a partition value Delta cannot read."""
    check_commits(path, first_replayed(path, version), version, read="all")
    unreadable = unreadable_files(path, version)
    if unreadable:
        bad = unreadable[0]
        raise WarehouseError(
            f"table {storage.location(path).name} ({path}): its version {bad.version} added a "
            f"file with {bad.column} {bad.value!r}, a partition value Delta cannot read (an "
            f"earlier tracewh did not check ranks): `tracewh repair` removes the traces "
            "filed under it and says which files to ingest again")


def unreadable_files(path, version=None):
    """The files live at `version` (the newest by default) whose partition values Delta cannot
    parse ([UnreadableFile], in commit order), from the JSON commits alone, since delta-rs
    cannot load such a table. The commits from the last checkpoint on suffice for a version
    after it: delta-rs could not have loaded the checkpoint's version to write it, had such a
    file been live then."""
    version = latest_version(path) if version is None else version
    checkpointed = last_checkpoint(path)
    live = {}
    for number in range(checkpointed if checkpointed <= version else 0, version + 1):
        for action in _actions(path, number):
            if "remove" in action:
                live.pop(unquote(action["remove"]["path"]), None)
            elif "add" in action:
                add = action["add"]
                values = add.get("partitionValues") or {}
                found = _unparsable(values)
                if found is not None:
                    live[unquote(add["path"])] = UnreadableFile(number, add["path"], values,
                                                                *found)
    return list(live.values())


def _unparsable(values):
    """(column, value) of a partition value Delta cannot parse as its integer column, or None."""
    for name, (low, high) in _INTEGER_PARTITIONS.items():
        value = values.get(name)
        if value is not None and not (_INTEGER_TEXT.fullmatch(value)
                                      and low <= int(value) <= high):
            return name, value
    return None


def tombstone(unreadable):
    """The remove action of an unreadable file: its path alone (no partition values, which
    readers of a remove would have to parse)."""
    return {"remove": {"path": unreadable.path, "deletionTimestamp": int(time.time() * 1000),
                       "dataChange": True}}
