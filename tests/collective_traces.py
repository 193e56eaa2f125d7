"""Multi-rank warehouses made from one real single-rank trace: each rank a copy of the trace,
shifted in time and (one of them) stretched, with the edge cases of collective matching
written into the copies. Files go to a temporary directory; nothing is committed."""

import copy
import gzip
import json
from decimal import Decimal

from .conftest import load_reference

GPU = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
HOST = {"cuda_runtime", "cuda_driver", "Runtime", "cpu_op", "user_annotation"}


def _is_comm(event):
    from .collective_reference import COMMUNICATION
    return event.get("cat") == "kernel" and COMMUNICATION.search(event["name"].lower())


def rank_documents(source, ranks, shift_us=0, stretch=(1, 1), straggler=None, drop=None,
                   solo=(), splits=None, keep_host=False):
    """[(rank, document)]: the trace `source` as `ranks` ranks of one job.

    Each rank's times move `shift_us` µs later per rank; the `straggler` rank's timeline is
    also stretched by the fraction `stretch` from the trace's first event (its kernels longer
    and later). `drop` = (rank, k) removes that rank's k-th communication kernel (1-based);
    `solo` names communication kernels (by position) turned into a process group of one per
    rank; `splits` = {k: [splits of rank 0, ...]} makes the k-th collective an all_to_all-v
    with those text-list split sizes. Only GPU events (and, with `keep_host`, runtime calls
    and ops) are kept, so ingest stays quick."""
    document = load_reference(source)
    keep = GPU | (HOST if keep_host else set())
    events = [e for e in document["traceEvents"] if e.get("cat") in keep and "ts" in e]
    first = min(Decimal(e["ts"]) for e in events)
    out = []
    for rank in range(ranks):
        copied = []
        comm_position = 0
        for event in events:
            e = copy.deepcopy(event)
            ts = Decimal(e["ts"])
            if rank == straggler:
                numerator, denominator = stretch
                ts = first + (ts - first) * numerator / denominator
                if "dur" in e:
                    e["dur"] = _micros(Decimal(e["dur"]) * numerator / denominator)
            e["ts"] = _micros(ts + shift_us * rank)
            if _is_comm(e):
                comm_position += 1
                if drop == (rank, comm_position):
                    continue
                args = e.setdefault("args", {})
                args["Group size"] = ranks
                args["Process Group Ranks"] = str(list(range(ranks)))
                if comm_position in solo:
                    args["Process Group Name"] = f"solo{rank}"
                    args["Group size"] = 1
                if splits and comm_position in splits:
                    rank_splits = splits[comm_position][rank]
                    args["Collective name"] = "all_to_allv"
                    args["In split size"] = "[" + ", ".join(map(str, rank_splits)) + "]"
                    args["In msg nelems"] = args["Out msg nelems"] = sum(rank_splits)
            copied.append(e)
        meta = {k: v for k, v in document.items() if k != "traceEvents"}
        meta["distributedInfo"] = {**(meta.get("distributedInfo") or {}), "rank": rank,
                                   "world_size": ranks}
        out.append((rank, {**meta, "traceEvents": copied}))
    return out


def _micros(value):
    """µs with at most 3 decimals (what Kineto writes), truncated toward zero."""
    return Decimal(int(value * 1000)) / 1000


def write(documents, directory, suffix=""):
    """Write each (rank, document) as rank-N<suffix>.json.gz under `directory`; the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank, document in documents:
        path = directory / f"rank-{rank}{suffix}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(document, default=_number).encode(), 1))
        paths.append(path)
    return paths


def _number(value):
    if isinstance(value, Decimal):
        return float(value) if value != value.to_integral() else int(value)
    raise TypeError(type(value))
