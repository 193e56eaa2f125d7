"""The memory views against a pure-Python reference: TraceLens's H100 and MI300 traces (620
[memory] events each, Device Type 1 and 6) and a small trace made by hand."""

import json

import pytest

from .conftest import connect, define_helpers, load_reference, shared
from .reference_resources import allocations, memory_events, peaks, step_peaks, timeline

FALCONSAI = {"h100": "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
             "mi300": "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz"}


@pytest.fixture(scope="module")
def falconsai(tmp_path_factory):
    """A warehouse with both Falconsai traces (runs h100 and mi300) and their references."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    warehouse = tmp_path_factory.mktemp("falconsai") / "wh"
    documents = {}
    for run, relative in FALCONSAI.items():
        path = shared(relative)
        result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "ingest", str(path),
                                          "--run", run, "--phase", "inference"])
        assert result.exit_code == 0, result.output
        documents[run] = load_reference(path)
    return warehouse, documents


def rows(warehouse, text, helpers=()):
    """The rows of a query, as dicts; `helpers` are internal views to define first (they are
    published nowhere, but the test compares with one)."""
    connection = connect(warehouse)
    define_helpers(connection, *helpers)
    relation = connection.sql(text)
    return [dict(zip(relation.columns, row)) for row in relation.fetchall()]


@pytest.mark.parametrize("run", sorted(FALCONSAI))
def test_memory_events_and_curve_match_reference(falconsai, run):
    warehouse, documents = falconsai
    expected = memory_events(documents[run])
    got = rows(warehouse, f"SELECT * FROM memory_timeline WHERE run = '{run}' "
                          "ORDER BY ts_ns, event_index")
    assert len(got) == len(expected) == 620
    keys = ("event_index", "ts_ns", "device_kind", "device_id", "bytes", "allocated_bytes",
            "reserved_bytes", "op_event_index", "op_name")
    assert [{k: r[k] for k in keys} for r in got] == [{k: e[k] for k in keys} for e in expected]
    curve = timeline(expected)
    assert {r["event_index"]: (r["running_bytes"], r["consistent"]) for r in got} == curve
    assert all(consistent for _, consistent in curve.values())  # the allocator lost nothing
    assert sum(1 for e in expected if e["op_name"] is None) < 200  # most have an op
    # The op is the host call tree's: the instant's parent in _host_layers' cpu_op layer.
    tree = rows(warehouse, "SELECT event_index, parent_event_index FROM _host_layers "
                           f"WHERE layer = 'cpu_op' AND source = 'instants' AND run = '{run}'",
                helpers=["_host_layers"])
    parents = {r["event_index"]: r["parent_event_index"] for r in tree}
    assert {r["event_index"]: r["op_event_index"] for r in got} == \
        {r["event_index"]: parents[r["event_index"]] for r in got}


def test_peaks_on_h100_and_mi300(falconsai):
    warehouse, documents = falconsai
    got = rows(warehouse, "SELECT * FROM memory_peaks ORDER BY run, device_kind")
    figures = {(r["run"], r["device_kind"], r["device_id"]):
               (r["peak_allocated_bytes"], r["peak_reserved_bytes"], r["event_index"])
               for r in got}
    expected = {}
    for run, document in documents.items():
        for (kind, device), (allocated, reserved, first) in peaks(
                [memory_events(document)]).items():
            expected[(run, kind, device)] = (allocated, reserved, first[2])
    assert figures == expected
    # The figures themselves, as the traces' own totals give them.
    assert figures[("h100", "cuda", 0)][:2] == (231332864, 245366784)
    assert figures[("mi300", "hip", 0)][:2] == (272628736, 291504128)
    assert {(r["run"], r["device_kind"]): r["op_name"] for r in got}[("h100", "cuda")] \
        == "aten::gelu"
    # memory_peaks looks the op up for its peak rows alone: the same op memory_events gives.
    ops = {(r["trace_id"], r["event_index"]): (r["op_event_index"], r["op_name"])
           for r in rows(warehouse, "SELECT * FROM memory_events")}
    assert all(ops[(r["trace_id"], r["event_index"])] == (r["op_event_index"], r["op_name"])
               for r in got)
    assert sum(r["op_name"] is not None for r in got) == 3


def test_peaks_per_step_and_allocations(falconsai):
    warehouse, documents = falconsai
    for run, document in documents.items():
        events = memory_events(document)
        got = rows(warehouse, f"SELECT * FROM memory_peaks_by_step WHERE run = '{run}'")
        assert {(r["step_event_index"], r["device_kind"], r["device_id"]):
                (r["peak_allocated_bytes"], r["peak_reserved_bytes"], r["peak_ts_ns"])
                for r in got} == step_peaks(document, events)
        blocks = rows(warehouse, "SELECT status, bytes, lifetime_ns FROM memory_allocations "
                                 f"WHERE run = '{run}'")
        assert sorted((b["status"], b["bytes"], b["lifetime_ns"]) for b in blocks) == \
            [tuple(b) for b in allocations(events)]
    assert len(blocks) == 310 and {b["status"] for b in blocks} == {"freed"}


def _memory(ts, pid, bytes_, allocated, reserved, addr, device_type=1, device_id=0):
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid,
            "tid": pid, "ts": ts, "args": {"Total Reserved": reserved,
                                           "Total Allocated": allocated, "Bytes": bytes_,
                                           "Addr": addr, "Device Id": device_id,
                                           "Device Type": device_type}}


def _op(name, ts, dur, pid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": pid, "ts": ts,
            "dur": dur, "args": {}}


HAND_MADE = [
    _op("ProfilerStep#1", 100, 100), _op("aten::empty", 110, 10), _op("aten::add", 150, 20),
    _op("aten::empty", 155, 5),
    _memory(112, 1, 1000, 5000, 8000, 7),        # step 1: inside aten::empty
    _memory(157, 1, 3000, 8000, 8000, 9),        # the peak, innermost op aten::empty
    _memory(165, 1, -3000, 5000, 8000, 9),
    _op("ProfilerStep#2", 200, 100),
    _memory(250, 1, -1000, 4000, 8000, 7),       # step 2 opens at 5000 and frees
    _memory(260, 1, -500, 3000, 8000, 3),        # a block from before the capture, and a
                                                 # total that disagrees with Bytes
    _memory(270, 1, 64, 64, 0, 11, 13, 0),       # mps, never freed
    _memory(280, 1, 16, 16, 0, 12, 99, 2),       # an unknown device type: kept by number
]


def _trace(path, events):
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_hand_made_trace(tmp_path, tracewh, sql):
    first = _trace(tmp_path / "first.json", HAND_MADE)
    # A second capture of the same rank, later and lower: the rank's peak is the maximum.
    later = [dict(e, ts=e["ts"] + 10_000) for e in HAND_MADE]
    for event in later:
        if event["name"] == "[memory]":
            event["args"] = dict(event["args"], **{"Total Allocated":
                                                   event["args"]["Total Allocated"] // 2})
    second = _trace(tmp_path / "second.json", later)
    empty = _trace(tmp_path / "none.json", [_op("ProfilerStep#1", 0, 10)])
    tracewh("ingest", first, second, "--run", "hand", "--rank", "0")
    tracewh("ingest", empty, "--run", "bare", "--rank", "0")
    assert sql("SELECT * FROM memory_peaks WHERE run = 'bare'") == []
    assert sql("SELECT * FROM memory_peaks_by_step WHERE run = 'bare'") == []
    peaks_ = {r["device_kind"]: r for r in sql("SELECT * FROM memory_peaks")}
    assert set(peaks_) == {"cuda", "mps", "99"}
    cuda = peaks_["cuda"]
    assert (cuda["peak_allocated_bytes"], cuda["peak_reserved_bytes"], cuda["op_name"],
            cuda["events"], cuda["captures"]) == (8000, 8000, "aten::empty", 10, 2)
    assert cuda["peak_ts_ns"] == 157_000
    steps = {(r["step"], r["device_kind"]): r for r in sql(
        "SELECT * FROM memory_peaks_by_step WHERE trace_id = (SELECT min_by(trace_id, "
        "ts_ns) FROM memory_events)")}
    assert steps[("ProfilerStep#1", "cuda")]["peak_allocated_bytes"] == 8000
    two = steps[("ProfilerStep#2", "cuda")]
    assert (two["peak_allocated_bytes"], two["peak_ts_ns"], two["events"]) == (5000, 200_000, 2)
    flags = sql("SELECT ts_ns, consistent, running_bytes, allocated_bytes FROM memory_timeline "
                "WHERE device_kind = 'cuda' AND ts_ns < 1000000 ORDER BY ts_ns")
    assert [f["consistent"] for f in flags] == [True, True, True, True, False]
    assert flags[-1]["running_bytes"] == 3500 and flags[-1]["allocated_bytes"] == 3000
    blocks = sql("SELECT status, addr, bytes, lifetime_ns, op_name FROM memory_allocations "
                 "WHERE alloc_ts_ns < 1000000 OR free_ts_ns < 1000000 ORDER BY addr")
    assert blocks == [
        {"status": "allocated_before", "addr": 3, "bytes": 500, "lifetime_ns": None,
         "op_name": None},
        {"status": "freed", "addr": 7, "bytes": 1000, "lifetime_ns": 138_000,
         "op_name": "aten::empty"},
        {"status": "freed", "addr": 9, "bytes": 3000, "lifetime_ns": 8_000,
         "op_name": "aten::empty"},
        {"status": "not_freed", "addr": 11, "bytes": 64, "lifetime_ns": None,
         "op_name": "ProfilerStep#2"},  # the innermost cpu_op there is the step itself
        {"status": "not_freed", "addr": 12, "bytes": 16, "lifetime_ns": None,
         "op_name": "ProfilerStep#2"},
    ]


def test_partial_overlap_is_matched_by_containment(tmp_path, tracewh, sql):
    # Thread 2's ops overlap without nesting (B starts inside A and outlives it), so the call
    # tree's parent of the event at 350 would be A, which ended at 340: that thread is matched
    # by time containment. Thread 1 nests and keeps the tree's answer.
    events = [
        _op("A", 300, 40, pid=2), _op("B", 320, 40, pid=2),
        _memory(330, 2, 100, 100, 200, 1), _memory(350, 2, 50, 150, 200, 2),
        _memory(370, 2, -150, 0, 200, 1),
        _op("outer", 300, 100), _op("inner", 310, 10), _memory(315, 1, 8, 158, 200, 3),
    ]
    tracewh("ingest", _trace(tmp_path / "tangled.json", events), "--run", "t", "--rank", "0")
    assert [(r["pid"], r["ts_ns"], r["op_name"]) for r in sql(
        "SELECT pid, ts_ns, op_name FROM memory_events ORDER BY ts_ns")] == [
        ("1", 315_000, "inner"), ("2", 330_000, "B"), ("2", 350_000, "B"), ("2", 370_000, None)]
    assert [(r["peak_allocated_bytes"], r["op_name"]) for r in sql(
        "SELECT * FROM memory_peaks")] == [(158, "inner")]


def test_report_draws_the_memory_curve(falconsai, tmp_path):
    from click.testing import CliRunner

    from tracewh.cli import cli

    warehouse, _ = falconsai
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "report", "mi300",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    section = page[page.index('<section id="memory">'):]
    section = section[:section.index("</section>")]
    assert 'id="chart-memory"' in section and "Memory during ProfilerStep#6 of rank 0" in section
    assert "hip:0 allocated" in section and "hip:0 reserved" in section
    assert f'<td class="n">{272628736 / 2**20:,.3f}</td>' in section  # the peak, in MiB
