"""One Chrome-trace event as decoded from JSON, and exact time conversion.

Events are decoded by msgspec straight into `Event` structs: numbers arrive as `int` or, when
they have a fraction or exponent, as `Decimal` built from the number's text, so no timestamp
ever passes through a double. `args` is kept as raw JSON bytes and decoded only where a table
needs a field of it.

An event whose fields have unexpected types, or that carries keys `Event` does not know, fails
the fast typed decode; `events_from_dicts` then rebuilds it key by key and keeps whatever did not
fit in `unknown_fields`, so nothing is dropped.
"""

import decimal
import json

import msgspec
from msgspec import Raw

Number = int | decimal.Decimal

# Enough digits that scaling a microsecond figure to nanoseconds never rounds.
_EXACT = decimal.Context(prec=4000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Event(msgspec.Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Number | None = None
    dur: Number | None = None
    id: int | str | None = None
    bp: str | None = None
    s: str | None = None
    args: Raw = None
    unknown_fields: dict | None = msgspec.field(default=None, name="__tracewh_unknown_fields__")


class IntegerTimeEvent(Event, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """An Event whose ts and dur are integers (microseconds, as older Kineto writes them), the
    common case: their columns can be converted in bulk, knowing no fraction is there."""

    ts: int | None = None
    dur: int | None = None


def decode_events(data):
    """Decode a JSON array of events, fast when they have the usual shape: as
    IntegerTimeEvents, else as Events, else event by event (events_from_dicts)."""
    for event_type in (IntegerTimeEvent, Event):
        try:
            return msgspec.json.decode(data, type=list[event_type])
        except msgspec.ValidationError:
            continue
    return events_from_dicts(msgspec.json.decode(data, type=list[dict[str, Raw]]))


_REENCODER = msgspec.json.Encoder(decimal_format="number")


class DuplicateKey(Exception):
    """An event object with the same key twice; `index` is its position in the array."""

    def __init__(self, index, key):
        super().__init__(index, key)
        self.index = index
        self.key = key


def check_duplicate_keys(data, events):
    """Raise DuplicateKey if an event of the compact JSON array `data` repeats a key.

    msgspec keeps the last of repeated keys silently. Re-encoding the decoded events gives
    back exactly the input's length when every key/value pair survived (key order aside);
    `args`, kept as raw text, are looked into by `_args_keys_distinct`. The costly exact
    check, key by key at every depth, runs only on a chunk that fails either (a repeated key,
    or merely text written differently, such as an escaped character, or args holding
    objects). The error names the first event, in array order, with a repeated key, and the
    key (of the innermost object, if several repeat)."""
    if len(_REENCODER.encode(events)) == len(data) and _args_keys_distinct(events):
        return
    for index, raw in enumerate(msgspec.json.decode(data, type=list[Raw])):
        text = bytes(raw).decode("utf-8", "surrogateescape")  # bad UTF-8 is refused later
        json.loads(text, object_pairs_hook=lambda pairs, i=index: _unique(pairs, i))


_ARGS_DECODER = msgspec.json.Decoder(list[dict[str, Raw]])


def _args_keys_distinct(events):
    """True when no args object of the compact events repeats a key, nor holds an object
    (where one could): the keys msgspec decodes, distinct by construction, are as many as the
    `":` that end a key in the args' text, which counts every key at every depth (and `\\":` in
    strings, which only makes this say False). One decode of the args as {key: raw}: ~1.3% of
    a chunk's normalising; the corpus's args are all flat, so its chunks never fail it."""
    raws = [e.args for e in events if e.args is not None]
    if not raws:
        return True
    joined = b"[" + b",".join(raws) + b"]"
    try:
        decoded = _ARGS_DECODER.decode(joined)
    except msgspec.ValidationError:  # args that are not objects: the exact check decides
        return False
    return sum(map(len, decoded)) == joined.count(b'":')


def _unique(pairs, index):
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise DuplicateKey(index, key)
        seen.add(key)
    return None


def events_from_dicts(dicts):
    """Build Events from raw key/value dicts, keeping keys and values that do not fit aside."""
    events = []
    for raw_event in dicts:
        event, unknown = struct_from_raw_fields(raw_event, Event, _FIELD_TYPES)
        if unknown:
            event.unknown_fields = unknown
        events.append(event)
    return events


def struct_from_raw_fields(raw_fields, struct_type, field_types):
    """Decode each raw value that fits its field of `struct_type` (by JSON name); return the
    struct and a dict of the raw values that did not fit or have no field."""
    fields, unknown = {}, {}
    for key, raw in raw_fields.items():
        field = field_types.get(key)
        if field is None:
            unknown[key] = raw
            continue
        attribute, typ = field
        if typ is Raw:
            fields[attribute] = raw
            continue
        try:
            fields[attribute] = msgspec.json.decode(raw, type=typ)
        except msgspec.ValidationError:
            unknown[key] = raw
    return struct_type(**fields), unknown


def field_types(struct_type):
    """{JSON name: (attribute, type)} for the fields of a msgspec Struct."""
    info = msgspec.inspect.type_info(struct_type)
    hints = struct_type.__annotations__
    return {f.encode_name: (f.name, hints[f.name]) for f in info.fields}


_FIELD_TYPES = {
    name: field
    for name, field in field_types(Event).items()
    if field[0] != "unknown_fields"
}


def micros_to_ns(value):
    """Exact integer nanoseconds from a microsecond figure; digits past the third decimal are
    truncated toward zero. Raises OverflowError outside the signed 64-bit range."""
    if type(value) is int:
        ns = value * 1000
    else:
        if not value.is_finite():
            raise OverflowError("not a finite number")
        ns = int(value.scaleb(3, context=_EXACT))
    if not INT64_MIN <= ns <= INT64_MAX:
        raise OverflowError("out of the 64-bit nanosecond range")
    return ns
