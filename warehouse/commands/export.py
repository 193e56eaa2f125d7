"""`tracewh export`: a capture, or a window of it, as Chrome-trace JSON for Perfetto."""

import click

from ..errors import UsageError, escaped, printable
from ..output.export import WindowChoice, export_window, parse_duration, resolve_window
from ..query.scope import choose_phase
from .options import pass_warehouse, phase_option


@click.command(short_help="A capture, or a window of it, as Chrome-trace JSON for Perfetto.")
@click.argument("run")
@click.option("--rank", type=click.IntRange(min=0), required=True, help="The rank to export.")
@phase_option("The phase [default: the rank's only phase].")
@click.option("--step", metavar="NAME", help="The window of a step: ProfilerStep#N.")
@click.option("--annotation", metavar="NAME",
              help="The window of a user annotation (CPU or GPU), e.g. 'attn(F)'.")
@click.option("--occurrence", type=click.IntRange(min=1),
              help="Which of a repeated step or annotation, in time order from 1.")
@click.option("--from", "from_time", metavar="TIME",
              help="Window start after the capture's start (its first event), with a unit: "
                   "12.5ms (ns, us, ms, s).")
@click.option("--to", "to_time", metavar="TIME",
              help="Window end (exclusive) after the capture's start, with a unit: 20ms.")
@click.option("--from-ns", type=int,
              help="Window start, absolute ns (as in the tables' ts_ns, epoch ns).")
@click.option("--to-ns", type=int, help="Window end (exclusive), absolute ns.")
@click.option("--trace", "trace_id", metavar="TRACE_ID",
              help="The capture, when the rank has several (traces.trace_id).")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="Output file: .json, or .json.gz to compress.")
@pass_warehouse
def export(warehouse, run, rank, phase, step, annotation, occurrence, from_time, to_time, from_ns,
           to_ns, trace_id, out_path):
    """Write RUN's events of one rank as Chrome-trace JSON that Perfetto (ui.perfetto.dev) and
    chrome://tracing open: the whole capture, or the window of a step, an annotation or two
    timestamps: --from/--to count from the capture's first event and need a unit (12.5ms),
    --from-ns/--to-ns are absolute ns as the tables store them.

    Events keep their original fields (args, ids, flows); a window keeps the events that
    overlap it, the flows whose ends all fall inside it and the process and thread names.
    The views overlap_by_step, overlap_by_annotation and launch_latency print the export
    command of each of their windows (column export_command).

    \b
    Examples:
      tracewh export nightly-1129 --rank 3 --out rank3.json.gz
      tracewh export nightly-1129 --rank 3 --step ProfilerStep#12 --out step12.json
      tracewh export ds --rank 0 --annotation 'attn(F)' --occurrence 2 --out attn.json
      tracewh export ds --rank 0 --from 12.5ms --to 20ms --out window.json
      tracewh export ds --rank 0 --from-ns 1751410836021000000 --to-ns 1751410836022000000 \\
        --out window.json
    """
    chosen = [name for name, value in (("--step", step), ("--annotation", annotation),
                                       ("--from-ns", from_ns), ("--from", from_time))
              if value is not None]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} both name a window: give one")
    for start, end, names in ((from_ns, to_ns, "--from-ns and --to-ns"),
                              (from_time, to_time, "--from and --to")):
        if (start is None) != (end is None):
            raise UsageError(f"{names} go together")
    relative = from_time is not None
    if relative:
        from_ns, to_ns = parse_duration(from_time, "--from"), parse_duration(to_time, "--to")
    if occurrence is not None and step is None and annotation is None:
        raise UsageError("--occurrence picks a repeated --step or --annotation")
    with warehouse.connect_to_runs([run]) as connection:
        phase = choose_phase(connection, run, phase, rank)
        window = resolve_window(connection, run, phase, rank, WindowChoice(
            step, annotation, occurrence, from_ns, to_ns, trace_id, relative))
        events = export_window(connection, window, out_path)
    click.echo(f"wrote {events:,} events of run {run}, phase {phase}, rank {rank} "
               f"({escaped(window.label)}, capture {window.trace_id}) to {printable(out_path)}")
