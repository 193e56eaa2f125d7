"""Independent pure-Python references for the memory and launch-queue views: the same rules
as sql/memory_*.sql, stream_queue*.sql and step_bottleneck.sql, written over the decoded JSON
without SQL."""

from fractions import Fraction

from .reference import intersection_length, kernel_class, ns

DEVICE_KINDS = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia",
                20: "privateuse1"}
RUNTIME = ("cuda_runtime", "cuda_driver", "runtime")
WORK = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
BUSY = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "memcpy", "memset")


def _time(document, event):
    return int(document.get("baseTimeNanoseconds", 0)) + ns(event["ts"])


def _spans(document, category):
    """(index, event, start, end) of the complete events of a category."""
    for index, event in enumerate(document["traceEvents"]):
        if event.get("ph") == "X" and event.get("cat", "").lower() == category \
                and "dur" in event:
            start = _time(document, event)
            yield index, event, start, start + ns(event["dur"])


def steps(document):
    """(index, event, start, end) of the ProfilerStep#N spans (cpu_op or user_annotation)."""
    for category in ("cpu_op", "user_annotation"):
        for index, event, start, end in _spans(document, category):
            if event["name"].startswith("ProfilerStep#"):
                yield index, event, start, end


def memory_events(document):
    """One dict per [memory] instant, with the innermost cpu_op around it on its thread."""
    ops = {}
    for index, event, start, end in _spans(document, "cpu_op"):
        ops.setdefault((str(event["pid"]), str(event["tid"])), []).append(
            (start, end, index, event["name"]))
    events = []
    for index, event in enumerate(document["traceEvents"]):
        if event.get("name") != "[memory]" or event.get("ph") not in ("i", "I"):
            continue
        args, at = event["args"], _time(document, event)
        around = [op for op in ops.get((str(event["pid"]), str(event["tid"])), [])
                  if op[0] <= at < op[1]]
        innermost = max(around, key=lambda op: (op[0], op[0] - op[1], op[2]), default=None)
        kind = args["Device Type"]
        events.append({
            "event_index": index, "ts_ns": at, "pid": str(event["pid"]),
            "device_kind": DEVICE_KINDS.get(kind, str(kind)), "device_id": args["Device Id"],
            "addr": args["Addr"], "bytes": args["Bytes"],
            "allocated_bytes": args["Total Allocated"],
            "reserved_bytes": args["Total Reserved"],
            "op_event_index": innermost and innermost[2], "op_name": innermost and innermost[3]})
    return sorted(events, key=lambda e: (e["ts_ns"], e["event_index"]))


def series(events):
    """{(pid, device_kind, device_id): events in order}."""
    out = {}
    for event in events:
        out.setdefault((event["pid"], event["device_kind"], event["device_id"]), []).append(event)
    return out


def timeline(events):
    """{event_index: (running_bytes, consistent)} along each series."""
    out = {}
    for members in series(events).values():
        level = members[0]["allocated_bytes"] - members[0]["bytes"]
        previous = None
        for event in members:
            level += event["bytes"]
            consistent = previous is None or previous + event["bytes"] == event["allocated_bytes"]
            out[event["event_index"]] = (level, consistent)
            previous = event["allocated_bytes"]
    return out


def peaks(captures):
    """{(device_kind, device_id): (peak allocated, peak reserved, first event reaching the
    peak as (ts, capture number, event_index))} over one rank's captures."""
    out = {}
    for number, events in enumerate(captures):
        for event in events:
            key = (event["device_kind"], event["device_id"])
            allocated, reserved, first = out.get(key, (None, None, None))
            moment = (event["ts_ns"], number, event["event_index"])
            if allocated is None or event["allocated_bytes"] > allocated or (
                    event["allocated_bytes"] == allocated and moment < first):
                allocated, first = event["allocated_bytes"], moment
            reserved = max(reserved if reserved is not None else event["reserved_bytes"],
                           event["reserved_bytes"])
            out[key] = (allocated, reserved, first)
    return out


def step_peaks(document, events):
    """{(step event_index, device_kind, device_id): (peak allocated, peak reserved, moment)}:
    the curve of each series within the step, the level it opens with included."""
    out = {}
    for step_index, _, start, end in steps(document):
        for members in series(events).values():
            levels = []
            for position, event in enumerate(members):
                following = members[position + 1]["ts_ns"] if position + 1 < len(members) \
                    else None
                if event["ts_ns"] < end and (following is None or following > start):
                    levels.append((event["allocated_bytes"], event["reserved_bytes"],
                                   max(event["ts_ns"], start)))
            if not levels:
                continue
            key = (step_index, members[0]["device_kind"], members[0]["device_id"])
            best = max(levels, key=lambda level: (level[0], -level[2]))
            allocated, reserved, moment = out.get(key, (None, None, None))
            if allocated is None or best[0] > allocated:
                allocated, moment = best[0], best[2]
            out[key] = (allocated, max([reserved or 0] + [level[1] for level in levels]), moment)
    return out


def allocations(events):
    """(status, bytes, lifetime_ns or None) per block, pairing by address in order."""
    out, by_address = [], {}
    for event in events:
        if event["bytes"]:
            by_address.setdefault((event["pid"], event["device_kind"], event["device_id"],
                                   event["addr"]), []).append(event)
    for members in by_address.values():
        for position, event in enumerate(members):
            following = members[position + 1] if position + 1 < len(members) else None
            previous = members[position - 1] if position else None
            if event["bytes"] > 0:
                freed = following is not None and following["bytes"] < 0
                out.append(("freed" if freed else "not_freed", event["bytes"],
                            following["ts_ns"] - event["ts_ns"] if freed else None))
            elif previous is None or previous["bytes"] < 0:
                out.append(("allocated_before", -event["bytes"], None))
    return sorted(out, key=lambda row: (row[0], row[1], row[2] is None, row[2] or 0))


def launched_work(document):
    """(stream, start, end, launch start or None, launch duration or None) of each kernel,
    copy and set, its launch the earliest runtime call with its correlation id."""
    launches = {}
    for category in RUNTIME:
        for _, event, start, end in _spans(document, category):
            correlation = event.get("args", {}).get("correlation")
            if correlation and (correlation not in launches or start < launches[correlation][0]):
                launches[correlation] = (start, end - start)
    work = []
    for category in WORK:
        for index, event, start, end in _spans(document, category):
            args = event.get("args", {})
            launch = launches.get(args.get("correlation")) if args.get("correlation") else None
            work.append((index, args.get("stream", event.get("tid")), start, end,
                         launch and launch[0], launch and launch[1]))
    return work


def queue_series(document):
    """{stream: (changes, [length after each], [ns each length held])}: +1 at each launch, -1
    at each start, launches first at equal times; the last length is held 0 ns."""
    by_stream = {}
    for index, stream, start, _, launch, _ in launched_work(document):
        if launch is not None:
            by_stream.setdefault(stream, []).extend([(launch, 0, index, 1), (start, 1, index, -1)])
    out = {}
    for stream, changes in by_stream.items():
        changes.sort()
        lengths, length = [], 0
        for change in changes:
            length += change[3]
            lengths.append(length)
        held = [changes[i + 1][0] - changes[i][0] for i in range(len(changes) - 1)] + [0]
        out[stream] = (changes, lengths, held)
    return out


def queue_blocked(document, full_at):
    """{stream: (ns at a length of at least full_at, span ns)}: HTA's time blocked on a full
    launch queue."""
    return {stream: (sum(time for length, time in zip(lengths, held) if length >= full_at),
                     sum(held))
            for stream, (_, lengths, held) in queue_series(document).items()}


def queue_summaries(document):
    """{stream: (changes, max length, time-weighted mean as a Fraction, empty ns, ns at the
    max)}."""
    out = {}
    for stream, (changes, lengths, held) in queue_series(document).items():
        longest = max(lengths)
        weighted = sum(length * time for length, time in zip(lengths, held))
        out[stream] = (len(changes), longest,
                       Fraction(weighted, sum(held)) if sum(held) else None,
                       sum(time for length, time in zip(lengths, held) if length == 0),
                       sum(time for length, time in zip(lengths, held) if length == longest))
    return out


def _clipped(intervals, start, end):
    return [(max(s, start), min(e, end)) for s, e in intervals if s < end and e > start]


def step_figures(document):
    """{step event_index: figures and verdict}, the rules of step_bottleneck."""
    work = launched_work(document)
    busy = [(s, e) for category in BUSY for _, _, s, e in _spans(document, category)]
    classes = {"communication": [], "computation": []}
    for _, event, s, e in _spans(document, "kernel"):
        if e > s:
            classes[kernel_class(event.get("name"))].append((s, e))
    fed = [(min(launch if launch is not None else s, s), e) for _, _, s, e, launch, _ in work]
    pending = [(launch, s) for _, _, s, _, launch, _ in work if launch is not None and launch < s]
    out = {}
    for index, _, start, end in steps(document):
        if end <= start:
            continue
        window = [(start, end)]
        duration = end - start
        comm = _clipped(classes["communication"], start, end)
        compute = _clipped(classes["computation"], start, end)
        inside = [w for w in work
                  if start <= (w[4] if w[4] is not None else w[2]) < end]
        with_launch = [w for w in inside if w[4] is not None]
        figures = {
            "kernels": len(inside),
            "gpu_busy_ns": intersection_length(busy, window),
            "host_wait_ns": duration - intersection_length(fed, window),
            "empty_queue_ns": duration - intersection_length(pending, window),
            "exposed_comm_ns": intersection_length(comm, window)
            - intersection_length(comm, compute),
            "short_kernel_share": (sum(1 for w in with_launch if w[3] - w[2] < w[5])
                                   / len(with_launch)) if with_launch else None,
        }
        host = figures["host_wait_ns"] / duration
        exposed = figures["exposed_comm_ns"] / duration
        if host >= 0.3 and host >= exposed:
            verdict = "host_bound"
        elif exposed >= 0.3:
            verdict = "communication_bound"
        elif figures["gpu_busy_ns"] / duration >= 0.8:
            verdict = "gpu_bound"
        else:
            verdict = "mixed"
        out[index] = {**figures, "verdict": verdict}
    return out


def memory_bandwidth(document):
    """{kind: [(ts ns, copies in flight, bandwidth as a Fraction of bytes per ns)]}: each copy
    and set adds bytes / duration from its start to its end, starts first at equal times;
    kinds as the trace names them (`Memcpy DtoH`, `Memset`)."""
    by_kind = {}
    for category, kind_of in (("gpu_memcpy", lambda name: " ".join(name.split()[:2])),
                              ("gpu_memset", lambda name: "Memset")):
        for index, event, start, end in _spans(document, category):
            size = event.get("args", {}).get("bytes")
            if size is None:
                continue
            rate = Fraction(size, end - start) if end > start else Fraction(0)
            by_kind.setdefault(kind_of(event["name"]), []).extend(
                [(start, 0, index, 1, rate), (end, 1, index, -1, -rate)])
    out = {}
    for kind, changes in by_kind.items():
        changes.sort(key=lambda change: change[:3])
        copies, rate, series = 0, Fraction(0), []
        for ts, _, _, count, delta in changes:
            copies += count
            rate += delta
            series.append((ts, copies, rate))
        out[kind] = series
    return out


def kernel_trigrams(document, short_name):
    """{(stream, first, second, third): (occurrences, total ns)} of every three consecutive
    kernels on a stream, in order of start then file order; kernels named by `short_name`."""
    by_stream = {}
    for index, event, start, end in _spans(document, "kernel"):
        stream = event.get("args", {}).get("stream", event.get("tid"))
        by_stream.setdefault(stream, []).append((start, index, short_name[event["name"]],
                                                 end - start))
    out = {}
    for stream, kernels in by_stream.items():
        kernels.sort()
        for a, b, c in zip(kernels, kernels[1:], kernels[2:]):
            key = (stream, a[2], b[2], c[2])
            count, total = out.get(key, (0, 0))
            out[key] = (count + 1, total + a[3] + b[3] + c[3])
    return out


def memory_bytes(document):
    """{kind: bytes} of the copies and sets that took time (a 0 ns one has no rate)."""
    out = {}
    for kind, series in memory_bandwidth(document).items():
        out[kind] = float(sum(rate * (after[0] - ts)
                              for (ts, _, rate), after in zip(series, series[1:])))
    return out
