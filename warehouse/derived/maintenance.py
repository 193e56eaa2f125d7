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

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow.parquet as pq

from ..storage import delta, layout, links
from ..storage.catalog import TRACES
from ..storage.delta import DataFile
from . import mark_for_recompute, refresh_derived
from ..errors import HINT, FollowUpFailed, UsageError
from .marts import mart_paths
from ..storage.parquet import parquet_writer
from ..storage.schema import TABLES
from ..query.scope import check_runs

DEFAULT_RETAIN_HOURS = 24
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
    catalog.check_local("delete")
    runs = {info.run: info for info in catalog.runs()}
    check_runs(list(runs), run)
    if phase is not None and phase not in runs[run].phases:
        raise UsageError(f"run {run!r} has no phase {phase!r} (its phases: "
                         f"{', '.join(sorted(runs[run].phases))})")
    with catalog.locked():
        mark_for_recompute(catalog, run)  # before the commits: a kill between is caught up
        result = _remove_run(catalog, run, phase)
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


def vacuum(catalog, retain_hours=DEFAULT_RETAIN_HOURS):
    """Delete files no version newer than `retain_hours` ago reads, under one hold of the
    writers' lock. Delta's VACUUM lists them (files retired before then, files no commit
    names); tracewh deletes them itself (`links.unlink_within`: never through a link) and
    commits nothing. Delta's VACUUM START/END commits are history no reader needs; they
    took versions past the pointer, which the next writer's commits then collided with, and
    on a full disk, where deleting is what frees space, they cannot be written at all. A
    failure after the deletes (a rollback, the refresh) raises FollowUpFailed with the
    result."""
    catalog.check_local("vacuum")
    if retain_hours < 0:
        raise UsageError(f"{HINT} must be 0 or more hours", cli_hint="--retain",
                         library_hint="retain_hours")
    with catalog.locked(recover=False):  # deleting needs no free space: a rollback does
        try:
            catalog.clean_up()  # a killed commit's files are retired, for the deletes
            rolled_back = None
        except OSError as error:
            rolled_back = error
        result = _delete_unread(catalog, retain_hours)
        if rolled_back is not None:
            raise FollowUpFailed(f"{catalog.root}: an interrupted commit could not be rolled "
                                 f"back ({rolled_back.strerror or rolled_back}): the next "
                                 "writing command does it", result)
        _refresh(catalog, result)  # tracewh.duckdb may list files of a snapshot vacuumed
    return result


def _delete_unread(catalog, retain_hours):
    """Delete what Delta's VACUUM lists in every table and mart, but for the files of the
    newest snapshot (which the newest versions read, unless a rollback is pending)."""
    paths = [catalog.table_path(name) for name in TABLES] + mart_paths(catalog.root)
    read = {path for found in catalog.snapshot().paths(catalog.root).values()
            for path in found}
    result = VacuumResult(0, 0)
    for path in [path for path in paths if delta.is_table(path)]:
        # full: files no commit names too (a killed ingest's), by their age on disk
        for name in delta.open_table(path).vacuum(retention_hours=retain_hours, dry_run=True,
                                                 enforce_retention_duration=False, full=True):
            if f"{path}/{name}" in read:
                continue
            try:
                result.bytes += links.unlink_within(path, name)
            except FileNotFoundError:
                continue
            result.files += 1
    return result


def optimize(catalog, run=None):
    """Merge each trace's files in every table (of one run, or all), and refresh, under one
    hold of the writers' lock."""
    catalog.check_local("optimize")
    if run is not None:  # before the lock, which creates the tables of a new warehouse
        check_runs([info.run for info in catalog.runs()], run)
    with catalog.locked():
        result = _merge_traces(catalog, run)
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
            actions = []
            for group in _groups(catalog.live_files(name, versions[name],
                                                    None if run is None else [run])):
                merged = _merge(path, group, versions[name] + 1)
                actions += [delta.remove_action(f, data_change=False) for f in group]
                actions.append(delta.add_action(merged, data_change=False))
                removed, added = removed + len(group), added + 1
            if actions:
                versions[name] = delta.commit(path, versions[name] + 1, actions, "OPTIMIZE")
                tables += 1
        if tables:
            delta.commit(catalog.table_path(TRACES), versions[TRACES] + 1, [], "OPTIMIZE",
                         catalog.pointer(versions, snapshot.seq, snapshot.class_rules))
    return OptimizeResult(removed, added, tables)


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
    catalog.check_local("repair")
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
    row_file = Path(table_path) / unquote(unreadable_file.path)
    if table == TRACES and row_file.exists():
        trace.source_path = pq.read_table(row_file, columns=["source_path"])[0][0].as_py()


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
    schema = pq.read_schema(table_path / first.path)
    rows = 0
    with parquet_writer(table_path / relative, schema) as writer:
        for data_file in group:
            table = pq.read_table(table_path / data_file.path)
            writer.write_table(table)
            rows += table.num_rows
    size, sha256 = delta.file_digest(table_path / relative)
    return DataFile(relative, first.run, first.phase, first.rank, rows, size, sha256=sha256)
