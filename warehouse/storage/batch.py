"""Committing many traces at once, whose files other processes (an engine's workers, on other
machines) already wrote into their partitions: one commit per table, `traces` last, marked
with a Delta transaction (`txn`: an app id and a version) so that a driver run again with the
same transaction commits nothing twice.

The driver trusts nothing its workers say without checking it against the storage: an add
action for a file that is not there is accepted by Delta and breaks every later read, and a
file with an extra column is accepted without widening the table's schema. So before the
commit each file's size is asked of the storage (it is there, and is the file the worker
measured) and the schema the worker read back from the file it wrote is compared with the
table's. Delta also accepts a transaction version that moves an app's version backwards:
the version recorded in `traces` is read first, and a transaction at or below it is taken as
committed already. Files of traces that are not committed (already there, refused) are
deleted; those of a worker killed before it returned stay for `vacuum`, unreferenced.
"""

import concurrent.futures
import shutil
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from . import delta, layout
from .catalog import CommitResult, StagedTrace, _interrupt_deferred
from .directory import TRACES
from ..errors import WarehouseError, printable
from .schema import TABLES


@dataclass(frozen=True)
class Transaction:
    """Delta's `txn`: an ingest's app id, and its version (a later batch of the same app is
    a higher version)."""

    app_id: str
    version: int = 0

    def action(self):
        return {"txn": {"appId": self.app_id, "version": self.version,
                        "lastUpdated": int(time.time() * 1000)}}


@dataclass
class WrittenTrace:
    """A trace staged and written into its partitions by a worker: its StagedTrace (the
    `traces` row without ingest_seq and ingested_at), its files' DataFiles and the schema of
    each table's files as read back from them ({table: Arrow schema, serialized})."""

    staged: StagedTrace
    files: dict  # {table: [DataFile]}
    schemas: dict = field(default_factory=dict)

    def locations(self, catalog):
        return [catalog.table_path(table) / data_file.path
                for table, files in self.files.items() for data_file in files]


def write_trace(catalog, trace, staging):
    """Write the parts of `trace` (a StagedTrace) from the local directory `staging` into
    their partitions, under the names the in-process commit gives them: a WrittenTrace."""
    files, schemas = {}, {}
    for table, parts in trace.parts.items():
        _make_partition(catalog, table, trace)
        for part in parts:
            source = staging / layout.staged_name(table, part)
            data_file = trace.data_file(table, part, source)
            schemas[table] = pq.read_schema(source).serialize().to_pybytes()
            catalog.store.put_file(source, catalog.table_path(table) / data_file.path)
            files.setdefault(table, []).append(data_file)
    return WrittenTrace(trace, files, schemas)


def _make_partition(catalog, table, trace):
    """The trace's run=/phase=/rank= directory of a local table, before a file is put there;
    an object store has none."""
    if catalog.store.local:
        catalog.make_partition(table, trace)


def committed_version(catalog, app_id, version=None):
    """The version of transaction `app_id` recorded in `traces` at `version` (the newest by
    default), or None."""
    path = catalog.table_path(TRACES)
    if not delta.is_table(path):
        return None
    return delta.open_table(path, version).transaction_version(app_id)


def check_written(catalog, written):
    """Raise WarehouseError unless every file of `written` is in the storage with the size its
    worker measured, and has its table's schema. The sizes are asked 16 at a time: 1,000
    ranks are ~20,000 files, a request each."""
    for trace in written:
        for table in trace.files:
            expected = TABLES[table].schema
            found = pa.ipc.read_schema(pa.py_buffer(trace.schemas[table]))
            if [(f.name, f.type) for f in found] != [(f.name, f.type) for f in expected]:
                raise WarehouseError(
                    f"{trace.staged.trace_id}: its {table} files have the columns "
                    f"{', '.join(printable(f.name) for f in found)}, not the table's: not "
                    "committed (is every worker running this version of tracewh?)")
    files = [(catalog.table_path(table) / data_file.path, data_file.size)
             for trace in written for table, each in trace.files.items() for data_file in each]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        sizes = list(pool.map(lambda file: _size(catalog.store, file[0]), files))
    for (where, expected), size in zip(files, sizes):
        if size != expected:
            problem = "missing" if size is None else f"{size:,} bytes, not {expected:,}"
            raise WarehouseError(f"{printable(str(where))}: a worker's file is {problem}: not "
                                 "committed")


def _size(store, where):
    try:
        return store.size(where)
    except FileNotFoundError:
        return None


def commit_written(catalog, written, transaction, replace=False, replace_up_to=None):
    """Commit `written` ([WrittenTrace]) in one commit per table, `traces` last with
    `transaction`; return ({trace_id: CommitResult}, committed before): when the transaction
    is recorded already (a driver run again), nothing is committed and every result is
    `unchanged`. A trace whose file is in its run/phase/rank already is `unchanged` (without
    `replace`); with it, the traces there up to `replace_up_to` are removed."""
    check_written(catalog, written)
    with catalog.locked():
        if _done(catalog, transaction):
            return _all_unchanged(catalog, written), True
        snapshot = catalog.snapshot()
        results, kept, replaced = _triage(catalog, snapshot, written, replace, replace_up_to)
        if not kept:
            return results, False
        staging = catalog.new_staging_dir()
        try:
            with _interrupt_deferred(), catalog.committing():
                if catalog.store.local:
                    _publish_locked(catalog, snapshot, kept, replaced, transaction, staging)
                elif not _publish_unlocked(catalog, snapshot, kept, replaced, transaction,
                                           staging):
                    return _all_unchanged(catalog, written), True
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return results, False


def _done(catalog, transaction, version=None):
    recorded = committed_version(catalog, transaction.app_id, version)
    return recorded is not None and recorded >= transaction.version


def _all_unchanged(catalog, written):
    discard_written(catalog, written)
    return {trace.staged.trace_id: CommitResult(None, "unchanged") for trace in written}


def _triage(catalog, snapshot, written, replace, replace_up_to):
    """({trace_id: CommitResult}, the traces to commit, {trace_id: ids of the traces it
    replaces}): traces already stored, or twice in `written`, are `unchanged`, their files
    deleted."""
    results, kept, replaced, seen = {}, [], {}, set()
    for trace in written:
        staged = trace.staged
        same_rank = [t for t in catalog.traces_of(staged.run, staged.phase, snapshot)
                     if t.rank == staged.rank]
        key = (staged.run, staged.phase, staged.rank, staged.sha256)
        existing = [t for t in same_rank if t.sha256 == staged.sha256]
        if key in seen or (existing and not replace):
            results[staged.trace_id] = CommitResult(existing[0] if existing else None,
                                                    "unchanged")
            discard_written(catalog, [trace])
            continue
        seen.add(key)
        gone = {t.trace_id for t in same_rank
                if replace and (replace_up_to is None or t.ingest_seq <= replace_up_to)}
        replaced[staged.trace_id] = gone
        results[staged.trace_id] = CommitResult(None, "replaced" if gone else "ingested")
        kept.append(trace)
    return results, kept, replaced


def discard_written(catalog, written):
    """Delete the files of `written` ([WrittenTrace]), which no commit names."""
    for trace in written:
        for where in trace.locations(catalog):
            catalog.store.delete(where)


def _removes(catalog, snapshot, kept, replaced, table):
    replaced = set().union(*replaced.values())
    if not replaced:
        return []
    runs = sorted({trace.staged.run for trace in kept})
    return [delta.remove_action(f)
            for f in catalog.live_files(table, snapshot.versions[table], runs)
            if f.trace_id in replaced]


def _trace_rows(catalog, snapshot, kept, staging):
    """The `traces` files of `kept`, numbered after the snapshot's seq, written into their
    partitions; return (their add actions, the class rules of the new pointer)."""
    adds = []
    rules = set(snapshot.class_rules)
    for seq, trace in enumerate(kept, snapshot.seq + 1):
        staged = trace.staged
        row = catalog._stage_trace_row(staged, staging, seq)
        source = staging / layout.staged_name(TRACES, 0)
        added = staged.data_file(TRACES, 0, source, {name: row[name] for name in delta.ROW_STATS})
        _make_partition(catalog, TRACES, staged)
        catalog.store.put_file(source, catalog.table_path(TRACES) / added.path)
        adds.append(delta.add_action(added))
        rules |= {staged.class_rules} - {""}
    return adds, rules


def _publish_locked(catalog, snapshot, kept, replaced, transaction, staging):
    """Under the lock (a local warehouse): each table's commit at the version after the
    snapshot's."""
    versions = dict(snapshot.versions)
    for table in TABLES:
        if table == TRACES:
            continue
        actions = (_removes(catalog, snapshot, kept, replaced, table)
                   + [delta.add_action(f) for trace in kept for f in trace.files.get(table, ())])
        if actions:
            versions[table] = delta.commit(catalog.table_path(table), versions[table] + 1,
                                           actions, "WRITE")
    adds, rules = _trace_rows(catalog, snapshot, kept, staging)
    delta.commit(catalog.table_path(TRACES), versions[TRACES] + 1,
                 [*_removes(catalog, snapshot, kept, replaced, TRACES), *adds,
                  transaction.action()],
                 "WRITE", catalog.pointer(versions, snapshot.seq + len(kept), rules))


def _publish_unlocked(catalog, snapshot, kept, replaced, transaction, staging):
    """On an object store (no lock): each event table appended to at the first free version,
    then `traces`, made again from the newest pointer when another writer took its version:
    unless that writer recorded this transaction (a driver run twice at once: False, the
    appends withdrawn) or conflicts (a WarehouseError, the appends withdrawn). Committed: the
    files of the traces it replaced retired from the event tables (Catalog.retire_traces)."""
    appended, files = {}, {}
    try:
        for table in TABLES:
            if table == TRACES:
                continue
            adds = [f for trace in kept for f in trace.files.get(table, ())]
            if adds:
                files[table] = {index: f for index, f in enumerate(adds)}
                appended[table] = catalog.append(table, snapshot.versions[table],
                                                 [delta.add_action(f) for f in adds], "WRITE")
        now = snapshot
        while True:
            if now.versions[TRACES] != snapshot.versions[TRACES]:
                if _done(catalog, transaction, now.versions[TRACES]):
                    catalog._withdraw(appended, files)
                    return False
                for trace in kept:
                    catalog._check_no_conflict(trace.staged, now,
                                                replaced[trace.staged.trace_id])
            adds, rules = _trace_rows(catalog, now, kept, staging)
            versions = {table: max(version, appended.get(table, version))
                        for table, version in now.versions.items()}
            try:
                delta.commit(catalog.table_path(TRACES), now.versions[TRACES] + 1,
                             [*_removes(catalog, now, kept, replaced, TRACES), *adds,
                              transaction.action()],
                             "WRITE", catalog.pointer(versions, now.seq + len(kept), rules))
                break
            except delta.VersionTaken:
                now = catalog.snapshot()
    except BaseException:
        catalog._withdraw(appended, files)
        raise
    for run in {trace.staged.run for trace in kept}:
        catalog.retire_traces(run, set().union(*(replaced[trace.staged.trace_id] for trace in kept
                                                  if trace.staged.run == run)), "WRITE")
    return True
