"""Keeping a warehouse small and sound: vacuum (delete retired files), optimize (merge small
files), delete (remove a run) and repair (remove what no command can read).

Each holds the writers' lock across everything it commits and its refresh; vacuum and optimize
leave every row as it was. A commit retires files (a --replace, an optimize, a rolled-back
commit, a delete) without deleting them, because snapshots taken before it still read them;
`vacuum` deletes those retired longer ago than the retention, and files no commit ever named
(left by a killed ingest). `optimize` merges the files of each trace in a table (a large trace
is written one file per ingest worker, and was one per chunk before 2026-12-03) into files of up
to TARGET_BYTES, in Delta's way: one commit per table whose removes and adds do not change data
(`dataChange: false`), then a new pointer.

`repair` removes the traces an earlier tracewh committed under a partition value Delta cannot
read, which made every command fail.
"""

import time
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import storage
from ..storage import delta, layout
from ..storage.catalog import TRACES
from ..storage.delta import DataFile
from . import mark_for_recompute, refresh_derived
from ..errors import HINT, FollowUpFailed, UsageError
from .marts import mart_paths
from ..storage.parquet import parquet_writer
from ..storage.schema import TABLES
from ..query.scope import check_runs

DEFAULT_RETAIN_HOURS = 24
DEFAULT_UNCOMMITTED_HOURS = 1  # see vacuum
TARGET_BYTES = 128 << 20


@dataclass
class VacuumResult:
    files: int
    bytes: int


@dataclass
class OptimizeResult:
    files_removed: int
    files_added: int
    tables: int


@dataclass
class RemovedTrace:
    """A trace `repair` removed: where it was filed, and the file it came from (None when its
    `traces` row was never committed)."""

    trace_id: str
    run: str
    phase: str
    rank: str  # the partition value as committed: no int32
    source_path: str | None
    files: int


@dataclass
class RepairResult:
    traces: list  # [RemovedTrace], one per trace
    tables: int  # tables they had files in



@dataclass
class DeleteResult:
    traces: int  # the captures removed
    files: int  # data files removed from the tables (deleted from disk by vacuum)
    tables: int  # tables committed


def delete(catalog, run, phase=None):
    """Remove a run, or one phase of it, from every table: one commit per table of Delta
    remove actions, then a pointer; the marts drop it at the refresh that follows. The files
    stay on disk, for readers of older snapshots, until `vacuum`."""
    runs = {info.run: info for info in catalog.runs()}
    check_runs(list(runs), run)
    if phase is not None and phase not in runs[run].phases:
        raise UsageError(f"run {run!r} has no phase {phase!r} (its phases: "
                         f"{', '.join(sorted(runs[run].phases))})")
    with catalog.locked():
        mark_for_recompute(catalog, run)  # before the commits: a kill between is caught up
        result = (_remove_run(catalog, run, phase) if catalog.store.local
                  else _remove_run_unlocked(catalog, run, phase))
        _refresh(catalog, result)
    return result


def _remove_run(catalog, run, phase):
    files = tables = 0
    with catalog.committing():
        snapshot = catalog.snapshot()
        versions = dict(snapshot.versions)
        traces = len(catalog.stored_traces(run, phase, snapshot))
        for name in [name for name in TABLES if name != TRACES] + [TRACES]:
            doomed = [f for f in catalog.live_files(name, versions[name], [run])
                      if phase is None or f.phase == phase]
            info = (catalog.pointer(versions, snapshot.seq + 1, snapshot.class_rules)
                    if name == TRACES else None)
            if doomed or info:
                versions[name] = delta.commit(catalog.table_path(name), versions[name] + 1,
                                              [delta.remove_action(f) for f in doomed],
                                              "DELETE", info)
                files, tables = files + len(doomed), tables + 1
    return DeleteResult(traces, files, tables)


def _remove_run_unlocked(catalog, run, phase):
    """_remove_run on an object store, where writers take no lock: the `traces` rows first,
    made again from the newest pointer until the commit wins its version (its readers see
    the run's files no more: see catalog.Snapshot.trace_ids), then the files of those traces
    from each table, appended at its first free version, and a pointer past them."""
    path = catalog.table_path(TRACES)
    while True:
        snapshot = catalog.snapshot()
        doomed = [f for f in catalog.live_files(TRACES, snapshot.versions[TRACES], [run])
                  if phase is None or f.phase == phase]
        try:
            delta.commit(path, snapshot.versions[TRACES] + 1,
                         [delta.remove_action(f) for f in doomed], "DELETE",
                         catalog.pointer(snapshot.versions, snapshot.seq + 1,
                                         snapshot.class_rules))
            break
        except delta.VersionTaken:
            continue
    files, tables = catalog.retire_traces(run, {f.trace_id for f in doomed}, "DELETE")
    return DeleteResult(len(doomed), files + len(doomed), tables + 1)


def vacuum(catalog, retain_hours=DEFAULT_RETAIN_HOURS,
           uncommitted_hours=DEFAULT_UNCOMMITTED_HOURS):
    """Delete files no version newer than `retain_hours` ago reads, and files no commit
    names written more than `uncommitted_hours` ago, under one hold of the writers' lock (no
    lock on an object store: there a file is deleted only once no commit of the newest
    versions reads it, which is Delta's protocol's own rule). The second window protects
    the files of an ingest still in flight: its workers write them (to an object store,
    straight into the tables) before its driver commits them, so a file no commit names
    may be one about to be committed. Delta's VACUUM lists them; tracewh deletes them
    itself (locally `links.unlink_within`: never through a link) and
    commits nothing. Delta's VACUUM START/END commits are history no reader needs; they
    took versions past the pointer, which the next writer's commits then collided with, and
    on a full disk, where deleting is what frees space, they cannot be written at all. A
    failure after the deletes (a rollback, the refresh) raises FollowUpFailed with the
    result."""
    for hours, option, name in ((retain_hours, "--retain", "retain_hours"),
                                (uncommitted_hours, "--retain-uncommitted", "uncommitted_hours")):
        if hours < 0:
            raise UsageError(f"{HINT} must be 0 or more hours", cli_hint=option,
                             library_hint=name)
    with catalog.locked(recover=False):  # deleting needs no free space: a rollback does
        try:
            catalog.clean_up()  # a killed commit's files are retired, for the deletes
            rolled_back = None
        except OSError as error:
            rolled_back = error
        if not catalog.store.local:  # no rollback there: see _retire_uncommitted
            _retire_uncommitted(catalog, uncommitted_hours)
        result = _delete_unread(catalog, retain_hours, uncommitted_hours)
        if rolled_back is not None:
            raise FollowUpFailed(f"{catalog.root}: an interrupted commit could not be rolled "
                                 f"back ({rolled_back.strerror or rolled_back}): the next "
                                 "writing command does it", result)
        _refresh(catalog, result)  # tracewh.duckdb may list files of a snapshot vacuumed
    return result


def _retire_uncommitted(catalog, hours):
    """Retire (Delta removes) an object store's files that a table added more than `hours`
    ago for a trace `traces` does not hold: a killed ingest's, which no writer there rolls
    back (they are never read: see catalog.Snapshot.trace_ids). Each table at its first free
    version, then a pointer past them; the vacuum deletes them once retired longer than
    --retain. An ingest commits each trace's row seconds after its files, so the window that
    keeps the files of an ingest in flight keeps these too."""
    trace_ids = pa.array(sorted(catalog.snapshot().trace_ids), pa.string())
    before = int((time.time() - hours * 3600) * 1000)
    versions = {}
    for name in [name for name in TABLES if name != TRACES]:
        latest = delta.latest_version(catalog.table_path(name))
        actions = delta.add_actions(catalog.table_path(name), latest)
        traces = pc.struct_field(pc.extract_regex(actions["path"], delta.TRACE_ID), "trace_id")
        orphans = delta.files_of(actions.filter(pc.and_(
            pc.invert(pc.is_in(traces, value_set=trace_ids)),
            pc.less(actions["modification_time"], before))))
        if orphans:
            versions[name] = catalog.append(name, latest, list(map(delta.remove_action, orphans)),
                                            "VACUUM")
    catalog.advance_pointer(versions, "VACUUM")


def _delete_unread(catalog, retain_hours, uncommitted_hours):
    """Delete what Delta's VACUUM lists in every table and mart, but for the files of the
    newest snapshot (which the newest versions read, unless a rollback is pending). Its
    light VACUUM lists the files commits retired before the retention, its full one those
    no commit names too, by their age in the store: the files older than
    `uncommitted_hours` that no commit names are the full list's at that age but for the
    light list's at that age."""
    paths = [catalog.table_path(name) for name in TABLES] + mart_paths(catalog.root)
    read = {path for found in catalog.snapshot().paths(catalog.root).values()
            for path in found}
    result = VacuumResult(0, 0)
    for path in [path for path in paths if delta.is_table(path)]:
        table = delta.open_table(path)

        def listed(hours, full):
            return set(table.vacuum(retention_hours=hours, dry_run=True, full=full,
                                    enforce_retention_duration=False))

        doomed = listed(uncommitted_hours, True)  # files no commit names too (a killed ingest's)
        if uncommitted_hours != retain_hours:
            doomed = listed(retain_hours, False) | (doomed - listed(uncommitted_hours, False))
        for name in sorted(doomed):
            if f"{path}/{name}" in read:
                continue
            try:
                result.bytes += catalog.store.unlink_within(path, name)
            except FileNotFoundError:
                continue
            result.files += 1
    return result


def optimize(catalog, run=None):
    """Merge each trace's files in every table (of one run, or all), and refresh, under one
    hold of the writers' lock."""
    if run is not None:  # before the lock, which creates the tables of a new warehouse
        check_runs([info.run for info in catalog.runs()], run)
    with catalog.locked():
        result = (_merge_traces(catalog, run) if catalog.store.local
                  else _merge_traces_unlocked(catalog, run))
        _refresh(catalog, result)  # the files tracewh.duckdb lists changed
    return result


def _merge_traces(catalog, run):
    removed = added = tables = 0
    with catalog.committing():
        snapshot = catalog.snapshot()
        versions = dict(snapshot.versions)
        for name in TABLES:
            if name == TRACES:  # one row per trace: nothing to merge
                continue
            path = catalog.table_path(name)
            actions, merged = _merge_actions(
                path, catalog.live_files(name, versions[name], None if run is None else [run]),
                versions[name] + 1)
            removed, added = removed + len(actions) - merged, added + merged
            if actions:
                versions[name] = delta.commit(path, versions[name] + 1, actions, "OPTIMIZE")
                tables += 1
        if tables:
            delta.commit(catalog.table_path(TRACES), versions[TRACES] + 1, [], "OPTIMIZE",
                         catalog.pointer(versions, snapshot.seq, snapshot.class_rules))
    return OptimizeResult(removed, added, tables)


def _merge_traces_unlocked(catalog, run):
    """_merge_traces on an object store, where writers take no lock: each table's merges
    planned from its newest version and committed as the next one, planned again when
    another writer took it (two optimizes must not both merge the same files), then a
    pointer past them. Files of traces not committed yet are merged too, under their
    trace's name: read once the trace is committed, as its parts would be."""
    removed = added = 0
    versions = {}
    for name in [name for name in TABLES if name != TRACES]:
        path = catalog.table_path(name)
        while True:
            latest = delta.latest_version(path)
            actions, merged = _merge_actions(
                path, catalog.live_files(name, latest, None if run is None else [run]),
                latest + 1)
            if not actions:
                break
            try:
                versions[name] = delta.commit(path, latest + 1, actions, "OPTIMIZE")
            except delta.VersionTaken:
                continue
            removed, added = removed + len(actions) - merged, added + merged
            break
    catalog.advance_pointer(versions, "OPTIMIZE")
    return OptimizeResult(removed, added, len(versions))


def _merge_actions(path, files, version):
    """(the remove and add actions of merging each trace's files of `files` into files
    written for `version`, how many files they add)."""
    actions, merged = [], 0
    for group in _groups(files):
        actions += [delta.remove_action(f, data_change=False) for f in group]
        actions.append(delta.add_action(_merge(path, group, version), data_change=False))
        merged += 1
    return actions, merged


def _refresh(catalog, result):
    """refresh_derived, whose failure carries the command's `result` (which stands)."""
    try:
        refresh_derived(catalog)
    except FollowUpFailed as error:
        error.done = result
        raise


def repair(catalog):
    """Remove the traces committed under a partition value Delta cannot read: a rank beyond
    int32, which tracewh ingested before it checked ranks. delta-rs refuses to load a table
    with one such live file, so every command failed on it.

    Under the writers' lock, without its recovery (which loads the tables): per table that
    holds such files, one commit of Delta removes found from the JSON log (delta-rs cannot
    load the table to list them); then a pointer past them, where the pointer published the
    files. Every other trace stays as it was; a commit cut short by the value (the
    checkpoint of its version failed) is rolled back by the recovery that follows. Run again
    after an interruption, it finishes the work. The files stay on disk until `vacuum`;
    their sources can be ingested again under a rank within int32."""
    with catalog.locked(recover=False):
        result = _remove_unreadable(catalog)
        catalog.clean_up()
        if result.traces:
            _refresh(catalog, result)
    return result


def _remove_unreadable(catalog):
    removed = {}  # {trace_id: RemovedTrace}
    tables = 0
    with catalog.committing():
        snapshot = catalog.snapshot()
        versions = dict(snapshot.versions)
        for name in TABLES:
            path = catalog.table_path(name)
            if not delta.is_table(path):
                continue
            published = (delta.unreadable_files(path, versions[name]) if name in versions
                         else [])
            unreadable = delta.unreadable_files(path)
            files = {f.path: f for f in published + unreadable}
            # before the commits: the marts drop or recompute what was removed (a run's
            # files in a mart are not listed by run), a kill between is caught up
            for run in {f.partition_values.get("run") for f in files.values()} - {None}:
                mark_for_recompute(catalog, run)
            if unreadable:
                delta.commit(path, delta.latest_version(path) + 1,
                             [delta.tombstone(f) for f in unreadable], "REPAIR")
            if published:  # removed now, or by a repair interrupted before its pointer
                versions[name] = delta.latest_version(path)
            tables += bool(files)
            for unreadable_file in files.values():
                _count_removed(removed, path, name, unreadable_file)
        if versions != snapshot.versions:
            delta.commit(catalog.table_path(TRACES),
                         delta.latest_version(catalog.table_path(TRACES)) + 1, [], "REPAIR",
                         catalog.pointer(versions, snapshot.seq, snapshot.class_rules))
    return RepairResult(list(removed.values()), tables)


def _count_removed(removed, table_path, table, unreadable_file):
    """Count a removed file to its trace in `removed`; a `traces` file tells its source."""
    trace_id = layout.trace_id_of(unreadable_file.path)
    values = unreadable_file.partition_values
    trace = removed.setdefault(trace_id, RemovedTrace(trace_id, values.get("run"),
                                                      values.get("phase"), values.get("rank"),
                                                      None, 0))
    trace.files += 1
    row_file = table_path / unquote(unreadable_file.path)
    if table == TRACES and storage.of(row_file).exists(row_file):
        trace.source_path = pq.read_table(delta.parquet_source(row_file),
                                          columns=["source_path"])[0][0].as_py()


def _groups(files):
    """Runs of files of one trace, in order, each run up to TARGET_BYTES, of 2 files or more."""
    by_trace = {}
    for data_file in sorted(files, key=lambda f: f.path):
        by_trace.setdefault((data_file.run, data_file.phase, data_file.rank,
                             data_file.trace_id), []).append(data_file)
    for trace_files in by_trace.values():
        group, size = [], 0
        for data_file in trace_files:
            if group and size + data_file.size > TARGET_BYTES:
                if len(group) > 1:
                    yield group
                group, size = [], 0
            group.append(data_file)
            size += data_file.size
        if len(group) > 1:
            yield group


def _merge(table_path, group, version):
    """Write the rows of `group`, in order, to one file named after its trace."""
    first = group[0]
    relative = (f"{layout.partition(first.run, first.phase, first.rank)}/"
                f"{layout.merged_file(first.trace_id, version)}")
    rows = 0
    with delta.written(table_path / relative) as local:
        writer = None
        for data_file in group:
            table = pq.read_table(delta.parquet_source(table_path / data_file.path))
            if writer is None:
                writer = parquet_writer(local, table.schema)
            writer.write_table(table)
            rows += table.num_rows
        writer.close()
        size, sha256 = delta.file_digest(local)
    return DataFile(relative, first.run, first.phase, first.rank, rows, size, sha256=sha256)
