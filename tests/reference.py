"""Independent pure-Python references: the interval figures the SQL views compute, and where
an event's keys are kept."""

import json
from decimal import Decimal
from fractions import Fraction

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
