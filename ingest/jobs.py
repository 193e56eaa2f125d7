"""Traces of different jobs in one run: what an ingest warns about.

A run's name defaults to the input's directory name, so `trace_compare/test` and
`trace_diff/test` both become run `test`, and a directory of unrelated captures becomes one run:
their figures then merge silently (a rank's busy time, idle time and kernel totals summed over
jobs). An ingest cannot know the user's intent, but it can see when the traces it puts together
do not look like one job: different world sizes in one run, different devices or start times
days apart for one rank, or a default run name taken from different directories.
"""

from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

DAY_NS = 86_400 * 10**9
TIMED_TABLES = ("cpu_ops", "runtime", "kernels")  # metadata events carry ts 0


@dataclass(frozen=True)
class JobSignature:
    """What a trace says of the job that wrote it."""

    world_size: int | None
    devices: tuple  # distinct device names
    start_ns: int | None  # earliest start of a CPU op, runtime call or kernel


def first_start(tables):
    """The earliest ts_ns of a chunk's timed events (None when it has none)."""
    starts = [pc.min(tables[name]["ts_ns"]).as_py() for name in TIMED_TABLES if name in tables]
    starts = [start for start in starts if start is not None]
    return min(starts) if starts else None


def mixed_job_warnings(outcomes, run_given, run_option="run="):
    """One line per run, or run/phase/rank, that this ingest filled with traces that look like
    different jobs. `run_given`: the user named the run (no directory-name default);
    `run_option`: how the caller names a run (the API: run=, the CLI: --run)."""
    stored = [o for o in outcomes if o.status in ("ingested", "replaced") and o.job]
    lines = []
    if not run_given:
        lines += _shared_default_names(stored, run_option)
    by_run, by_rank = {}, {}
    for outcome in stored:
        by_run.setdefault(outcome.run, []).append(outcome)
        by_rank.setdefault((outcome.run, outcome.phase, outcome.rank), []).append(outcome)
    for run, group in by_run.items():
        sizes = sorted({o.job.world_size for o in group if o.job.world_size is not None})
        if len(sizes) > 1:
            lines.append(f"run {run!r} now holds traces of world sizes "
                         f"{', '.join(map(str, sizes))}: they look like different jobs; "
                         f"name each job's run with {run_option}")
    for (run, phase, rank), group in by_rank.items():
        differences = _differences([o.job for o in group])
        if differences:
            lines.append(f"run {run!r}, phase {phase!r}, rank {rank}: {len(group)} captures "
                         f"that look like different jobs ({'; '.join(differences)}); their "
                         f"figures add up as one rank's: name each job's run with {run_option}")
    return lines


def _shared_default_names(outcomes, run_option):
    directories = {}
    for outcome in outcomes:
        directories.setdefault(outcome.run, set()).add(str(Path(outcome.path).parent))
    return [f"run {run!r} was named after {len(found)} different directories "
            f"({', '.join(sorted(found))}): pass {run_option} to keep them apart"
            for run, found in directories.items() if len(found) > 1]


def _differences(jobs):
    """What sets the jobs of one rank's captures apart, as short phrases."""
    found = []
    devices = sorted({job.devices for job in jobs if job.devices})
    if len(devices) > 1:
        found.append("devices " + " and ".join("/".join(names) for names in devices))
    starts = [job.start_ns for job in jobs if job.start_ns is not None]
    if starts and max(starts) - min(starts) > DAY_NS:
        found.append(f"start times {(max(starts) - min(starts)) / DAY_NS:.1f} days apart")
    return found
