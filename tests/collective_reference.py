"""An independent pure-Python reference for the collective views: calls read from the trace
JSON itself (numbers exact), matched across ranks and measured by the same published rules
(TraceLens' latency and skew, nccl-tests' bus bandwidth factors), written without SQL."""

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

# The communication class of the default kernel rules (sql/kernel_rules.toml), for kernels.
COMMUNICATION = re.compile(r"nccl|rccl|hccl|nvshmem|deep_ep::|dpsk::ep::|multimem_"
                           r"|_shot_all_reduce|symm_mem|cross_device_reduce")
RUNTIME = {"cuda_runtime", "cuda_driver", "Runtime"}
ELEMENT_BYTES = {"float": 4, "int": 4, "int32": 4, "double": 8, "long": 8, "long int": 8,
                 "int64": 8, "half": 2, "bfloat16": 2, "float16": 2, "short": 2, "byte": 1,
                 "char": 1, "bool": 1, "int8": 1, "uint8": 1, "unsigned char": 1}
CANONICAL = {"allreduce": "all_reduce", "allgather": "all_gather",
             "reducescatter": "reduce_scatter", "alltoall": "all_to_all",
             "alltoallv": "all_to_all", "broadcast": "broadcast", "sendrecv": "send_recv",
             "send": "send_recv", "recv": "send_recv", "reduce": "reduce"}
# nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md), by group size n.
FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
           "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
           "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "send_recv": lambda n: 1.0}


def nanoseconds(value, base=0):
    """Kineto µs (an int or a Decimal with up to 3 decimals) as integer ns after `base`."""
    return base + int(Decimal(value) * 1000)


def canonical(name):
    """A collective's name the way the views spell it."""
    key = name.lower().removeprefix("nccl:").lstrip("_")
    for suffix in ("_coalesced", "_base", "_into_tensor", "_tensor", "_single"):
        key = key.removesuffix(suffix)
    key = key.replace("_", "")
    return CANONICAL.get(key, key)


@dataclass
class Call:
    rank: int
    window: int
    collective: str
    process_group: str
    group_size: int | None
    msg_bytes: int | None
    start: int
    dur: int
    splits: list = field(default_factory=list)
    seq: int = 0


def _first_tensor_elements(args):
    dims = (args.get("Input Dims") or [[]])[0]
    kind = (args.get("Input type") or [""])[0]
    if not dims or kind in ("TensorList", "Scalar", ""):
        return None, None
    elements = 1
    for d in dims:
        elements *= int(d)
    return elements, kind


def _size(kernel_args, comms_args, range_args):
    """(elements as nccl-tests counts them, dtype) from the first source that has both."""
    for args in (kernel_args, comms_args):
        counts = [int(args[k]) for k in ("In msg nelems", "Out msg nelems") if k in args]
        if counts and args.get("dtype"):
            return max(counts), args["dtype"]
    for args in (comms_args, range_args):
        elements, kind = _first_tensor_elements(args)
        if elements is not None:
            return elements, kind
    return None, None


def _innermost(ops, launch):
    """The innermost op (latest start) of `ops` around the launch event, else None."""
    ts = launch["ts"]
    around = [o for o in ops if o["pid"] == launch["pid"] and o["tid"] == launch["tid"]
              and o["ts"] <= ts < o["ts"] + o["dur"]]
    return max(around, key=lambda o: o["ts"]) if around else None


def _enclosing(ops, launch):
    """The args of the innermost op of `ops` around the launch event, else {}."""
    op = _innermost(ops, launch)
    return op["args"] if op else {}


def calls_of(document, rank, window):
    """The communication kernels of one capture as Calls (seq not yet numbered)."""
    events = document["traceEvents"]
    base = int(document.get("baseTimeNanoseconds") or 0)
    world = (document.get("distributedInfo") or {}).get("world_size")
    launches = defaultdict(list)
    comms, ranges = [], []
    for e in events:
        args = e.get("args") or {}
        if e.get("cat") in RUNTIME and "correlation" in args:
            launches[args["correlation"]].append(e)
        elif e.get("cat") in ("cpu_op", "user_annotation") and e.get("ph") == "X":
            if e["name"] == "record_param_comms":
                comms.append(e)
            elif e["name"].startswith("nccl:"):
                ranges.append(e)
    calls = []
    for e in events:
        if e.get("cat") != "kernel" or not COMMUNICATION.search(e["name"].lower()):
            continue
        args = e.get("args") or {}
        before = [l for l in launches.get(args.get("correlation"), []) if l["ts"] <= e["ts"]]
        launch = max(before, key=lambda l: l["ts"]) if before else None
        comms_args = _enclosing(comms, launch) if launch else {}
        range_event = {}
        if launch:
            range_event = _innermost(ranges, launch) or {}
        range_args = range_event.get("args", {})
        name = (args.get("Collective name") or comms_args.get("Collective name")
                or range_event.get("name") or _from_kernel_name(e["name"]))
        elements, dtype = _size(args, comms_args, range_args)
        element_bytes = ELEMENT_BYTES.get(dtype.lower().replace("c10::", "")) if dtype else None
        split_text = args.get("In split size") or comms_args.get("In split size") or "[]"
        pg = (args.get("Process Group Name") or comms_args.get("Process Group Name")
              or "unknown")
        size = args.get("Group size") or comms_args.get("Group size") or world
        calls.append(Call(rank, window, canonical(name), pg, size and int(size),
                          elements * element_bytes if elements and element_bytes else None,
                          nanoseconds(e["ts"], base), nanoseconds(e["dur"]),
                          json.loads(split_text)))
    return calls


def _from_kernel_name(name):
    nccl = re.match(r"nccl(?:Dev)?Kernel_([A-Za-z]+)_", name)
    if nccl and nccl.group(1) != "Generic":
        return nccl.group(1)
    deep_ep = re.search(r"(?:deep_ep|dpsk::ep)::(?:\w+::)*?(\w+)(?:<|\()", name)
    return deep_ep.group(1) if deep_ep else "other"


def number(calls):
    """seq: position within (rank, window, process group) by start time."""
    by_key = defaultdict(list)
    for call in calls:
        by_key[(call.rank, call.window, call.process_group)].append(call)
    for group in by_key.values():
        for seq, call in enumerate(sorted(group, key=lambda c: c.start), 1):
            call.seq = seq
    return calls


def instances(calls):
    """{(window, process group, seq): figures}, by the rules the views document."""
    grouped = defaultdict(list)
    for call in number(calls):
        grouped[(call.window, call.process_group, call.seq)].append(call)
    out = {}
    for key, group in grouped.items():
        n = max((c.group_size or 0) for c in group) or None
        collective = min(c.collective for c in group)
        sizes = {c.msg_bytes for c in group}
        ranks = [c.rank for c in group]
        if n is None:
            reason = "group size unknown"
        elif len(ranks) > len(set(ranks)) or len(ranks) > n:
            reason = "extra ranks"
        elif len(ranks) < n:
            reason = "missing ranks"
        elif len({c.collective for c in group}) > 1:
            reason = "collectives differ"
        elif len(sizes) > 1 and collective not in ("all_to_all", "send_recv"):
            reason = "sizes differ"
        else:
            reason = None
        figures = {"ranks": len(group), "matched": reason is None, "reason": reason,
                   "collective": collective, "msg_bytes": max((s for s in sizes if s),
                                                              default=None)}
        if reason is None:
            last = max(c.start for c in group)
            latency = min(c.dur for c in group)
            figures.update(
                latency=latency, arrival_skew=last - min(c.start for c in group),
                end_skew=max(c.start + c.dur for c in group) - min(c.start + c.dur for c in group),
                last_rank=min(c.rank for c in group if c.start == last),
                waits={c.rank: last - c.start for c in group},
                algbw=None, busbw=None, imbalance=None)
            size = figures["msg_bytes"]
            if n > 1 and latency > 0 and size is not None:
                figures["algbw"] = size / latency
                factor = FACTORS.get(collective)
                figures["busbw"] = size / latency * factor(n) if factor else None
            splits = [s for c in group for s in c.splits]
            if collective == "all_to_all" and splits:
                per_rank = [max(c.splits) for c in group if c.splits]
                means = [sum(c.splits) / len(c.splits) for c in group if c.splits]
                figures["imbalance"] = max(per_rank) / (sum(means) / len(means))
        out[key] = figures
    return out


def stragglers(figures):
    """{rank: (times last, wait caused)} over matched instances of two or more ranks."""
    out = defaultdict(lambda: [0, 0])
    for f in figures.values():
        if not f["matched"] or f["ranks"] < 2:
            continue
        for rank in f["waits"]:
            out[rank]
        out[f["last_rank"]][0] += 1
        out[f["last_rank"]][1] += sum(f["waits"].values())
    return {rank: tuple(v) for rank, v in out.items()}
