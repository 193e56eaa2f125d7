"""Warehouses of many runs for the benchmarks: a committed run copied under new names.

Each copy gets new trace ids (rewritten in every file, so joins on trace_id stay per trace),
new sha256 and sequence numbers, and is committed in bulk, 100 runs per Delta commit of each
table: building 1,000 runs one ingest at a time would take most of an hour.
"""

import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from tracewh.storage import delta
from tracewh.storage.catalog import TRACES, Catalog

BATCH = 100


def replicate(root, source_run, targets):
    """Copy `source_run` to every (run, rank offset) of `targets`; return the traces added."""
    catalog = Catalog(root)
    added = 0
    with catalog.locked():
        snapshot = catalog.snapshot()
        source = {table: [(f, pq.read_table(catalog.table_path(table) / f.path)) for f in files]
                  for table, files in snapshot.files(root, [source_run]).items() if files}
        versions, seq = dict(snapshot.versions), snapshot.seq
        pending = {table: [] for table in source}
        for number, (run, rank_offset) in enumerate(targets, 1):
            new_ids = {}
            for table, items in source.items():
                for data_file, rows in items:
                    trace_id = new_ids.setdefault(data_file.trace_id, uuid.uuid4().hex[:16])
                    rows = _with(rows, "trace_id", trace_id)
                    if table == TRACES:
                        seq += 1
                        rows = _with(_with(rows, "ingest_seq", seq), "sha256", f"{seq:064x}")
                    pending[table].append(_write(catalog.table_path(table), rows, data_file,
                                                 run, data_file.rank + rank_offset, trace_id,
                                                 seq if table == TRACES else None))
            added += len(new_ids)
            if number % BATCH == 0 or number == len(targets):
                for table in sorted(pending, key=lambda name: name == TRACES):
                    info = (catalog.pointer(versions, seq, snapshot.class_rules)
                            if table == TRACES else None)
                    versions[table] = delta.commit(
                        catalog.table_path(table), versions[table] + 1,
                        [delta.add_action(f) for f in pending[table]], "WRITE", info)
                    pending[table] = []
    return added


def _with(table, column, value):
    index = table.column_names.index(column)
    return table.set_column(index, column, pa.array([value] * table.num_rows,
                                                    table.schema.field(column).type))


def _write(table_path, rows, source, run, rank, trace_id, seq):
    part = source.path.rsplit("-", 1)[1]
    relative = f"run={run}/phase={source.phase}/rank={rank}/{trace_id}-{part}"
    (table_path / relative).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, table_path / relative, compression="zstd")
    row = ({name: rows[name][0].as_py() for name in delta.ROW_STATS} if seq is not None
           else None)
    size, sha256 = delta.file_digest(table_path / relative)
    return delta.DataFile(relative, run, source.phase, rank, rows.num_rows, size, row,
                          sha256=sha256)
