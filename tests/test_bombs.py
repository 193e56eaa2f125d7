"""Hostile sizes and shapes: GBs of whitespace in a few MB of gzip, a value of GBs, a gzip bomb,
nesting thousands deep. Whitespace outside events streams through in bounded memory; the rest is
one error line naming the file, the byte and the limit, exit 2, nothing written for that file,
the other files of the command still ingested. Inputs are generated in tmp_path as repeated gzip
members (each compressed once), so a test stays small in time, memory and disk."""

import gzip
import json
import subprocess
import sys
import tracemalloc

import pytest

from tracewh.ingest import sources
from tracewh.ingest.events import decode_events
from tracewh.ingest.reader import MAX_NESTING, TraceReader
from tracewh.ingest.sources import open_trace

from .conftest import EXAMPLES, error_lines, live_files, load_reference

GOOD = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
GOOD_EVENTS = len(load_reference(GOOD)["traceEvents"])
MB = 1 << 20
SPACES = b" \n" * (8 * MB)  # 16 MB of whitespace, compressed once per test file


def events(first, count):
    return b", ".join(b'{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 7, '
                      b'"ts": %d, "dur": 1}' % (i, i) for i in range(first, first + count))


def write_gzip(path, *parts):
    """A gzip file of `parts`, each bytes or (bytes, times): one member compressed once and
    written `times` times (a gzip reader reads members one after another)."""
    with open(path, "wb") as out:
        for part in parts:
            piece, times = part if isinstance(part, tuple) else (part, 1)
            member = gzip.compress(piece, 9)
            for _ in range(times):
                out.write(member)
    return path


def ingested(tracewh, *paths, expect=2, options=()):
    """Ingest `paths` with the good trace after them; the result, and the traces stored."""
    result = tracewh("ingest", *paths, GOOD, "--run", "r", *options, expect=expect)
    assert "Traceback" not in result.output
    traces = json.loads(tracewh("query", "--format", "json",
                                "SELECT source_path, events FROM traces").stdout)
    return result, {t["source_path"].rsplit("/", 1)[-1]: t["events"] for t in traces}


# -- whitespace streams ---------------------------------------------------------------------

HEAD, TAIL = b'{"schemaVersion": 1, "traceEvents": [', b'], "traceName": "t"}'
WHERE = {  # 16 MB of whitespace at each place outside an event
    "before the document": [(SPACES[:MB], 16), HEAD + events(0, 40) + TAIL],
    "after [": [HEAD, (SPACES[:MB], 16), events(0, 40) + TAIL],
    "after a comma": [HEAD + events(0, 20) + b",", (SPACES[:MB], 16), events(20, 20) + TAIL],
    "before a comma": [HEAD + events(0, 20), (SPACES[:MB], 16), b"," + events(20, 20) + TAIL],
    "before ]": [HEAD + events(0, 40), (SPACES[:MB], 16), TAIL],
    "after the document": [HEAD + events(0, 40) + TAIL, (SPACES[:MB], 16)],
    "bare array": [b"[" + events(0, 20) + b",", (SPACES[:MB], 16), events(20, 20) + b"]"],
}


@pytest.mark.parametrize("confirm_cuts", [False, True], ids=["unconfirmed", "confirmed"])
@pytest.mark.parametrize("where", WHERE)
def test_whitespace_outside_events_is_not_held(tmp_path, where, confirm_cuts):
    path = write_gzip(tmp_path / "t.json.gz", *WHERE[where])
    tracemalloc.start()
    try:
        with open_trace(path) as stream:
            reader = TraceReader(stream, path, block_size=MB, confirm_cuts=confirm_cuts)
            names = [e.name for chunk in reader.chunks() for e in decode_events(chunk.load(path))]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert names == [f"k{i}" for i in range(40)]
    assert peak < 8 * MB  # blocks of 1 MB; the 16 MB of whitespace is never held
    if where != "bare array":
        assert set(reader.metadata) == {"schemaVersion", "traceName"}


def test_whitespace_after_the_document_then_text_is_an_error(tmp_path):
    path = write_gzip(tmp_path / "t.json.gz", HEAD + events(0, 4) + TAIL, (SPACES[:MB], 3),
                      b"x")
    with pytest.raises(Exception) as caught, open_trace(path) as stream:
        list(TraceReader(stream, path, block_size=MB).chunks())
    offset = len(HEAD + events(0, 4) + TAIL) + 3 * MB
    assert str(caught.value) == f"{path}: malformed JSON: trailing characters at byte {offset}"


def test_events_without_separator_across_whitespace_are_an_error(tmp_path):
    path = write_gzip(tmp_path / "t.json.gz", HEAD + events(0, 4), (SPACES[:MB], 3),
                      events(4, 2) + TAIL)
    with pytest.raises(Exception) as caught, open_trace(path) as stream:
        list(TraceReader(stream, path, block_size=MB).chunks())
    offset = len(HEAD + events(0, 4)) + 3 * MB
    assert str(caught.value) == f"{path}: malformed JSON: expected ',' or ']' at byte {offset}"


# The bomb, end to end in a process of its own: its peak RSS is the figure. VmHWM is
# this program's own peak; getrusage's maxrss keeps the forked test runner's from before exec
# (500 MB and more in a full run).
MEASURE = """
import re, sys
from tracewh.entry import main
try:
    main()
finally:
    with open("/proc/self/status") as status:
        peak = re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1)
    print("maxrss", peak, file=sys.stderr)
"""


def peak_rss_mb(warehouse, *paths):
    """The peak RSS, in MB, of `tracewh ingest` of `paths` into `warehouse`, in a process of
    its own, after checking the ingest succeeded; and its stdout."""
    done = subprocess.run([sys.executable, "-c", MEASURE, "--warehouse", str(warehouse),
                           "ingest", *map(str, paths), "--run", "r", "--jobs", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.split("maxrss ")[1]) / 1024, done.stdout


def test_256_mb_of_whitespace_between_events_in_a_quarter_mb_gzip(tmp_path):
    """The bomb costs its reader a block, not its size: the ingest's peak is that of the good
    file's ingest alone (~300 MB, most of it the libraries and DuckDB) plus little."""
    bomb = write_gzip(tmp_path / "bomb.json.gz", HEAD + events(0, 10) + b", ", (SPACES, 16),
                      events(10, 10) + TAIL)
    assert bomb.stat().st_size < MB / 3
    alone, _ = peak_rss_mb(tmp_path / "alone", GOOD)
    with_bomb, output = peak_rss_mb(tmp_path / "wh", bomb, GOOD)
    assert f"run r: 2 files ingested, {GOOD_EVENTS + 20:,} events" in output
    assert with_bomb < alone + 100, (with_bomb, alone)


# -- one value too large --------------------------------------------------------------------

def test_a_value_of_gbs_is_refused_where_it_starts(tracewh, tmp_path, warehouse):
    start = len(HEAD + events(0, 10)) + 2
    head = HEAD + events(0, 10) + b', {"ph": "i", "ts": 5, "name": "'
    bomb = write_gzip(tmp_path / "string.json.gz", head, (b"a" * (16 * MB), 192),
                      b'"}, ' + events(10, 10) + TAIL)  # a 3 GB name in 3 MB
    result, stored = ingested(tracewh, bomb)
    assert error_lines(result.output) == [
        f"error: {bomb}: an event or value larger than 64 MB, the limit (--max-event-size "
        f"raises it), starting at byte {start}"]
    assert stored == {GOOD.name: GOOD_EVENTS}
    assert len(live_files(warehouse)) > 0 and "1 file failed" in result.output


def test_the_event_size_limit_can_be_raised(tracewh, tmp_path):
    long = tmp_path / "long.json"  # a 6 MB name: past the reader's first 4 MB block
    long.write_bytes(HEAD + events(0, 3) + b', {"ph": "i", "ts": 5, "name": "' + b"n" * (6 * MB)
                     + b'"}' + TAIL)
    head = tmp_path / "head.json"
    head.write_bytes(b'{"a": "' + b"x" * (6 * MB) + b'", "traceEvents": []}')
    spaced = write_gzip(tmp_path / "spaced.json.gz", HEAD + events(0, 3) + b', {"ph":',
                        (SPACES[:MB], 8), b'"i", "ts": 1}' + TAIL)  # whitespace in an event
    result, stored = ingested(tracewh, long, head, spaced, options=("--max-event-size", "2MB"))
    event_start = len(HEAD + events(0, 3)) + 2
    assert error_lines(result.output) == [
        f"error: {long}: an event or value larger than 2 MB, the limit (--max-event-size "
        f"raises it), starting at byte {event_start}",
        f"error: {head}: no traceEvents in the first 2 MB of the object, the limit for one "
        "value (--max-event-size raises it) at byte 0",
        f"error: {spaced}: an event or value larger than 2 MB, the limit (--max-event-size "
        f"raises it), starting at byte {event_start}"]
    assert stored == {GOOD.name: GOOD_EVENTS}
    result, stored = ingested(tracewh, long, expect=0, options=("--max-event-size", "8MB"))
    assert stored[long.name] == 4


# -- the decompressed size ------------------------------------------------------------------

def test_a_gzip_bomb_is_refused_at_a_ratio_of_its_size(tracewh, tmp_path, monkeypatch):
    bomb = write_gzip(tmp_path / "bomb.json.gz", HEAD + events(0, 10) + b", ", (SPACES, 4),
                      events(10, 10) + TAIL)  # 64 MB in 64 KB
    limit = 100 * bomb.stat().st_size
    monkeypatch.setattr(sources, "GZIP_LIMIT_FLOOR", 2 * MB)  # so that 100x its size applies
    result, stored = ingested(tracewh, bomb)  # ... and not to the good trace (17x)
    assert error_lines(result.output) == [
        f"error: {bomb}: more than {limit / MB:.3g} MB of JSON (decompressed), the limit: "
        "--max-json-size raises it"]
    assert stored == {GOOD.name: GOOD_EVENTS}
    result, stored = ingested(tracewh, bomb, expect=0, options=("--max-json-size", "1GB"))
    assert stored[bomb.name] == 20


def test_the_json_size_limit_applies_to_plain_files_when_given(tracewh, tmp_path,
                                                              monkeypatch):
    plain = tmp_path / "plain.json"
    plain.write_bytes(HEAD + events(0, 30000) + TAIL)  # 2.5 MB
    monkeypatch.setenv("TRACEWH_MAX_JSON_SIZE", "1MB")  # as --max-json-size 1MB
    result, stored = ingested(tracewh, plain)
    assert error_lines(result.output) == [
        f"error: {plain}: more than 1 MB of JSON (decompressed), the limit: --max-json-size "
        "raises it"]
    assert stored == {GOOD.name: GOOD_EVENTS}


# -- nesting --------------------------------------------------------------------------------

def deep(depth):
    return b"[" * depth + b"]" * depth


NESTED = {  # where the deep value is: (document before it, document after it)
    "event args": (HEAD + events(0, 5) + b', {"ph": "i", "ts": 1, "args": {"a": ',
                   b"}}, " + events(5, 5) + TAIL),
    "metadata before traceEvents": (b'{"deep": ', b', "traceEvents": [' + events(0, 5) + TAIL),
    "metadata after traceEvents": (HEAD + events(0, 5) + b'], "deep": ', b"}"),
}


@pytest.mark.parametrize("where, depth, jobs", [
    ("event args", 1000, "1"), ("event args", 100000, "2"),
    ("metadata before traceEvents", 100000, "1"), ("metadata after traceEvents", 1000, "1")])
def test_nesting_too_deep_is_one_error_line(tracewh, tmp_path, where, depth, jobs):
    before, after = NESTED[where]
    path = tmp_path / "deep.json"
    path.write_bytes(before + deep(depth) + after)
    result, stored = ingested(tracewh, path, options=("--jobs", jobs))
    (line,) = error_lines(result.output)
    prefix = f"error: {path}: nesting deeper than {MAX_NESTING} levels at byte "
    assert line.startswith(prefix)
    offset = int(line[len(prefix):])  # inside the deep value, about MAX_NESTING levels in
    assert len(before) + MAX_NESTING - 3 <= offset <= len(before) + MAX_NESTING
    assert stored == {GOOD.name: GOOD_EVENTS}


def test_nesting_that_decoders_read_is_ingested(tracewh, tmp_path):
    path = tmp_path / "nested.json"
    before, after = NESTED["event args"]
    path.write_bytes(before + deep(MAX_NESTING - 5) + after)
    _, stored = ingested(tracewh, path, expect=0)
    assert stored[path.name] == 11
