"""`tracewh diff`: what got slower or faster between two runs."""

import sys

import click

from ..diff import DIFF_READS, KEYS, DiffOptions, diff_runs, render_diff
from ..query import connect_to_runs
from .options import RULES_OPTION, echo, phase_option


@click.command()
@click.argument("base")
@click.argument("new")
@phase_option("Compare this phase only (case does not matter).")
@click.option("--rank", type=click.IntRange(min=0), help="Compare this rank only.")
@click.option("--threshold", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Percent a kernel's total time (or a metric) must move to count; for "
                   "overlap_ratio, percentage points.")
@click.option("--min-ns", type=click.IntRange(min=0), default=10000, show_default=True,
              help="Noise floor: smaller moves in ns never count.")
@click.option("--by", type=click.Choice(KEYS), default="name", show_default=True,
              help="Match kernels by full name, by short name (other builds, other hardware) "
                   "or compare classes.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown", "csv"]),
              default="table", show_default=True,
              help="json is the contract for scripts; markdown reads well in a PR comment; csv "
                   "is one row per kernel and metric (column kind), every row.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a kernel or a metric regressed.")
@RULES_OPTION
@click.pass_obj
def diff(catalog, base, new, phase, rank, threshold, min_ns, by, fmt, fail_on_regression,
         rules):
    """Compare run NEW against run BASE: kernels and metrics that got slower or faster.

    Per kernel: count, total, mean, p50, p90 on both sides, delta and a status (added,
    removed, regressed, improved, unchanged). Per phase and rank: overlap_ratio,
    exposed_comm_ns, step_time_ns and gpu_idle_ns, with the same statuses. Runs that do not
    have the same ranks are compared by per-rank medians. Exit status: 0 no regression (or no
    --fail-on-regression), 1 a regression, 2 a usage or input error (an unknown run, or a
    --phase or --rank that a run does not have).

    \b
    Nightly gate:
      tracewh diff nightly-1128 nightly-1129 --fail-on-regression --format markdown > diff.md
    """
    options = DiffOptions(phase=phase, rank=rank, threshold_pct=threshold, min_ns=min_ns, by=by)
    connection = connect_to_runs(catalog.root, [base, new], rules, reads=DIFF_READS)
    report = diff_runs(connection, base, new, options)
    echo(render_diff(report, fmt))
    if fail_on_regression and report["summary"]["regression"]:
        sys.exit(1)
