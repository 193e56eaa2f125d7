"""Graph replays attributed through their capture trace (graph_replay_kernels, op_kernels'
via_capture, _graph_op_time), on vLLM's decode step replayed from one full graph on MI300X
and the trace profiled while that graph was captured (../shared/traces/tracelens/inference).
"""

import csv
import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracewh.cli import cli

from .conftest import SHARED, mart_frame, require
from .reference import tracelens_moe

INFERENCE = SHARED / "tracelens" / "inference"
REPLAY = INFERENCE / "vllm_decode_full_graph_execution.json.gz"
CAPTURE = INFERENCE / "vllm_decode_full_capture"
# TraceLens's ops summary of this pair (see test_agrees_with_tracelens_merge)
TRACELENS = Path(__file__).resolve().parent / "data" / "tracelens" / \
    "vllm_decode_graph_ops_summary.csv"
# The replay's GPU activity: 434 kernels and memcpys, 10,717,708 ns; 421 of them (10,388,482
# ns) run by its one hipGraphLaunch, 13 (329,226 ns) launched by aten ops.
ACTIVITY, ACTIVITY_NS, REPLAYED, REPLAYED_NS = 434, 10_717_708, 421, 10_388_482


def run_cli(warehouse, *args):
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), *map(str, args)])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def query(warehouse, text):
    return json.loads(run_cli(warehouse, "query", "--format", "json", text))


def ingest(warehouse, *pairs):
    for path, phase in pairs:
        run_cli(warehouse, "ingest", path, "--run", "vllm", *(["--phase", phase] if phase else []))


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    """The replay (phase decode), then its capture (phase found from its runtime calls)."""
    require(REPLAY)
    warehouse = tmp_path_factory.mktemp("graphs") / "wh"
    ingest(warehouse, (REPLAY, "decode"), (CAPTURE, None))
    return warehouse


def op_share(warehouse, phase):
    """The share of the phase's GPU activity time that op_stats attributes to ops."""
    (row,) = query(warehouse, f"SELECT sum(gpu_self_ns) AS ns FROM op_stats "
                              f"WHERE phase = '{phase}'")
    return row["ns"] / ACTIVITY_NS


def test_a_replay_alone_runs_nearly_everything_under_its_graph_launch(tmp_path):
    """Without the capture, the graph launch's 421 kernels (96.9% of the time) have no op:
    op_stats sees 3.1% of the step, and the launch is unmatched."""
    require(REPLAY)
    warehouse = tmp_path / "wh"
    ingest(warehouse, (REPLAY, "decode"))
    rows = query(warehouse, "SELECT graph_status, count(*) AS n, sum(dur_ns) AS ns, "
                            "count(op_name) AS named FROM op_kernels GROUP BY ALL")
    by_status = {r["graph_status"]: r for r in rows}
    assert by_status["unmatched"]["n"] == REPLAYED and by_status["unmatched"]["named"] == 0
    assert by_status["unmatched"]["ns"] == REPLAYED_NS
    assert round(op_share(warehouse, "decode"), 4) == 0.0307


def test_the_capture_trace_is_recognised_by_its_stream_capture(paired):
    (row,) = query(paired, "SELECT string_agg(DISTINCT phase, ',' ORDER BY phase) AS phases "
                           "FROM traces")
    assert row["phases"] == "capture,decode"


def test_every_replayed_kernel_is_matched_to_the_launch_that_captured_it(paired):
    """The k-th replayed kernel is the k-th captured launch, its args.kernel the kernel's
    name (memcpys by kind): the graph was found by its kernel sequence alone."""
    rows = query(paired, """
        SELECT g.graph_status, k.name, k.category, r.name AS call,
               json_extract_string(r.args, '$.kernel') AS captured,
               row_number() OVER (ORDER BY k.ts_ns, k.event_index) AS replayed_k,
               row_number() OVER (ORDER BY r.ts_ns, r.event_index) AS captured_k
        FROM graph_replay_kernels AS g
        JOIN kernels AS k ON k.trace_id = g.trace_id AND k.event_index = g.event_index
        JOIN runtime AS r
          ON r.trace_id = g.capture_trace_id AND r.event_index = g.captured_launch_event_index
    """)
    assert len(rows) == REPLAYED and {r["graph_status"] for r in rows} == {"matched"}
    assert all(r["replayed_k"] == r["captured_k"] for r in rows)
    assert all(r["captured"] == r["name"] if r["category"] == "kernel"
               else "Memcpy" in r["call"] for r in rows)


def test_op_stats_and_module_stats_read_like_an_eager_step(paired):
    """Every activity is in op_kernels once, and all of the step's GPU time is now an op's
    (3.1% before); the largest is the MoE (vllm::moe_forward, 24 layers: 66.9%), modules
    are the captured ones, and replayed ops have no CPU time of their own."""
    (kernels,) = query(paired, "SELECT count(*) AS n, count(DISTINCT event_index) AS d, "
                               "sum(dur_ns) AS ns, count(CASE WHEN via_capture THEN 1 END) "
                               "AS via FROM op_kernels WHERE phase = 'decode'")
    assert kernels == {"n": ACTIVITY, "d": ACTIVITY, "ns": ACTIVITY_NS, "via": REPLAYED}
    assert op_share(paired, "decode") == 1.0
    top = query(paired, "SELECT name, calls, gpu_kernels, gpu_self_ns, host_ns FROM op_stats "
                        "WHERE phase = 'decode' ORDER BY gpu_self_ns DESC LIMIT 2")
    assert top == [{"name": "vllm::moe_forward", "calls": 24, "gpu_kernels": 72,
                    "gpu_self_ns": 7_171_530, "host_ns": 0},
                   {"name": "aten::addmm", "calls": 72, "gpu_kernels": 72,
                    "gpu_self_ns": 953_882, "host_ns": 0}]
    modules = {r["module_path"]: r["gpu_total_ns"] for r in query(
        paired, "SELECT module_path, gpu_total_ns FROM module_stats WHERE phase = 'decode'")}
    assert modules["GptOssForCausalLM_0"] == REPLAYED_NS
    assert sum(ns for path, ns in modules.items() if path is None or "/" not in path) \
        == ACTIVITY_NS


def test_diff_and_trend_by_op_see_the_replayed_ops(paired):
    diff = json.loads(run_cli(paired, "diff", "vllm:capture", "vllm:decode", "--by", "op",
                              "--format", "json"))
    new = {r["name"]: r for r in diff["kernels"]}
    assert new["vllm::moe_forward"]["new_count"] == 24
    assert new["vllm::moe_forward"]["new_total_ns"] == 7_171_530
    trend = run_cli(paired, "trend", "op:vllm::moe_forward", "--format", "json")
    assert "7171530" in trend.replace(",", "")


def test_the_capture_may_come_first(tmp_path):
    require(REPLAY)
    warehouse = tmp_path / "wh"
    ingest(warehouse, (CAPTURE, None), (REPLAY, "decode"))
    (row,) = query(warehouse, "SELECT count(*) AS n, count(captured_launch_event_index) AS m "
                              "FROM graph_replay_kernels WHERE graph_status = 'matched'")
    assert row == {"n": REPLAYED, "m": REPLAYED}


def test_a_launch_missing_from_the_capture_leaves_the_others_matched(tmp_path, paired):
    """With one captured launch dropped from the capture trace, the launch is partial: the
    kernel it captured has no match, and the kernels of every other name keep theirs (where
    TraceLens's greedy alignment fails the whole graph)."""
    (path,) = CAPTURE.glob("*.json.gz")
    document = json.loads(gzip.decompress(path.read_bytes()))
    events = document["traceEvents"]
    begin = next(e["ts"] for e in events if "StreamBeginCapture" in e.get("name", ""))
    launches = sorted((e for e in events if e.get("cat") == "cuda_runtime"
                       and e["name"] == "hipLaunchKernel" and e["ts"] > begin),
                      key=lambda e: e["ts"])
    dropped = launches[10]
    events.remove(dropped)
    edited = tmp_path / "capture" / "graph_capture_rank_0.pt.trace.json.gz"
    edited.parent.mkdir()
    edited.write_bytes(gzip.compress(json.dumps(document).encode()))
    warehouse = tmp_path / "wh"
    ingest(warehouse, (REPLAY, "decode"), (edited.parent, None))
    text = ("SELECT k.event_index, k.name, k.op_name, k.graph_status FROM op_kernels AS k "
            "WHERE k.via_capture OR k.graph_status IS NOT NULL")
    edited_rows = {r["event_index"]: r for r in query(warehouse, text)}
    full_rows = {r["event_index"]: r for r in query(paired, text)}
    assert {r["graph_status"] for r in edited_rows.values()} == {"partial"}
    unmatched = [r for r in edited_rows.values() if r["op_name"] is None]
    assert [r["name"] for r in unmatched] == [dropped["args"]["kernel"]]
    others = [i for i, r in full_rows.items() if r["name"] != dropped["args"]["kernel"]]
    assert all(edited_rows[i]["op_name"] == full_rows[i]["op_name"] for i in others)


def test_agrees_with_tracelens_merge(paired):
    """TraceLens's own merge of this capture into this replay, run by hand in a throw-away
    environment (github.com/AMD-AGI/TraceLens at commit 171dd74721ca, not a dependency):

        python -m venv /tmp/tl-venv && /tmp/tl-venv/bin/pip install pandas tqdm tabulate \\
            orjson PyYAML openpyxl matplotlib && /tmp/tl-venv/bin/pip install --no-deps -e TraceLens
        cp -r vllm_decode_full_capture /tmp/capture   # it writes execution_details.json there
        /tmp/tl-venv/bin/python -m TraceLens.Reporting.generate_perf_report_pytorch_inference \\
            --profile_json_path vllm_decode_full_graph_execution.json.gz \\
            --capture_folder /tmp/capture --output_csvs_dir out

    Its out/ops_summary.csv is tests/data/tracelens/vllm_decode_graph_ops_summary.csv: 16 ops
    with kernels of their own (434 of 434 kernels accounted for), e.g. vllm::moe_forward 24
    calls, direct 7,171.532 µs, subtree 7,666.465 µs; aten::addmm 72 calls, 953.878 µs. Per
    op the calls, direct kernel time (gpu_self_busy_ns) and subtree time (gpu_total_busy_ns)
    agree, to within 1 ns per call (its float µs)."""
    with TRACELENS.open() as handle:
        expected = list(csv.DictReader(handle))
    ours = {r["name"]: r for r in query(paired, "SELECT * FROM op_stats WHERE phase = 'decode' "
                                                "AND gpu_calls > 0")}
    assert sorted(ours) == sorted(r["name"] for r in expected)
    for row in expected:
        op, calls = ours[row["name"]], int(row["Count"])
        assert op["gpu_calls"] == calls, row["name"]
        assert abs(op["gpu_self_busy_ns"] - float(row["total_direct_kernel_time_sum"]) * 1000) \
            <= calls, row["name"]
        assert abs(op["gpu_total_busy_ns"]
                   - float(row["total_subtree_kernel_time_sum"]) * 1000) <= calls, row["name"]


def test_the_matching_is_stored_by_the_refresh(paired):
    """graph_replay_kernels is a mart: the ingest's refresh stores its rows, equal to the
    view's, and queries over the warehouse read them instead of matching again."""
    mart = mart_frame(paired, "graph_replay_kernels")
    view = query(paired, "SELECT * FROM graph_replay_kernels")
    assert mart.height == len(view) == REPLAYED
    key = ("trace_id", "event_index", "graph_status", "captured_launch_event_index")
    assert sorted(tuple(r[k] for k in key) for r in mart.iter_rows(named=True)) == \
        sorted(tuple(r[k] for k in key) for r in view)


# TraceLens's perf tables of the same run (GEMM.csv, RMSNorm_fwd.csv of its out/, the key
# columns): the reference test_replayed_ops_are_measured_like_tracelens compares op_perf with
PERF = TRACELENS.with_name("vllm_decode_graph_perf.csv")


def test_replayed_ops_are_measured_like_tracelens(paired):
    """op_perf measures a replayed op from its capture's shapes and its replayed kernels: one
    row per captured op and graph launch, in the replay's phase. Per op and shapes TraceLens's
    inference report (same run as test_agrees_with_tracelens_merge) and op_perf have the same
    calls, FLOPs, bytes (its MB are 2^20 bytes) and kernel time (within 1 ns per call): the 72
    replayed aten::addmm in three shapes (e.g. 24 of 32 x 2880 x 5120 with a bias, 943,882,240
    FLOPs and 30,013,440 bytes each), 48 aiter::rmsnorm2d_fwd_with_add_ck, 1 aiter::rms_norm,
    the 24 vllm::unified_attention_with_output, whose sequence lengths are those of the
    replay's step annotation around the graph launch (32 decode requests, 55,086 keys:
    902,529,024 FLOPs and 113,340,416 bytes each), and the logits' aten::mm the replay trace
    ran itself. TraceLens lists the vllm::rocm_unquantized_gemm around each GEMM too; tracewh
    models the op that launches."""
    with PERF.open() as handle:
        expected = {}
        for row in csv.DictReader(handle):
            key = (row["name"], json.dumps(json.loads(row["Input Dims_first"])))
            calls, ns = expected[key][1:] if key in expected else (0, 0.0)
            expected[key] = (row, calls + int(row["name_count"]),
                             ns + float(row["Kernel Time (µs)_sum"]))
    ours = {(r["name"], json.dumps(json.loads(r["shapes"]))): r for r in query(
        paired, "SELECT name, shapes, count(*) AS calls, count(DISTINCT flops) AS shapes_n, "
                "min(flops) AS flops, min(bytes) AS bytes, sum(gpu_busy_ns) AS ns, "
                "bool_and(via_capture) AS replayed, min(op_phase) AS op_phase "
                "FROM op_perf WHERE phase = 'decode' GROUP BY name, shapes")}
    modeled = {key: value for key, value in expected.items()
               if key[0] != "vllm::rocm_unquantized_gemm"}
    names = {name for name, _ in modeled}
    assert sorted(key for key in ours if key[0] in names) == sorted(modeled)
    for key, (row, calls, ns) in modeled.items():
        op = ours[key]
        assert op["calls"] == calls, key
        assert op["flops"] == round(float(row["GFLOPS_first"]) * 1e9), key
        assert op["bytes"] == round(float(row["Data Moved (MB)_first"]) * 2**20), key
        assert abs(op["ns"] - ns * 1000) <= calls, key
        assert op["replayed"] == (key[0] != "aten::mm"), key
        assert op["op_phase"] == ("decode" if key[0] == "aten::mm" else "capture"), key


def capture_moe_shapes():
    """(M, K, E, t, N, packing) of the capture's first vllm::moe_forward, read from the
    trace's JSON: x and the router logits from its shapes, t from the TopK op inside it, the
    weights from the 3-D unsigned char (MXFP4, two values a byte) views inside it, K-major:
    w1 [E, K/2, 2N], w2 [E, N/2, K]."""
    (path,) = CAPTURE.glob("*.json.gz")
    with gzip.open(path) as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("cat") == "cpu_op"]
    layer = min((e for e in events if e["name"] == "vllm::moe_forward"), key=lambda e: e["ts"])
    inside = sorted((e for e in events if e["tid"] == layer["tid"]
                     and layer["ts"] <= e["ts"] < layer["ts"] + layer["dur"]),
                    key=lambda e: e["ts"])
    (m, k), (_, experts) = layer["args"]["Input Dims"][:2]
    topk = next(int(e["args"]["Concrete Inputs"][1]) for e in inside if e["name"] == "TopK")
    w1, w2 = [e["args"]["Input Dims"][0] for e in inside
              if e["args"].get("Input type", [None])[0] == "unsigned char"
              and len(e["args"]["Input Dims"][0]) == 3 and e["args"]["Input Dims"][0][0] == experts]
    packing = k // w1[1]
    assert w2[2] == k and w1[2] == 2 * w2[1] * packing
    return m, k, experts, topk, w2[1] * packing


def test_moe_forward_is_measured_from_the_weights_it_runs(paired):
    """The 24 replayed vllm::moe_forward (gpt-oss: 32 experts, 4 a token, MXFP4 weights):
    the intermediate size is the weights' 2,944 (2,880 padded), not TraceLens's guess of the
    hidden size (3,072: its report, run with --enable_pseudo_ops, gives the two GEMMs 4.832
    and 2.416 GFLOPs). FLOPs and bytes against TraceLens's unfused MoE formulas with the
    trace's sizes (reference.tracelens_moe), plus the weighted sum of each token's 4 outputs
    and the per-expert output it reads; its GPU time is the replayed kernels' of the layer,
    routing included (op_stats' total)."""
    m, k, experts, topk, n = capture_moe_shapes()
    assert (m, k, experts, topk, n) == (32, 3072, 32, 4, 2944)
    up = tracelens_moe("up", m, k, n, experts, topk, True, 2, 0.5, 2)
    down = tracelens_moe("down", m, k, n, experts, topk, False, 2, 0.5, 2)
    rows = query(paired, "SELECT flops, bytes, gpu_busy_ns, via_capture FROM op_perf "
                         "WHERE phase = 'decode' AND name = 'vllm::moe_forward'")
    (total,) = query(paired, "SELECT gpu_total_busy_ns FROM op_stats WHERE phase = 'decode' "
                             "AND name = 'vllm::moe_forward'")
    assert len(rows) == 24 and all(r["via_capture"] for r in rows)
    assert {r["flops"] for r in rows} == {up[0] + down[0] + m * k * (2 * topk - 1)}
    assert all(abs(r["bytes"] - (up[1] + down[1] + 2 * m * topk * k * 2)) <= 2 for r in rows)
    assert sum(r["gpu_busy_ns"] for r in rows) == total["gpu_total_busy_ns"]
