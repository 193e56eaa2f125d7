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

import gc
import hashlib
import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import Raw

from .events import (INT64_MAX, INT64_MIN, DuplicateKey, IntegerTimeEvent, check_duplicate_keys,
                     decode_events, field_types, micros_to_ns, struct_from_raw_fields)
from tracewh.storage.schema import TABLES
from .secrets import redact_fields, redact_json_text

LEGACY_CATEGORIES = {
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "Runtime": "cuda_runtime",
    "Driver": "cuda_driver",
    "Operator": "cpu_op",
}

# Other vendors' accelerators (Kineto's ActivityType names): MTIA device activity is kernels,
# and the MTIA, Intel XPU and PrivateUse1 backends' runtime/driver calls are runtime calls.
TABLE_OF_CATEGORY = {
    "kernel": "kernels",
    "gpu_memcpy": "kernels",
    "gpu_memset": "kernels",
    "gpu_user_annotation": "kernels",
    "cuda_sync": "kernels",
    "mtia_ccp_events": "kernels",
    "mtia_runtime": "runtime",
    "xpu_runtime": "runtime",
    "xpu_driver": "runtime",
    "privateuse1_runtime": "runtime",
    "privateuse1_driver": "runtime",
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
    secrets: int = 0  # values redacted


def normalize_chunk(data, trace_id, first_event=0, redact_secrets=False):
    """Decode a JSON array of events and build one Arrow table per family that has rows;
    `first_event` is the index of the array's first event in the file. With `redact_secrets`
    the secrets in the events' text, and under the keys of fields no table models, are
    redacted first, so that every column built from them is."""
    collecting = gc.isenabled()
    gc.disable()  # millions of short-lived objects, no cycles: the collector only costs time
    try:
        secrets = 0
        if redact_secrets:
            data, secrets = redact_json_text(data)
        events = decode_events(data)
        try:
            check_duplicate_keys(data, events)
        except DuplicateKey as duplicate:
            raise EventProblem(first_event + duplicate.index,
                               f"duplicate key {duplicate.key!r} in the event") from None
        if redact_secrets:
            secrets += sum(redact_fields(e.unknown_fields) for e in events if e.unknown_fields)
        result = _normalize_events(events, trace_id, first_event)
        result.secrets = secrets
        return result
    finally:
        if collecting:
            gc.enable()


@dataclass
class EventGroup:
    """The events of a chunk that go to one table: the decoded events, their indexes in the
    file (int64 array) and, when the chunk has the usual shape, their `usual` columns."""

    table: str
    events: list
    positions: pa.Array
    usual: dict | None


def _normalize_events(events, trace_id, first_event):
    """Route the events to their tables and build each table's columns. Per-event Python is
    kept to a few passes over the whole chunk (one comprehension and one Arrow conversion for
    the usual fields); routing and grouping are Arrow kernels over codes of the (ph, cat)
    pairs, and each table takes its rows of the usual columns by index."""
    warnings = Counter()
    usual = _usual_columns(events)
    if usual is None:
        ph = pa.array([e.ph for e in events], pa.string())
        cat = pa.array([e.cat for e in events], pa.string())
    else:
        ph, cat = usual["ph"], usual["cat"]
    tables = {}
    for name, positions in _positions_by_table(ph, cat, events, first_event, warnings):
        group = EventGroup(name, list(map(events.__getitem__, positions.to_pylist())),
                           pc.add(positions.cast(pa.int64()), first_event),
                           None if usual is None else {key: column.take(positions)
                                                       for key, column in usual.items()})
        columns = _BUILDERS[name](group, warnings)
        columns["trace_id"] = pa.repeat(pa.scalar(trace_id, pa.string()), len(group.events))
        tables[name] = pa.Table.from_pydict(columns, schema=TABLES[name].schema)
    return ChunkResult(tables, len(events), warnings)


def _positions_by_table(ph, cat, events, first_event, warnings):
    """Yield (table, positions in the chunk of the events it gets), tables in name order.

    Each event's (ph, cat) pair becomes one integer code from the two columns' dictionary
    indexes; the few distinct codes are routed in Python (`_route`), and the events' tables
    follow by lookup."""
    if ph.null_count:
        index = pc.index(ph.is_null(), True).as_py()
        raise EventProblem(first_event + index,
                           "event has no ph (phase)" + _unknown_hint(events[index], "ph"))
    phs, cats = ph.dictionary_encode(), cat.dictionary_encode()
    width = len(cats.dictionary) + 1  # the last code of a ph stands for a missing cat
    codes = pc.add(pc.multiply(phs.indices, width), pc.fill_null(cats.indices, width - 1))
    counted = pc.value_counts(codes)
    table_of_code = {}
    for code, count in zip(counted.field("values").to_pylist(),
                           counted.field("counts").to_pylist()):
        category = None if code % width == width - 1 else cats.dictionary[code % width].as_py()
        table, note = _route(phs.dictionary[code // width].as_py(), category)
        if note:
            warnings[note] += count
        table_of_code[code] = table
    names = sorted(set(table_of_code.values()))
    tables = pa.array([names.index(table) for table in table_of_code.values()], pa.int8())
    table_of_event = pc.take(tables, pc.index_in(codes, pa.array(list(table_of_code))))
    for number, name in enumerate(names):
        yield name, pc.indices_nonzero(pc.equal(table_of_event, number))


def _route(ph, cat):
    """(table, warning or None) for events of this ph and cat."""
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
    # Arrow (a number beyond 64 bits through str()), the few strings put in their places.
    texts = [index for index, value in enumerate(values) if type(value) is str]
    numbers = list(values)
    for index in texts:
        numbers[index] = None
    try:
        out = pa.array(numbers, pa.int64()).cast(pa.string())
    except OverflowError:
        out = pa.array([None if v is None else str(v) for v in numbers], pa.string())
    is_text = bytearray(len(values))
    for index in texts:
        is_text[index] = 1
    mask = pa.Array.from_buffers(pa.uint8(), len(values), [None, pa.py_buffer(is_text)])
    return pc.replace_with_mask(out, pc.not_equal(mask, 0),
                                pa.array([values[index] for index in texts], pa.string()))


_MAX_STRING_BYTES = 2**31 - 1


def _raw_text(raws):
    """A string array over raw JSON values, built from one joined buffer (no per-value copy)."""
    missing = raws.count(None)
    if missing == len(raws):
        return pa.nulls(len(raws), pa.string())
    if missing:
        lengths = (0 if r is None else len(r) for r in raws)
        data = b"".join(r for r in raws if r is not None)
    else:
        lengths = map(len, raws)
        data = b"".join(raws)
    if len(data) > _MAX_STRING_BYTES:  # string offsets are 32-bit; a chunk is ~16 MB
        raise pa.ArrowInvalid("more than 2 GiB of text in one chunk")
    offsets = np.zeros(len(raws) + 1, np.int32)  # numpy: 2.5x faster than accumulate
    np.cumsum(np.fromiter(lengths, np.int32, len(raws)), out=offsets[1:])
    validity = None
    if missing:
        validity = pa.array([r is not None for r in raws], pa.bool_()).buffers()[1]
    text = pa.Array.from_buffers(pa.string(), len(raws),
                                 [validity, pa.py_buffer(offsets), pa.py_buffer(data)])
    text.validate(full=True)  # UTF-8
    return text


# Event fields that tables keep in a column of their own. A table without the column keeps an
# event's value of the field in `extra`, as it does keys Event does not know: a dur on an
# instant, an id on a kernel. Tables have no ph column where routing implies the phase, but
# instants take both 'i' and the older 'I': an 'I' is kept in extra too.
_FIELD_COLUMNS = {"dur": "dur_ns", "id": "id", "bp": "bp", "s": "scope"}
_UNMODELLED_FIELDS = {
    table: tuple(field for field, column in _FIELD_COLUMNS.items()
                 if column not in TABLES[table].schema.names)
    for table in {*TABLE_OF_PHASE.values(), *TABLE_OF_CATEGORY.values(), "other_events"}
}
_INSTANT_PHASE = "i"
_EXTRA_ENCODER = msgspec.json.Encoder(decimal_format="number")
# Comprehensions, whose attribute reads the interpreter specialises: a few times faster than
# attrgetter or getattr, and this runs over every event of a table.
_FIELD_VALUES = {
    "dur": lambda events: [e.dur for e in events],
    "id": lambda events: [e.id for e in events],
    "bp": lambda events: [e.bp for e in events],
    "s": lambda events: [e.s for e in events],
    "ph": lambda events: [None if e.ph == _INSTANT_PHASE else e.ph for e in events],
}


def _extra(group, warnings, refused=()):
    """JSON text of what each event holds beyond its table's columns, or NULL; the events at
    the positions `refused` keep their dur there too (see _refuse_negative)."""
    events = group.events
    kept = [e.unknown_fields for e in events]  # {key: raw JSON} or None
    fields = _UNMODELLED_FIELDS[group.table] + (("ph",) if group.table == "instants" else ())
    if group.usual is not None and group.usual["dur_ns"].null_count == len(events):
        fields = tuple(field for field in fields if field != "dur")  # Arrow knows: none has one
    for field in fields:
        values = _FIELD_VALUES[field](events)
        if values.count(None) < len(values):
            for index, value in enumerate(values):
                if value is not None:
                    kept[index] = {**(kept[index] or {}), field: value}
    missing = kept.count(None)
    if missing < len(kept):
        warnings["events with fields tracewh does not model (kept in extra)"] += \
            len(kept) - missing
    for index in refused:
        kept[index] = {**(kept[index] or {}), "dur": events[index].dur}
    if kept.count(None) == len(kept):
        return pa.nulls(len(kept), pa.string())
    return pa.array([None if k is None else _EXTRA_ENCODER.encode(k).decode() for k in kept],
                    pa.string())


def _usual_columns(events):
    """{ph, cat, name, ts_ns, dur_ns} of the whole chunk as Arrow arrays, each converted in
    one pass in C++ (a column at a time: a struct of the five, from the events' tuples, took
    1.5x as long), or None when an event does not have the usual shape: a time with a fraction
    or beyond 64 bits, whose columns are then built table by table, exactly
    (_values_by_column)."""
    if not events or not isinstance(events[0], IntegerTimeEvent):
        return None  # times with fractions, which Arrow would truncate: the exact path
    try:
        ts = pc.multiply_checked(pa.array([e.ts for e in events], pa.int64()), 1000)
        dur = pc.multiply_checked(pa.array([e.dur for e in events], pa.int64()), 1000)
    except (pa.ArrowInvalid, OverflowError):
        return None
    return {"ph": pa.array([e.ph for e in events], pa.string()),
            "cat": pa.array([e.cat for e in events], pa.string()),
            "name": pa.array([e.name for e in events], pa.string()),
            "ts_ns": ts, "dur_ns": dur}


def _args_text(group):
    """The events' args as text; an event whose args are not UTF-8 is named."""
    raws = [e.args for e in group.events]
    try:
        return _raw_text(raws)
    except pa.ArrowInvalid:
        for index, raw in enumerate(raws):
            try:
                bytes(raw or b"").decode("utf-8")
            except UnicodeDecodeError:
                raise EventProblem(group.positions[index].as_py(),
                                   "args are not valid UTF-8 text") from None
        raise


def _base_columns(group, warnings, ts_required=True, durations=False):
    values = group.usual
    if values is None or (ts_required and values["ts_ns"].null_count):
        values = _values_by_column(group, ts_required, durations)  # exact; names a missing ts
    events = group.events
    refused = ()
    if durations:
        missing = values["dur_ns"].null_count
        if missing:
            warnings["X events without dur (kept with NULL dur_ns)"] += missing
        dur_ns, refused = _refuse_negative(values["dur_ns"], warnings)
    columns = {
        "event_index": group.positions,
        "name": values["name"],
        "category": _categories(values["cat"]),
        "pid": _ids([e.pid for e in events]),
        "tid": _ids([e.tid for e in events]),
        "args": _args_text(group),
        "extra": _extra(group, warnings, refused),
        "ts_ns": values["ts_ns"],
    }
    if durations:
        columns["dur_ns"] = dur_ns
        _check_ends(values["ts_ns"], dur_ns, group.positions)
    return columns


NEGATIVE_DUR_WARNING = "X events with a negative dur (dur_ns NULL, the dur kept in extra)"


def _refuse_negative(dur_ns, warnings):
    """(dur_ns with every negative duration NULL, the positions of those) for a table with a
    dur_ns column. A duration below zero nanoseconds (after truncation toward zero, so -0.0001
    µs is a zero duration) is no duration: it is refused as unknown, so that no sum (busy,
    compute, kernel totals) takes it, its value kept as written in the event's `extra` under
    "dur", and each counted under NEGATIVE_DUR_WARNING in `traces.warnings`."""
    negative = pc.less(dur_ns, 0)
    if not pc.any(negative).as_py():
        return dur_ns, ()
    refused = pc.indices_nonzero(negative).to_pylist()
    warnings[NEGATIVE_DUR_WARNING] += len(refused)
    return pc.if_else(negative, pa.scalar(None, pa.int64()), dur_ns), refused


def _check_ends(starts, durations, positions):
    """An event must end, not only start, within the signed 64-bit nanosecond range: every
    view and per-trace measure adds its duration to its start."""
    try:
        pc.add_checked(starts, durations)
    except pa.ArrowInvalid:
        for start, duration, position in zip(starts.to_pylist(), durations.to_pylist(),
                                             positions.to_pylist()):
            if start is not None and duration is not None \
                    and not INT64_MIN <= start + duration <= INT64_MAX:
                raise EventProblem(position, f"ts {start} ns + dur {duration} ns: ends out of "
                                   "the 64-bit nanosecond range") from None
        raise


def _values_by_column(group, ts_required, durations):
    """Like the usual columns, converted field by field and exactly. A dur is converted only
    for tables with a dur_ns column (elsewhere it is kept in extra as it is)."""
    names, cats, stamps, durs = zip(*[(e.name, e.cat, e.ts, e.dur) for e in group.events])
    positions = group.positions.to_pylist()
    return {"name": pa.array(names, pa.string()), "cat": pa.array(cats, pa.string()),
            "ts_ns": _ns(stamps, positions, "ts", required=ts_required),
            "dur_ns": _ns(durs, positions, "dur", required=False) if durations else None}


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
    """{field: Arrow array} of some scalar fields of decoded args structs, each converted in
    one pass (a column at a time: a struct of them, from tuples, took 1.1-1.75x as long);
    `external_id` is the new or the old spelling of the key, whichever is there."""
    hints = type(args[0]).__annotations__  # each field is `T | None`: its Arrow type is T's
    arrays = {name: pa.array(list(map(operator.attrgetter(name), args)),
                             _ARROW_TYPES[hints[name].__args__[0]])
              for name in fields}
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


def _kernel_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    events = group.events
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


def _cpu_op_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    args = _decoded_args(group.events, CpuArgs)
    columns.update(_arg_arrays(args, ("external_id", "external_id_old", "sequence_number")))
    return columns


def _runtime_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    args = _decoded_args(group.events, RuntimeArgs)
    columns.update(_arg_arrays(args, ("correlation", "external_id", "external_id_old", "cbid")))
    return columns


def _flow_columns(group, warnings):
    columns = _base_columns(group, warnings)
    events = group.events
    columns["ph"] = [e.ph for e in events]
    columns["id"] = _ids([e.id for e in events])
    columns["bp"] = [e.bp for e in events]
    return columns


def _instant_columns(group, warnings):
    columns = _base_columns(group, warnings)
    columns["scope"] = [e.s for e in group.events]
    return columns


def _metadata_columns(group, warnings):
    return _base_columns(group, warnings, ts_required=False)


def _other_columns(group, warnings):
    columns = _base_columns(group, warnings, durations=True)
    columns["ph"] = [e.ph for e in group.events]
    columns["category"] = [e.cat for e in group.events]
    return columns


def _plain_columns(group, warnings):
    return _base_columns(group, warnings)


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
