"""Pure-Python reference of the memory-bound op models (sql/_op_vector_models.sql): FLOPs and
bytes of one call from its profiler args, written from the formulas in docs/perf-models.md
with Python's own shapes (lists, math.prod, right-aligned broadcasting), not from the SQL."""

import math
import re

INTEGRAL = {"bool", "signed char", "unsigned char", "short int", "int", "long int"}

UNARY = {f"aten::{op}" for op in (
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid",
    "relu", "relu_", "gelu", "silu", "silu_", "pow", "clamp", "clamp_min", "clamp_min_",
    "clamp_max", "clamp_max_")}
BINARY = {f"aten::{op}" for op in (
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "maximum", "minimum",
    "sigmoid_backward", "threshold_backward", "gelu_backward", "silu_backward")}
GATED = {f"{ns}::{act}_and_mul" for ns in ("sgl_kernel", "aiter", "_C")
         for act in ("silu", "gelu", "gelu_tanh")}
# name: (x, weight, training flag position: None computes statistics, -1 never)
NORMS = {"aten::native_layer_norm": (0, 2, None), "aten::native_group_norm": (0, 1, None),
         "aten::native_batch_norm": (0, 1, 5), "aten::cudnn_batch_norm": (0, 1, 5),
         "aten::miopen_batch_norm": (0, 1, 5), "aten::_native_batch_norm_legit": (0, 1, 5),
         "aten::_native_batch_norm_legit_no_training": (0, 1, -1)}
# name: (x, weight, with the residual add)
RMS_NORMS = {"aten::_fused_rms_norm": (0, 2, False), "aiter::rms_norm": (0, 1, False),
             "aiter::rmsnorm2d_fwd": (0, 1, False), "aiter::rmsnorm": (1, 2, False),
             "_C::rms_norm": (1, 2, False), "sgl_kernel::rmsnorm": (1, 2, False),
             "aiter::add_rmsnorm": (1, 4, True), "aiter::rmsnorm2d_fwd_with_add": (1, 4, True),
             "aiter::rmsnorm2d_fwd_with_add_ck": (1, 4, True),
             "_C::fused_add_rms_norm": (0, 2, True), "sgl_kernel::fused_add_rmsnorm": (0, 2, True)}
ROPES = {"sgl_kernel::rotary_embedding", "_C::rotary_embedding"}
# the main input (x) where it is not the first operand
MAIN = {**{name: 1 for name in GATED | ROPES},
        **{name: spec[0] for name, spec in RMS_NORMS.items()}}
REDUCES = {"aten::sum", "aten::mean", "aten::amax", "aten::amin"}
INDEXED = {"aten::max", "aten::min"}
SCANS = {"aten::cumsum", "aten::cumprod"}
SOFTMAXES = {"aten::_softmax", "aten::_log_softmax"}
CACHE_WRITES = {"sglang::store_cache", "_C_cache_ops::reshape_and_cache",
                "_C_cache_ops::reshape_and_cache_flash"}


def vector_model(name, dims, types, concrete, element_bytes):
    """(flops, bytes) of a call, None when `name` is not one of these models or a shape it
    needs is not a list of integers (at most 6 of them)."""
    def tensor(at):
        """(shape, element size) of operand `at`; a non-tensor is ([], None), and the
        model's main input must be a tensor."""
        if at >= len(dims) or element_bytes.get(types[at]) is None:
            if at == MAIN.get(name, 0):
                raise ValueError(at)
            return [], None
        shape = dims[at]
        if not isinstance(shape, list) or len(shape) > 6 or not all(
                isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise ValueError(shape)
        return shape, element_bytes[types[at]]

    def count(at):
        shape, size = tensor(at)
        return math.prod(shape) if size is not None else 0

    try:
        found = _model(name, tensor, count, types, concrete)
    except (ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    # the views cast their DOUBLE figures to BIGINT, rounding to the nearest
    return found and tuple(v if v is None else math.floor(v + 0.5) for v in found)


def _model(name, tensor, count, types, concrete):
    if name in UNARY or name == "aten::copy_":
        (shape, size), n = tensor(0), count(0)
        out = tensor(1)[1] if name == "aten::copy_" else None
        return n, n * (size + (out or size))
    if name in BINARY:
        (a, a_size), (b, b_size) = tensor(0), tensor(1)
        width = max(len(a), len(b))
        a_full, b_full = [1] * (width - len(a)) + a, [1] * (width - len(b)) + b
        out = math.prod(max(p, q) for p, q in zip(a_full, b_full))
        out_size = tensor(2)[1] or (b_size if b and b_size > a_size else a_size)
        return out, count(0) * a_size + count(1) * (b_size or 0) + out * out_size
    if name in GATED:
        out, (_, size), (_, out_size) = count(0), tensor(1), tensor(0)
        return 5 * out, count(1) * size + out * out_size
    if name in NORMS:
        x_at, w_at, train_at = NORMS[name]
        shape, size = tensor(x_at)
        n = math.prod(shape)
        channels = (count(w_at) or shape[-1]) if "layer" in name else shape[1]
        training = train_at is None or (train_at >= 0 and concrete[train_at].lower() == "true")
        weight, bias = count(w_at) > 0, count(w_at) > 0 and count(w_at + 1) > 0
        tensors = 2 + weight + bias + (2 if training else 0)
        return (6 * channels + 2 * n + (3 * n if training else 0),
                2 * n * size + tensors * channels * size)
    if name in RMS_NORMS:
        x_at, w_at, add = RMS_NORMS[name]
        shape, size = tensor(x_at)
        n, weight = math.prod(shape), count(w_at)
        channels = weight or shape[-1]
        rows = n / channels
        flops = rows * (2 * channels + 2) + (2 if weight else 1) * n
        w_size = tensor(w_at)[1] or 0
        if add:
            return n + flops, 4 * n * size + weight * w_size
        return flops, 2 * n * size + weight * w_size
    if name in CACHE_WRITES:
        (_, k_size), (_, v_size) = tensor(0), tensor(1)
        return 0, 2 * (count(0) * k_size + count(1) * v_size)
    if name in ROPES:
        head, rot = float(concrete[3]), tensor(4)[0][-1]
        rotated = (count(1) + count(2)) / head * rot
        tokens, (_, pos_size), (_, q_size), (_, cache_size) = count(0), tensor(0), tensor(1), \
            tensor(4)
        return (3 * rotated, 2 * rotated * q_size + tokens * rot * cache_size
                + tokens * pos_size)
    return _reduction(name, tensor, count, types, concrete)


def _reduction(name, tensor, count, types, concrete):
    shape, size = tensor(0)
    if size is None:
        return None
    n, wide = math.prod(shape), 8 if types[0] in INTEGRAL else size
    if name in SCANS:
        return n, n * (size + wide)
    if name in SOFTMAXES:
        return 3 * n, n * (size + (4 if concrete[2].lower() == "true" else size))
    if name not in REDUCES | INDEXED:
        return None
    text = concrete[1] if len(concrete) > 1 else ""
    reduced = None
    if re.fullmatch(r"\[ *-?\d{1,2} *(, *-?\d{1,2} *){0,5}\]", text):
        reduced = [int(v) for v in text.strip("[]").split(",")]
    elif name in INDEXED and re.fullmatch(r"-?\d{1,2}", text):
        reduced = [int(text)]
    if reduced is None:
        out = 1
    elif any(not -len(shape) <= d < len(shape) for d in reduced):
        return n, None
    else:
        out = n / math.prod(shape[d] for d in {d % len(shape) for d in reduced})
    out_size = wide if name == "aten::sum" else size
    indices = out * 8 if name in INDEXED and reduced is not None else 0
    return n, n * size + out * out_size + indices


def vector_family(name):
    """The family op_perf files a call of `name` under, None when not one of these."""
    families = {"elementwise": UNARY | BINARY | GATED | {"aten::copy_"}, "norm": set(NORMS),
                "rmsnorm": set(RMS_NORMS), "rope": ROPES,
                "reduce": REDUCES | INDEXED | SCANS | SOFTMAXES, "kv_cache": CACHE_WRITES}
    return next((family for family, names in families.items() if name in names), None)


# Inference attention ops: (Q's position, K's, V's or None, the dimension of K that is Hkv,
# decode-only, the Concrete Input that is the sliding window), as TraceLens's
# InferenceAttention subclasses read them (PerfModel/extensions/attention_perf_model_
# extensions.py at commit 171dd747).
INFERENCE_ATTENTION = {
    "aiter::mha_batch_prefill": (0, 1, 2, -2, False, None),
    "aiter::mha_varlen_fwd": (0, 1, 2, -2, False, None),
    "aiter::fmha_v3_varlen_fwd": (0, 1, 2, -2, False, None),
    "flash_attn::_flash_attn_varlen_forward": (0, 1, 2, -2, False, None),
    "vllm::unified_attention_with_output": (0, 1, 2, -2, False, None),
    "vllm::unified_attention": (0, 1, 2, -2, False, None),
    "aiter::paged_attention_ragged": (2, 3, 4, -2, False, None),
    "sglang_profiler::attention_paged_attention_ragged": (2, 3, 4, -2, False, None),
    "aiter::pa_decode_gluon": (0, 2, None, 1, True, 19),
    "aiter::mla_decode_stage1_asm_fwd": (0, 1, None, -2, False, None),
    "aiter::mla_prefill_ps_asm_fwd": (0, 1, 2, -2, False, None),
}
VLLM_STEP = re.compile(r"execute_\d+_context_\d+\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)"
                       r"_generation_\d+\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)")
SGLANG_STEP = re.compile(r"step\[(?:EXTEND|DECODE|MIXED) [^\]]*sqsq=\d+[^\]]*\]")
ATOM_STEP = re.compile(r"(prefill|decode)\[(.*sqsq=\d+.*)\]")
SUMS = ("c_sq", "c_sk", "c_sqsq", "c_sqsk", "g_sq", "g_sk", "g_sqsq", "g_sqsk")


def iteration_sums(annotation):
    """{c_sq, ..., g_sqsk} of a detailed step annotation (vLLM's, SGLang's, ATOM's), None
    for any other name."""
    if not annotation:
        return None
    if found := VLLM_STEP.match(annotation):
        return dict(zip(SUMS, map(int, found.groups())))
    if SGLANG_STEP.match(annotation):
        pairs = dict(re.findall(r"(\w+)=(\d+)", annotation))
        return {key: int(pairs.get(key, 0)) for key in SUMS}
    if found := ATOM_STEP.match(annotation):
        pairs = dict(re.findall(r"(\w+)=(\d+)", found.group(2)))
        side = "c" if found.group(1) == "prefill" else "g"
        sums = dict.fromkeys(SUMS, 0)
        for key, field in (("sq", "tok"), ("sk", "sk"), ("sqsq", "sqsq"), ("sqsk", "sqsk")):
            sums[f"{side}_{key}"] = int(pairs.get(field, 0))
        return sums
    return None


def inference_attention_model(name, args, annotation, element_bytes):
    """(flops, bytes) of a call of the inference attention op `name` whose iteration
    annotation is `annotation` (None, or a name of no detailed format: not modeled)."""
    sums = iteration_sums(annotation)
    dims, types = args.get("Input Dims"), args.get("Input type")
    q_at, k_at, v_at, hkv_dim, decode_only, window_at = INFERENCE_ATTENTION[name]
    if sums is None or dims is None or len(dims[q_at]) != 3 or len(dims[k_at]) < 3 \
            or (v_at is not None and len(dims[v_at]) < 3):
        return None
    if decode_only:
        sums.update(c_sq=0, c_sk=0, c_sqsq=0, c_sqsk=0)
    window = None
    if window_at is not None:
        try:
            window = int(args.get("Concrete Inputs", [])[window_at])
        except (IndexError, ValueError):
            window = None
    if window and window > 0 and sums["g_sq"] > 0:
        sums["g_sk"] = min(sums["g_sk"], sums["g_sq"] * window)
        sums["g_sqsk"] = min(sums["g_sqsk"], sums["g_sq"] * window)
    _, heads_q, d_qk = dims[q_at]
    heads_kv = dims[k_at][hkv_dim]
    d_v = dims[v_at][-1] if v_at is not None else d_qk
    flops = heads_q * (d_qk + d_v) * (2 * sums["c_sqsk"] - sums["c_sqsq"] + 2 * sums["g_sqsk"])
    q_size, kv_size = element_bytes.get(types[q_at]), element_bytes.get(types[k_at])
    new_tokens = sums["c_sq"] + sums["g_sq"]
    cached = (sums["c_sk"] - sums["c_sq"]) + (sums["g_sk"] - sums["g_sq"])
    if q_size is None or kv_size is None:
        return flops, None
    return flops, (new_tokens * (heads_q + heads_kv) * (d_qk + d_v) * q_size
                   + cached * heads_kv * (d_qk + d_v) * kv_size)
