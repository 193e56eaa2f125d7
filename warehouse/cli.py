"""The `tracewh` command line: a thin click layer over the library.

Each command parses its options, calls one library function and prints. Errors a user can cause
arrive as TracewhError and are printed as one line, `error: ...`, with exit status 2; Ctrl-C is
one line too, with status 130.
"""

import importlib
import time

import click

from .storage.directory import default_location
from .errors import INTERRUPTED, TracewhError

# command name -> the module of tracewh.commands that defines it. Modules are imported on
# demand: DuckDB and sqlglot take a third of a second to import, which `--help`, `tables` and
# `snapshot` do not need.
COMMANDS = {
    "ingest": "ingest",
    "query": "query",
    "runs": "query",
    "tables": "tables",
    "views": "views",
    "diff": "diff",
    "trend": "trend",
    "export": "export",
    "critical-path": "critical_path",
    "report": "report",
    "vacuum": "maintenance",
    "optimize": "maintenance",
    "refresh": "maintenance",
    "delete": "maintenance",
    "repair": "maintenance",
    "snapshot": "snapshot",
}


STARTED = "tracewh.started"  # ctx.meta key: when the command line began to run


class TracewhGroup(click.Group):
    """Loads each command's module when it is used, and turns TracewhError into one line on
    stderr and an exit status, without a traceback."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f".commands.{COMMANDS[name]}", __package__)
        commands = (v for v in vars(module).values() if isinstance(v, click.Command))
        return next(command for command in commands if command.name == name)

    def invoke(self, ctx):
        ctx.meta[STARTED] = time.monotonic()  # what a command's "in N s" counts from
        try:
            return super().invoke(ctx)
        except TracewhError as error:
            click.echo(f"error: {error.cli_message()}", err=True)
            ctx.exit(error.exit_code)
        except KeyboardInterrupt:  # Ctrl-C: what was committed stays, nothing else is written
            click.echo("interrupted: files not yet committed were not written", err=True)
            ctx.exit(INTERRUPTED)


@click.group(cls=TracewhGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--warehouse", "warehouse_dir", type=click.Path(file_okay=False),
              help="Warehouse directory [default: $TRACEWH_WAREHOUSE, else ./warehouse].")
@click.version_option(package_name="tracewh")
@click.pass_context
def cli(ctx, warehouse_dir):
    """tracewh: a columnar trace warehouse with SQL for PyTorch Profiler (Kineto) traces.

    \b
    Typical session:
      tracewh ingest traces/run42/ --run run42 --phase train
      tracewh runs
      tracewh query "SELECT * FROM overlap"
      tracewh views             # the SQL library: overlap, kernel_stats, gpu_idle...
      tracewh tables            # what every table and column means
      tracewh diff run41 run42 --fail-on-regression
      tracewh trend overlap_ratio --last 30
      tracewh report run42 --base run41 --out report.html
      tracewh export run42 --rank 0 --step ProfilerStep#12 --out step.json   # for Perfetto
      tracewh optimize && tracewh vacuum   # merge small files, delete retired ones
      tracewh delete run41                 # remove a run (its files go at vacuum)
    """
    ctx.obj = warehouse_dir or default_location()  # the commands' Warehouse: see pass_warehouse
