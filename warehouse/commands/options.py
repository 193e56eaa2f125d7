"""Options and output shared by several commands."""

import click

from .. import output

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(output.FORMATS),
                             default="table", show_default=True, help="Output format.")

RULES_OPTION = click.option(
    "--rules", type=click.Path(exists=True, dir_okay=False),
    help="TOML file of kernel classification rules, tried before the defaults "
         "(see sql/kernel_rules.toml).")


def echo(text, out_path=None):
    """Print `text` as is, or write it to `out_path`."""
    if out_path:
        with open(out_path, "w") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)
