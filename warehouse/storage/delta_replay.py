"""A Delta table's live files at a version, replayed from its log with pyarrow alone: its
last checkpoint's `add` and `metaData` columns, then the JSON commits after it. What
`delta.add_actions` gives its readers, as delta-rs's `get_add_actions(flatten=True)` gives it
(the same columns, names, types and row order), without importing delta-rs: its library and
runtime were ~50-65 MB of a command's pages, taken at an ingest's first commit and kept
through its refresh, where the command peaks.

The columns: path (decoded), size_bytes, modification_time, num_records, then of every column
of the table's schema but its partition columns, null_count.<column>, min.<column> and
max.<column> (the bounds of primitive columns only), typed by the schema, then
partition.<column> for each partition column, typed by the schema. The rows: the files added
by the newest commit first (each commit's in its order), then the checkpoint's, in its order.
"""

import io
import json
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from .delta_log import (CHECKPOINT_INTERVAL, actions, commit_file, exists, last_checkpoint, log_dir,
                        read_bytes)
from ..errors import WarehouseError

# Delta's primitive types, as delta-rs types their statistics and partition values
_TYPES = {
    "string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "short": pa.int16(),
    "byte": pa.int8(), "double": pa.float64(), "float": pa.float32(), "boolean": pa.bool_(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", "UTC"),
    "timestamp_ntz": pa.timestamp("us"), "binary": pa.binary(),
}
# The primitive types delta-rs gives no bounds of
_UNBOUNDED = {"binary"}


class UnparsablePartition(ValueError):
    """A live file's partition value that is not of its column's type (see
    delta.unreadable_files, which names it)."""


class MissingCommit(WarehouseError):
    """A commit the replay of a version needs is not in the log."""


@dataclass(frozen=True)
class Replayed:
    """A table's live files at a version: its metaData action, the add actions of the JSON
    commits after its checkpoint (newest first, each commit's in its order, paths decoded),
    then the checkpoint's, still in Arrow (at 8,000 files, a Python object per file and
    value was most of the replay's time)."""

    metadata: dict
    adds: list
    checkpointed: pa.StructArray  # of the checkpoint's `add` column, paths decoded

    def as_dicts(self):
        """Every add action as a dict, a checkpoint's maps (partitionValues, tags) as dicts."""
        return self.adds + [{**add, "partitionValues": dict(add.get("partitionValues") or ()),
                             "tags": dict(add.get("tags") or ())}
                            for add in self.checkpointed.to_pylist()]


def replay(path, version):
    """The table's live files at `version` (see Replayed)."""
    checkpoint = _checkpoint(path, version)
    metadata, seen, adds = None, set(), []
    for number in range(version, checkpoint, -1):
        found = actions(path, number)
        if not found and not exists(commit_file(path, number)):
            raise MissingCommit(f"{path}: cannot read version {version} of the Delta table "
                                f"(its version {number} is missing from {log_dir(path)})")
        for action in found:
            if metadata is None and "metaData" in action:
                metadata = action["metaData"]
            for kind in ("add", "remove"):
                if kind in action:
                    name = unquote(action[kind]["path"])
                    if name not in seen:
                        seen.add(name)
                        if kind == "add":
                            adds.append({**action["add"], "path": name})
    checkpointed = _NO_ADDS
    if checkpoint > 0:
        checkpointed, metadata_then = _checkpoint_adds(path, checkpoint, seen)
        metadata = metadata or metadata_then
    if metadata is None:
        raise MissingCommit(f"{path}: cannot read version {version} of the Delta table (no "
                            "metaData action in its log)")
    return Replayed(metadata, adds, checkpointed)


def _checkpoint(path, version):
    """The version of the checkpoint the replay of `version` starts from, or -1 for none:
    the last one, or for a version before it the one every CHECKPOINT_INTERVAL versions
    left, if it is there."""
    last = last_checkpoint(path)
    found = last if 0 < last <= version else version - version % CHECKPOINT_INTERVAL
    return found if found > 0 and exists(_checkpoint_file(path, found)) else -1


def _checkpoint_file(path, version):
    return log_dir(path) / f"{version:020d}.checkpoint.parquet"


# What the replay reads of an add action (and of a checkpoint's, its maps)
_ADD_FIELDS = [pa.field("path", pa.string()), pa.field("size", pa.int64()),
               pa.field("modificationTime", pa.int64()), pa.field("stats", pa.string())]
_MAPS = [pa.field(name, pa.map_(pa.string(), pa.string())) for name in ("partitionValues", "tags")]
_NO_ADDS = pa.StructArray.from_arrays([pa.nulls(0, field.type) for field in _ADD_FIELDS + _MAPS],
                                      fields=_ADD_FIELDS + _MAPS)


def _checkpoint_adds(path, version, seen):
    """(the add actions of a checkpoint but those of `seen` paths, its metaData action):
    its `add` and `metaData` columns read (a checkpoint holds no file both added and
    removed), the adds kept in Arrow, their paths decoded."""
    table = pq.ParquetFile(pa.BufferReader(read_bytes(_checkpoint_file(path, version)))).read(
        columns=["add", "metaData"])
    metadata = next((row for row in table["metaData"].to_pylist() if row is not None), None)
    if metadata is not None:
        metadata = {**metadata, "partitionColumns": list(metadata.get("partitionColumns") or ())}
    added = table["add"].combine_chunks()
    added = added.filter(added.is_valid())
    paths = added.field("path")
    if pc.any(pc.match_substring(paths, "%")).as_py():
        paths = _strings([unquote(name) for name in paths.to_pylist()])
    added = pa.StructArray.from_arrays(
        [paths.cast(pa.string()), *(added.field(f.name).cast(f.type) for f in _ADD_FIELDS[1:]),
         *(added.field(f.name).cast(f.type) for f in _MAPS)], fields=_ADD_FIELDS + _MAPS)
    if seen:
        added = added.filter(pc.invert(pc.is_in(added.field("path"),
                                                value_set=_strings(sorted(seen)))))
    return added, metadata


def flattened(replayed):
    """delta-rs's flattened add actions of a table's live files (see the module's
    docstring)."""
    adds, checkpointed = replayed.adds, replayed.checkpointed
    fields = json.loads(replayed.metadata["schemaString"])["fields"]
    partitioned = list(replayed.metadata.get("partitionColumns") or ())
    data = [field for field in fields if field["name"] not in partitioned]
    bounded = [field for field in data
               if isinstance(field["type"], str) and field["type"] not in _UNBOUNDED]
    partition_fields = ([pa.field("partitionValues", pa.struct(
        [pa.field(name, pa.string()) for name in partitioned]))] if partitioned else [])
    committed = _from_json([{**{f.name: add.get(f.name) for f in _ADD_FIELDS},
                             "partitionValues": add.get("partitionValues") or {}}
                            for add in adds], [*_ADD_FIELDS, *partition_fields])

    def both(key):  # a field of the JSON commits' adds, then of the checkpoint's
        return pa.concat_arrays([committed[key].combine_chunks(), checkpointed.field(key)])

    texts = both("stats").to_pylist()
    stats = _stats("\n".join(text or "{}" for text in texts), data, bounded)
    columns = {"path": both("path"), "size_bytes": both("size"),
               "modification_time": both("modificationTime"),
               "num_records": stats.field("numRecords")}
    for key, prefix, named in (("nullCount", "null_count", data), ("minValues", "min", bounded),
                               ("maxValues", "max", bounded)):
        struct = stats.field(key)
        for field in named:
            columns[f"{prefix}.{field['name']}"] = struct.field(field["name"])
    keys = _strings(partitioned)
    for index, name in enumerate(partitioned):
        type_ = _TYPES[next(field["type"] for field in fields if field["name"] == name)]
        values = pa.concat_arrays([
            committed["partitionValues"].combine_chunks().field(name),
            pc.map_lookup(checkpointed.field("partitionValues"), keys[index], "first")])
        try:
            columns[f"partition.{name}"] = values.cast(type_)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise UnparsablePartition(name, str(error)) from None
    schema = pa.schema([pa.field(name, column.type, nullable=name not in _REQUIRED)
                        for name, column in columns.items()])
    return pa.Table.from_arrays(list(columns.values()), schema=schema)


_REQUIRED = {"path", "size_bytes", "modification_time"}


def _stats(text, data, bounded):
    """The statistics of files, `text` their add actions' (a JSON object a line), as one
    struct array (numRecords, nullCount, minValues, maxValues) parsed by Arrow's JSON reader
    at the types of the table's schema: a number from its text, a timestamp from its ISO
    8601 text."""
    bounds = pa.struct([pa.field(field["name"], _TYPES[field["type"]]) for field in bounded])
    fields = [pa.field("numRecords", pa.int64()),
              pa.field("nullCount", pa.struct([pa.field(f["name"], pa.int64()) for f in data])),
              pa.field("minValues", bounds), pa.field("maxValues", bounds)]
    table = _read_json(text, fields)
    return pa.StructArray.from_arrays([table[f.name].combine_chunks() for f in fields],
                                      fields=fields)


def _strings(values):
    """A string array of `values` (see _from_json)."""
    return _from_json([{"v": value} for value in values], [pa.field("v", pa.string())])["v"] \
        .combine_chunks()


def _from_json(rows, fields):
    """A table of `fields` holding `rows` (dicts), built by Arrow's JSON reader: pa.array
    (or any other conversion of Python values) would first ask whether they are a pandas
    object, importing pandas where it is installed (0.25-0.33 s; the `tracewh` command
    hides it, a process of the Python API does not: see tracewh.entry)."""
    return _read_json("\n".join(json.dumps(row, separators=(",", ":")) for row in rows),
                      fields)


def _read_json(text, fields):
    """A table of `fields` of JSON objects, one a line of `text`."""
    if not text:
        return pa.Table.from_arrays([pa.nulls(0, field.type) for field in fields],
                                    schema=pa.schema(fields))
    return pa_json.read_json(io.BytesIO(text.encode()), parse_options=pa_json.ParseOptions(
        explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore"))
