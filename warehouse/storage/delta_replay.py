"""A Delta table's live files at a version, replayed from its log with pyarrow alone: its
checkpoint's `add`/`remove` columns, then the JSON commits after it. What `delta.add_actions`
gives its readers, as delta-rs's `get_add_actions(flatten=True)` gives it (the same columns,
names, types and row order), without importing delta-rs: its library and runtime were ~50-65 MB
of a command's pages, taken at an ingest's first commit and kept through its refresh, where
the command peaks.

The columns: path (decoded), size_bytes, modification_time, num_records, then of every column
of the table's schema but its partition columns, null_count.<column>, min.<column> and
max.<column> (the bounds of primitive columns only), typed by the schema, then
partition.<column> for each partition column, typed by the schema. The rows: the files added
by the newest commit first (each commit's in its order), then the checkpoint's, in its order.
"""

import io
import json
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from .delta_log import CHECKPOINT_INTERVAL, actions, commit_file, exists, last_checkpoint, log_dir
from .delta_log import read_bytes
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


def live_adds(path, version):
    """(the table's metaData action at `version`, [its live files' add actions]), in the
    order described above: each add action as its commit wrote it (a checkpoint's maps as
    dicts), its path decoded."""
    checkpoint = _checkpoint(path, version)
    metadata, seen, adds = None, set(), []
    for number in range(version, checkpoint, -1):
        found = actions(path, number)
        if not found and not exists(commit_file(path, number)):
            raise MissingCommit(f"{path}: cannot read version {version} of the Delta table "
                                f"(its version {number} is missing from {log_dir(path)})")
        newest = []
        for action in found:
            if metadata is None and "metaData" in action:
                metadata = action["metaData"]
            for kind in ("add", "remove"):
                if kind in action:
                    name = unquote(action[kind]["path"])
                    if name not in seen:
                        seen.add(name)
                        if kind == "add":
                            newest.append({**action["add"], "path": name})
        adds.extend(newest)
    if checkpoint > 0:
        checkpointed, added = _checkpoint_actions(path, checkpoint)
        metadata = metadata or checkpointed
        adds.extend(add for add in added if add["path"] not in seen)
    if metadata is None:
        raise MissingCommit(f"{path}: cannot read version {version} of the Delta table (no "
                            "metaData action in its log)")
    return metadata, adds


def _checkpoint(path, version):
    """The version of the checkpoint the replay of `version` starts from, or -1 for none:
    the last one, or for a version before it the one every CHECKPOINT_INTERVAL versions
    left, if it is there."""
    last = last_checkpoint(path)
    found = last if 0 < last <= version else version - version % CHECKPOINT_INTERVAL
    return found if found > 0 and exists(_checkpoint_file(path, found)) else -1


def _checkpoint_file(path, version):
    return log_dir(path) / f"{version:020d}.checkpoint.parquet"


def _checkpoint_actions(path, version):
    """(its metaData action, [its add actions]) of a checkpoint: only its `add` and
    `metaData` columns read (a checkpoint holds no file both added and removed)."""
    table = pq.read_table(pa.BufferReader(read_bytes(_checkpoint_file(path, version))),
                          columns=["add", "metaData"])
    metadata = next((row for row in table["metaData"].to_pylist() if row is not None), None)
    if metadata is not None:
        metadata = {**metadata, "partitionColumns": list(metadata.get("partitionColumns") or ())}
    adds = [{**add, "path": unquote(add["path"]),
             "partitionValues": dict(add.get("partitionValues") or ()),
             "tags": dict(add.get("tags") or ())}
            for add in table["add"].to_pylist() if add is not None]
    return metadata, adds


def flattened(metadata, adds):
    """delta-rs's flattened add actions of `adds`, of the table of `metadata` (see the
    module's docstring)."""
    fields = json.loads(metadata["schemaString"])["fields"]
    partitioned = list(metadata.get("partitionColumns") or ())
    data = [field for field in fields if field["name"] not in partitioned]
    bounded = [field for field in data
               if isinstance(field["type"], str) and field["type"] not in _UNBOUNDED]
    stats = _stats(adds, data, bounded)
    columns = {
        "path": pa.array([add["path"] for add in adds], pa.string()),
        "size_bytes": pa.array([add["size"] for add in adds], pa.int64()),
        "modification_time": pa.array([add["modificationTime"] for add in adds], pa.int64()),
        "num_records": stats.field("numRecords"),
    }
    for key, prefix, named in (("nullCount", "null_count", data), ("minValues", "min", bounded),
                               ("maxValues", "max", bounded)):
        struct = stats.field(key)
        for field in named:
            columns[f"{prefix}.{field['name']}"] = struct.field(field["name"])
    for name in partitioned:
        type_ = _TYPES[next(field["type"] for field in fields if field["name"] == name)]
        values = pa.array([(add.get("partitionValues") or {}).get(name) for add in adds],
                          pa.string())
        try:
            columns[f"partition.{name}"] = values.cast(type_)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise UnparsablePartition(name, str(error)) from None
    schema = pa.schema([pa.field(name, column.type, nullable=name not in _REQUIRED)
                        for name, column in columns.items()])
    return pa.Table.from_arrays(list(columns.values()), schema=schema)


_REQUIRED = {"path", "size_bytes", "modification_time"}


def _stats(adds, data, bounded):
    """The statistics of `adds` as one struct array (numRecords, nullCount, minValues,
    maxValues), parsed by Arrow's JSON reader at the types of the table's schema: a number
    from its text, a timestamp from its ISO 8601 text."""
    bounds = pa.struct([pa.field(field["name"], _TYPES[field["type"]]) for field in bounded])
    schema = pa.schema([
        pa.field("numRecords", pa.int64()),
        pa.field("nullCount", pa.struct([pa.field(f["name"], pa.int64()) for f in data])),
        pa.field("minValues", bounds), pa.field("maxValues", bounds)])
    if not adds:
        return pa.StructArray.from_arrays([pa.array([], field.type) for field in schema],
                                          fields=list(schema))
    text = "\n".join(add.get("stats") or "{}" for add in adds).encode()
    table = pa_json.read_json(io.BytesIO(text), parse_options=pa_json.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="ignore"))
    return pa.StructArray.from_arrays([table[name].combine_chunks() for name in schema.names],
                                      fields=list(schema))

