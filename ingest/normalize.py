"""Route decoded events to their table and build the Arrow columns.

Work is per chunk of events (see `reader`), so it can run in worker processes: `normalize_chunk`
takes the chunk's compact JSON bytes and the index of its first event (the reader counts them)
and returns one Arrow table per event family and the counts the `traces` row needs.
Timestamps are relative to the trace's base time, which newer Kineto writes after the events;
the writer shifts them (see `writer`).

Routing is by phase, then for complete events (ph X) by category. The rules are data below: a
new Kineto category only needs a line here. An X event of a category nobody knows, or an event
of a phase not listed, lands in `other_events`, counted as a warning.
"""

import array
import gc
import hashlib
import itertools
import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import Raw

from .events import (DuplicateKey, IntegerTimeEvent, check_duplicate_keys, decode_events,
                     field_types, micros_to_ns, struct_from_raw_fields)
from .schema import TABLES

LEGACY_CATEGORIES = {
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "Runtime": "cuda_runtime",
    "Driver": "cuda_driver",
    "Operator": "cpu_op",
}

TABLE_OF_CATEGORY = {
    "kernel": "kernels",
    "gpu_memcpy": "kernels",
    "gpu_memset": "kernels",
    "gpu_user_annotation": "kernels",
    "cuda_sync": "kernels",
    "cpu_op": "cpu_ops",
    "python_function": "cpu_ops",
    "user_annotation": "cpu_ops",
    "trace": "cpu_ops",
    "overhead": "cpu_ops",
    "cpu_instant_event": "cpu_ops",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
}

TABLE_OF_PHASE = {
    "s": "flows",
    "t": "flows",
    "f": "flows",
    "C": "counters",
    "i": "instants",
    "I": "instants",
    "M": "metadata",
}

Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


class KernelArgs(msgspec.Struct, gc=False):
    device: Int32 | None = None
    stream: Int64 | None = None
    correlation: Int64 | None = None
    external_id: Int64 | None = msgspec.field(default=None, name="External id")
    external_id_old: Int64 | None = msgspec.field(default=None, name="external id")
    grid: list[Int32] | None = None
    block: list[Int32] | None = None
    registers_per_thread: Int32 | None = msgspec.field(default=None, name="registers per thread")
    shared_memory: Int64 | None = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: float | None = msgspec.field(default=None, name="blocks per SM")
    warps_per_sm: float | None = msgspec.field(default=None, name="warps per SM")
    occupancy: float | None = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Int64 | None = None
    bandwidth: float | None = msgspec.field(default=None, name="memory bandwidth (GB/s)")


class CpuArgs(msgspec.Struct, gc=False):
    external_id: Int64 | None = msgspec.field(default=None, name="External id")
    external_id_old: Int64 | None = msgspec.field(default=None, name="external id")
    sequence_number: Int64 | None = msgspec.field(default=None, name="Sequence number")


class RuntimeArgs(msgspec.Struct, gc=False):
    correlation: Int64 | None = None
    external_id: Int64 | None = msgspec.field(default=None, name="External id")
    external_id_old: Int64 | None = msgspec.field(default=None, name="external id")
    cbid: Int32 | None = None


_ARG_FIELDS = {struct: field_types(struct) for struct in (KernelArgs, CpuArgs, RuntimeArgs)}


class EventProblem(Exception):
    """An event the warehouse cannot hold; `index` is its position in traceEvents."""

    def __init__(self, index, problem):
        super().__init__(index, problem)
        self.index = index
        self.problem = problem


@dataclass
class ChunkResult:
    tables: dict
    events: int
    warnings: Counter = field(default_factory=Counter)


def normalize_chunk(data, trace_id, first_event=0):
    """Decode a JSON array of events and build one Arrow table per family that has rows;
    `first_event` is the index of the array's first event in the file."""
    collecting = gc.isenabled()
    gc.disable()  # millions of short-lived objects, no cycles: the collector only costs time
    try:
        events = decode_events(data)
        try:
            check_duplicate_keys(data, events)
        except DuplicateKey as duplicate:
            raise EventProblem(first_event + duplicate.index,
                               f"duplicate key {duplicate.key!r} in the event") from None
        return _normalize_events(events, trace_id, first_event)
    finally:
        if collecting:
            gc.enable()


def _normalize_events(events, trace_id, first_event):
    """Group events by table without a Python-level loop per event (the hot path: map, sort and
    groupby run in C; the keys come from one comprehension), then build each table's columns."""
    warnings = Counter()
    keys = [(e.ph, e.cat) for e in events]
    routes = {key: _route(key) for key in set(keys)}
    if None in routes.values():
        index = next(i for i, e in enumerate(events) if e.ph is None)
        raise EventProblem(first_event + index,
                           "event has no ph (phase)" + _unknown_hint(events[index], "ph"))
    for key, (_, note) in routes.items():
        if note:
            warnings[note] += keys.count(key)
    table_of_key = {key: table for key, (table, _) in routes.items()}
    table_of_event = list(map(table_of_key.__getitem__, keys))
    order = sorted(range(len(events)), key=table_of_event.__getitem__)
    tables = {}
    for name, group in itertools.groupby(order, key=table_of_event.__getitem__):
        positions = list(group)
        rows = list(map(events.__getitem__, positions))
        if first_event:
            positions = [first_event + p for p in positions]
        columns = _BUILDERS[name](rows, positions, warnings)
        columns["trace_id"] = pa.repeat(pa.scalar(trace_id, pa.string()), len(rows))
        tables[name] = pa.Table.from_pydict(columns, schema=TABLES[name].schema)
    return ChunkResult(tables, len(events), warnings)


def _route(key):
    """(table, warning or None) for events of this (ph, cat); None when ph is missing."""
    ph, cat = key
    if ph is None:
        return None
    if ph == "X":
        table = TABLE_OF_CATEGORY.get(_category(cat))
        if table is None:
            return "other_events", f"X events of unknown category {cat!r} (in other_events)"
        return table, None
    table = TABLE_OF_PHASE.get(ph)
    if table is None:
        return "other_events", f"events of phase {ph!r} (in other_events)"
    return table, None


def _unknown_hint(event, key):
    if event.unknown_fields and key in event.unknown_fields:
        return f" of a usable type (found {bytes(event.unknown_fields[key])[:40]!r})"
    return ""


def _categories(cats):
    """Kineto categories, lower-cased, old names mapped to new (an Arrow string array)."""
    distinct = pc.unique(cats).to_pylist()
    mapped = [_category(cat) for cat in distinct]
    if mapped == distinct:
        return cats
    positions = pc.index_in(cats, pa.array(distinct, pa.string()))
    return pc.take(pa.array(mapped, pa.string()), positions)


def _category(cat):
    if cat is None:
        return None
    return LEGACY_CATEGORIES.get(cat) or cat.lower()


# -- column builders ---------------------------------------------------------------------------
# Columns are built as Arrow arrays with as little per-event Python as possible: raw JSON text
# is joined into one buffer and wrapped, integer timestamps are scaled by Arrow, args fields are
# decoded for a whole table in one msgspec call. Slow, exact paths remain for odd values.
# Fields are read with list comprehensions: attribute access there is specialised by the
# interpreter and about twice as fast as map(attrgetter(...)).


def _ns(values, positions, what, required):
    """Integer nanoseconds from microsecond figures (int or Decimal) as an int64 array."""
    if not required or None not in values:
        kinds = set(map(type, values))
        if kinds <= {int, type(None)}:
            try:
                return pc.multiply_checked(pa.array(values, pa.int64()), 1000)
            except (OverflowError, pa.ArrowInvalid):
                pass  # the exact path below names the event
    out = []
    for value, position in zip(values, positions):
        if value is None:
            if required:
                raise EventProblem(position, f"event has no {what}, which its phase needs")
            out.append(None)
            continue
        try:
            out.append(micros_to_ns(value))
        except OverflowError as error:
            raise EventProblem(position, f"{what} {value}: {error}") from None
    return pa.array(out, pa.int64())


def _ids(values):
    """pid/tid/id as text: numbers for real processes and streams, strings for pseudo tracks.
    The values are int, str or None (Event's types), so an int64 conversion cannot truncate;
    each attempt below fails at the first value of another type."""
    for array_type in (pa.int64(), pa.string()):
        try:
            return pa.array(values, array_type).cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            continue  # mixed numbers and strings, or a number beyond 64 bits
    # Mixed, such as the 'Spans' pid of the Trace event among numeric pids: numbers through
    # Arrow, the few strings as they are (a number beyond 64 bits through str()).
    is_text = [type(v) is str for v in values]
    try:
        numbers = pa.array([None if text else v for v, text in zip(values, is_text)], pa.int64())
    except OverflowError:
        numbers = pa.array([None if text or v is None else str(v)
                            for v, text in zip(values, is_text)], pa.string())
    texts = pa.array([v if text else None for v, text in zip(values, is_text)], pa.string())
    return pc.if_else(pa.array(is_text, pa.bool_()), texts, numbers.cast(pa.string()))


_MAX_STRING_BYTES = 2**31 - 1


def _raw_text(raws):
    """A string array over raw JSON values, built from one joined buffer (no per-value copy)."""
    if raws.count(None) == len(raws):
        return pa.nulls(len(raws), pa.string())
    if None in raws:
        lengths = [0 if r is None else len(r) for r in raws]
        data = b"".join(r for r in raws if r is not None)
    else:
        lengths = list(map(len, raws))
        data = b"".join(raws)
    if len(data) > _MAX_STRING_BYTES:  # string offsets are 32-bit; a chunk is ~16 MB
        raise pa.ArrowInvalid("more than 2 GiB of text in one chunk")
    offsets = array.array("i", itertools.accumulate(lengths, initial=0))
    validity = None
    if None in raws:
        validity = pa.array([r is not None for r in raws], pa.bool_()).buffers()[1]
    text = pa.Array.from_buffers(pa.string(), len(raws),
                                 [validity, pa.py_buffer(offsets), pa.py_buffer(data)])
    text.validate(full=True)  # UTF-8
    return text


def _extra(unknowns, warnings):
    missing = unknowns.count(None)
    if missing == len(unknowns):
        return pa.nulls(len(unknowns), pa.string())
    warnings["events with fields tracewh does not model (kept in extra)"] += (
        len(unknowns) - missing)
    return pa.array([None if u is None else msgspec.json.encode(u).decode() for u in unknowns],
                    pa.string())


# The usual shape of name, cat, ts and dur: converting the events' tuples of them to this struct
# builds the four columns in one pass in C++. A time with a fraction or beyond 64 bits,
# or a value of another type, makes it fail, and the columns are then built one by one, exactly
# (_base_values_by_column).
_USUAL_SHAPE = pa.struct([("name", pa.string()), ("cat", pa.string()), ("ts", pa.int64()),
                          ("dur", pa.int64())])


def _base_columns(events, positions, warnings, timed=True, durations=False):
    values = _base_values_in_usual_shape(events, timed)
    if values is None:
        values = _base_values_by_column(events, positions, timed, durations)
    columns = {
        "event_index": pa.array(positions, pa.int64()),
        "name": values["name"],
        "category": _categories(values["cat"]),
        "pid": values["pid"],
        "tid": values["tid"],
        "args": _raw_text([e.args for e in events]),
        "extra": _extra([e.unknown_fields for e in events], warnings),
    }
    if timed:
        columns["ts_ns"] = values["ts"]
    if durations:
        missing = values["dur"].null_count
        if missing:
            warnings["X events without dur (kept with NULL dur_ns)"] += missing
        columns["dur_ns"] = values["dur"]
    return columns


def _base_values_in_usual_shape(events, timed):
    """{field: Arrow array} with ts and dur in ns and pid/tid as text, or None when an event
    does not have the usual shape (or lacks a ts its table needs)."""
    if not isinstance(events[0], IntegerTimeEvent):
        return None  # times with fractions, which Arrow would truncate: the exact path
    try:
        name, cat, ts, dur = pa.array([(e.name, e.cat, e.ts, e.dur) for e in events],
                                      _USUAL_SHAPE).flatten()
        if timed and ts.null_count:
            return None  # the exact path names the event
        return {"name": name, "cat": cat, "pid": _ids([e.pid for e in events]),
                "tid": _ids([e.tid for e in events]), "ts": pc.multiply_checked(ts, 1000),
                "dur": pc.multiply_checked(dur, 1000)}
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return None


def _base_values_by_column(events, positions, timed, durations):
    names, cats, pids, tids, stamps, durs = zip(*[(e.name, e.cat, e.pid, e.tid, e.ts, e.dur)
                                                  for e in events])
    return {"name": pa.array(names, pa.string()), "cat": pa.array(cats, pa.string()),
            "pid": _ids(pids), "tid": _ids(tids),
            "ts": _ns(stamps, positions, "ts", required=True) if timed else None,
            "dur": _ns(durs, positions, "dur", required=False) if durations else None}


def _decoded_args(events, struct_type):
    """Each event's args decoded into `struct_type`: in one msgspec call when all fit, else
    event by event and leniently (a value of an odd type stays in the args text only)."""
    raws = [e.args for e in events]
    listed = b",".join(b"{}" if r is None else r for r in raws) if None in raws else b",".join(raws)
    joined = b"[" + listed + b"]"
    try:
        return msgspec.json.decode(joined, type=list[struct_type])
    except (msgspec.ValidationError, msgspec.DecodeError):
        return [_lenient_args(raw, struct_type) for raw in raws]


def _lenient_args(raw, struct_type):
    try:
        return msgspec.json.decode(raw, type=struct_type)
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError):
        pass
    try:
        fields = msgspec.json.decode(raw, type=dict[str, Raw])
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError):
        return struct_type()
    return struct_from_raw_fields(fields, struct_type, _ARG_FIELDS[struct_type])[0]


_ARROW_TYPES = {Int64: pa.int64(), Int32: pa.int32(), float: pa.float64()}


def _arg_arrays(args, fields):
    """{field: Arrow array} of some scalar fields of decoded args structs, converted in one
    pass; `external_id` is the new or the old spelling of the key, whichever is there."""
    hints = type(args[0]).__annotations__  # each field is `T | None`: its Arrow type is T's
    struct = pa.struct([(name, _ARROW_TYPES[hints[name].__args__[0]]) for name in fields])
    arrays = dict(zip(fields, pa.array(list(map(operator.attrgetter(*fields), args)),
                                       struct).flatten()))
    if "external_id" in arrays:
        arrays["external_id"] = pc.coalesce(arrays["external_id"],
                                            arrays.pop("external_id_old"))
    return arrays


def _dimensions(values):
    """x, y and z arrays of grid or block lists: [x, y, z] (converted by Arrow as fixed-size
    lists), missing, or rarely of another length (then element by element)."""
    try:
        lists = pa.array(values, pa.list_(pa.int32(), 3))
        return [pc.list_element(lists, axis) for axis in range(3)]
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return [[v[axis] if v is not None and len(v) > axis else None for v in values]
                for axis in range(3)]


def name_id(name):
    """A stable signed 64-bit key for a kernel name (names run to hundreds of characters, and
    per-name joins on them dominate query time)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _name_ids(names):
    ids = {name: None if name is None else name_id(name) for name in set(names)}
    return pa.array(list(map(ids.__getitem__, names)), pa.int64())


def _kernel_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings, durations=True)
    columns["name_id"] = _name_ids([e.name for e in events])
    args = _decoded_args(events, KernelArgs)
    columns["device"] = [
        a.device if a.device is not None else (e.pid if type(e.pid) is int else None)
        for a, e in zip(args, events)
    ]
    columns["stream"] = [
        a.stream if a.stream is not None else (e.tid if type(e.tid) is int else None)
        for a, e in zip(args, events)
    ]
    for name, values in (("grid", [a.grid for a in args]), ("block", [a.block for a in args])):
        for suffix, array in zip("xyz", _dimensions(values)):
            columns[f"{name}_{suffix}"] = array
    columns.update(_arg_arrays(args, (
        "correlation", "external_id", "external_id_old", "registers_per_thread",
        "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy", "bytes", "bandwidth")))
    return columns


def _cpu_op_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings, durations=True)
    args = _decoded_args(events, CpuArgs)
    columns.update(_arg_arrays(args, ("external_id", "external_id_old", "sequence_number")))
    return columns


def _runtime_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings, durations=True)
    args = _decoded_args(events, RuntimeArgs)
    columns.update(_arg_arrays(args, ("correlation", "external_id", "external_id_old", "cbid")))
    return columns


def _flow_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings)
    columns["ph"] = [e.ph for e in events]
    columns["id"] = _ids([e.id for e in events])
    columns["bp"] = [e.bp for e in events]
    return columns


def _instant_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings)
    columns["scope"] = [e.s for e in events]
    return columns


def _metadata_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings, timed=False)
    columns["ts_ns"] = _ns([e.ts for e in events], positions, "ts", required=False)
    return columns


def _other_columns(events, positions, warnings):
    columns = _base_columns(events, positions, warnings, timed=False, durations=True)
    columns["ts_ns"] = _ns([e.ts for e in events], positions, "ts", required=True)
    columns["ph"] = [e.ph for e in events]
    columns["category"] = [e.cat for e in events]
    return columns


def _plain_columns(events, positions, warnings):
    return _base_columns(events, positions, warnings)


_BUILDERS = {
    "kernels": _kernel_columns,
    "cpu_ops": _cpu_op_columns,
    "runtime": _runtime_columns,
    "flows": _flow_columns,
    "counters": _plain_columns,
    "instants": _instant_columns,
    "metadata": _metadata_columns,
    "other_events": _other_columns,
}
