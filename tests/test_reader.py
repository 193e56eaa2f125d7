"""The streaming reader: chunks of whole events, on real traces and on hostile shapes."""

import io
import json

import pytest

from tracewh.ingest.events import decode_events
from tracewh.ingest.reader import TraceReader, UnconfirmedChunk, check_unconfirmed
from tracewh.ingest.sources import open_trace
from tracewh.errors import TraceError

from .conftest import SHARED, load_reference

REAL_TRACES = sorted(p.relative_to(SHARED) for p in SHARED.rglob("*.json*")) if SHARED.exists() \
    else []


def read_all(stream, block_size=1 << 12, by_reference=False, path="test.json",
             confirm_cuts=True):
    reader = TraceReader(stream, path, block_size=block_size, by_reference=by_reference,
                         confirm_cuts=confirm_cuts)
    events = []
    for chunk in reader.chunks():
        decoded = decode_events(chunk.load(path))
        assert chunk.first_event == len(events) and chunk.events == len(decoded)
        events.extend(decoded)
    return reader, events


def unconfirmed_chunks(data, block_size):
    """Decode every unconfirmed chunk of `data` as a worker would; UnconfirmedChunk when one is
    not what its cut promised."""
    reader = TraceReader(io.BytesIO(data), "test.json", block_size=block_size,
                         confirm_cuts=False)
    chunks = list(reader.chunks())
    for chunk in chunks:
        try:
            decoded = decode_events(chunk.load("test.json"))
        except Exception:
            raise UnconfirmedChunk(chunk.first_event) from None
        check_unconfirmed(chunk, len(decoded))
    return chunks


@pytest.mark.parametrize("relative", REAL_TRACES, ids=str)
def test_real_traces_split_into_every_event_once(relative):
    path = SHARED / relative
    reference = load_reference(path)
    with open_trace(path) as stream:
        reader, events = read_all(stream, block_size=1 << 15)
    assert len(events) == len(reference["traceEvents"])
    assert [e.name for e in events] == [e.get("name") for e in reference["traceEvents"]]
    assert set(reader.metadata) == set(reference) - {"traceEvents"}


@pytest.mark.parametrize("relative", REAL_TRACES, ids=str)
def test_real_traces_need_no_confirmed_cuts(relative):
    """Ingest's fast path (cuts unconfirmed, events counted by their "ph" keys) holds on every
    real trace: no chunk sends ingest back to confirmed reading."""
    path = SHARED / relative
    with open_trace(path) as stream:
        _, events = read_all(stream, block_size=1 << 15, confirm_cuts=False)
    assert len(events) == len(load_reference(path)["traceEvents"])


@pytest.mark.parametrize("args", [
    {"nested": [{"a": 1}, {"b": 2}]},   # a cut candidate inside a value: the chunk cannot close
    {"text": "}, {"},                    # ... inside a string
    {"ph": "X"},                         # a "ph" key that is no event's: the count is wrong
    {"note": "ph"},                      # a "ph" string
])
def test_unconfirmed_chunks_that_are_wrong_are_caught(args):
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1, "pid": 0,
               "tid": 0, **({"args": args} if i % 7 == 3 else {})} for i in range(60)]
    data = json.dumps({"traceEvents": events}, indent=1).encode()
    plain = json.dumps({"traceEvents": [{k: v for k, v in e.items() if k != "args"}
                                        for e in events]}, indent=1).encode()
    assert len(unconfirmed_chunks(plain, 512)) > 2
    with pytest.raises(UnconfirmedChunk):
        unconfirmed_chunks(data, 512)


def test_by_reference_chunks_match_copied_ones(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1,
               "args": {"nested": [{"a": i}, {"b": "},{"}]}} for i in range(500)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, "traceName": "x"}))
    for by_reference in (False, True):
        with open(path, "rb") as stream:
            reader, decoded = read_all(stream, block_size=97, by_reference=by_reference,
                                       path=path)
        assert [e.name for e in decoded] == [e["name"] for e in events]
        assert set(reader.metadata) == {"schemaVersion", "traceName"}


def test_bare_array_form():
    data = json.dumps([{"ph": "i", "name": str(i), "ts": i} for i in range(100)]).encode()
    reader, events = read_all(io.BytesIO(data), block_size=64)
    assert [e.name for e in events] == [str(i) for i in range(100)]
    assert reader.metadata == {}


def test_trace_events_key_inside_a_nested_value_is_not_taken():
    data = json.dumps({"info": {"traceEvents": "no"}, "note": "\"traceEvents\": [",
                       "traceEvents": [{"ph": "i", "ts": 1, "name": "real"}]}).encode()
    _, events = read_all(io.BytesIO(data), block_size=16)
    assert [e.name for e in events] == ["real"]


@pytest.mark.parametrize("data, message", [
    (b"", "empty file"),
    (b"   \n", "empty file"),
    (b"\x00\x01binary\xff", "not a JSON trace"),
    (b'{"schemaVersion": 1, "nodes": []}', "not a trace: a JSON object without traceEvents"),
    (b'{"traceEvents": {"a": 1}}', "traceEvents must be a list of events, found an object"),
    (b'{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 2', "truncated"),
    (b'{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": X}]}', "malformed JSON"),
    (b'{"traceEvents": [{"ph": "X", "ts": NaN}]}', "malformed JSON"),
])
def test_bad_input_is_one_clear_error(data, message):
    with pytest.raises(TraceError) as caught:
        read_all(io.BytesIO(data), block_size=8)
    assert message in str(caught.value)
    assert str(caught.value).startswith("test.json: ")


def test_corruption_in_the_middle_names_its_byte_offset():
    good = json.dumps({"traceEvents": [{"ph": "i", "ts": i, "name": "e"} for i in range(200)]})
    offset = good.index('"ts": 100,') + 6
    bad = good[:offset] + "@" + good[offset + 1:]
    with pytest.raises(TraceError) as caught:
        read_all(io.BytesIO(bad.encode()), block_size=256)
    assert f"at byte {offset}" in str(caught.value)


def test_a_top_level_integer_of_thousands_of_digits_is_ingested(tracewh, sql, tmp_path):
    """Python refuses int() of over 4,300 digits and msgspec an integer past 64 bits: the
    duplicate-key check and the metadata both failed with tracebacks. The value is kept as
    its JSON text."""
    digits = "7" * 5000
    path = tmp_path / "huge.json"
    path.write_text('{"huge": ' + digits + ', "traceEvents": [{"ph": "i", "ts": 1, "name": "e"}]}')
    tracewh("ingest", path, "--run", "h")
    (row,) = sql("SELECT metadata FROM traces")
    assert json.loads(row["metadata"]) == {"huge": digits}
