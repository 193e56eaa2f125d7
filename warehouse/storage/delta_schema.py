"""A Delta table's protocol and metaData actions, from an Arrow schema, as the protocol defines
them and delta-rs writes them (the same text, but the table's id and time, and the order of a
field's metadata keys, which delta-rs leaves to a hash map's): what `delta` creates
a table with, or replaces a mart's schema with, without importing delta-rs (its ~55 MB of
pages stayed in a command for the whole of the first ingest into a new warehouse).
"""

import json
import time
import uuid

import pyarrow as pa

# What every table is created with: readers 1, writers 2, no table feature. Each type below
# is readable at reader version 1 (a timestamp without a time zone would need the
# timestampNtz feature, reader 3 and writer 7: not written).
PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}

# Delta's primitive types, by the Arrow type a table's files hold
_PRIMITIVES = {
    pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary",
    pa.bool_(): "boolean", pa.int8(): "byte", pa.int16(): "short", pa.int32(): "integer",
    pa.int64(): "long", pa.float32(): "float", pa.float64(): "double", pa.date32(): "date",
}


class UnsupportedType(TypeError):
    """An Arrow type with no Delta type readable at PROTOCOL's versions."""


def metadata_action(schema, partition_columns=()):
    """The metaData action of a new table of `schema` (an Arrow schema, partition columns
    included), partitioned by `partition_columns`: a fresh id (uuid4), as every creation or
    replacement by delta-rs has."""
    return {"metaData": {
        "id": str(uuid.uuid4()), "name": None, "description": None,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(_struct(schema), separators=(",", ":")),
        "partitionColumns": list(partition_columns),
        "createdTime": int(time.time() * 1000), "configuration": {}}}


def _struct(schema):
    """Delta's struct type of an Arrow schema."""
    return {"type": "struct", "fields": [_field(field) for field in schema]}


def _field(field):
    metadata = {key.decode(): value.decode() for key, value in (field.metadata or {}).items()}
    return {"name": field.name, "type": _type(field.name, field.type),
            "nullable": field.nullable, "metadata": metadata}


def _type(name, type_):
    if type_ in _PRIMITIVES:
        return _PRIMITIVES[type_]
    if pa.types.is_timestamp(type_) and type_.unit == "us" and type_.tz is not None:
        return "timestamp"  # Delta's: an instant, in microseconds
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return {"type": "array", "elementType": _type(name, type_.value_type),
                "containsNull": type_.value_field.nullable}
    raise UnsupportedType(f"column {name}: no Delta type for Arrow's {type_} (readable at "
                          "reader version 1)")


def same_table(metadata, schema, partition_columns=()):
    """Whether a table's metaData action is of `schema` partitioned by `partition_columns`
    (whatever its id and time): what a writer that lost the creation of a table to another
    accepts."""
    try:
        written = json.loads(metadata["schemaString"])
    except (KeyError, TypeError, ValueError):
        return False
    return (written == _struct(schema)
            and list(metadata.get("partitionColumns") or ()) == list(partition_columns))
