"""The example queries of the README and of the pages of docs/, run on the demo data, print
exactly what the page shows."""

import re
import shlex
from pathlib import Path

import pytest

from .conftest import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLE = re.compile(r"^    \$ (tracewh query .*)\n((?:    .*\n)+)", re.MULTILINE)


def readme_queries(documents=DOCUMENTS):
    """(page, command line, expected output) of every `tracewh query` example of `documents`
    (a `tracewh --warehouse ... query` runs elsewhere than on the demo data: not here)."""
    return [(document.name, match.group(1), "".join(line[4:] + "\n" for line in
                                                    match.group(2).splitlines()))
            for document in documents
            for match in EXAMPLE.finditer(document.read_text())]


def test_readme_has_query_examples():
    assert len(readme_queries([README])) >= 2
    assert len(readme_queries()) >= 28  # as many as the README held before docs/


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
        # the pages show tables at the width a terminal-less run has; the caller's COLUMNS or
        # terminal (a worker of a parallel run, an 80-column shell) would cut them otherwise
        return runner.invoke(cli, ["--warehouse", str(warehouse), *arguments],
                             env={"COLUMNS": "120"})

    return run


@pytest.mark.parametrize("page, command, expected", readme_queries(),
                         ids=[f"{page}:{command[14:60]}" for page, command, _ in readme_queries()])
def test_readme_example_output(page, command, expected, demo):
    result = demo(shlex.split(command)[1:])
    assert result.exit_code == 0, result.output
    assert result.output == expected
