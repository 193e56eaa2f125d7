"""Staging one trace's Parquet files: one part file per table for each process that
normalised some of its chunks, a row group per chunk.

Parts are written by the worker that normalised the chunks, so the parent process only reads and
cuts the JSON. A trace is stored in as many files per table as there were workers, not one per
chunk: DuckDB opens the files of a scan one after another, and the 17 part files per table of a
254 MB trace made the views over 64 such ranks twice as slow as one file each
(collective_instances 3.3 s against 1.7 s). Event indexes come from the reader (it counts the
events of each chunk), and timestamps are shifted by the trace's base time. Newer Kineto writes
`baseTimeNanoseconds` after the events, so the base is guessed before reading, from the file's
tail when it can be read cheaply, and the parts are rewritten in the rare case the guess was
wrong (gzipped newer Kineto traces).
"""

import functools
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tracewh.errors import TracewhError
from tracewh.storage.layout import staged_name
from tracewh.storage.parquet import holds_dictionaries, parquet_writer, write_table
from tracewh.storage.schema import TABLES

from .sources import input_size, read_range
from .keyed import contiguous

_BASE_TIME = re.compile(rb'"baseTimeNanoseconds"\s*:\s*"?(\d+)')
TAIL_BYTES = 1 << 16


def guess_base_time(path):
    """baseTimeNanoseconds from the last bytes of an uncompressed file (or object), or 0.
    A file that cannot be read is reported by the reading that follows."""
    try:
        if read_range(path, 0, 2) == b"\x1f\x8b":
            return 0
        matches = _BASE_TIME.findall(read_range(path, max(0, input_size(path) - TAIL_BYTES),
                                                TAIL_BYTES))
    except (OSError, TracewhError):
        return 0
    return int(matches[-1]) if matches else 0


def shift_times(table, delta):
    if delta == 0 or "ts_ns" not in table.column_names:
        return table
    index = table.column_names.index("ts_ns")
    return table.set_column(index, "ts_ns", pc.add_checked(table["ts_ns"], delta))


def write_part(directory, name, part, table):
    write_table(table, directory / staged_name(name, part))


def with_dictionaries(schema, names):
    """`schema` with the string columns `names` as dictionaries of int32 indices: written to
    Parquet without the Arrow schema (see write_table), they are read back as the text they
    are, and the writer writes the dictionary it is given instead of hashing every value."""
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type), f.nullable)
                      if f.name in names else f for f in schema])


def repeated_text(value, size):
    """A dictionary column of `size` rows that all hold the text `value`."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(size, np.int32)),
                                          pa.array([value], pa.string()))


class PartFiles:
    """The part files, one per table, that one process writes a trace's chunks (or a
    measured table's pieces) into: each table given is a row group appended to its table's
    file, which is complete once closed (a context manager)."""

    def __init__(self, directory, part):
        self.directory = directory
        self.part = part
        self._writers = {}

    def write(self, name, table):
        writer = self._writers.get(name)
        if writer is None:
            writer = parquet_writer(self.directory / staged_name(name, self.part),
                                    table.schema,
                                    store_schema=not holds_dictionaries(table.schema))
            self._writers[name] = writer
        writer.write_table(table)

    def close(self):
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def read_staged(directory, parts, columns, *, filters=None, dictionaries=()):
    """{table: its staged parts' `columns`} for {table: columns} (parts: {table: part
    numbers}), each one table (empty, typed, where the trace has no part): what the
    per-trace tables measured after the chunks (step_time, op_time) read back, once; only
    the rows that pass `filters` when given: (column, "=", value) triples, pyarrow.parquet's
    form, which all hold (a row group at a time: the others are never held). The text
    columns named in `dictionaries` are read as Arrow dictionaries (Parquet's own: no
    string per row is made)."""
    read = {}
    for name, wanted in columns.items():
        coded = [column for column in wanted if column in dictionaries]
        tables = [_read_part(directory / staged_name(name, part), wanted, coded, filters or ())
                  for part in parts.get(name, ())]
        schema = TABLES[name].schema
        empty = {c: pa.array([], schema.field(c).type) for c in wanted}
        read[name] = (pa.concat_tables(tables) if tables else pa.table(
            {c: empty[c].dictionary_encode() if c in coded else empty[c] for c in wanted}))
    return read


def _read_part(path, wanted, coded, filters):
    """A staged part's `wanted` columns (`coded` as dictionaries), the rows that pass the
    `filters` (see read_staged). pyarrow.parquet's ParquetFile, not its read_table, whose
    datasets import pyarrow.dataset and its readers of other formats into every process."""
    part = pq.ParquetFile(path, read_dictionary=coded)
    if not filters:
        return part.read(columns=wanted)
    for column, operator, _ in filters:
        if operator != "=":
            raise ValueError(f"unsupported filter on {column}: {operator}")
    tested = [column for column, _, _ in filters if column not in wanted]
    groups = []
    for index in range(part.num_row_groups):
        group = part.read_row_group(index, columns=wanted + tested)
        passes = [pc.equal(group[column], value) for column, _, value in filters]
        groups.append(group.filter(functools.reduce(pc.and_, passes)).select(wanted))
    return pa.concat_tables(groups) if groups else part.read(columns=wanted)


def staged_distinct(directory, parts, name, column):
    """The distinct values of a string `column` of the staged parts of table `name`, read as
    Parquet dictionaries (the values, never a string per row): a test of the names a trace
    holds at a fraction of reading them."""
    values = set()
    for part in parts.get(name, ()):
        read = _read_part(directory / staged_name(name, part), [column], [column], ())[column]
        for chunk in read.chunks:
            values.update(chunk.dictionary.to_pylist())
    values.discard(None)
    return values


def write_whole(directory, name, rows):
    """A small table written from Python rows (devices), as part 0."""
    table = pa.Table.from_pylist(rows, schema=TABLES[name].schema)
    write_part(directory, name, 0, table)


def rebase_part(directory, name, part, delta):
    """Shift a staged part's timestamps by `delta` ns (the base time was not known)."""
    path = directory / staged_name(name, part)
    write_part(directory, name, part, shift_times(pq.ParquetFile(path).read(), delta))


# A table's parts of a trace (one per worker) are merged into one file when they hold few rows
# together: a small table (instants, metadata) gets a few rows from each worker. Merging costs
# ~0.8 us a row (read, then encoded again): merging every table under 16 MB took 0.5-0.8 s of
# the 254 MB trace's 3.1 s ingest, and over 64 ranks of it views took 0.85-1.21x as long with
# two files per table and trace as with one (measured 2026-12-04). Larger parts are left to
# `tracewh optimize`.
MERGE_AT_MOST_PARTS = 4
MERGE_BELOW_ROWS = 1 << 16


def merge_small_parts(directory, name, parts):
    """Merge a table's staged parts into a new one when they are few and small together;
    return (the part numbers left, the paths of the parts merged, for the caller to delete
    once nothing reads them). The merged rows are in event order (each worker's part holds
    the chunks it took, so parts interleave)."""
    paths = [directory / staged_name(name, part) for part in parts]
    if (not 2 <= len(parts) <= MERGE_AT_MOST_PARTS
            or sum(pq.read_metadata(path).num_rows for path in paths) >= MERGE_BELOW_ROWS):
        return parts, []
    merged = max(parts) + 1
    write_part(directory, name, merged, _in_event_order(paths))
    return [merged], paths


def _in_event_order(paths):
    """The rows of part files, in event order. Each row group of a part is one chunk's rows,
    in event order, and chunks hold disjoint ranges of events: the row groups put in order of
    their first event need no sort (a sort's take of every column was 0.3 s of a 254 MB
    trace's ingest). Any other layout is sorted."""
    groups = []
    for path in paths:
        part = pq.ParquetFile(path)
        groups += [part.read_row_group(i) for i in range(part.num_row_groups)]
    groups = [group for group in groups if len(group)] or groups[:1]
    index = [contiguous(group["event_index"]) for group in groups]
    first = [pc.min(column).as_py() for column in index]
    last = [pc.max(column).as_py() for column in index]
    order = sorted(range(len(groups)), key=lambda i: first[i] if first[i] is not None else -1)
    merged = pa.concat_tables([groups[i] for i in order])
    apart = all(last[a] < first[b] for a, b in zip(order, order[1:]))
    if apart and all(_ascending(column) for column in index):
        return merged
    return merged.sort_by("event_index")


def _ascending(column):
    return len(column) < 2 or pc.all(pc.greater(column.slice(1), column.slice(0, len(column) - 1))
                                     ).as_py() is True
