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
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.parquet as pq

from . import delta, layout
from .catalog import CommitResult, PlacedTrace, StagedTrace, _interrupt_deferred
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
    # Files its chunks' jobs wrote that it does not name (see write_trace): [(table, path)]
    leftovers: list = field(default_factory=list)

    def locations(self, catalog):
        return [catalog.table_path(table) / data_file.path
                for table, files in self.files.items() for data_file in files]

    def leftover_locations(self, catalog):
        return [catalog.table_path(table) / path for table, path in self.leftovers]


def write_trace(catalog, trace, staging, in_place=None):
    """Write the parts of `trace` (a StagedTrace) from the local directory `staging` into
    their partitions, under the names the in-process commit gives them: a WrittenTrace.

    `in_place` ({(table, path): sha256}) names files written there already, by the jobs
    that normalised a large file's chunks: a part that is such a file byte for byte is not
    written again. One that differs from the file under its name (its times rebased) is
    written under a part number past all of the trace's, the file there left as it was: a
    job run again after this one died reads the chunks' files as their jobs wrote them. The
    files of `in_place` the trace does not name (merged, rebased, or in another partition
    than expected) are its `leftovers`, to delete once it is committed or discarded."""
    in_place = in_place or {}
    files, schemas, kept = {}, {}, set()
    beyond = 1 + max((part for parts in trace.parts.values() for part in parts), default=0)
    for table, parts in trace.parts.items():
        catalog.prepare_partition(table, trace)
        for index, part in enumerate(parts):
            source = staging / layout.staged_name(table, part)
            data_file = trace.data_file(table, part, source)
            there = in_place.get((table, data_file.path))
            if there is not None and there != data_file.sha256:
                parts[index] = part + beyond
                renamed = staging / layout.staged_name(table, parts[index])
                source = source.rename(renamed)
                data_file = replace(data_file, path=trace.part_path(parts[index]))
            schemas[table] = pq.read_schema(source).serialize().to_pybytes()
            if there == data_file.sha256:
                kept.add((table, data_file.path))
            else:
                catalog.store.put_file(source, catalog.table_path(table) / data_file.path)
            files.setdefault(table, []).append(data_file)
    return WrittenTrace(trace, files, schemas, sorted(set(in_place) - kept))


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
    `replace`); with it, the traces there up to `replace_up_to` are removed. The traces'
    leftovers are deleted whatever happens: no commit names them."""
    try:
        return _commit_written(catalog, written, transaction, replace, replace_up_to)
    finally:
        discard_leftovers(catalog, written)


def _commit_written(catalog, written, transaction, replace, replace_up_to):
    check_written(catalog, written)
    with catalog.locked():
        if _done(catalog, transaction):
            return _all_unchanged(catalog, written), True
        snapshot = catalog.snapshot()
        results, kept = _triage(catalog, snapshot, written, replace, replace_up_to)
        if not kept:
            return results, False
        staging = catalog.new_staging_dir()
        try:
            with _interrupt_deferred(), catalog.committing():
                version = catalog.publish(
                    kept, snapshot, staging, [transaction.action()],
                    committed=lambda version: _done(catalog, transaction, version))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if version is None:
        return _all_unchanged(catalog, written), True
    return results, False


def _done(catalog, transaction, version=None):
    recorded = committed_version(catalog, transaction.app_id, version)
    return recorded is not None and recorded >= transaction.version


def _all_unchanged(catalog, written):
    discard_written(catalog, written)
    return {trace.staged.trace_id: CommitResult(None, "unchanged") for trace in written}


def _triage(catalog, snapshot, written, replace, replace_up_to):
    """({trace_id: CommitResult}, [PlacedTrace] to commit): traces already stored, or twice
    in `written`, are `unchanged`, their files deleted; with `replace`, the others replace
    the traces of their run/phase/rank there up to `replace_up_to`."""
    results, kept, seen = {}, [], set()
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
        gone = frozenset(t.trace_id for t in same_rank
                         if replace and (replace_up_to is None or t.ingest_seq <= replace_up_to))
        results[staged.trace_id] = CommitResult(None, "replaced" if gone else "ingested")
        kept.append(PlacedTrace(staged, trace.files, gone))
    return results, kept


def discard_written(catalog, written):
    """Delete the files of `written` ([WrittenTrace]), which no commit names."""
    for trace in written:
        for where in trace.locations(catalog):
            catalog.store.delete(where)


def discard_leftovers(catalog, written):
    """Delete the files the chunks' jobs of `written` ([WrittenTrace]) wrote that their
    traces do not name: once the traces are committed (or discarded), nothing reads them."""
    for trace in written:
        for where in trace.leftover_locations(catalog):
            catalog.store.delete(where)
