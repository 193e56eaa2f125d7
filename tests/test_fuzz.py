"""Fuzzing: mutated real traces either ingest or fail with one clean error, never a traceback
and never a partial write."""

import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracewh.ingest.pipeline import IngestOptions, ingest_paths
from tracewh.storage.catalog import Catalog

from .conftest import shared
from .reference import EVENT_TABLES, kept_keys

SOURCE = "hta/trace_file_list/inference_rank_1.json.gz"


def original():
    import gzip
    return gzip.decompress(shared(SOURCE).read_bytes())


mutations = st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert", "delete"]),
                               st.floats(0, 1), st.binary(min_size=1, max_size=4)),
                     min_size=1, max_size=3)


def mutate(data, steps):
    data = bytearray(data)
    for kind, where, payload in steps:
        at = int(where * (len(data) - 1)) if data else 0
        if kind == "flip" and data:
            data[at] ^= payload[0] or 1
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = payload
        elif kind == "delete":
            del data[at:at + len(payload)]
    return bytes(data)


def check_ingest(data, name="trace.json"):
    """Ingest `data`; return the rows of each event table when it was ingested, else None."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        path.write_bytes(data)
        catalog = Catalog(Path(directory) / "wh")
        (outcome,) = ingest_paths(catalog, [path], IngestOptions(run="fuzz", jobs=1))
        assert outcome.status in ("ingested", "failed")
        files = sorted((Path(directory) / "wh").rglob("*.parquet"))
        if outcome.status == "failed":
            assert outcome.error.startswith(f"{path}: ") and "\n" not in outcome.error
            assert files == [] and catalog.stored_traces(run=None) == []
            return None
        assert len(catalog.stored_traces(run=None)) == 1
        live = catalog.snapshot().files(catalog.root)
        assert {catalog.root / table / f.path for table in live for f in live[table]} == \
            set(files)
        return {table: [row for f in live[table]
                        for row in pq.read_table(catalog.root / table / f.path).to_pylist()]
                for table in EVENT_TABLES}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations)
def test_mutated_real_trace(steps):
    check_ingest(mutate(original(), steps))


events = st.dictionaries(
    st.sampled_from(["ph", "cat", "name", "ts", "dur", "pid", "tid", "args", "id", "s", "zz"]),
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
              st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                   st.integers(), max_size=2)),
    max_size=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events, max_size=6), st.booleans())
def test_generated_events(event_list, bare):
    document = event_list if bare else {"traceEvents": event_list, "schemaVersion": 1}
    tables = check_ingest(json.dumps(document).encode())
    if tables is not None:  # every key with a value is kept, in a column or in extra
        kept = {row["event_index"]: kept_keys(table, row)
                for table, rows in tables.items() for row in rows}
        assert sorted(kept) == list(range(len(event_list)))
        for index, event in enumerate(event_list):
            assert {k for k, v in event.items() if v is not None} <= kept[index] <= set(event)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(max_size=4), st.integers(), min_size=1, max_size=4),
                min_size=1, max_size=5), st.data())
def test_a_key_repeated_in_args_is_named(args_list, data):
    """One event's args with a key written twice, wherever: the file fails, naming the event
    and the key, and nothing is written (msgspec alone keeps the last value)."""
    index = data.draw(st.integers(0, len(args_list) - 1))
    key = data.draw(st.sampled_from(sorted(args_list[index])))
    texts = []
    for number, args in enumerate(args_list):
        text = json.dumps(args)
        if number == index:
            text = text[:-1] + f", {json.dumps(key)}: 0}}"
        texts.append(f'{{"ph": "i", "ts": {number}, "args": {text}}}')
    document = ('{"traceEvents": [' + ", ".join(texts) + "]}").encode()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "trace.json"
        path.write_bytes(document)
        catalog = Catalog(Path(directory) / "wh")
        (outcome,) = ingest_paths(catalog, [path], IngestOptions(run="fuzz", jobs=1))
        assert outcome.status == "failed"
        assert outcome.error == f"{path}: event {index}: duplicate key {key!r} in the event"
        assert list((Path(directory) / "wh").rglob("*.parquet")) == []
