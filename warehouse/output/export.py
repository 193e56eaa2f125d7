"""Chrome-trace JSON out of the warehouse: a capture, or a window of it, for Perfetto and
chrome://tracing (`tracewh export`).

Every event is rebuilt from its table's row: its phase (implied by the table, or the `ph`
column), category, name, pid and tid (numbers where the text is one), ts and dur in µs with the
exact nanoseconds as three decimals (relative to baseTimeNanoseconds where the trace had one),
args as stored (compact JSON, numbers exact), flow ids, binding points and instant scopes, and
the keys kept in `extra`. Events come out in their original order (event_index) under the
trace's top-level metadata, so ingesting an exported whole capture gives the same rows in
every table.

A window keeps the metadata events (process and thread names), the events that overlap it, the
GPU activity launched in it (which the views count in it, though it may run after its end) with
the launch calls of every kernel it keeps, and the flows whose ends all fall inside it or on
those kernels and launches.
"""

import decimal
import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..errors import HINT, UsageError
from . import write_atomically
from ..storage.schema import VERSION_KEYS

# Per event table: the phase its rows imply (None: the row's `ph` column) and its columns
# beyond the common ones.
EVENT_TABLES = {
    "kernels": ("X", ("dur_ns",)),
    "cpu_ops": ("X", ("dur_ns",)),
    "runtime": ("X", ("dur_ns",)),
    "flows": (None, ("ph", "id", "bp")),
    "counters": ("C", ()),
    "instants": ("i", ("scope",)),
    "metadata": ("M", ()),
    "other_events": (None, ("ph", "dur_ns")),
}
_COMMON = ("event_index", "category", "name", "pid", "tid", "ts_ns", "args", "extra")
_INTEGER = re.compile(r"-?[0-9]+")
# The partition and capture every query of an export names: partitions prune to the rank's files.
_SCOPE = "run = $run AND phase = $phase AND rank = $rank AND trace_id = $t"


@dataclass
class Window:
    """[start_ns, end_ns) of one capture (trace_id) of a run/phase/rank; a whole capture has
    no bounds."""

    where: tuple  # (run, phase, rank): the partition, so that queries prune to it
    trace_id: str
    start_ns: int | None = None
    end_ns: int | None = None
    label: str = "the whole capture"


@dataclass
class WindowChoice:
    """What the user asked for: a step, an annotation, explicit bounds, or nothing (all)."""

    step: str | None = None
    annotation: str | None = None
    occurrence: int | None = None
    from_ns: int | None = None
    to_ns: int | None = None
    trace_id: str | None = None
    relative: bool = False  # from_ns and to_ns count from the capture's start


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s)")
_NS_PER = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}


def parse_duration(text, option):
    """Integer ns of a time with its unit ('12.5ms' -> 12500000), exact (no float), or a
    UsageError naming `option`."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"{option} {text!r} is not a time (such as 12.5ms; units ns, us, ms, s)")
    ns = decimal.Decimal(match.group(1)) * _NS_PER[match.group(2)]
    if ns != ns.to_integral_value():
        raise UsageError(f"{option} {text!r} is not a whole number of ns")
    return int(ns)


def micros(ns):
    """Integer nanoseconds as exact µs text: 1500 -> '1.500', 2000 -> '2', -1500 -> '-1.500'."""
    whole, fraction = divmod(abs(ns), 1000)
    sign = "-" if ns < 0 else ""
    return f"{sign}{whole}.{fraction:03d}" if fraction else f"{sign}{whole}"


def resolve_window(connection, run, phase, rank, choice):
    """The capture and bounds that `choice` names, or a UsageError saying what is ambiguous."""
    where = (run, phase, rank)
    if choice.step is not None or choice.annotation is not None:
        return _named_window(connection, where, choice)
    traces = _traces(connection, where, choice)
    if choice.from_ns is None:
        return Window(where, _only(where, traces))
    if choice.from_ns >= choice.to_ns:
        raise UsageError("the window must start before it ends",
                         cli_hint=" (--from before --to)" if choice.relative else
                         " (--from-ns before --to-ns)")
    if choice.relative:
        trace = _only(where, traces)
        start = _capture_start(connection, where, trace)
        traces = [trace]
        label = (f"{choice.from_ns} to {choice.to_ns} ns after the capture's start "
                 f"({start + choice.from_ns} to {start + choice.to_ns} ns)")
        choice = WindowChoice(from_ns=start + choice.from_ns, to_ns=start + choice.to_ns)
    else:
        label = f"{choice.from_ns} to {choice.to_ns} ns"
    inside = [trace for trace in traces
              if _events_in(connection, where, trace, choice.from_ns, choice.to_ns)]
    if not inside:
        raise UsageError(f"no event of rank {rank} of run {run!r} falls in "
                         f"[{choice.from_ns}, {choice.to_ns})")
    if len(inside) > 1:
        raise UsageError(f"the window holds events of {len(inside)} captures "
                         f"({', '.join(inside)}): pick one", cli_hint=" with --trace")
    return Window(where, inside[0], choice.from_ns, choice.to_ns, label)


def _only(where, traces):
    """The rank's one capture, or a UsageError asking for --trace."""
    if len(traces) > 1:
        raise UsageError(f"rank {where[2]} of run {where[0]!r} has {len(traces)} captures "
                         f"({', '.join(traces)}): pick one", cli_hint=" with --trace")
    return traces[0]


def _timed(columns):
    """The capture's events with a time: cpu_ops, kernels and runtime rows."""
    return " UNION ALL ".join(f"SELECT {columns} FROM {table} WHERE {_SCOPE}"
                              for table in ("cpu_ops", "kernels", "runtime"))


def _capture_start(connection, where, trace_id):
    """The capture's start, which --from and --to count from: its first event's ts_ns."""
    (start,) = connection.execute(f"SELECT min(ts_ns) FROM ({_timed('ts_ns')})",
                                  _parameters(where, trace_id)).fetchone()
    return start or 0


def _traces(connection, where, choice):
    traces = [row[0] for row in connection.execute(
        "SELECT trace_id FROM traces WHERE run = ? AND phase = ? AND rank = ? "
        "ORDER BY ingest_seq", list(where)).fetchall()]
    if choice.trace_id is not None:
        if choice.trace_id not in traces:
            raise UsageError(f"no capture {choice.trace_id!r} in rank {where[2]} of run "
                             f"{where[0]!r}, phase {where[1]!r} (its captures: "
                             f"{', '.join(traces)})")
        return [choice.trace_id]
    return traces


def _parameters(where, trace_id, **more):
    return {"run": where[0], "phase": where[1], "rank": where[2], "t": trace_id, **more}


def _events_in(connection, where, trace_id, start, end):
    (count,) = connection.execute(
        f"SELECT count(*) FROM ({_timed('ts_ns, dur_ns')}) WHERE {_overlaps(has_dur=True)}",
        _parameters(where, trace_id, start=start, end=end)).fetchone()
    return count


def _named_window(connection, where, choice):
    """The window of a ProfilerStep#N (--step) or a user annotation (--annotation), on the CPU
    or on a GPU stream, by name; its `occurrence` in time order when it repeats."""
    scope = "run = $run AND phase = $phase AND rank = $rank AND name = $name"
    spans = "SELECT trace_id, ts_ns, ts_ns + dur_ns AS end_ns FROM"
    if choice.step is not None:
        kind, name = "step", choice.step
        sql = f"{spans} cpu_ops WHERE {scope} AND dur_ns IS NOT NULL"
    else:
        kind, name = "annotation", choice.annotation
        sql = (f"{spans} cpu_ops WHERE {scope} AND category = 'user_annotation' "
               f"AND dur_ns IS NOT NULL UNION ALL {spans} kernels WHERE {scope} "
               "AND category = 'gpu_user_annotation' AND dur_ns IS NOT NULL")
    found = connection.execute(
        f"SELECT * FROM ({sql}) ORDER BY ts_ns, trace_id",
        {"name": name, "run": where[0], "phase": where[1], "rank": where[2]}).fetchall()
    if choice.trace_id is not None:
        found = [row for row in found if row[0] == choice.trace_id]
    if not found:
        raise UsageError(f"no {kind} named {name!r} in rank {where[2]} of run {where[0]!r}, "
                         f"phase {where[1]!r}{_steps_there(connection, where, kind)}")
    if choice.occurrence is None and len(found) > 1:
        raise UsageError(f"{kind} {name!r} occurs {len(found)} times in rank {where[2]} of run "
                         f"{where[0]!r}: pick one{HINT} (in time order)",
                         cli_hint=f" with --occurrence 1-{len(found)}",
                         library_hint=f", occurrence 1-{len(found)}")
    number = choice.occurrence or 1
    if number > len(found):
        raise UsageError(f"{kind} {name!r} occurs {len(found)} times; no occurrence {number}")
    trace_id, start, end = found[number - 1]
    return Window(where, trace_id, start, end, f"{kind} {name}" + (
        f" (occurrence {number})" if len(found) > 1 else ""))


def _steps_there(connection, where, kind):
    """' (its 12 steps: ProfilerStep#3 to ProfilerStep#14)': what --step can name instead."""
    if kind != "step":
        return ""
    count, first, last = connection.execute(
        "SELECT count(*), arg_min(name, ts_ns), arg_max(name, ts_ns) FROM cpu_ops "
        "WHERE run = $run AND phase = $phase AND rank = $rank AND dur_ns IS NOT NULL "
        "AND name LIKE 'ProfilerStep#%'",
        {"run": where[0], "phase": where[1], "rank": where[2]}).fetchone()
    if count == 0:
        return " (it has no ProfilerStep#N)"
    if count == 1:
        return f" (its 1 step: {first})"
    return f" (its {count:,} steps: {first} to {last})"


def export_window(connection, window, out_path):
    """Write the window's events as Chrome-trace JSON (gzipped when the name ends in .gz);
    return the number of events written."""
    header = _header(connection, window.trace_id)
    base = header.get("baseTimeNanoseconds")
    base = int(base) if isinstance(base, int) else 0
    events = []
    for table, (implied_ph, own) in EVENT_TABLES.items():
        rows = connection.execute(*_select(table, own, window))
        columns = [d[0] for d in rows.description]
        for row in rows.fetchall():
            record = dict(zip(columns, row))
            events.append((record["event_index"], _event(record, implied_ph, base)))
    events.sort(key=lambda item: item[0])
    _write(out_path, header, [encoded for _, encoded in events])
    return len(events)


def _select(table, own, window):
    """(SQL, parameters) of the table's events in the window."""
    sql = f"SELECT {', '.join(_COMMON + own)} FROM {table} WHERE {_SCOPE}"
    capture = _parameters(window.where, window.trace_id)
    if window.start_ns is None or table == "metadata":
        return sql, capture
    bounded = {**capture, "start": window.start_ns, "end": window.end_ns}
    if table in _LINKED:
        return f"{sql} AND {_LINKED[table]}", bounded
    if table == "flows":  # a flow whose every end falls inside or on an exported launch link
        return (f"{sql} AND (category, id) IN (SELECT f.category, f.id FROM "
                f"(SELECT * FROM flows WHERE {_SCOPE}) AS f LEFT JOIN ({_LINK_ENDS}) AS e "
                "ON e.ts_ns = f.ts_ns AND e.pid = f.pid AND e.tid = f.tid "
                "GROUP BY f.category, f.id "
                "HAVING bool_and(f.ts_ns >= $start AND f.ts_ns < $end OR e.ts_ns IS NOT NULL))"
                ), bounded
    return f"{sql} AND {_overlaps('dur_ns' in own)}", bounded


def _overlaps(has_dur):
    """The condition of an event that overlaps the window [$start, $end): one that starts
    before its end and ends (or, without a duration, starts) at or after its start."""
    end = "coalesce(ts_ns + dur_ns, ts_ns)" if has_dur else "ts_ns"
    return f"ts_ns < $end AND {end} >= $start"


# A window holds what the views count in it: GPU activity counts where its launch falls (see
# _overlap_intervals), so the window's kernels are those that overlap it and those launched in
# it (running after its end), and its runtime calls those that overlap it and the launches of
# its kernels (so that a kernel running in the window but launched before keeps its launch,
# and counts before the window again when the file is ingested).
_LAUNCHED_IN_WINDOW = (f"SELECT correlation FROM runtime WHERE {_SCOPE} AND correlation <> 0 "
                       "GROUP BY correlation HAVING min(ts_ns) >= $start AND min(ts_ns) < $end")
_WINDOW_KERNELS = (f"({_overlaps(has_dur=True)} OR correlation IN ({_LAUNCHED_IN_WINDOW}))")
_LINKED = {
    "kernels": _WINDOW_KERNELS,
    "runtime": (f"({_overlaps(has_dur=True)} OR correlation IN (SELECT correlation FROM "
                f"kernels WHERE {_SCOPE} AND correlation <> 0 AND {_WINDOW_KERNELS}))"),
}
# Where the launch links of the window's kernels end: the kernels' and their launches' starts.
_LINK_ENDS = (f"SELECT ts_ns, pid, tid FROM kernels WHERE {_SCOPE} AND {_WINDOW_KERNELS} "
              f"UNION ALL SELECT ts_ns, pid, tid FROM runtime WHERE {_SCOPE} AND "
              f"{_LINKED['runtime']}")


def _event(record, implied_ph, base):
    """The event as JSON bytes, rebuilt from its row."""
    event = {"ph": implied_ph or record["ph"]}
    for key, column in (("cat", "category"), ("name", "name")):
        if record[column] is not None:
            event[key] = record[column]
    for key in ("pid", "tid"):
        value = record[key]
        if value is not None:
            event[key] = msgspec.Raw(value.encode()) if _INTEGER.fullmatch(value) else value
    if record["ts_ns"] is not None:
        event["ts"] = msgspec.Raw(micros(record["ts_ns"] - base).encode())
    if record.get("dur_ns") is not None:
        event["dur"] = msgspec.Raw(micros(record["dur_ns"]).encode())
    for key, column in (("id", "id"), ("bp", "bp"), ("s", "scope")):
        value = record.get(column)
        if value is not None:
            event[key] = msgspec.Raw(value.encode()) if _INTEGER.fullmatch(value) else value
    if record["args"] is not None:
        event["args"] = msgspec.Raw(record["args"].encode())
    if record["extra"] is not None:
        event.update(msgspec.json.decode(record["extra"], type=dict[str, msgspec.Raw]))
    return msgspec.json.encode(event)


def _header(connection, trace_id):
    """The trace's top-level keys but traceEvents, from its `traces` row."""
    row = connection.execute(
        "SELECT schema_version, base_time_ns, trace_name, metadata, "
        f"{', '.join(VERSION_KEYS)} FROM traces WHERE trace_id = ?", [trace_id]).fetchone()
    schema_version, base_time, trace_name, metadata, *versions = row
    header = {}
    if schema_version is not None:
        header["schemaVersion"] = _number_or_text(schema_version)
    header.update(msgspec.json.decode(metadata or "{}", type=dict[str, msgspec.Raw]))
    for key, value in zip(VERSION_KEYS, versions):
        if value is not None:
            header[key] = _number_or_text(value)
    if trace_name is not None:
        header["traceName"] = trace_name
    if base_time is not None:
        header["baseTimeNanoseconds"] = base_time
    return header


def _number_or_text(value):
    return int(value) if _INTEGER.fullmatch(value) else value


def _write(out_path, header, events):
    """The document, written whole or not at all."""
    out_path = Path(out_path)
    head = msgspec.json.encode(header)[:-1]
    body = b",\n".join(events)
    document = (head + (b"," if len(head) > 1 else b"") + b'"traceEvents":[\n' + body
                + b"\n]}\n")

    def write(handle):
        if out_path.name.endswith(".gz"):
            with gzip.GzipFile(fileobj=handle, mode="wb") as compressed:
                compressed.write(document)
        else:
            handle.write(document)

    write_atomically(out_path, write)
