"""`tracewh trend`: one metric across many runs."""

import click

from .. import output
from ..diff import trend_in_warehouse
from ..names import parse_tag
from .options import FORMAT_OPTION, echo, phase_option


@click.command(name="trend")
@click.argument("metric")
@click.option("--last", type=click.IntRange(min=1), help="Only the last N runs.")
@click.option("--tag", metavar="KEY=VALUE", help="Only runs with this tag.")
@click.option("--order-by-tag", metavar="KEY",
              help="Order runs by this tag's value (a nightly date, say) instead of ingest "
                   "order.")
@phase_option("This phase only (case does not matter).")
@FORMAT_OPTION
@click.pass_obj
def trend_command(catalog, metric, last, tag, order_by_tag, phase, fmt):
    """Follow METRIC across runs: drift over many nights, not just two.

    METRIC is overlap_ratio, exposed_comm_ns, step_time_ns, gpu_idle_ns, or kernel:NAME (a
    kernel's total time, by full or short name). One row per run and phase: the median over
    ranks, with the min and max.

    \b
    Examples:
      tracewh trend overlap_ratio --last 30
      tracewh trend kernel:ncclDevKernel_AllReduce_Sum_f32_RING_LL --order-by-tag date
    """
    columns, rows = trend_in_warehouse(catalog.root, metric, last=last,
                                       tag=parse_tag(tag) if tag else None,
                                       order_by_tag=order_by_tag, phase=phase)
    echo(output.render(columns, rows, fmt))
