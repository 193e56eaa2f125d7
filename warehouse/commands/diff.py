"""`tracewh diff`: what got slower or faster between two runs."""

import sys

import click

from .. import output
from ..analyses.diff import (COLLECTIVE_SIZES, KEYS, DiffOptions, diff_in_warehouse,
                             render_diff)
from .options import RULES_OPTION, UNITS_OPTION, echo, phase_option, runs_reader, to_terminal


@click.command()
@click.argument("base")
@click.argument("new")
@phase_option("Compare this phase only (case does not matter); the phase of a side that names "
              "none.")
@click.option("--rank", type=click.IntRange(min=0), help="Compare this rank only.")
@click.option("--threshold", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Percent a kernel's total time (or a metric) must move to count; for "
                   "overlap_ratio, percentage points.")
@click.option("--min-ns", type=click.IntRange(min=0), default=10000, show_default=True,
              help="Noise floor: smaller moves in ns never count.")
@click.option("--by", type=click.Choice(KEYS), default="name", show_default=True,
              help="Match kernels by full name, by short name (other builds, other hardware), "
                   "compare classes, operators (op: each cpu_op name's calls and self GPU "
                   "time, what it launched itself; '(no op)' for the rest), or collectives by "
                   "kind, process group and size (see --collective-size), with each side's "
                   "median bus bandwidth (every rank of the group needed) and algorithm "
                   "bandwidth from each rank's own durations (algbw_gbps), or each rank's "
                   "critical path by class (critical-path: 'gpu_compute_bound rank 3', its "
                   "time over the steps).")
@click.option("--collective-size", type=click.Choice(COLLECTIVE_SIZES), default="pow2",
              show_default=True,
              help="With --by collective: key a collective's size by its power-of-two bucket "
                   "(all_to_all group 0 16-32 KiB: all-to-all-v sizes that vary from step to "
                   "step stay one row), or by its exact bytes.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown", "csv"]),
              default="table", show_default=True,
              help="json is the contract for scripts; markdown reads well in a PR comment; csv "
                   "is one row per kernel and metric (column kind), every row.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a kernel or a metric regressed.")
@UNITS_OPTION
@RULES_OPTION
def diff(base, new, phase, rank, threshold, min_ns, by, collective_size, fmt,
         fail_on_regression, units, rules):
    """Compare run NEW against run BASE: kernels and metrics that got slower or faster.

    Either side may be RUN:PHASE (run and phase names hold no colon): infer:prefill
    infer:decode compares two phases of one run, a:prefill b:decode phases of two runs. A
    side without a phase takes --phase, else the other side's phase, else every phase. When
    the sides are different phases, a metric's phase reads prefill->decode.

    Per kernel: count, total, mean, p50, p90 on both sides, delta and a status (added,
    removed, regressed, improved, unchanged). Per phase and rank: overlap_ratio,
    exposed_comm_ns, step_time_ns, gpu_idle_ns, busbw_gbps and collective_wait_ns, with the
    same statuses. Runs that do not
    have the same ranks are compared by per-rank medians. The header (and the JSON summary's
    sides and warnings) names each side's devices, world size and ranks present, and warns
    when they differ; the figures are compared all the same, and decide the exit status.
    The table cuts names in the middle to fit the width beside the deltas and counts;
    markdown, json and csv keep them whole. With --units, a table or markdown shows the
    times in that unit, a metric in ns too (exposed_comm_ns as exposed_comm_ms). Exit status: 0 no regression (or no
    --fail-on-regression), 1 a regression, 2 a usage or input error (an unknown run, or a
    --phase or --rank that a run does not have).

    \b
    Nightly gate:
      tracewh diff nightly-1128 nightly-1129 --fail-on-regression --format markdown > diff.md
      tracewh diff nightly-1128 nightly-1129 --by op     # "aten::mm +25%"
      tracewh diff nightly-1128 nightly-1129 --by critical-path
    Prefill against decode of one run:
      tracewh diff infer:prefill infer:decode
    """
    options = DiffOptions(phase=phase, rank=rank, threshold_pct=threshold, min_ns=min_ns, by=by,
                          collective_size=collective_size)
    report = diff_in_warehouse(runs_reader(rules), base, new, options)
    if fmt == "csv":  # one table: the warnings and notes of table and markdown go to stderr
        for kind in ("warning", "note"):
            for line in report["summary"][f"{kind}s"]:
                click.echo(f"{kind}: {output.one_line(line)}", err=True)
    echo(render_diff(report, fmt, terminal=to_terminal(), units=units))
    if fail_on_regression and report["summary"]["regression"]:
        sys.exit(1)
