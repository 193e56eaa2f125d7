"""`tracewh report`: a self-contained HTML report of a run."""

import click

from ..analyses.diff import DiffOptions
from ..errors import printable
from ..output import write_atomically
from .options import PEAKS_OPTION, RULES_OPTION, phase_option, runs_reader


@click.command(short_help="A self-contained HTML report of a run (and its diff).")
@click.argument("run")
@click.option("--base", metavar="RUN", help="Also compare RUN against this run (the diff).")
@phase_option("The phase [default: every phase of the run, side by side first].")
@click.option("--threshold", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="With --base: percent a kernel's total time must move to count.")
@click.option("--min-ns", type=click.IntRange(min=0), default=10000, show_default=True,
              help="With --base: noise floor in ns.")
@click.option("--timeline-rank", type=click.IntRange(min=0), metavar="N",
              help="The timeline draws this rank [default: the slowest, the one with the "
                   "longest median step].")
@click.option("--timeline-step", metavar="NAME",
              help="The timeline draws this step (ProfilerStep#N) [default: the rank's median "
                   "step; a phase without steps: the rank's median capture].")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")
@RULES_OPTION
@PEAKS_OPTION
def report(run, base, phase, threshold, min_ns, timeline_rank, timeline_step,
           out_path, rules, peaks):
    """Write one self-contained HTML file about RUN: overlap and exposed communication per
    rank, where GPU time goes, the timeline of one step (streams over time, kernels colored by
    class, annotations above), top kernels, duration histograms, rank skew, launch latency,
    steps over time, and with --base the regressions. A run of several phases (prefill and
    decode) gets its phases side by side, then each phase's sections, unless --phase picks
    one. No network is needed to view it: attach it to a nightly job.

    \b
    Examples:
      tracewh report nightly-1129 --out report.html
      tracewh report nightly-1129 --base nightly-1128 --out report.html
      tracewh report nightly-1129 --timeline-rank 3 --timeline-step ProfilerStep#12 --out r.html
    """
    from ..output.report import TimelineChoice, build_report  # matplotlib loads only for this command

    runs = [run, *([base] if base else [])]
    with runs_reader(rules, peaks).connect_to_runs(runs) as connection:
        text = build_report(connection, run, phase, base,
                            DiffOptions(threshold_pct=threshold, min_ns=min_ns),
                            TimelineChoice(timeline_rank, timeline_step))
    write_atomically(out_path, lambda handle: handle.write(text.encode()))
    click.echo(f"wrote {printable(out_path)} ({len(text.encode()) / 1e6:.1f} MB): open it in a "
               "browser")
