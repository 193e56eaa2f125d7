"""Independent pure-Python references: the interval figures the SQL views compute, and where
an event's keys are kept."""

import json
import math
from decimal import Decimal
from fractions import Fraction

from .vector_reference import INFERENCE_ATTENTION, vector_family, vector_model

# Where each top-level key of an event is kept, by column; tables whose routing implies the
# phase have no ph column; anything else must be in extra.
COLUMN_OF_KEY = {"name": "name", "cat": "category", "pid": "pid", "tid": "tid", "ts": "ts_ns",
                 "dur": "dur_ns", "id": "id", "bp": "bp", "s": "scope", "args": "args",
                 "ph": "ph"}
IMPLIED_PHASE = {"kernels": "X", "cpu_ops": "X", "runtime": "X", "counters": "C",
                 "instants": "i", "metadata": "M"}
EVENT_TABLES = ("kernels", "cpu_ops", "runtime", "flows", "counters", "instants", "metadata",
                "other_events")


def kept_keys(table, row):
    """The keys of the input event that `row` of `table` keeps (a value in a column or extra)."""
    keys = {key for key, column in COLUMN_OF_KEY.items() if row.get(column) is not None}
    keys |= set(json.loads(row["extra"] or "{}"))
    return keys | ({"ph"} if table in IMPLIED_PHASE else set())


def union_length(intervals):
    """Length of the union of half-open [start, end) intervals, by merging."""
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def intersection_length(first, second):
    """Length of (union of first) ∩ (union of second), by sweeping merged lists."""
    def merged(intervals):
        out = []
        for start, end in sorted(i for i in intervals if i[1] > i[0]):
            if out and start <= out[-1][1]:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])
        return out

    a, b = merged(first), merged(second)
    i = j = total = 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def ns(value):
    return int(Fraction(Decimal(str(value))) * 1000)


# The default rule as issue #3 states it, written out here rather than read from
# sql/kernel_rules.toml, so that the rules file and both classifiers are checked against it.
COMMUNICATION_MARKERS = ("nccl", "rccl", "hccl", "nvshmem", "deep_ep::", "dpsk::ep::",
                         "multimem_", "_shot_all_reduce", "symm_mem", "cross_device_reduce")


def kernel_class(name):
    """communication or computation, for an event of category `kernel`."""
    lowered = (name or "").lower()
    if any(marker in lowered for marker in COMMUNICATION_MARKERS):
        return "communication"
    return "computation"


GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")


def gpu_intervals(document):
    """{class or 'busy': [(start_ns, end_ns)]} of one trace: communication and computation
    kernels, and busy (all GPU work; gpu_user_annotation ranges mark time, not work)."""
    base = int(document.get("baseTimeNanoseconds", 0))
    sets = {"communication": [], "computation": [], "busy": []}
    for event in document["traceEvents"]:
        category = event.get("cat", "").lower()
        if event.get("ph") != "X" or category not in GPU_WORK or not event.get("dur"):
            continue
        start = base + ns(event["ts"])
        interval = (start, start + ns(event["dur"]))
        sets["busy"].append(interval)
        if category == "kernel":
            sets[kernel_class(event.get("name"))].append(interval)
    return sets


def overlap_of(sets):
    """(comm_ns, compute_ns, overlap_ns) of class interval sets, all streams pooled."""
    comm, compute = sets["communication"], sets["computation"]
    return union_length(comm), union_length(compute), intersection_length(comm, compute)


def overlap_from_trace(document):
    """(comm_ns, compute_ns, overlap_ns) of one trace, all streams pooled."""
    return overlap_of(gpu_intervals(document))


def capture_groups(spans):
    """Indexes of `spans` ((first, last) per capture) grouped where the spans overlap in time,
    by sorting and extending a group while the next span starts within its reach."""
    groups, reach = [], None
    for index in sorted(range(len(spans)), key=lambda i: spans[i]):
        first, last = spans[index]
        if reach is None or first > reach:
            groups.append([])
            reach = last
        groups[-1].append(index)
        reach = max(reach, last)
    return groups


def idle_reference(documents):
    """GPU idle time of one rank's captures, measured within each group of captures that
    overlap in time: (pooled idle ns, {stream: (span ns, idle ns)})."""
    busy = [gpu_intervals(document)["busy"] for document in documents]
    groups = capture_groups([(min(s for s, _ in b), max(e for _, e in b)) for b in busy])
    pooled = 0
    streams = {}
    for group in groups:
        intervals = [interval for index in group for interval in busy[index]]
        pooled += max(e for _, e in intervals) - min(s for s, _ in intervals) \
            - union_length(intervals)
        by_stream = {}
        for index in group:
            for stream, interval in stream_intervals(documents[index]):
                by_stream.setdefault(stream, []).append(interval)
        for stream, own in by_stream.items():
            span = max(e for _, e in own) - min(s for s, _ in own)
            total_span, total_idle = streams.get(stream, (0, 0))
            streams[stream] = (total_span + span, total_idle + span - union_length(own))
    return pooled, streams


def stream_intervals(document):
    """(stream, (start_ns, end_ns)) of a trace's GPU work (as in gpu_intervals' busy)."""
    base = int(document.get("baseTimeNanoseconds", 0))
    for event in document["traceEvents"]:
        category = event.get("cat", "").lower()
        if event.get("ph") != "X" or category not in GPU_WORK or "dur" not in event:
            continue
        start = base + ns(event["ts"])
        yield event.get("args", {}).get("stream", event.get("tid")), (start, start + ns(event["dur"]))


# Performance models (op_perf): FLOPs and bytes of one call from its args, written from the
# formulas (see the README), not from the SQL.
ELEMENT_BYTES = {"double": 8, "float": 4, "c10::BFloat16": 2, "c10::Half": 2,
                 "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1,
                 "c10::Float8_e5m2fnuz": 1, "signed char": 1, "unsigned char": 1, "bool": 1,
                 "short int": 2, "int": 4, "long int": 8, "c10::complex<float>": 8,
                 "c10::complex<double>": 16}
GEMMS = {"aten::mm": (0, 1, None), "aten::bmm": (0, 1, None), "aten::addmm": (1, 2, 0),
         "aten::baddbmm": (1, 2, 0), "aten::_scaled_mm": (0, 1, 4)}
# GEMMs whose B is a weight stored n x k: x [m, k], weight [n, k], bias
WEIGHT_GEMMS = {"aiter::gemm_a16w16", "aiter::gemm_a16w16_asm", "vllm::rocm_unquantized_gemm"}
# name: (pass, position of Q, position of is_causal)
ATTENTION = {"aten::_scaled_dot_product_flash_attention": ("forward", 0, 4),
             "aten::_scaled_dot_product_efficient_attention": ("forward", 0, 6),
             "aten::_scaled_dot_product_cudnn_attention": ("forward", 0, 6),
             "aten::_scaled_dot_product_flash_attention_backward": ("backward", 1, 11),
             "aten::_scaled_dot_product_efficient_attention_backward": ("backward", 1, 11),
             "aten::_scaled_dot_product_cudnn_attention_backward": ("backward", 1, 14),
             "flash_attn::_flash_attn_forward": ("forward", 0, 5),
             "aiter::mha_fwd": ("forward", 0, 5), "aiter::fmha_v3_fwd": ("forward", 0, 5),
             "flash_attn::_flash_attn_backward": ("backward", 1, 11),
             "aiter::mha_bwd": ("backward", 1, 8)}
# flash-attention's own ops lay Q, K, V out [B, N, H, d], not [B, H, N, d]
SEQUENCE_FIRST = {"flash_attn::_flash_attn_forward", "aiter::mha_fwd", "aiter::fmha_v3_fwd",
                  "flash_attn::_flash_attn_backward", "aiter::mha_bwd"}


def op_model(name, args):
    """(flops, bytes) of a call of op `name` with profiler `args`, or None when the op is not
    modeled or its shapes are missing; bytes is None when a type has no known size."""
    dims, types = args.get("Input Dims"), args.get("Input type")
    if dims is None:
        return None
    concrete = args.get("Concrete Inputs") or [""] * len(dims)
    size = [ELEMENT_BYTES.get(t) for t in types]
    if name in GEMMS:
        return _gemm(dims, size, *GEMMS[name])
    if name in WEIGHT_GEMMS:
        if len(dims[0]) != 2 or len(dims[1]) != 2:
            return None
        transposed = [dims[0], list(reversed(dims[1]))] + dims[2:]
        return _gemm(transposed, size, 0, 1, 2)
    if name in ATTENTION:
        if name in SEQUENCE_FIRST:
            dims = [[d[0], d[2], d[1], d[3]] if isinstance(d, list) and len(d) == 4 else d
                    for d in dims]
        return _attention(dims, size, concrete, *ATTENTION[name])
    if name == "aten::convolution":
        return _conv_forward(dims, size, concrete)
    if name == "aten::convolution_backward":
        return _conv_backward(dims, size, concrete)
    return vector_model(name, dims, types, concrete, ELEMENT_BYTES)


def op_family(name):
    """The family op_perf files a modeled op under (gemm, attention, convolution, or a vector
    model's), None when not modeled."""
    if name in GEMMS or name in WEIGHT_GEMMS:
        return "gemm"
    if name in ATTENTION or name in INFERENCE_ATTENTION:
        return "attention"
    if name in ("aten::convolution", "aten::convolution_backward"):
        return "convolution"
    return vector_family(name)


def tracelens_moe(stage, m, k, n, experts, topk, gated, in_b, w_b, out_b):
    """TraceLens's FusedMoE / UnfusedMoE_Up / UnfusedMoE_Down flops_func and bytes_func
    (PerfModel/extensions/moe_perf_model_extensions.py at commit 171dd747)."""
    g = 2 if gated else 1
    active = experts * (1 - ((experts - topk) / experts) ** m)
    if stage == "fused":
        flops = 2 * m * k * n * topk * g + 2 * m * k * n * topk + m * k * (2 * topk - 1)
        moved = m * k * in_b + active * n * k * w_b * g + active * n * k * w_b + m * k * out_b
    elif stage == "up":
        flops = 2 * m * k * n * topk * g
        moved = m * k * in_b + active * g * k * n * w_b + m * n * topk * out_b
    else:
        flops = 2 * m * n * k * topk
        moved = m * n * topk * in_b + active * n * k * w_b + m * k * out_b
    return flops, round(moved)


def _bytes(*terms):
    """Sum of elements x element size; None when a size is unknown."""
    if any(size is None for count, size in terms if count):
        return None
    return sum(count * size for count, size in terms if count)


def _gemm(dims, size, a, b, bias):
    (*batch_a, m, k), (*_, n) = dims[a], dims[b]
    batch = batch_a[0] if batch_a else 1
    biased = bias is not None and len(dims) > bias and size[bias] is not None
    bias_elements = math.prod(dims[bias]) if biased else 0
    out_size = 2 if size[a] == 1 else size[a]
    flops = batch * (2 * m * n * k + (m * n if biased else 0))
    return flops, _bytes((batch * m * k, size[a]), (batch * k * n, size[b]),
                         (batch * m * n, out_size), (bias_elements, size[bias] if biased else 0))


def _attention(dims, size, concrete, pass_, q, causal_at):
    (batch, heads_q, n_q, d_qk), (_, heads_kv, n_kv, _), (*_, d_v) = dims[q:q + 3]
    causal = concrete[causal_at].lower() == "true" and n_q == n_kv
    q_el, k_el = batch * heads_q * n_q * d_qk, batch * heads_kv * n_kv * d_qk
    v_el, o_el = batch * heads_kv * n_kv * d_v, batch * heads_q * n_q * d_v
    if pass_ == "forward":
        matmuls = 2 * batch * heads_q * n_q * n_kv * d_qk + 2 * batch * heads_q * n_q * n_kv * d_v
        flops = matmuls // 2 if causal else matmuls
        return flops, _bytes((q_el, size[q]), (k_el, size[q + 1]), (v_el, size[q + 2]),
                             (o_el, size[q]))
    # QK^T again, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q
    matmuls = sum(2 * batch * heads_q * n_q * n_kv * d for d in (d_qk, d_v, d_v, d_qk, d_qk))
    reduce_heads = batch * n_kv * (d_v + d_qk) * (heads_q // heads_kv - 1)
    flops = (matmuls // 2 if causal else matmuls) + reduce_heads
    return flops, _bytes((2 * q_el, size[q]), (2 * k_el, size[q + 1]), (2 * v_el, size[q + 2]),
                         (o_el, size[q]))


def _ints(text, count, default):
    """A profiler int list ('[16, 16]', '[1]' or '') as `count` values."""
    values = [int(v) for v in text.strip("[]").split(",") if v.strip()] or [default]
    return values * count if len(values) == 1 else values


def _conv_forward(dims, size, concrete):
    x, w = dims[0], dims[1]
    spatial = len(x) - 2
    stride, padding, dilation, out_padding = (
        _ints(concrete[i], spatial, d) for i, d in ((3, 1), (4, 0), (5, 1), (7, 0)))
    transposed = concrete[6] == "True"
    groups = int(concrete[8] or 1)
    if transposed:
        out_spatial = [(x[2 + j] - 1) * stride[j] - 2 * padding[j] + dilation[j]
                       * (w[2 + j] - 1) + out_padding[j] + 1 for j in range(spatial)]
        channels = w[1] * groups
    else:
        out_spatial = [(x[2 + j] + 2 * padding[j] - dilation[j] * (w[2 + j] - 1) - 1)
                       // stride[j] + 1 for j in range(spatial)]
        channels = w[0]
    out = x[0] * channels * math.prod(out_spatial)
    per_output = 2 * math.prod(w[1:])
    flops = per_output * (math.prod(x) if transposed else out)
    biased = len(dims) > 2 and bool(dims[2]) and size[2] is not None
    return (flops + (out if biased else 0),
            _bytes((math.prod(x), size[0]), (math.prod(w), size[1]), (out, size[0]),
                   (channels if biased else 0, size[2])))


def _conv_backward(dims, size, concrete):
    grad_out, x, w = dims[0], dims[1], dims[2]
    transposed = concrete[7] == "True"
    mask = [v.strip() == "True" for v in concrete[10].strip("[]").split(",")]
    per_output = 2 * math.prod(w[1:])
    conv = per_output * (math.prod(x) if transposed else math.prod(grad_out))
    gradients = mask[0] + mask[1]
    out = math.prod(grad_out)
    flops = gradients * conv + (out if mask[2] else 0)
    moved = _bytes((gradients * out, size[0]), (gradients * math.prod(w), size[2]),
                   (gradients * math.prod(x), size[1]),
                   ((out + grad_out[1]) if mask[2] else 0, size[0]))
    return flops, moved
