"""`tracewh critical-path`: what set each step's length, by class and by event."""

import json

import click

from .. import output
from .options import FORMAT_OPTION, echo, pass_warehouse


@click.command("critical-path")
@click.argument("run")
@click.option("--phase", help="Only this phase.")
@click.option("--step", help="Only this step (ProfilerStep#N).")
@click.option("--rank", type=int, help="This rank's own path instead of the job's.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many of the path's longest events to list.")
@FORMAT_OPTION
@pass_warehouse
def critical_path(warehouse, run, phase, step, rank, top, fmt):
    """Print the critical path of each step of RUN: its time per class (cpu_bound,
    gpu_compute_bound, gpu_communication_bound, launch and kernel-kernel overhead) and the
    events that took the longest on it.

    The path is HTA's per rank (see the rank_critical_path view); for a run of several ranks
    the job's path joins the ranks at each matched collective, where it goes to the rank
    that arrived last (see critical_path). json holds both tables as
    {"breakdown": [...], "segments": [...]}.

    \b
    Examples:
      tracewh critical-path run42
      tracewh critical-path run42 --step ProfilerStep#12 --rank 3 --top 20
    """
    found = warehouse.critical_path(run, phase=phase, step=step, rank=rank, top=top)
    if fmt == "json":
        echo(json.dumps({name: [dict(zip(columns, row)) for row in rows]
                         for name, (columns, rows) in found.items()},
                        indent=2, default=output.json_default) + "\n")
        return
    echo("\n\n".join(output.render(*found[name], fmt) for name in ("breakdown", "segments")))
