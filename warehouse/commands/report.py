"""`tracewh report`: a self-contained HTML report of a run."""

from pathlib import Path

import click

from ..diff import DiffOptions
from ..errors import UsageError
from ..query import connect_to_runs
from .options import RULES_OPTION, phase_option


@click.command(short_help="A self-contained HTML report of a run (and its diff).")
@click.argument("run")
@click.option("--base", metavar="RUN", help="Also compare RUN against this run (the diff).")
@phase_option("The phase [default: the run's only phase].")
@click.option("--threshold", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="With --base: percent a kernel's total time must move to count.")
@click.option("--min-ns", type=click.IntRange(min=0), default=10000, show_default=True,
              help="With --base: noise floor in ns.")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")
@RULES_OPTION
@click.pass_obj
def report(catalog, run, base, phase, threshold, min_ns, out_path, rules):
    """Write one self-contained HTML file about RUN: overlap and exposed communication per
    rank, where GPU time goes, top kernels, duration histograms, rank skew, launch latency,
    steps over time, and with --base the regressions. No network is needed to view it: attach
    it to a nightly job.

    \b
    Examples:
      tracewh report nightly-1129 --out report.html
      tracewh report nightly-1129 --base nightly-1128 --out report.html
    """
    from ..report import build_report  # matplotlib loads only for this command

    connection = connect_to_runs(catalog.root, [run, *([base] if base else [])], rules)
    text = build_report(connection, run, phase, base,
                        DiffOptions(threshold_pct=threshold, min_ns=min_ns))
    path = Path(out_path)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: cannot write: {error.strerror or error}") from None
    click.echo(f"wrote {path} ({len(text.encode()) / 1e6:.1f} MB): open it in a browser")
