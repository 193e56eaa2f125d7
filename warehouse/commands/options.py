"""Options and output shared by several commands."""

import functools
import os
import re
import sys

import click

from .. import output
from ..errors import FollowUpFailed
from ..storage.names import check_phase

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(output.FORMATS),
                             default="table", show_default=True, help="Output format.")

UNITS_OPTION = click.option(
    "--units", type=click.Choice(list(output.UNITS)),
    help="Show the *_ns columns of a table or Markdown in this unit (dur_ns as dur_ms); csv, "
         "json and Parquet keep exact ns.")

RULES_OPTION = click.option(
    "--rules", type=click.Path(exists=True, dir_okay=False),
    help="TOML file of kernel classification rules, tried before the defaults "
         "(see sql/kernel_rules.toml).")

PEAKS_OPTION = click.option(
    "--peaks", type=click.Path(exists=True, dir_okay=False),
    help="TOML file of device peaks (TFLOPS per data type, memory TB/s) for op_perf's "
         "roofline, tried before the defaults (see sql/device_peaks.toml).")


def pass_warehouse(command):
    """Call `command` with the Warehouse of --warehouse (see `current_warehouse`) first."""
    @functools.wraps(command)
    def with_warehouse(*args, **kwargs):
        return command(current_warehouse(), *args, **kwargs)

    return with_warehouse


def current_warehouse():
    """The Warehouse of --warehouse (`api.Warehouse`): made at the first command that asks
    for it, and kept as ctx.obj. `tables` and `--help` need none, nor the DuckDB and pyarrow
    that come with it; `query` needs none where tracewh.duckdb answers it (see
    `warehouse_location`)."""
    from ..api import Warehouse

    ctx = click.get_current_context().find_root()
    if not isinstance(ctx.obj, Warehouse):
        ctx.obj = Warehouse(ctx.obj)
    return ctx.obj


def runs_reader(rules=None, peaks=None):
    """What a command about some runs (`diff`, `trend`, `report`) asks its questions of:
    tracewh.duckdb's runs and connections (`prepared.PreparedWarehouse`) where the file is
    current and no --rules or --peaks is given (the file is of the warehouse's own rules and
    the default peaks), with the Warehouse for what the file cannot answer; else the
    Warehouse (see `current_warehouse`) with those rules and peaks."""
    if rules is None and peaks is None:
        from ..query.prepared import PreparedWarehouse  # no pyarrow, no delta-rs

        prepared = PreparedWarehouse.open(warehouse_location(), current_warehouse)
        if prepared is not None:
            return prepared
    return current_warehouse().with_rules(rules).with_peaks(peaks)


def warehouse_location():
    """The warehouse directory --warehouse names, without making its Warehouse."""
    location = click.get_current_context().find_root().obj
    return location if isinstance(location, (str, os.PathLike)) else location.path


def _checked_phase(_ctx, _param, value):
    return None if value is None else check_phase(value)


def phase_option(help_text):
    """--phase, case-folded and checked like the phases stored at ingest."""
    return click.option("--phase", help=help_text, callback=_checked_phase)


class ByteSize(click.ParamType):
    """A size: bytes, or a number with KB, MB, GB or TB (powers of 1024): 64MB, 1.5GB."""

    name = "SIZE"
    _UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
    _FORM = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)B?", re.IGNORECASE)

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        match = self._FORM.fullmatch(value.strip())
        if match is None or float(match.group(1)) <= 0:
            self.fail(f"{value!r} is not a size (such as 64MB or 2GB)", param, ctx)
        return int(float(match.group(1)) * (1 << self._UNITS[match.group(2).upper()]))


def to_terminal(out_path=None):
    """Whether what the command prints goes to a terminal (not to --out, a file or a pipe)."""
    return out_path is None and sys.stdout.isatty()


def echo(text, out_path=None):
    """Print `text` as is, or write it to `out_path` (whole or not at all). As is: click
    would strip what looks like a colour code (`\\x1b[...m`) from a pipe's text, and a pipe
    gets the exact text; what a terminal gets is escaped by its format (see `to_terminal`)."""
    if out_path:
        output.write_atomically(out_path, lambda handle: handle.write(text.encode()))
    else:
        click.echo(text, nl=False, color=True)


def work_then_follow_up(work):
    """Run `work()`: (its result, None), or, when what follows it failed (the refresh of the
    marts and tracewh.duckdb, a rollback), (what the work did, the FollowUpFailed), for the
    command to report the work before the error."""
    try:
        return work(), None
    except FollowUpFailed as error:
        return error.done, error


def exit_after_follow_up(follow_up, failed=False):
    """Print the follow-up's error line, and exit 2 when it failed or the work did."""
    if follow_up is not None:
        click.echo(f"error: {follow_up.cli_message()}", err=True)
    if failed or follow_up is not None:
        sys.exit(2)
