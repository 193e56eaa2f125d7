"""Which decoder normalises a chunk: the native core when it can, the Python reference else.

The native core (`tracewh.ingest._decode`, Rust: ingest/native) reads a chunk's JSON array of
events into one column per event field and builds each table's Arrow buffers from them, with
the GIL released; the routing rules stay the reference's (`normalize`): the core asks this
module to route the chunk's few distinct (ph, cat) pairs. The core declines a chunk (returns None) whenever it holds
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
from .normalize import (_ARG_FIELDS, _INSTANT_PHASE, _UNMODELLED_FIELDS, TABLE_OF_CATEGORY,
                        TABLE_OF_PHASE, ChunkResult, _category, _name_ids, _route,
                        normalize_chunk)
from .secrets import redact_json_text

try:
    from . import _decode
except ImportError:  # not built (no Rust toolchain at install): the reference alone
    _decode = None

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
    a chunk holding `--` is compacted first. A chunk holding no anchor of a secret rule, most
    chunks, is neither scanned for `--` nor compacted: compaction only drops whitespace
    outside strings, where no anchor can start in valid JSON (keys end in a quote), so it has
    none compacted either (and invalid JSON goes to the reference, which redacts itself)."""
    if native_available():
        secrets = 0
        text = data  # bytes or bytearray, read by the core as they are (no copy)
        if redact_secrets and _decode.has_secret_anchor(text):  # as the reference does first
            if b"--" in text:
                text = msgspec.json.format(text, indent=-1)
            text, secrets = redact_json_text(text, _decode.has_secret_anchor)
        result = normalize_native(text, trace_id, first_event)
        if result is not None:
            result.secrets = secrets
            return result
    return normalize_chunk(msgspec.json.format(data, indent=-1), trace_id, first_event,
                           redact_secrets)


def normalize_native(data, trace_id, first_event=0):
    """The chunk's tables from the native core, or None where the reference must decode it.
    Secrets are not redacted here (see `normalize`). The core decodes, codes each event by
    its (ph, cat) pair and gathers each table's columns; the few distinct pairs are routed
    here (`_plan`), by the reference's rules."""
    warnings = Counter()
    decoded = _decode.decode_tables(data, first_event,
                                    lambda pairs: _plan(pairs, warnings))
    if decoded is None:
        return None
    count, built = decoded
    tables = {}
    for name, rows, buffers in built:
        schema = TABLES[name].schema
        columns = dict(zip(_CORE_COLUMNS[name], buffers))
        arrays = []
        for column in schema:
            if column.name in columns:
                validity, *data = (None if b is None else pa.py_buffer(b)
                                   for b in columns[column.name])
                arrays.append(pa.Array.from_buffers(column.type, rows, [validity, *data]))
            elif column.name == "trace_id":
                arrays.append(pa.repeat(pa.scalar(trace_id, pa.string()), rows))
            elif column.name == "extra":
                arrays.append(pa.nulls(rows, pa.string()))
            else:  # name_id, of the table's names
                arrays.append(_name_ids_of(arrays[schema.names.index("name")]))
        table = pa.Table.from_arrays(arrays, schema=schema)
        if "dur_ns" in columns:
            missing = table["dur_ns"].null_count
            if missing:
                warnings["X events without dur (kept with NULL dur_ns)"] += missing
        tables[name] = table
    return ChunkResult(tables, count, warnings)


def _plan(pairs, warnings):
    """Route the chunk's distinct (ph, cat) pairs (`_route`, counting its warnings) and say
    which core columns each table takes; None (declined) when an event holds a field its table
    has no column for, which the reference keeps in `extra` (real traces have none)."""
    routed = {}
    for code, (ph, cat, count, fields) in enumerate(pairs):
        table, note = _route(ph, cat)
        if note:
            warnings[note] += count
        unmodelled = _UNMODELLED_FIELDS[table]
        if any(held for field, held in zip(_FIELD_ORDER, fields) if field in unmodelled) \
                or (table == "instants" and ph != _INSTANT_PHASE):
            return None
        routed.setdefault(table, []).append(code)
    return [(name, codes, [_category(pairs[code][1]) for code in codes], _PLANS[name])
            for name, codes in sorted(routed.items())]


# The fields the core counts per pair (see tables.rs), which a table may not model.
_FIELD_ORDER = ("dur", "id", "bp", "s")
# The core columns of each table column, by the field's attribute in the reference's args
# structs (KernelArgs, CpuArgs, RuntimeArgs): the column is the first non-null of them.
_SOURCES = {
    "event_index": ("event_index",), "category": ("category",), "scope": ("s",),
    "device": ("device", "pid_number"), "stream": ("stream", "tid_number"),
    "external_id": (_ARG_COLUMNS["external_id"], _ARG_COLUMNS["external_id_old"]),
}
_NOT_FROM_THE_CORE = {"trace_id", "extra", "name_id"}


def _core_plan(table):
    """[(Arrow type, core columns)] of the table's columns the core builds."""
    plan = []
    for column in TABLES[table].schema:
        if column.name not in _NOT_FROM_THE_CORE:
            sources = _SOURCES.get(column.name) or (_ARG_COLUMNS.get(column.name, column.name),)
            if table == "other_events" and column.name == "category":
                sources = ("cat",)  # as written: no known category to map it to
            plan.append((str(column.type), list(sources)))
    return plan


_TABLE_NAMES = {*TABLE_OF_PHASE.values(), *TABLE_OF_CATEGORY.values(), "other_events"}
_PLANS = {name: _core_plan(name) for name in _TABLE_NAMES}
_CORE_COLUMNS = {name: [c.name for c in TABLES[name].schema if c.name not in _NOT_FROM_THE_CORE]
                 for name in _TABLE_NAMES}


def _name_ids_of(names):
    """name_id of each name (an Arrow string array), hashed once per distinct name."""
    encoded = names.dictionary_encode()
    return pc.take(_name_ids(encoded.dictionary.to_pylist()), encoded.indices)
