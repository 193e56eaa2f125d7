"""The README's example queries, run on the demo data, print exactly what the README shows."""

import re
import shlex
from pathlib import Path

import pytest

from .conftest import EXAMPLES

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE = re.compile(r"^    \$ (tracewh query .*)\n((?:    .*\n)+)", re.MULTILINE)


def readme_queries():
    """(command line, expected output) of every `tracewh query` example in the README."""
    return [(match.group(1), "".join(line[4:] + "\n" for line in
                                     match.group(2).splitlines()))
            for match in EXAMPLE.finditer(README.read_text())]


def test_readme_has_query_examples():
    assert len(readme_queries()) >= 15


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The warehouse `make demo` builds."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    warehouse = tmp_path_factory.mktemp("demo")
    runner = CliRunner()
    result = runner.invoke(cli, ["--warehouse", str(warehouse), "ingest", str(EXAMPLES),
                                 "--run", "dlrm-demo", "--phase", "train"])
    assert result.exit_code == 0, result.output

    def run(arguments):
        return runner.invoke(cli, ["--warehouse", str(warehouse), *arguments])

    return run


@pytest.mark.parametrize("command, expected", readme_queries(),
                         ids=lambda value: value[:60] if isinstance(value, str) else None)
def test_readme_example_output(command, expected, demo):
    result = demo(shlex.split(command)[1:])
    assert result.exit_code == 0, result.output
    assert result.output == expected
