"""The native decode core against the Python reference decoder, its oracle.

Every real trace, and hypothesis-generated events of every shape, decode to the same tables,
warnings and counts through both; where the reference refuses a chunk (an error), the native
path declines it (None) and leaves the error to the reference. A bounded fuzz run feeds the
core random bytes and mutations of real traces: it must return, not crash or hang, and what it
returns must agree with the reference."""

import gzip
import json
import threading
import time

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracewh.ingest import decoder
from tracewh.ingest.decoder import normalize, normalize_native
from tracewh.ingest.normalize import _ARG_FIELDS, normalize_chunk

from .conftest import ROOT

SHARED = ROOT.parent / "shared" / "traces"
TRACES = sorted([*(ROOT / "tests" / "data").rglob("*.json*"),
                 *(ROOT / "examples").rglob("*.json*"), *SHARED.rglob("*.json*")])


def _events_text(path):
    """The trace's traceEvents array as written (whitespace and all)."""
    raw = (gzip.open if path.suffix == ".gz" else open)(path, "rb").read()
    return bytes(msgspec.json.decode(raw, type=dict[str, msgspec.Raw])["traceEvents"])


def _compact(data):
    return msgspec.json.format(data, indent=-1)


def _reference(data, first_event=0, redact_secrets=False):
    """The reference's result, or the exception it raises."""
    try:
        return normalize_chunk(data, "t", first_event, redact_secrets)
    except Exception as error:  # noqa: BLE001 - any refusal: the native path must decline
        return error


def assert_same(native, reference):
    assert native.events == reference.events
    assert native.warnings == reference.warnings
    assert native.secrets == reference.secrets
    assert sorted(native.tables) == sorted(reference.tables)
    for name, table in reference.tables.items():
        assert native.tables[name].schema == table.schema, name
        for column in table.column_names:
            assert native.tables[name][column].equals(table[column]), (name, column)


def test_the_core_is_built():
    """`make install` builds the extension: a missing toolchain must not pass as a skip."""
    assert decoder._decode is not None
    assert decoder.native_available()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_real_traces_decode_natively_as_the_reference(path):
    """Every real trace is within what the core reproduces (none falls back), and its
    tables, from the events as written, equal the reference's from them compacted, column
    for column; with redaction too; from bytes, and from the bytearray a chunk is read into
    (which the core reads without a copy)."""
    data = _events_text(path)
    native = normalize_native(data, "t", 7)
    assert native is not None, "a real trace fell back to the reference"
    assert_same(native, normalize_chunk(_compact(data), "t", 7))
    assert_same(normalize(bytearray(data), "t", 7, redact_secrets=True),
                normalize_chunk(_compact(data), "t", 7, redact_secrets=True))


def test_redaction_of_a_flag_and_its_value_as_list_items_in_text_as_written():
    """The one redaction rule that spans JSON tokens, `"--token", "VALUE"` as items of an argv
    list, finds them with whitespace between the items too (the core reads the text as
    written, and compacts a chunk holding `--` for that rule)."""
    data = b'[ {"ph": "i", "ts": 1, "args": {"argv": ["run", "--hf-token", "hf_abc"]}} ]'
    result = normalize(data, "t", redact_secrets=True)
    assert result.secrets == 1
    assert result.tables["instants"]["args"].to_pylist() == [
        '{"argv":["run","--hf-token","<redacted>"]}']
    assert_same(result, normalize_chunk(_compact(data), "t", redact_secrets=True))


def test_the_real_traces_are_there():
    assert len(TRACES) >= 20 if SHARED.exists() else len(TRACES) >= 8


def test_the_core_reads_every_args_field_the_reference_reads():
    """Each field of the reference's args structs has its column from the core (a field added
    to one and not the other fails here, not as a difference in some trace)."""
    columns = decoder._decode.decode_events(b"[]")
    for fields in _ARG_FIELDS.values():
        for attribute, _ in fields.values():
            names = [f"{attribute}_{axis}" for axis in "xyz"] \
                if attribute in ("grid", "block") else [attribute]
            for name in names:
                assert decoder._ARG_COLUMNS[name] in columns, name


def test_the_core_offers_each_ph_and_cat_pair_once_to_be_routed():
    """The core builds the tables; Python routes only the distinct (ph, cat) pairs, each
    with its events and how many hold a dur, an id, a bp and an s (fields some tables keep in
    extra), in order of first appearance; a plan of None declines the chunk."""
    data = (b'[{"ph":"X","cat":"kernel","ts":1,"dur":2},{"ph":"X","cat":"Kernel","ts":1},'
            b'{"ph":"X","cat":"kernel","ts":3,"dur":1},{"ph":"i","ts":1,"s":"g"},'
            b'{"ph":"s","cat":"ac2g","ts":1,"id":7,"bp":"e"},{"ph":"M","name":"x"}]')
    offered = []
    assert decoder._decode.decode_tables(data, 0, offered.extend) is None
    assert offered == [("X", "kernel", 2, [2, 0, 0, 0]), ("X", "Kernel", 1, [0, 0, 0, 0]),
                       ("i", None, 1, [0, 0, 0, 1]), ("s", "ac2g", 1, [0, 1, 1, 0]),
                       ("M", None, 1, [0, 0, 0, 0])]
    native = normalize_native(data, "t", 3)
    assert sorted(native.tables) == ["flows", "instants", "kernels", "metadata"]
    assert native.tables["kernels"]["event_index"].to_pylist() == [3, 4, 5]
    assert native.tables["kernels"]["category"].to_pylist() == ["kernel"] * 3
    assert_same(native, normalize_chunk(data, "t", 3))


def test_a_value_beyond_its_columns_type_is_left_to_the_reference():
    """A kernel's device is its pid when args have none: a pid beyond Int32 does not fit, and
    the reference names the problem."""
    data = b'[{"ph":"X","cat":"kernel","ts":1,"dur":2,"pid":2147483648}]'
    assert normalize_native(data, "t") is None
    assert isinstance(_reference(data), Exception)


def test_times_are_exact_from_the_numbers_text():
    """ts and dur to integer ns from their text, truncated past the third decimal: a double
    would read this ts as ...430.125 -> ...430125 only by luck, and 1.5e3 is 1500 us."""
    data = (b'[{"ph":"X","cat":"kernel","ts":1740461684415430.125,"dur":0.0015},'
            b'{"ph":"X","cat":"kernel","ts":1.5e3,"dur":2E-2},'
            b'{"ph":"X","cat":"kernel","ts":-0.0009,"dur":9223372036854775}]')
    native = normalize_native(data, "t")
    kernels = native.tables["kernels"]
    assert kernels["ts_ns"].to_pylist() == [1740461684415430125, 1500000, 0]
    assert kernels["dur_ns"].to_pylist() == [1, 20, 9223372036854775000]
    assert_same(native, normalize_chunk(data, "t"))


def test_word_at_a_time_scans_stop_where_the_reference_does():
    """The core passes strings' plain bytes and runs of spaces eight at a time, and reads
    integer microseconds of up to 18 digits in 64 bits: a quote, backslash, control character
    or non-ASCII byte at every place within and across the words, spaces of every run length,
    and times of 14-19 digits on both sides of the 64-bit nanosecond range decode as the
    reference decodes them (a raw control character and a time beyond the range are refused
    by both, the reference naming them)."""
    taken = 0
    for offset in range(16):
        for stop in ('\\"', "\\\\", "\\u0001", "\\n", "\u00e9", "\u20ac", "\x01", "\t"):
            name = "a" * offset + stop + "b" * (19 - offset)
            text = ('[{"ph":"X","cat":"cpu_op","name":"' + name + '","pid":1,"tid":2,'
                    '"ts":' + str(10 ** offset) + ',"dur":' + "9" * (offset % 9 + 1) + "}]")
            taken += _check(text.encode())
        spaces = " " * offset
        text = f'[{spaces}{{{spaces}"ph"{spaces}:{spaces}"X",\n{spaces}"ts":1{spaces}}}{spaces}]'
        taken += _check(text.encode())
    for ts in ("9" * 14, "9" * 15, "1740461679479868", "9223372036854775", "9223372036854776",
               "99999999999999999", "999999999999999999", "1000000000000000000",
               "9223372036854775807"):
        taken += _check(f'[{{"ph":"X","cat":"kernel","ts":{ts},"dur":0}}]'.encode())
    assert taken == 16 * 6 + 16 + 4  # all but what the reference refuses (ts >= 2^63 ns)


def test_python_decoder_forced(monkeypatch):
    """TRACEWH_DECODER=python: the reference decodes every chunk."""
    monkeypatch.setenv("TRACEWH_DECODER", "python")
    monkeypatch.setattr(decoder, "normalize_native", lambda *a: pytest.fail("native used"))
    assert not decoder.native_available()
    result = normalize(b'[{"ph":"X","cat":"kernel","ts":1,"dur":2}]', "t")
    assert result.tables["kernels"]["dur_ns"].to_pylist() == [2000]


def test_the_gil_is_released_while_the_core_decodes():
    """Another thread runs while the core reads a chunk (what threads inside the ingest will
    build on): with the GIL held it could not, between the call's start and end."""
    chunk = _events_text(TRACES[-1] if SHARED.exists() else TRACES[0])
    data = b"[" + b",".join([chunk[1:-1]] * max(1, (8 << 20) // len(chunk))) + b"]"
    ticks, started, done = [], threading.Event(), threading.Event()

    def spin():
        started.set()
        while not done.is_set():
            ticks.append(time.perf_counter())

    thread = threading.Thread(target=spin)
    thread.start()
    started.wait()
    began = time.perf_counter()
    assert decoder._decode.decode_events(data) is not None
    ended = time.perf_counter()
    done.set()
    thread.join()
    margin = (ended - began) / 10
    assert any(began + margin < tick < ended - margin for tick in ticks)


# -- generated events --------------------------------------------------------------------------


@st.composite
def number_texts(draw, largest=10**24, signs=("", "", "-")):
    """A JSON number as text: integers small and huge, 0-9 decimals, exponents, signs."""
    sign = draw(st.sampled_from(signs))
    whole = draw(st.one_of(st.just("0"), st.integers(1, 10**6).map(str),
                           st.integers(1, largest).map(str)))
    decimals = draw(st.integers(0, 9))
    fraction = "." + "".join(draw(st.lists(st.sampled_from("0123456789"),
                                           min_size=decimals, max_size=decimals))) \
        if decimals else ""
    exponent = draw(st.one_of(st.just(""), st.builds("{}{}{}".format, st.sampled_from("eE"),
                                                     st.sampled_from(["", "+", "-"]),
                                                     st.integers(0, 25))))
    return sign + whole + fraction + exponent


def _string(text, ascii_only, slash):
    encoded = json.dumps(text, ensure_ascii=ascii_only)
    return encoded.replace("/", "\\/") if slash else encoded


strings = st.builds(_string, st.one_of(st.text(max_size=12), st.sampled_from(
    ["kernel", "Kernel", "cpu_op", "Operator", "cuda_runtime", "gpu_memcpy", "python_function",
     "ac2g", "e", "g", "t", "HF_TOKEN=hf_abcdef", "--token", "a/b", "ProfilerStep#1"])),
    st.booleans(), st.booleans())
integers = st.one_of(st.integers(-5, 2**20), st.integers(-(2**70), 2**70)).map(str)
values = st.one_of(integers, number_texts(), strings, st.sampled_from(
    ["null", "true", "false", "[]", "{}", "[1,2,3]", "[1,2]", "[1,2,3,4]", '["a"]',
     "[2147483648,1,1]", '{"a":{"b":[1,{"c":null}]}}', "[1.5,2,3]"]))
PHASES = st.sampled_from(['"X"', '"i"', '"I"', '"s"', '"t"', '"f"', '"C"', '"M"', '"B"',
                          '"b"', '""', '"ü"', "null", "1"])
ARG_KEYS = ["device", "stream", "correlation", "External id", "external id", "grid", "block",
            "registers per thread", "shared memory", "blocks per SM", "warps per SM",
            "est. achieved occupancy %", "bytes", "memory bandwidth (GB/s)", "Sequence number",
            "cbid", "Input Dims", "token", "name"]


def _object(pairs):
    return "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"


@st.composite
def args_texts(draw, repeats=True, values=values):
    keys = draw(st.lists(st.sampled_from(ARG_KEYS), max_size=6, unique=True))
    pairs = [(json.dumps(key), draw(values)) for key in keys]
    if repeats and pairs and draw(st.integers(0, 20)) == 0:
        pairs.append(pairs[0])  # a repeated key, which the native core declines
    return _object(pairs)


@st.composite
def events(draw):
    """One event's JSON text: the usual fields with values of usual and odd types, sometimes
    an unknown key, a repeated key or a key written with an escape."""
    pairs = [('"ph"', draw(PHASES))]
    fields = {
        '"cat"': st.one_of(strings, st.just("null")), '"name"': strings,
        '"pid"': st.one_of(integers, strings), '"tid"': st.one_of(integers, strings),
        '"ts"': st.one_of(integers, number_texts()), '"dur"': st.one_of(integers, number_texts()),
        '"args"': st.one_of(args_texts(), values), '"id"': st.one_of(integers, strings),
        '"bp"': strings, '"s"': strings,
    }
    common = {'"cat"': 0.9, '"name"': 0.9, '"pid"': 0.9, '"tid"': 0.9, '"ts"': 0.95,
              '"dur"': 0.6, '"args"': 0.7}
    for key, strategy in fields.items():
        if draw(st.floats(0, 1)) < common.get(key, 0.05):
            pairs.append((key, draw(st.one_of(strategy, values)
                                    if draw(st.integers(0, 15)) == 0 else strategy)))
    rare = draw(st.integers(0, 40))
    if rare == 0:
        pairs.append((json.dumps(draw(st.text(max_size=5))), draw(values)))  # unknown key
    elif rare == 1:
        pairs.append(pairs[0])  # repeated key
    elif rare == 2:
        pairs.append(('"\\u0074s"', "1"))  # "ts" written with an escape
    order = draw(st.permutations(range(len(pairs))))
    return _object(pairs[i] for i in order)


def _check(data, first_event=0):
    """The native result equals the reference's, or the native path declined; from the
    text pretty-printed too (when it is JSON), as written traces are."""
    reference = _reference(data, first_event)
    native = normalize_native(data, "t", first_event)
    if isinstance(reference, Exception):
        assert native is None, f"the reference refuses this chunk ({reference!r})"
    elif native is not None:
        assert_same(native, reference)
        assert_same(normalize_native(msgspec.json.format(data, indent=2), "t", first_event),
                    reference)
    return native is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events(), max_size=8), st.integers(0, 10**6))
def test_generated_events_decode_as_the_reference(texts, first_event):
    _check(("[" + ",".join(texts) + "]").encode(), first_event)


# Args values of the kinds real traces hold: 64-bit integers, decimals, strings and lists.
USUAL_VALUES = st.one_of(st.integers(-(2**63), 2**63 - 1).map(str), number_texts(10**12),
                         st.decimals(-10**6, 10**6, allow_nan=False, places=4).map(str), strings,
                         st.sampled_from(["[]", "[1,2,3]", "[128,1,1]", '["a",[1]]', "null"]))


@st.composite
def usual_events(draw):
    """Events of the shapes real traces have, which the core must take (not fall back)."""
    category = draw(st.sampled_from(["kernel", "Kernel", "cpu_op", "cuda_runtime", "gpu_memcpy",
                                     "python_function", "user_annotation", "mystery"]))
    pairs = [('"ph"', '"X"'), ('"cat"', json.dumps(category)), ('"name"', draw(strings)),
             ('"pid"', draw(st.one_of(st.integers(0, 2**31).map(str), strings))),
             ('"tid"', draw(st.one_of(st.integers(0, 2**40).map(str), strings))),
             ('"ts"', draw(st.one_of(st.integers(0, 2**50).map(str), number_texts(10**12),
                                     st.decimals(0, 10**12, places=3).map(str)))),
             ('"dur"', draw(st.one_of(st.integers(0, 10**6).map(str),
                                      number_texts(10**6, signs=("",))))),
             ('"args"', draw(args_texts(repeats=False, values=USUAL_VALUES)))]
    return _object(pairs)


@settings(max_examples=300, deadline=None)
@given(st.lists(usual_events(), min_size=1, max_size=8))
def test_usual_events_are_taken_natively(texts):
    """(A negative dur, whose rule the reference is changing, is left to it: see decode.rs.)"""
    data = ("[" + ",".join(texts) + "]").encode()
    if not _check(data):  # declined only what the reference refuses
        assert isinstance(_reference(data), Exception)


# -- bounded fuzz ------------------------------------------------------------------------------

_SEED = _events_text(ROOT / "examples" / "dlrm-8rank" / sorted(
    p.name for p in (ROOT / "examples" / "dlrm-8rank").glob("*.json.gz"))[0])[:6000]


@st.composite
def mutated_chunks(draw):
    """A real trace's first events with bytes flipped, cut, inserted or repeated."""
    data = bytearray(_SEED)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            data[at] = draw(st.integers(0, 255))
        elif kind == 1:
            del data[at:at + draw(st.integers(1, 50))]
        elif kind == 2:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            data[at:at] = data[at:at + draw(st.integers(1, 40))] * draw(st.integers(1, 3))
    return bytes(data)


@settings(max_examples=500, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated_chunks(), st.binary(max_size=200),
                 st.builds(lambda depth: b"[" * depth + b"]" * depth, st.integers(0, 5000)),
                 st.builds(lambda depth: b'[{"ph":"X","ts":1,"args":' + b"[" * depth
                           + b"]" * depth + b"}]", st.integers(0, 3000))))
def test_fuzzed_input_neither_crashes_nor_differs(data):
    """Random and damaged input: the core returns (a result or None) within the deadline,
    and a result it returns is the reference's."""
    _check(data)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(['"', "p", "h", '"ph"', '"ph"ph"', "x", "é"]), max_size=40)
       .map("".join).map(str.encode), st.data())
def test_the_count_of_phase_keys_is_bytes_count(data, draw):
    """The reader's count of a chunk's events (`"ph"` keys, never overlapping) by the core
    is Python's bytes.count over the same range of a bytes or a bytearray."""
    if not decoder.native_available():
        pytest.skip("the native core is not built")
    start = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(start, len(data)))
    for buffer in (data, bytearray(data)):
        assert (decoder._decode.count_phase_keys(buffer, start, end)
                == buffer.count(b'"ph"', start, end))
    with pytest.raises(IndexError):
        decoder._decode.count_phase_keys(data, start, len(data) + 1)
