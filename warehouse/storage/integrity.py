"""Damage from outside: a warehouse's files changed by something other than tracewh (a data
file deleted, a log file emptied or cut), found from the Delta logs alone and reported in
one line that says how to recover.

A damaged commit file is found where its table is read (`delta.add_actions`). What no file shows
is found by counting: every event of a trace lands in exactly one event table, and its
`traces` row counts them (`events`), while each data file's add action records its rows
(`numRecords`): a log that lost actions, or a checkpoint that misses files, disagrees.
"""

import collections
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import delta, layout
from .delta_log import changed_problem, size_problem
from .. import storage
from .catalog import TRACES
from ..errors import HINT, WarehouseError
from .layout import EVENT_TABLES


def check_counts(root, snapshot, runs=None):
    """Raise WarehouseError when a trace's rows in the event tables, as their logs count
    them, are not its `traces` row's events (of `runs`, or all). The totals are compared
    first (in Arrow: ~1 ms at 8,000 files), each trace only when they differ. Files without
    statistics (written by another engine) cannot be counted: then nothing is checked."""
    if TRACES not in snapshot.versions:
        return
    traces = _add_actions(root, TRACES, snapshot, runs)
    tables = [_add_actions(root, table, snapshot, runs)
              for table in EVENT_TABLES if table in snapshot.versions]
    if ("min.events" not in traces.column_names or traces["min.events"].null_count
            or any(table["num_records"].null_count for table in tables)):
        return
    if _total(traces["min.events"]) == sum(_total(table["num_records"]) for table in tables):
        return
    held = collections.Counter()
    for table in tables:
        names = pc.struct_field(pc.extract_regex(table["path"], delta.TRACE_ID), "trace_id")
        for trace_id, rows in zip(names.to_pylist(), table["num_records"].to_pylist()):
            held[trace_id] += rows
    for trace in traces.to_pylist():
        events, rows = trace["min.events"], held[trace["min.trace_id"]]
        if events != rows:
            raise WarehouseError(
                f"{root}: trace {trace['min.trace_id']} ({_partition(trace)}) counts "
                f"{events:,} events, but the tables' Delta logs hold {rows:,} rows of it: a "
                "log was changed outside tracewh: restore its _delta_log/ files from a "
                f"backup, or ingest {_source(root, trace)}{HINT}", *_again(trace))
    unlisted = sorted(set(held) - set(traces["min.trace_id"].to_pylist()))
    if unlisted:  # rows of a trace that `traces` does not hold: its log lost the row
        raise WarehouseError(
            f"{root}: the event tables hold {held[unlisted[0]]:,} rows of trace {unlisted[0]}, "
            f"which has no traces row: the traces log was changed outside tracewh: restore its "
            "_delta_log/ files from a backup")


def missing_file_error(root, table, paths):
    """The error for a table whose listed files are not all on disk (DuckDB found no file
    to read), naming the first missing one and its trace; None if none is missing."""
    missing = [path for path in paths if not _exists(storage.location(path))]
    if not missing:
        return None
    others = f" (and {len(missing) - 1:,} more of {table})" if len(missing) > 1 else ""
    return file_error(root, table, missing[0], f"missing{others}", ", deleted outside tracewh")


def _exists(where):
    return storage.of(where).exists(where)


def file_error(root, table, path, problem, cause=""):
    """The error for a damaged file of a table: `path: problem: a file of trace T (its
    partition)cause: the way out`."""
    relative = storage.location(path).relative_to(storage.location(root) / table)
    trace = {"min.trace_id": relative.name.split("-", 1)[0],
             **{f"partition.{part.split('=', 1)[0]}": part.split("=", 1)[1]
                for part in relative.parts[:-1]}}
    return WarehouseError(
        f"{path}: {problem}: a file of trace {trace['min.trace_id']} ({_partition(trace)})"
        f"{cause}: restore it from a backup, or ingest {_source(root, trace)}{HINT}",
        *_again(trace))


def check_sizes(root, snapshot, tables, runs=None):
    """Raise WarehouseError for the first file of `tables` (of `runs`) at `snapshot` whose
    size is not its commit's: cut, or rewritten (a stat per file: 0.4 ms for the demo's 8
    ranks' 111 files). What every command that reads the files checks."""
    for table in tables:
        _raise_first(root, table, delta.changed_files(storage.location(root) / table,
                                                      snapshot.versions[table], runs))


def check_listed_sizes(root, listed):
    """check_sizes of files whose recorded sizes are known ({table: [(path, size)]}): a stat
    each, no log read. A missing file is left to its reader, as there."""
    for table, found in listed.items():
        for path, recorded in found:
            where = storage.location(path)
            try:
                size = storage.of(where).size(where)
            except FileNotFoundError:
                continue
            if size != recorded:
                raise file_error(root, table, path,
                                 changed_problem(size_problem(size, recorded)))


def check_files(root, snapshot):
    """Raise WarehouseError for the first live file at `snapshot` that is missing, or whose
    size or bytes (sha256) are not those its commit recorded: every byte of the warehouse's
    tables read, which `tracewh refresh` does."""
    for table, version in snapshot.versions.items():
        path = storage.location(root) / table
        missing = missing_file_error(root, table, delta.live_paths(path, version))
        if missing is not None:
            raise missing
        _raise_first(root, table, delta.changed_files(path, version, read=True))


def _raise_first(root, table, changed):
    if changed:
        raise file_error(root, table, *changed[0])


def _add_actions(root, table, snapshot, runs):
    return delta.of_traces(delta.add_actions(storage.location(root) / table,
                                             snapshot.versions[table], runs),
                           snapshot.trace_ids)


def _total(column):
    return pc.sum(column).as_py() or 0


def _partition(trace):
    return (f"run {trace['partition.run']}, phase {trace['partition.phase']}, "
            f"rank {trace['partition.rank']}")


def _source(root, trace):
    """The file a trace was ingested from."""
    traces = storage.location(root) / TRACES
    if not isinstance(traces, Path):  # no glob of an object store's keys
        return "its trace file"
    prefix = layout.trace_prefix(trace["partition.run"], trace["partition.phase"],
                                 trace["partition.rank"], trace["min.trace_id"])
    for path in sorted(traces.glob(f"{prefix}*.parquet")):
        try:
            return pq.read_table(path, columns=["source_path"])["source_path"][0].as_py()
        except (OSError, pa.ArrowException, IndexError):
            continue
    return "its trace file"


def _again(trace):
    """(cli_hint, library_hint) ending the advice to ingest a trace's file again: the
    options that put it back in place, or the same in the library's words."""
    run, phase, rank = (trace[f"partition.{key}"] for key in ("run", "phase", "rank"))
    return (f" (--run {run} --phase {phase} --rank {rank}) again with --replace",
            f" again as run {run}, phase {phase}, rank {rank}, replacing it")

