"""Which decoder normalises a chunk: the native core when it can, the Python reference else.

The native core (`tracewh.ingest._decode`, Rust: ingest/native) reads a chunk's JSON array of
events into one Arrow column per event field with the GIL released; the tables are then
assembled here from those columns by Arrow kernels, with the reference's own routing and
column rules (`normalize`). The core declines a chunk (returns None) whenever it holds
something it does not reproduce exactly: keys or value types the fast path does not model
(kept in `extra` by the reference), duplicate keys, escapes in keys, invalid UTF-8, malformed
JSON, a missing ph or ts, times beyond 64 bits, a negative dur. Such a chunk, and a table
needing `extra`, is decoded by the reference, which gives the exact result or the exact error.
So the native path is to be faster, never different: tests/test_native.py checks it against
the reference.

TRACEWH_DECODER=python forces the reference everywhere.
"""

import os
from collections import Counter

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from tracewh.storage.schema import TABLES
from .normalize import (_ARG_FIELDS, _INSTANT_PHASE, _UNMODELLED_FIELDS, ChunkResult,
                        _categories, _name_ids, _positions_by_table, normalize_chunk)
from .secrets import redact_json_text

try:
    from . import _decode
except ImportError:  # not built (no Rust toolchain at install): the reference alone
    _decode = None

_STRING_FIELDS = ("ph", "cat", "name", "bp", "s", "pid", "tid", "id", "args")
_ARROW_TYPES = {
    "pid_number": pa.int64(), "tid_number": pa.int64(), "ts_ns": pa.int64(),
    "dur_ns": pa.int64(), "device": pa.int64(), "stream": pa.int64(),
    "correlation": pa.int64(), "External id": pa.int64(), "external id": pa.int64(),
    "registers per thread": pa.int64(), "shared memory": pa.int64(), "bytes": pa.int64(),
    "Sequence number": pa.int64(), "cbid": pa.int64(),
    "blocks per SM": pa.float64(), "warps per SM": pa.float64(),
    "est. achieved occupancy %": pa.float64(), "memory bandwidth (GB/s)": pa.float64(),
    **{f"{dimension}_{axis}": pa.int64() for dimension in ("grid", "block") for axis in "xyz"},
}
# The core's column of each args field a table reads, by the field's attribute in the
# reference's structs (KernelArgs, CpuArgs, RuntimeArgs): the column is named by the key in the
# args, and a list of dimensions (grid, block) gives three columns, its x, y and z.
_ARG_COLUMNS = {
    attribute: key for fields in _ARG_FIELDS.values() for key, (attribute, _) in fields.items()
}
_ARG_COLUMNS.update({f"{dimension}_{axis}": f"{dimension}_{axis}"
                     for dimension in ("grid", "block") for axis in "xyz"})


def native_available():
    """Whether chunks go to the native core: it is built and not switched off."""
    return _decode is not None and os.environ.get("TRACEWH_DECODER", "") != "python"


def normalize(data, trace_id, first_event=0, redact_secrets=False):
    """`normalize_chunk`'s result for a chunk's JSON array of events as read (whitespace and
    all): from the native core when it is available and reproduces the chunk, else from the
    reference, which reads the array compacted (msgspec's `json.format`).

    The core reads whitespace itself and writes args compact, so it needs no compaction pass;
    nor does redaction, whose rules match inside strings, except the one for a flag and its
    value as items of a list (`"--token","VALUE"`), which needs the items' separator compact:
    a chunk holding `--` is compacted first."""
    if native_available():
        secrets = 0
        text = data
        if redact_secrets:  # over the text, as the reference does before it decodes
            if b"--" in data:
                text = msgspec.json.format(data, indent=-1)
            text, secrets = redact_json_text(bytes(text), _decode.has_secret_anchor)
        result = normalize_native(text, trace_id, first_event)
        if result is not None:
            result.secrets = secrets
            return result
    return normalize_chunk(msgspec.json.format(data, indent=-1), trace_id, first_event,
                           redact_secrets)


def normalize_native(data, trace_id, first_event=0):
    """The chunk's tables from the native core, or None where the reference must decode it.
    Secrets are not redacted here (see `normalize`)."""
    decoded = _decode.decode_events(bytes(data))
    if decoded is None:
        return None
    count = decoded.pop("events")
    columns = {key: _array(key, buffers, count) for key, buffers in decoded.items()}
    warnings = Counter()
    tables = {}
    try:
        for name, positions in _positions_by_table(columns["ph"], columns["cat"], None,
                                                   first_event, warnings):
            group = _Group(columns, positions)
            if _needs_extra(name, group):
                return None
            table = _BUILDERS[name](group, warnings)
            table["event_index"] = pc.add(positions.cast(pa.int64()), first_event)
            table["trace_id"] = pa.repeat(pa.scalar(trace_id, pa.string()), len(positions))
            schema = TABLES[name].schema
            tables[name] = pa.table([table[f.name].cast(f.type) for f in schema], schema=schema)
    except (pa.ArrowInvalid, OverflowError):
        return None  # a value the table's type does not hold: the reference names the event
    return ChunkResult(tables, count, warnings)


def _array(key, buffers, count):
    """An Arrow array over the core's buffers (bytes objects), without copying them."""
    validity, *data = (None if b is None else pa.py_buffer(b) for b in buffers)
    if key in _STRING_FIELDS:
        return pa.Array.from_buffers(pa.string(), count, [validity, *data])
    return pa.Array.from_buffers(_ARROW_TYPES[key], count, [validity, *data])


class _Group(dict):
    """The rows of the columns that go to one table, taken from the chunk's on first use
    (a table reads a third of the core's columns)."""

    def __init__(self, columns, positions):
        super().__init__()
        self.columns, self.positions = columns, positions

    def __missing__(self, key):
        self[key] = self.columns[key].take(self.positions)
        return self[key]


# The core's column of each event field a table may not model (see normalize._extra).
_FIELD_COLUMN = {"dur": "dur_ns", "id": "id", "bp": "bp", "s": "s"}


def _needs_extra(table, group):
    """Whether an event of the group holds a field its table has no column for, which the
    reference keeps in `extra` (not reproduced natively: real traces have none)."""
    for field in _UNMODELLED_FIELDS[table]:
        if group[_FIELD_COLUMN[field]].null_count < len(group["ph"]):
            return True
    return table == "instants" and not pc.all(pc.equal(group["ph"], _INSTANT_PHASE)).as_py()


def _base_columns(group, warnings, durations=False):
    columns = {"name": group["name"], "category": _categories(group["cat"]),
               "pid": group["pid"], "tid": group["tid"], "args": group["args"],
               "extra": pa.nulls(len(group["ph"]), pa.string()), "ts_ns": group["ts_ns"]}
    if durations:
        missing = group["dur_ns"].null_count
        if missing:
            warnings["X events without dur (kept with NULL dur_ns)"] += missing
        columns["dur_ns"] = group["dur_ns"]
    return columns


def _arg_columns(group, names):
    """Table columns from args fields; `external_id` is the new or the old spelling."""
    columns = {name: group[_ARG_COLUMNS[name]] for name in names if name != "external_id"}
    if "external_id" in names:
        columns["external_id"] = pc.coalesce(group[_ARG_COLUMNS["external_id"]],
                                             group[_ARG_COLUMNS["external_id_old"]])
    return columns


def _kernel_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    columns["name_id"] = _name_ids(group["name"].to_pylist())
    columns["device"] = pc.coalesce(group["device"], group["pid_number"])
    columns["stream"] = pc.coalesce(group["stream"], group["tid_number"])
    columns.update(_arg_columns(group, (
        "correlation", "external_id", "registers_per_thread", "shared_memory",
        "blocks_per_sm", "warps_per_sm", "occupancy", "bytes", "bandwidth",
        *(f"{d}_{axis}" for d in ("grid", "block") for axis in "xyz"))))
    return columns


def _cpu_op_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    columns.update(_arg_columns(group, ("external_id", "sequence_number")))
    return columns


def _runtime_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    columns.update(_arg_columns(group, ("correlation", "external_id", "cbid")))
    return columns


def _flow_columns(group, warnings):
    return {**_base_columns(group, warnings), "ph": group["ph"], "id": group["id"],
            "bp": group["bp"]}


def _instant_columns(group, warnings):
    return {**_base_columns(group, warnings), "scope": group["s"]}


def _other_columns(group, warnings):
    return {**_base_columns(group, warnings, durations=True), "ph": group["ph"],
            "category": group["cat"]}


_BUILDERS = {
    "kernels": _kernel_columns,
    "cpu_ops": _cpu_op_columns,
    "runtime": _runtime_columns,
    "flows": _flow_columns,
    "counters": _base_columns,
    "instants": _instant_columns,
    "metadata": _base_columns,
    "other_events": _other_columns,
}
