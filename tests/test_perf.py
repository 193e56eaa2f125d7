"""op_perf and its models: FLOPs and bytes per call against a pure-Python reference and
TraceLens's published figures, the device peaks and their checks, the roofline."""

import ast
import csv
import json
import math
import re
import tomllib
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.cli import cli

from .conftest import ROOT, SHARED, load_reference, require
from .reference import (ATTENTION, ELEMENT_BYTES, SEQUENCE_FIRST, op_family, op_model,
                        tracelens_moe)
from .vector_reference import INFERENCE_ATTENTION, inference_attention_model, iteration_sums

TRACELENS = Path(__file__).resolve().parent / "tracelens"
FALCON = "Falconsai_nsfw_image_detection__1016002.json.gz"
TRACES = {"h100": f"tracelens/h100/{FALCON}", "mi300": f"tracelens/mi300/{FALCON}",
          "resnet": "tracelens/mi300/resnet_act_checkpoint.json.gz",
          "sglang": "tracelens/inference/sglang_Qwen3-8B_prefilldecode.json.gz"}
PEAKS = tomllib.loads((ROOT / "sql" / "device_peaks.toml").read_text())["device"]
# A device of the user's, before the defaults: it takes the MI300X VF of the mi300 trace.
USER_PEAKS = """
[[device]]
name = "MI300X VF, as measured"
pattern = 'mi300x vf'
memory_tbs = 4.0
tflops = { bf16 = 1000.0 }
source = "a test"
"""


@pytest.fixture(scope="module")
def perf_warehouse(tmp_path_factory):
    """One warehouse of the traces with shapes: the Falconsai model on H100 and MI300X
    (TraceLens publishes its figures for them), ResNet's forward and backward on MI300X and
    SGLang's Qwen3-8B prefill on MI300X (TraceLens's figures too)."""
    paths = {run: require(SHARED / relative) for run, relative in TRACES.items()}
    root = tmp_path_factory.mktemp("perf") / "wh"
    runner = CliRunner()

    def tracewh(*args, expect=0):
        result = runner.invoke(cli, ["--warehouse", str(root), *map(str, args)])
        assert result.exit_code == expect, (result.output, result.exception)
        return result

    for run, path in paths.items():
        tracewh("ingest", path, "--run", run)
    peaks = root.parent / "peaks.toml"
    peaks.write_text(USER_PEAKS)
    tracewh.peaks = peaks
    tracewh.paths = paths
    return tracewh


def rows(tracewh, sql, *options):
    return json.loads(tracewh("query", "--format", "json", *options, sql).stdout)


@pytest.fixture(scope="module")
def every_row(perf_warehouse):
    """op_perf of the three runs, with the user's peaks file (asked once: it builds the op
    tree of each trace)."""
    return rows(perf_warehouse, "SELECT * FROM op_perf", "--peaks", perf_warehouse.peaks)


@pytest.fixture(scope="module")
def perf_rows(every_row):
    """op_perf of the two Falconsai runs."""
    return [row for row in every_row if row["run"] in ("h100", "mi300")]


def test_models_match_the_reference_on_every_call(perf_warehouse, every_row):
    """Every modeled call of the three traces, FLOPs and bytes, against the formulas written
    in Python; and no call the reference models is missing."""
    got = {(r["run"], r["event_index"]): (r["flops"], r["bytes"]) for r in every_row}
    launched = {(r["run"], r["event_index"]): r["gpu_self_busy_ns"] for r in rows(
        perf_warehouse, "SELECT run, event_index, gpu_self_busy_ns FROM op_calls")}
    expected = {}
    for run, path in perf_warehouse.paths.items():
        calls = []
        events = load_reference(path)["traceEvents"]
        iterations = [e for e in events if e.get("cat") == "user_annotation"
                      and iteration_sums(e["name"]) is not None]
        for index, event in enumerate(events):
            if event.get("cat") != "cpu_op":
                continue
            if event["name"] in INFERENCE_ATTENTION:
                model = inference_attention_model(
                    event["name"], event["args"], iteration_of(event, iterations), ELEMENT_BYTES)
            else:
                model = op_model(event["name"], event.get("args", {}))
            if model:
                expected[(run, index)] = model
                calls.append((index, event))
        for index in enclosing(calls, lambda i: launched[(run, i)]):
            del expected[(run, index)]
    assert got == expected
    names = {}
    for r in every_row:
        if r["family"] in ("gemm", "attention", "convolution"):
            names[(r["run"], r["name"])] = names.get((r["run"], r["name"]), 0) + 1
    assert names == {("h100", "aten::addmm"): 73, ("mi300", "aten::addmm"): 73,
                     ("h100", "aten::_scaled_dot_product_flash_attention"): 12,
                     ("mi300", "aten::_scaled_dot_product_flash_attention"): 12,
                     ("h100", "aten::convolution"): 1, ("mi300", "aten::convolution"): 1,
                     ("resnet", "aten::convolution"): 117,
                     ("resnet", "aten::convolution_backward"): 60,
                     ("resnet", "aten::addmm"): 3, ("resnet", "aten::mm"): 6,
                     ("sglang", "aten::mm"): 145, ("sglang", "aiter::mha_batch_prefill"): 36}


def iteration_of(event, iterations):
    """The name of the latest-started iteration annotation enclosing `event` on its thread."""
    around = [a for a in iterations if (a["pid"], a["tid"]) == (event["pid"], event["tid"])
              and a["ts"] <= event["ts"] < a["ts"] + a["dur"]]
    return max(around, key=lambda a: a["ts"])["name"] if around else None


def enclosing(calls, self_busy):
    """The modeled calls that launched nothing themselves around a modeled call of their
    family on their thread that did: op_perf leaves them out (the inner call computes)."""
    outer = set()
    for index, event in calls:
        start, end = event["ts"], event["ts"] + event.get("dur", 0)
        if self_busy(index) == 0 and any(
                other is not event and (other["pid"], other["tid"]) == (event["pid"], event["tid"])
                and op_family(other["name"]) == op_family(event["name"])
                and start <= other["ts"] and other["ts"] + other.get("dur", 0) <= end
                and self_busy(inner) > 0 for inner, other in calls):
            outer.add(index)
    return outer


def tracelens_rows(device, table):
    """TraceLens's rows: (name, Input Dims, calls, flops, bytes, mean TFLOPS/s, kernel µs)."""
    with open(TRACELENS / f"{device}_{table}.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            yield (row["name"], ast.literal_eval(row["Input Dims_first"]),
                   int(row["name_count"]), round(float(row["GFLOPS_first"]) * 1e9),
                   round(float(row["Data Moved (MB)_first"]) * 2 ** 20),
                   float(row["TFLOPS/s_mean"]), float(row["Kernel Time (µs)_sum"]))


# Where tracewh's model differs from TraceLens's on purpose (docs/perf-models.md), by op:
# (flops, bytes) tracewh adds, from the call's Input Dims and Input type.
DIFFERENCES = {
    # the cos/sin cache rows of the tokens (bf16, rot_dim 128) and the int64 positions
    "sgl_kernel::rotary_embedding": lambda dims, types: (0, dims[0][0] * (128 * 2 + 8)),
    # cumsum of int32 writes int64 (TraceLens: the input's type)
    "aten::cumsum": lambda dims, types: (0, dims[0][0] * 4 if types[0] == "int" else 0),
}
# Ops TraceLens lists that tracewh leaves out: a wrapper around the modeled op (one call per
# computation), or a vendor GEMM that launched nothing around the aten::mm it runs.
LEFT_OUT = {"aten::layer_norm", "aiter::gemm_a16w16"}
AGREEMENT = [("h100", "BinaryElementwise"), ("h100", "Normalization"),
             ("mi300", "BinaryElementwise"), ("mi300", "Normalization"),
             ("sglang", "GEMM"), ("sglang", "RMSNorm_fwd"), ("sglang", "RoPE_fwd"),
             ("sglang", "UnaryElementwise"), ("sglang", "Reduce_fwd"),
             ("sglang", "InferenceAttention_fwd")]


@pytest.fixture(scope="module")
def input_types(perf_warehouse):
    """{(run, event_index): the call's Input type} of every cpu_op of the traces."""
    return {(run, index): event.get("args", {}).get("Input type")
            for run, path in perf_warehouse.paths.items()
            for index, event in enumerate(load_reference(path)["traceEvents"])
            if event.get("cat") == "cpu_op"}


@pytest.mark.parametrize("run, table", AGREEMENT, ids=["-".join(case) for case in AGREEMENT])
def test_vector_models_agree_with_tracelens(every_row, input_types, run, table):
    """Every op and shape TraceLens lists for these traces: the same calls, FLOPs and bytes
    (but for the differences above, each a known figure), GPU time and mean TFLOPS/s as
    TraceLens measures them (1 ns per call of slack)."""
    path = TRACELENS / f"{run}_{table}.csv"
    with open(path, newline="") as handle:
        listed = list(csv.DictReader(handle))
    agreed = 0
    for row in listed:
        name, dims = row["name"], ast.literal_eval(row["Input Dims_first"])
        types = ast.literal_eval(row["Input type_first"])
        ours = [r for r in every_row if r["run"] == run and r["name"] == name
                and json.loads(r["shapes"]) == dims
                and input_types[(run, r["event_index"])] == types]
        if name in LEFT_OUT:
            assert ours == []
            continue
        calls = int(row["name_count"])
        flops = round(float(row["GFLOPS_first"]) * 1e9)
        moved = round(float(row["Data Moved (MB)_first"]) * 2 ** 20)
        extra_flops, extra_bytes = DIFFERENCES.get(name, lambda *_: (0, 0))(dims, types)
        assert len(ours) == calls, (name, dims)
        assert {(r["flops"], r["bytes"]) for r in ours} == {(flops + extra_flops,
                                                             moved + extra_bytes)}
        kernel_us = float(row["Kernel Time (µs)_sum"])
        assert abs(sum(r["gpu_busy_ns"] for r in ours) - kernel_us * 1000) <= calls
        if flops and not extra_flops:
            mean = sum(r["achieved_tflops"] for r in ours) / calls
            assert mean == pytest.approx(float(row["TFLOPS/s_mean"]), rel=1e-3)
        agreed += calls
    assert agreed > 0


@pytest.mark.parametrize("device", ["h100", "mi300"])
def test_category_stats_agree_with_tracelens(perf_warehouse, device):
    """op_category_stats against TraceLens's ops_summary_by_category: the same calls and
    direct kernel time per category. TraceLens files flash attention (its kernel launched by
    aten::_flash_attention_forward, an op it has no category for) under other; tracewh under
    SDPA."""
    ours = {r["category"]: r for r in rows(perf_warehouse, "SELECT * FROM op_category_stats "
                                                           f"WHERE run = '{device}'")}
    names = {"GEMM": ["GEMM"], "CONV_fwd": ["CONV"], "elementwise": ["elementwise"],
             "NORM_fwd": ["norm"], "other": ["SDPA", "other"]}
    with open(TRACELENS / f"{device}_ops_summary_by_category.csv", newline="") as handle:
        listed = list(csv.DictReader(handle))
    assert sorted(c for row in listed for c in names[row["op category"]]) == sorted(ours)
    for row in listed:
        mine = [ours[c] for c in names[row["op category"]]]
        assert sum(r["calls"] for r in mine) == int(row["Count"])
        busy = sum(r["gpu_self_busy_ns"] for r in mine)
        assert abs(busy - float(row["total_direct_kernel_time_ms"]) * 1e6) <= int(row["Count"])
    assert sum(r["share"] for r in ours.values()) == pytest.approx(1)
    assert ours["GEMM"]["share"] == pytest.approx(float(listed[0]["Percentage (%)"]) / 100,
                                                  rel=1e-4)


def calls_like(perf_rows, run, name, dims):
    return [r for r in perf_rows
            if r["run"] == run and r["name"] == name and json.loads(r["shapes"]) == dims]


@pytest.mark.parametrize("device", ["h100", "mi300"])
def test_gemm_and_attention_agree_with_tracelens(perf_rows, device):
    """Every GEMM and attention call TraceLens lists (73 addmm and 12 flash attention calls
    per trace): the same FLOPs, bytes and calls; GPU time and mean TFLOPS/s as TraceLens
    measures them (its µs are floats: 1 ns per call of slack)."""
    agreed = 0
    for table in ("GEMM", "SDPA_fwd"):
        for name, dims, calls, flops, moved, tflops, kernel_us in tracelens_rows(device, table):
            ours = calls_like(perf_rows, device, name, dims)
            assert len(ours) == calls
            assert {(r["flops"], r["bytes"]) for r in ours} == {(flops, moved)}
            busy = sum(r["gpu_busy_ns"] for r in ours)
            assert abs(busy - kernel_us * 1000) <= calls
            mean = sum(r["achieved_tflops"] for r in ours) / calls
            assert mean == pytest.approx(tflops, rel=1e-4)
            agreed += calls
    assert agreed == 85


@pytest.mark.parametrize("device", ["h100", "mi300"])
def test_convolution_counts_the_bias_tracelens_drops(perf_rows, device):
    """TraceLens takes a bias only when aten::convolution has 3 operands, which it never has
    (9): tracewh adds the bias's FLOPs (one per output element) and bytes (768 bf16)."""
    (name, dims, calls, flops, moved, _, kernel_us), = tracelens_rows(device, "CONV_fwd")
    (ours,) = calls_like(perf_rows, device, name, dims)
    output_elements = 4 * 768 * 14 * 14  # 224 / 16 = 14 per side, 768 channels, batch 4
    assert (ours["flops"] - flops, ours["bytes"] - moved) == (output_elements, 768 * 2)
    assert abs(ours["gpu_busy_ns"] - kernel_us * 1000) <= 1


def peak(name, dtype):
    """(peak TFLOPS, memory TB/s) of the default device `name`, read from the TOML."""
    (device,) = [d for d in PEAKS if d["name"] == name]
    return device["tflops"][dtype], device["memory_tbs"]


def test_roofline_against_the_device_peaks(perf_rows):
    """H100 calls against the H100 SXM5's dense bf16 peak and HBM3 bandwidth; the MI300X VF
    against the user's --peaks device, which comes before the defaults."""
    for row in perf_rows:
        device = "NVIDIA H100 SXM5" if row["run"] == "h100" else "MI300X VF, as measured"
        tflops, tbs = (peak(device, "bf16") if row["run"] == "h100" else (1000.0, 4.0))
        assert (row["peak_device"], row["peak_tflops"], row["memory_tbs"]) == (device, tflops,
                                                                             tbs)
        compute_ns, memory_ns = row["flops"] / (tflops * 1e3), row["bytes"] / (tbs * 1e3)
        roofline = max(compute_ns, memory_ns)
        assert row["roofline_ns"] == math.ceil(roofline)
        assert row["bound"] == ("compute" if compute_ns >= memory_ns else "memory")
        assert row["pct_of_roofline"] == pytest.approx(100 * roofline / row["gpu_busy_ns"])
        assert row["achieved_tflops"] == pytest.approx(row["flops"] / row["gpu_busy_ns"] / 1e3)
        assert row["achieved_tbs"] == pytest.approx(row["bytes"] / row["gpu_busy_ns"] / 1e3)
        assert row["intensity"] == pytest.approx(row["flops"] / row["bytes"])
    assert {r["device"] for r in perf_rows} == {"NVIDIA H100 80GB HBM3",
                                                "AMD Instinct MI300X VF"}
    # The H100's best GEMM: 788x768 by 768x3072 at about 28% of the dense bf16 peak.
    best = max((r for r in perf_rows if r["run"] == "h100" and r["family"] == "gemm"),
               key=lambda r: r["achieved_tflops"])
    assert json.loads(best["shapes"])[1:3] == [[788, 3072], [3072, 768]]
    assert 270 < best["achieved_tflops"] < 290 and best["bound"] == "compute"


def first_match(device_name):
    """The default device whose pattern first matches the lower-cased name (Python's re)."""
    return next((d["name"] for d in PEAKS if re.search(d["pattern"], device_name.lower())),
                None)


def test_default_peaks_name_the_products_of_real_device_names():
    """Device names as deviceProperties writes them (the shared traces', and the other
    products') find their product."""
    names = {"NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM5", "NVIDIA H100 PCIe": "NVIDIA H100 PCIe",
             "NVIDIA H100 NVL": "NVIDIA H100 NVL", "NVIDIA H800": "NVIDIA H800 SXM5",
             "NVIDIA H800 PCIe": "NVIDIA H800 PCIe", "NVIDIA H200": "NVIDIA H200 SXM",
             "NVIDIA H200 NVL": "NVIDIA H200 NVL", "NVIDIA A100-SXM4-80GB": "NVIDIA A100 80GB SXM",
             "NVIDIA A100 80GB PCIe": "NVIDIA A100 80GB PCIe",
             "NVIDIA A100-PG509-200": "NVIDIA A100 40GB", "NVIDIA B200": "NVIDIA B200",
             "AMD Instinct MI300X": "AMD Instinct MI300X",
             "AMD Instinct MI300X VF": "AMD Instinct MI300X",
             "AMD Instinct MI250X": "AMD Instinct MI250X",
             "AMD Instinct MI250X / MI250": "AMD Instinct MI250",
             "AMD Instinct MI210": "AMD Instinct MI210", "Tesla V100-SXM2-32GB": "NVIDIA V100 SXM2",
             "Tesla V100-PCIE-16GB": "NVIDIA V100 PCIe",
             "Tesla V100S-PCIE-32GB": "NVIDIA V100S PCIe",
             "Quadro GP100": None}
    assert {name: first_match(name) for name in names} == names
    assert all(d["source"] and d["memory_tbs"] > 0 for d in PEAKS)


BAD_PEAKS = {
    "not TOML": ("[[device]\n", "cannot read device peaks"),
    "unknown table": ("[[gpu]]\nname = 'x'\n", "unknown key 'gpu': a device peaks file holds "
                                               "[[device]] tables"),
    "unknown key": (USER_PEAKS.replace("memory_tbs", "memory_tb"),
                    "[[device]] #1: unknown key 'memory_tb'"),
    "no tflops": ("\n".join(line for line in USER_PEAKS.splitlines()
                            if not line.startswith("tflops")), "needs 'tflops'"),
    "unknown dtype": (USER_PEAKS.replace("bf16", "bfloat16"),
                      "tflops: unknown key 'bfloat16': use fp64, fp32"),
    "zero": (USER_PEAKS.replace("1000.0", "0"), "'tflops.bf16' must be a number above 0"),
    "text number": (USER_PEAKS.replace("4.0", "'4'"), "'memory_tbs' must be a number above 0"),
    "lookahead": (USER_PEAKS.replace("mi300x vf", "mi300(?=x)"), "bad pattern"),
}


@pytest.mark.parametrize("case", sorted(BAD_PEAKS))
def test_a_bad_peaks_file_is_one_error_line(perf_warehouse, case, tmp_path):
    text, problem = BAD_PEAKS[case]
    path = tmp_path / "peaks.toml"
    path.write_text(text)
    result = perf_warehouse("query", "--peaks", path, "SELECT 1", expect=2)
    assert result.output.count("\n") == 1 and str(path) in result.output
    assert problem in result.output


# Synthetic calls: the SQL models against the reference on random shapes.
TYPES = ["c10::BFloat16", "c10::Half", "float"]
BF16, FP8 = "c10::BFloat16", "c10::Float8_e4m3fn"
dim = st.integers(1, 4096)


def model_in_sql(connection, name, args):
    """(flops, bytes) the SQL models give a cpu_op call of `name` with `args`, or None."""
    connection.execute("DELETE FROM cpu_ops")
    connection.execute("INSERT INTO cpu_ops (run, phase, rank, trace_id, event_index, name, "
                       "category, args) VALUES ('r', 'p', 0, 't', 0, ?, 'cpu_op', ?)",
                       [name, json.dumps(args)])
    found = connection.execute("SELECT flops, bytes FROM _op_models").fetchall()
    return found[0] if found else None


@pytest.fixture(scope="module")
def library():
    """The models' SQL modules (_dtypes, _op_*models) over a cpu_ops table of
    the columns they read: each example is one call, asked of the models alone (op_perf
    would build the op tree around it too, a second per query)."""
    with duckdb.connect() as connection:
        connection.execute("CREATE TABLE cpu_ops (run VARCHAR, phase VARCHAR, rank INTEGER, "
                           "trace_id VARCHAR, event_index BIGINT, name VARCHAR, "
                           "category VARCHAR, args VARCHAR, ts_ns BIGINT, dur_ns BIGINT, "
                           "pid VARCHAR, tid VARCHAR)")
        # no graph launch replays these calls: the replay's tables are empty
        connection.execute("CREATE TABLE runtime (run VARCHAR, phase VARCHAR, rank INTEGER, "
                           "trace_id VARCHAR, event_index BIGINT, ts_ns BIGINT, pid VARCHAR, "
                           "tid VARCHAR)")
        connection.execute("CREATE TABLE graph_replay_kernels (run VARCHAR, phase VARCHAR, "
                           "rank INTEGER, trace_id VARCHAR, launch_event_index BIGINT, "
                           "capture_phase VARCHAR, capture_trace_id VARCHAR, "
                           "captured_launch_event_index BIGINT)")
        for module in ("_dtypes", "_op_vector_models", "_op_inference_attention_models",
                       "_op_triton_models", "_op_matrix_models", "_op_moe_layer_models",
                       "_op_models"):
            connection.execute((ROOT / "sql" / f"{module}.sql").read_text())
        yield connection


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                             "aten::_scaled_mm"]),
       batch=dim, m=dim, n=dim, k=dim, dtype=st.sampled_from(TYPES + ["c10::Float8_e4m3fn"]),
       bias=st.sampled_from(["none", "row", "full"]))
def test_gemm_model_matches_reference(library, name, batch, m, n, k, dtype, bias):
    batched = name in ("aten::bmm", "aten::baddbmm")
    lead = [batch] if batched else []
    a, b = lead + [m, k], lead + [k, n]
    bias_dims = {"none": [], "row": [n], "full": lead + [m, n]}[bias]
    bias_type = dtype if bias != "none" else ""
    if name in ("aten::addmm", "aten::baddbmm"):
        dims, types = [bias_dims, a, b, [], []], [bias_type, dtype, dtype, "Scalar", "Scalar"]
    elif name == "aten::_scaled_mm":
        dims = [a, b, [], [], bias_dims, [], [], []]
        types = [dtype, dtype, "float", "float", bias_type, "", "", "Scalar"]
    else:
        dims, types = [a, b], [dtype, dtype]
    args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": [""] * len(dims)}
    assert model_in_sql(library, name, args) == op_model(name, args)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["aten::_scaled_dot_product_flash_attention",
                             "aten::_scaled_dot_product_efficient_attention",
                             "aten::_scaled_dot_product_flash_attention_backward",
                             "flash_attn::_flash_attn_forward", "aiter::mha_fwd",
                             "flash_attn::_flash_attn_backward", "aiter::mha_bwd"]),
       batch=st.integers(1, 16), kv_heads=st.integers(1, 16), groups=st.integers(1, 8),
       n_q=dim, n_kv=dim, square=st.booleans(), head_dim=st.sampled_from([64, 96, 128, 192]),
       causal=st.booleans(), dtype=st.sampled_from(TYPES))
def test_attention_model_matches_reference(library, name, batch, kv_heads, groups, n_q, n_kv,
                                           square, head_dim, causal, dtype):
    n_kv = n_q if square else n_kv
    q = [batch, kv_heads * groups, n_q, head_dim]
    kv = [batch, kv_heads, n_kv, head_dim]
    backward = name.endswith(("_backward", "_bwd"))
    causal_at = ATTENTION[name][2]
    if name in SEQUENCE_FIRST:
        q, kv = [batch, n_q, kv_heads * groups, head_dim], [batch, n_kv, kv_heads, head_dim]
    width = 15 if backward else 8
    dims = ([q] if backward else []) + [q, kv, kv]
    dims += [[]] * (width - len(dims))
    types = [dtype] * (4 if backward else 3) + ["Scalar"] * (width - (4 if backward else 3))
    concrete = [""] * width
    concrete[causal_at] = str(causal)
    args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
    expected = op_model(name, args)
    assert model_in_sql(library, name, args) == expected
    if causal and square:  # causal halving: half the non-causal matmul FLOPs
        concrete[causal_at] = "False"
        full = op_model(name, args)
        heads_reduced = batch * n_kv * 2 * head_dim * (groups - 1) if backward else 0
        assert (full[0] - heads_reduced) == 2 * (expected[0] - heads_reduced)


def step_annotation(style, tokens, counts):
    """A detailed step annotation of `style` holding the eight sums `counts` (ATOM's names
    one side: prefill the context terms, decode the generation terms)."""
    c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk = counts
    if style == "vllm":
        return ("execute_{}_context_3(sq{}sk{}sqsq{}sqsk{})_generation_2(sq{}sk{}sqsq{}sqsk{})"
                .format(tokens, *counts))
    if style == "sglang":
        return (f"step[MIXED bs=5 c=3 g=2 c_sq={c_sq} c_sk={c_sk} c_sqsq={c_sqsq} "
                f"c_sqsk={c_sqsk} g_sq={g_sq} g_sk={g_sk} g_sqsq={g_sqsq} g_sqsk={g_sqsk}]")
    if style == "atom_prefill":
        return f"prefill[bs=3 tok={c_sq} ctx=[7803, 6918] sqsq={c_sqsq} sqsk={c_sqsk} sk={c_sk}]"
    return f"decode[bs=2 tok={g_sq} d=2 sqsq={g_sqsq} sqsk={g_sqsk} sk={g_sk}]"


def attention_call(name, tokens, heads_q, heads_kv, head_dim, kv_type, paged, window):
    """The args of a call of inference attention op `name` laid out as its kernel takes
    them: K (and V) as a [tokens, Hkv, d] tensor or a paged cache."""
    q_at, k_at, v_at, hkv_dim, _, window_at = INFERENCE_ATTENTION[name]
    width = max(q_at, k_at, v_at or 0, window_at or 0) + 2
    dims, types = [[]] * width, ["Scalar"] * width
    if hkv_dim == 1:  # vLLM's cache layout [blocks, Hkv, d / x, block size, x]
        kv = [tokens, heads_kv, head_dim // 8, 16, 8]
    else:
        kv = [tokens, 16, heads_kv, head_dim] if paged else [tokens * 4, heads_kv, head_dim]
    dims[q_at], types[q_at] = [tokens, heads_q, head_dim], "c10::BFloat16"
    dims[k_at], types[k_at] = kv, kv_type
    if v_at is not None:
        dims[v_at], types[v_at] = kv, kv_type
    concrete = [""] * width
    if window_at is not None:
        concrete[window_at] = str(window)
    return {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(INFERENCE_ATTENTION)), tokens=dim, heads_kv=st.integers(1, 16),
       groups=st.integers(1, 8), head_dim=st.sampled_from([64, 128, 192]),
       counts=st.lists(st.integers(0, 10 ** 7), min_size=8, max_size=8).map(
           # consistent lengths: sk >= sq and sqsk >= sqsq (a request sees its own tokens)
           lambda c: [c[0], c[0] + c[1], c[2], c[2] + c[3], c[4], c[4] + c[5], c[6], c[6] + c[7]]),
       kv_type=st.sampled_from(TYPES + ["c10::Float8_e4m3fn"]), inside=st.booleans(),
       style=st.sampled_from(["vllm", "sglang", "atom_prefill", "atom_decode"]),
       paged=st.booleans(), window=st.sampled_from([-1, 0, 128, 4096]))
def test_inference_attention_reads_the_iteration_annotation(library, name, tokens, heads_kv,
                                                            groups, head_dim, counts, kv_type,
                                                            inside, style, paged, window):
    """Sequence lengths from the enclosing detailed step annotation on the call's thread
    (vLLM's, SGLang's or ATOM's), heads from the shapes in the op's layout (paged caches,
    decode-only kernels, a sliding window); a call outside it is not modeled."""
    annotation = step_annotation(style, tokens, counts)
    args = attention_call(name, tokens, heads_kv * groups, heads_kv, head_dim, kv_type, paged,
                          window)
    library.execute("DELETE FROM cpu_ops")
    library.execute("INSERT INTO cpu_ops VALUES ('r', 'p', 0, 't', 0, ?, 'user_annotation', "
                    "'{}', 1000, 500, '1', '1')", [annotation])
    library.execute("INSERT INTO cpu_ops VALUES ('r', 'p', 0, 't', 1, ?, 'cpu_op', ?, ?, 10, "
                    "'1', '1')", [name, json.dumps(args), 1200 if inside else 1500])
    found = library.execute("SELECT flops, bytes FROM _op_models").fetchall()
    expected = inference_attention_model(name, args, annotation, ELEMENT_BYTES)
    assert found == ([expected] if inside else [])


def tracelens_inference_attention(heads_q, heads_kv, d_qk, d_v, sums, q_bytes, kv_bytes):
    """TraceLens's InferenceAttention.flops_func and bytes_func (B = 1)."""
    c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, _, g_sqsk = sums
    flops = (heads_q * 2 * c_sqsk * d_qk + heads_q * 2 * c_sqsk * d_v
             - heads_q * c_sqsq * d_qk - heads_q * c_sqsq * d_v
             + heads_q * 2 * g_sqsk * d_qk + heads_q * 2 * g_sqsk * d_v)
    new = (c_sq + g_sq) * (heads_q * d_qk + heads_q * d_v + heads_kv * d_qk + heads_kv * d_v)
    cached = ((c_sk - c_sq) + (g_sk - g_sq)) * (heads_kv * d_qk + heads_kv * d_v)
    return flops, new * q_bytes + cached * kv_bytes


@pytest.mark.parametrize("name, dims, types, concrete, annotation, expected", [
    # SGLang's Qwen3-8B decode (TraceLens's tests/traces/inference/sglang_decode,
    # InferenceAttention_fwd.csv: 0.53714944 GFLOPs, 128.56640625 MB per call)
    ("sglang_profiler::attention_paged_attention_ragged",
     [[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128],
      [33], [20971520], [4096], [], [1], [1], []],
     [BF16, "unsigned char", BF16, BF16, BF16, "int", "int", "int", "", "float", "float", ""],
     [""] * 12, "step[DECODE bs=32 g_sq=32 g_sqsq=32 g_sqsk=32785 g_sk=32785]",
     tracelens_inference_attention(32, 8, 128, 128, (0, 0, 0, 0, 32, 32785, 32, 32785), 2, 2)),
    # paged decode over a FP8 cache [blocks, Hkv, d / x, block, x], a 128-token window: the
    # context terms dropped, each of the 64 requests attends to at most 128 keys
    ("aiter::pa_decode_gluon",
     [[64, 64, 128], [64, 64, 128], [4096, 8, 16, 16, 8], [4096, 8, 128, 16]] + [[]] * 17,
     [BF16, BF16, FP8, FP8] + [""] * 17, [""] * 19 + ["128", ""],
     "execute_70_context_1(sq6sk6sqsq36sqsk36)_generation_64(sq64sk131072sqsq64sqsk131072)",
     tracelens_inference_attention(64, 8, 128, 128, (0, 0, 0, 0, 64, 64 * 128, 64, 64 * 128),
                                   2, 1)),
    # MLA decode: one latent K/V head of 576 (512 + 64 rope) dimensions, read as V too
    ("aiter::mla_decode_stage1_asm_fwd", [[16, 128, 576], [2048, 64, 1, 576], [16], [17]],
     [BF16, BF16, "int", "int"], [""] * 4,
     "decode[bs=16 tok=16 d=16 sqsq=16 sqsk=65536 sk=65536]",
     tracelens_inference_attention(128, 1, 576, 576, (0, 0, 0, 0, 16, 65536, 16, 65536), 2, 2)),
])
def test_paged_and_mla_attention_match_tracelens(library, name, dims, types, concrete,
                                                 annotation, expected):
    """Constructed calls (no trace in ../shared runs these kernels) against TraceLens's
    InferenceAttention formulas written out above, with its subclasses' layouts."""
    args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
    library.execute("DELETE FROM cpu_ops")
    library.execute("INSERT INTO cpu_ops VALUES ('r', 'p', 0, 't', 0, ?, 'user_annotation', "
                    "'{}', 1000, 500, '1', '1')", [annotation])
    library.execute("INSERT INTO cpu_ops VALUES ('r', 'p', 0, 't', 1, ?, 'cpu_op', ?, 1200, "
                    "10, '1', '1')", [name, json.dumps(args)])
    assert library.execute("SELECT flops, bytes FROM _op_models").fetchall() == [expected]


@pytest.mark.parametrize("name, extra, expected", [
    ("triton_poi_fused_add_cos_sin_0", {"kernel_num_gb": 0.0012, "kernel_flop": 300},
     (300, 1_200_000)),
    ("triton_red_fused_sum_1", {"kernel_num_gb": 2.5e-05}, (None, 25_000)),
    ("triton_per_fused_softmax_2", {}, None),  # no byte count: not modeled
    ("triton_poi_fused_3", {"kernel_num_gb": "x"}, None),
    ("triton_tem_fused_mm_4", {"kernel_num_gb": 0.5}, None),  # a template (a GEMM): not these
])
def test_triton_kernels_take_inductors_own_figures(library, name, extra, expected):
    """torch.compile's kernels: bytes from kernel_num_gb (10^9 bytes), FLOPs from
    kernel_flop (NULL without), as PyTorch writes them into the call's args."""
    args = {"Input Dims": [[10, 10], [10, 10], [10, 10], []],
            "Input type": ["float", "float", "float", "Scalar"], **extra}
    assert model_in_sql(library, name, args) == expected


# MoE, grouped and vendor GEMMs, FlashAttention-3: no trace in ../shared runs them with their
# weights among the shapes, so each is a constructed call against TraceLens's formulas
# (PerfModel/perf_model.py, extensions/moe_perf_model_extensions.py at commit 171dd747)
# written out here.


@pytest.mark.parametrize("name, dims, types, concrete, expected", [
    # TraceLens's own test event (tests/test_perfmodel_extensions.py, MOE_FUSED_EVENT)
    ("vllm::rocm_aiter_fused_moe", [[32, 4096], [8, 14336, 4096], [8, 4096, 7168], [32, 2]],
     [BF16, FP8, FP8, "float"], [], tracelens_moe("fused", 32, 4096, 7168, 8, 2, True, 2, 1, 2)),
    ("aiter::fmoe_fp8_blockscale_g1u1",
     [[512, 7168], [512, 7168], [256, 4096, 7168], [256, 7168, 2048], [512, 8], [512, 8]],
     [BF16, FP8, FP8, FP8, "float", "int"], ["", "", "", "", "", "", "", "", "8"],
     tracelens_moe("fused", 512, 7168, 2048, 256, 8, True, 1, 1, 2)),
    ("aiter::ck_moe_stage1",
     [[64, 2048], [64, 1536, 2048], [64, 2048, 768], [1024], [16], [1], [64, 6, 768]],
     [BF16, BF16, BF16, "int", "int", "int", BF16], [],
     tracelens_moe("up", 64, 2048, 768, 64, 6, True, 2, 2, 2)),
    ("aiter::ck_moe_stage2",
     [[64, 6, 768], [64, 1536, 2048], [64, 2048, 768], [1024], [16], [1], [64, 2048]],
     [BF16, BF16, BF16, "int", "int", "int", BF16], [],
     tracelens_moe("down", 64, 2048, 768, 64, 6, False, 2, 2, 2)),
    # grouped GEMM, W [G, K, N] and [G, N, K]: 2 M K N; (M K + G K N + M N) x 2 bytes
    ("primus_turbo::grouped_gemm", [[4096, 1024], [8, 1024, 2816]], [BF16, BF16], [],
     (2 * 4096 * 1024 * 2816, (4096 * 1024 + 8 * 1024 * 2816 + 4096 * 2816) * 2)),
    ("primus_turbo_cpp_extension::ck_grouped_gemm", [[4096, 1024], [8, 2816, 1024]],
     [BF16, BF16], [], (2 * 4096 * 1024 * 2816, (4096 * 1024 + 8 * 1024 * 2816 + 4096 * 2816) * 2)),
    # TransformerEngine: A [K, M] (transa 0), B [N, K]... M 512, K 1024, N 2048 with a bias
    ("tex_ts::te_gemm_ts",
     [[1024, 512]] + [[]] * 4 + [[2048, 1024]] + [[]] * 4 + [[2048, 512]] + [[]] * 7 + [[2048]],
     [BF16] + [""] * 4 + [BF16] + [""] * 4 + [BF16] + [""] * 7 + [BF16],
     [""] * 4 + ["0"] + [""] * 4 + ["0"] + [""] * 9,
     (2 * 512 * 2048 * 1024 + 512 * 2048,
      (512 * 1024 + 1024 * 2048 + 512 * 2048 + 2048) * 2)),
    ("tex_ts::te_gemm_ts",
     [[512, 1024]] + [[]] * 4 + [[1024, 2048]] + [[]] * 4 + [[2048, 512]] + [[]] * 7 + [[]],
     [BF16] + [""] * 4 + [BF16] + [""] * 4 + [BF16] + [""] * 8,
     [""] * 4 + ["1"] + [""] * 4 + ["1"] + [""] * 9,
     (2 * 512 * 2048 * 1024, (512 * 1024 + 1024 * 2048 + 512 * 2048) * 2)),
    # hipBLASLt FP8: A [M, K], B [K, N], bf16 out; transC swaps them
    ("primus_turbo_cpp_extension::hipblaslt_gemm_fp8",
     [[256, 4096], [], [4096, 1024], [], [], [], [], [], []], [FP8, "float", FP8, "float"],
     ["", "", "", "", "5", "False", "False", "False", ""],
     (2 * 256 * 1024 * 4096, 256 * 4096 + 4096 * 1024 + 256 * 1024 * 2)),
    ("primus_turbo::hipblaslt_gemm_fp8",
     [[1024, 4096], [], [4096, 256], [], [], [], [], [], []], [FP8, "float", FP8, "float"],
     ["", "", "", "", "5", "False", "False", "True", ""],
     (2 * 256 * 1024 * 4096, 256 * 4096 + 4096 * 1024 + 256 * 1024 * 2)),
    # FlashAttention-3, [B, N, H, d], causal (Concrete Input 24) and square: halved
    ("flash_attn_3::fwd", [[2, 1024, 16, 128], [2, 1024, 4, 128], [2, 1024, 4, 128]],
     [BF16, BF16, BF16], [""] * 24 + ["True"],
     (2 * 16 * 1024 * 1024 * 256,
      (2 * 1024 * 16 * 128 * 2 + 2 * 2 * 1024 * 4 * 128) * 2)),
    # vllm::moe_forward's shapes are the tokens and the router logits: without the ops it
    # runs (its top-k, its weights) it is not modeled (_op_moe_layer_models)
    ("vllm::moe_forward", [[32, 3072], [32, 32], [], []], [BF16, BF16, "", ""], [], None),
])
def test_matrix_models_match_tracelens_formulas(library, name, dims, types, concrete,
                                                expected):
    args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
    assert model_in_sql(library, name, args) == expected


def moe_layer_reference(m, k, n, experts, topk, gated, w_bytes):
    """vllm::moe_forward as TraceLens models its stages (up and gate, down: the unfused
    formulas, weights of w_bytes per element) plus the weighted sum of each token's t
    outputs: M K (2 t - 1) FLOPs, and the down stage's per-expert output written and read
    (2 M t K in bf16), which TraceLens's down stage does not count."""
    up_flops, up_bytes = tracelens_moe("up", m, k, n, experts, topk, gated, 2, w_bytes, 2)
    down_flops, down_bytes = tracelens_moe("down", m, k, n, experts, topk, False, 2, w_bytes, 2)
    return (up_flops + down_flops + m * k * (2 * topk - 1),
            up_bytes + down_bytes + 2 * m * topk * k * 2)


def layer_call(library, layer, inner):
    """A call of `layer` (Input Dims, Input type) at [1000, 2000) on thread 1 running the
    ops `inner` [(name, Input Dims, Input type, Concrete Inputs)] in order; its models."""
    library.execute("DELETE FROM cpu_ops")
    rows = [("vllm::moe_forward", *layer, [""] * len(layer[0]), 1000, 1000)]
    rows += [(name, dims, types, concrete, 1100 + 100 * i, 50)
             for i, (name, dims, types, concrete) in enumerate(inner)]
    for index, (name, dims, types, concrete, ts, dur) in enumerate(rows):
        args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
        library.execute("INSERT INTO cpu_ops VALUES ('r', 'p', 0, 't', ?, ?, 'cpu_op', ?, ?, ?, "
                        "'1', '1')", [index, name, json.dumps(args), ts, dur])
    return library.execute("SELECT name, flops, bytes FROM _op_models").fetchall()


TOPK = ("TopK", [[64, 8], [], [], [], [], [], []], [BF16] + ["Scalar"] * 4 + ["", ""],
        ["", "2", "True", "1", "True", "", ""])


@pytest.mark.parametrize("inner, expected", [
    # vLLM's fused_moe, bf16 weights N-major: w1 [E, 2N, K], w2 [E, K, N]
    ([TOPK, ("aten::view", [[8, 2 * 1408, 2048], []], [BF16, "ScalarList"], ["", ""]),
      ("aten::view", [[8, 2048, 1408], []], [BF16, "ScalarList"], ["", ""])],
     moe_layer_reference(64, 2048, 1408, 8, 2, True, 2)),
    # Triton's matmul_ogs, MXFP4 weights K-major two to a byte: w1 [E, K/2, N], w2 [E, N/2, K]
    # (not gated: w1 holds N)
    ([TOPK, ("aten::view", [[8, 1024, 1408], []], ["unsigned char", "ScalarList"], ["", ""]),
      ("aten::view", [[8, 704, 2048], []], ["unsigned char", "ScalarList"], ["", ""])],
     moe_layer_reference(64, 2048, 1408, 8, 2, False, 0.5)),
    # no top-k among the ops it runs, or one weight only: not modeled
    ([("aten::view", [[8, 2816, 2048], []], [BF16, "ScalarList"], ["", ""]),
      ("aten::view", [[8, 2048, 1408], []], [BF16, "ScalarList"], ["", ""])], None),
    ([TOPK, ("aten::view", [[8, 2816, 2048], []], [BF16, "ScalarList"], ["", ""])], None),
])
def test_moe_layer_reads_its_weights_from_the_ops_it_runs(library, inner, expected):
    """vllm::moe_forward (64 tokens of 2048, 8 experts): t from the TopK op it runs, the
    intermediate size and the weights' size from the weights it views, in either layout;
    against TraceLens's MoE formulas with that intermediate size (TraceLens assumes it equals
    the hidden size)."""
    found = layer_call(library, ([[64, 2048], [64, 8], [], []], [BF16, BF16, "", ""]), inner)
    moe = [(flops, moved) for name, flops, moved in found if name == "vllm::moe_forward"]
    if expected is None:
        assert moe == []
    else:
        ((flops, moved),) = moe
        assert flops == expected[0] and abs(moved - expected[1]) <= 2


conv_case = st.integers(1, 3).flatmap(lambda spatial: st.fixed_dictionaries({
    "spatial": st.just(spatial),
    "size": st.lists(st.integers(8, 64), min_size=spatial, max_size=spatial),
    "kernel": st.lists(st.integers(1, 5), min_size=spatial, max_size=spatial),
    "stride": st.lists(st.integers(1, 3), min_size=1, max_size=spatial),
    "padding": st.lists(st.integers(0, 2), min_size=1, max_size=spatial),
    "dilation": st.integers(1, 2),
    "groups": st.sampled_from([1, 2, 4]),
    "transposed": st.booleans(),
    "bias": st.booleans(),
    "batch": st.integers(1, 8),
    "channels": st.sampled_from([4, 8, 16]),
    "dtype": st.sampled_from(TYPES),
}))


def _int_list(values, spatial):
    """The profiler's text of an int list argument: one value stands for every dimension."""
    return "[" + ", ".join(map(str, values if len(values) == spatial else values[:1])) + "]"


@settings(max_examples=15, deadline=None)
@given(case=conv_case)
def test_convolution_models_match_reference(library, case):
    """Forward against the reference; backward too, and asking for both gradients costs
    twice the forward's FLOPs (input and weight gradients are each a convolution as large)."""
    spatial, groups, channels = case["spatial"], case["groups"], case["channels"]
    x = [case["batch"], channels] + case["size"]
    w = ([channels, channels // groups] if case["transposed"]
         else [channels * 2, channels // groups]) + case["kernel"]
    params = [_int_list(case["stride"], spatial), _int_list(case["padding"], spatial),
              f"[{case['dilation']}]", str(case["transposed"]), "[0]", str(groups)]
    dtype = case["dtype"]
    forward = {"Input Dims": [x, w, [w[1] * groups if case["transposed"] else w[0]]
                              if case["bias"] else []] + [[]] * 6,
               "Input type": [dtype, dtype, dtype if case["bias"] else ""] + ["Scalar"] * 6,
               "Concrete Inputs": ["", "", ""] + params}
    result = op_model("aten::convolution", forward)
    assert model_in_sql(library, "aten::convolution", forward) == result
    unbiased = dict(forward, **{"Input Dims": [x, w, []] + [[]] * 6,
                                "Input type": [dtype, dtype, ""] + ["Scalar"] * 6})
    conv_flops = op_model("aten::convolution", unbiased)[0]
    grad_out = _output_shape(x, w, case, spatial)
    for mask in ("[True, True, False]", "[False, True, True]"):
        backward = {"Input Dims": [grad_out, x, w, []] + [[]] * 7,
                    "Input type": [dtype] * 3 + [""] + ["Scalar"] * 7,
                    "Concrete Inputs": ["", "", "", "[0]"] + params[:5] + [str(groups), mask]}
        expected = op_model("aten::convolution_backward", backward)
        assert model_in_sql(library, "aten::convolution_backward", backward) == expected
        if mask == "[True, True, False]":
            assert expected[0] == 2 * conv_flops


def _output_shape(x, w, case, spatial):
    """The forward's output shape, for the backward's grad_output (written out here)."""
    def per_dim(values, j):
        return values[j] if len(values) == spatial else values[0]

    out = []
    for j in range(spatial):
        stride, pad = per_dim(case["stride"], j), per_dim(case["padding"], j)
        size, kernel, dilation = x[2 + j], w[2 + j], case["dilation"]
        out.append((size - 1) * stride - 2 * pad + dilation * (kernel - 1) + 1
                   if case["transposed"]
                   else (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1)
    channels = w[1] * case["groups"] if case["transposed"] else w[0]
    return [x[0], channels] + out


def test_report_lists_the_top_gemms_against_the_peak(perf_warehouse, perf_rows):
    """The report's GEMM section: the shapes by GPU time over the run, each group's TFLOPS/s
    its calls' FLOPs over their time, against the H100 SXM5's 989.5 dense bf16 TFLOPS."""
    import tracewh
    from tracewh.output.report import _section, _top_gemms

    root = Path(perf_warehouse.peaks).parent / "wh"
    with tracewh.open(root).connect_to_runs(["h100"]) as connection:
        section = _top_gemms(connection, ["h100", "unknown"])
    groups = {}
    for row in perf_rows:
        if row["run"] == "h100" and row["family"] == "gemm":
            calls, busy, flops = groups.get(row["shapes"], (0, 0, 0))
            groups[row["shapes"]] = (calls + 1, busy + row["gpu_busy_ns"], flops + row["flops"])
    expected = sorted(groups.items(), key=lambda item: -item[1][1])
    assert [(r[1].full, r[4], r[5], r[6]) for r in section.rows] == [
        (shapes, calls, busy / 1e6, pytest.approx(flops / busy / 1e3))
        for shapes, (calls, busy, flops) in expected]
    assert {(r[3], r[7]) for r in section.rows} == {("NVIDIA H100 SXM5", 989.5)}
    assert section.chart is not None and "aten::addmm" in _section(section)


@pytest.mark.parametrize("dims", [
    [["<b>788</b>", 768], [768, 768]],  # text, not a number
    [[10 ** 30, 768], [768, 768]],  # past BIGINT
    [[2 ** 40, 2 ** 40], [2 ** 40, 2 ** 40]],  # every dimension fits, the FLOPs do not
    [[{"m": 1}, 768], [768, 768]],
    [[-788, 768], [768, 768]],
    [[], [768, 768]],  # no shape
])
def test_hostile_shapes_make_the_call_absent_not_the_view_fail(library, dims):
    args = {"Input Dims": dims, "Input type": ["float", "float"], "Concrete Inputs": ["", ""]}
    assert model_in_sql(library, "aten::mm", args) is None


def test_hostile_convolution_parameters_are_not_an_error(library):
    args = {"Input Dims": [[4, 3, 224, 224], [768, 3, 16, 16], []] + [[]] * 6,
            "Input type": ["float", "float", ""] + ["Scalar"] * 6,
            "Concrete Inputs": ["", "", "", "[1e300, 'x']", "[9223372036854775807]", "[0]",
                                "False", "[0]", "0"]}
    model_in_sql(library, "aten::convolution", args)  # absent or a figure, never an error


def test_gemm_shapes_group_op_perf_by_shape(perf_warehouse, every_row):
    """gemm_shapes against op_perf's GEMM calls grouped here: calls, busy time, FLOPs and the
    shares derived from them."""
    expected = {}
    for row in every_row:
        if row["family"] != "gemm" or not row["gpu_busy_ns"]:
            continue
        key = (row["run"], row["phase"], row["name"], row["shapes"], row["dtype"],
               row["peak_device"])
        group = expected.setdefault(key, {"calls": 0, "gpu_busy_ns": 0, "flops": 0,
                                          "roofline_ns": 0})
        group["calls"] += 1
        for column in ("gpu_busy_ns", "flops", "roofline_ns"):
            group[column] += row[column] or 0
    got = rows(perf_warehouse, "SELECT * FROM gemm_shapes", "--peaks", perf_warehouse.peaks)
    assert len(got) == len(expected) > 3
    for row in got:
        group = expected[(row["run"], row["phase"], row["name"], row["shapes"], row["dtype"],
                          row["peak_device"])]
        assert (row["calls"], row["gpu_busy_ns"], row["flops"]) == \
            (group["calls"], group["gpu_busy_ns"], group["flops"])
        assert row["achieved_tflops"] == pytest.approx(group["flops"] / group["gpu_busy_ns"]
                                                       / 1000, rel=1e-12)
        if row["peak_tflops"] is not None:
            assert row["pct_of_roofline"] == pytest.approx(
                100 * group["roofline_ns"] / group["gpu_busy_ns"], rel=1e-12)
