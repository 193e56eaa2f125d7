"""`tracewh trend`: one metric across many runs."""

import click

from ..storage.names import parse_tag
from ..analyses.trend import render_trend, trend_in_warehouse, trend_notes
from .options import FORMAT_OPTION, UNITS_OPTION, echo, phase_option, runs_reader, to_terminal


@click.command(name="trend")
@click.argument("metric")
@click.option("--last", type=click.IntRange(min=1), help="Only the last N runs.")
@click.option("--tag", metavar="KEY=VALUE", help="Only runs with this tag.")
@click.option("--order-by-tag", metavar="KEY",
              help="Order runs by this tag's value (a nightly date, say) instead of ingest "
                   "order; runs without the tag are left out (stderr says how many).")
@phase_option("This phase only (case does not matter).")
@FORMAT_OPTION
@UNITS_OPTION
def trend_command(metric, last, tag, order_by_tag, phase, fmt, units):
    """Follow METRIC across runs: drift over many nights, not just two.

    METRIC is overlap_ratio, exposed_comm_ns, step_time_ns, gpu_idle_ns, busbw_gbps (mean bus
    bandwidth of the collectives: every rank of a group needed), algbw_gbps (mean algorithm
    bandwidth from each rank's own durations, what one rank of a group allows),
    collective_wait_ns (time ranks waited for the last one), critical_path:CLASS (the time of
    each rank's critical path in a class: cpu_bound, gpu_compute_bound, ...),
    kernel:NAME (a kernel's total time, by full or short name) or op:NAME (an operator's self
    GPU time: the GPU activity its calls launched themselves, view op_stats). One row per run
    and phase: the median over ranks, its change from the previous run of the phase (delta,
    delta_pct), the min and max over ranks; a table ends with a sparkline of each phase.
    With --units, a table or markdown shows a metric in ns in that unit (value_ms...).

    \b
    Examples:
      tracewh trend overlap_ratio --last 30
      tracewh trend kernel:ncclDevKernel_AllReduce_Sum_f32_RING_LL --order-by-tag date
      tracewh trend op:aten::mm --last 14
      tracewh trend critical_path:gpu_compute_bound --last 14
    """
    tag = parse_tag(tag) if tag else None
    reader = runs_reader()
    columns, rows = trend_in_warehouse(reader, metric, last, tag, order_by_tag, phase)
    for note in trend_notes(reader, metric, rows, tag, order_by_tag, phase):
        click.echo(note, err=True)
    echo(render_trend(columns, rows, fmt, terminal=to_terminal(), units=units, metric=metric))
