"""What the text formats print: exact nanoseconds, doubles told apart, booleans as DuckDB
prints them, trace text that cannot drive the terminal."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tracewh.cli import cli
from tracewh.output import render

from .conftest import EXAMPLES, ROOT
from .test_cli import on_terminal

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TRACEWH = [sys.executable, "-m", "tracewh"]

DLRM0 = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"


@pytest.fixture(scope="module")
def run_query(tmp_path_factory):
    root = tmp_path_factory.mktemp("output") / "wh"
    runner = CliRunner()
    assert runner.invoke(cli, ["--warehouse", str(root), "ingest", str(DLRM0), "--run", "d",
                               "--phase", "train"]).exit_code == 0

    def query(sql, fmt="table"):
        result = runner.invoke(cli, ["--warehouse", str(root), "query", "--format", fmt, sql])
        assert result.exit_code == 0, result.output
        return result.stdout

    query.root = root
    return query


def _table_rows(text):
    """The data lines of a terminal table, split on runs of two spaces."""
    return [line.split() for line in text.splitlines()[2:-1]]


def test_ns_columns_show_whole_nanoseconds(run_query):
    """A mean of integer ns is a double: 210977479.98 was printed 211000000."""
    sql = "SELECT rank, mean_ns FROM launch_latency_summary ORDER BY rank"
    (exact,) = json.loads(run_query(sql, "json"))
    assert not float(exact["mean_ns"]).is_integer()
    for fmt in ("table", "markdown"):
        text = run_query(sql, fmt)
        assert f"{round(exact['mean_ns']):,}" in text, fmt


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_doubles_are_shown_with_the_digits_that_tell_them_apart(fmt):
    text = render(["ratio"], [[0.024700070571630206], [0.0247], [0.5]], fmt)
    cells = [line.strip("| ") for line in text.splitlines()[2:5]]
    assert cells == ["0.0247001", "0.0247000", "0.5000000"]  # one precision per column


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_column_has_one_precision_and_integers_are_grouped(fmt):
    """0.01359 beside 0.4624 was printed with 5 and 4 decimals; 15531481000 ns without
    separators."""
    text = render(["share", "dur_ns", "n"], [[0.01359, 15531481000, 1234567],
                                             [0.4624, 1500, 3]], fmt)
    cells = [line.strip("| ").replace(" | ", " ").split() for line in text.splitlines()[2:4]]
    assert cells == [["0.0136", "15,531,481,000", "1,234,567"], ["0.4624", "1,500", "3"]]


def test_units_show_ns_columns_in_that_unit_in_tables_only():
    rows = [[15531481000, 2.6, 7], [1500, 1.0, 8]]
    table = render(["dur_ns", "mean_ns", "n"], rows, "table", units="ms")
    assert table.splitlines()[0].split() == ["dur_ms", "mean_ms", "n"]
    assert [line.split() for line in table.splitlines()[2:4]] == [
        ["15,531", "0.000003", "7"], ["0", "0.000001", "8"]]
    assert render(["dur_ns"], [[1500], [2500]], "markdown", units="us").splitlines()[2:] == \
        ["| 1.500 |", "| 2.500 |"]
    assert render(["dur_ns", "mean_ns", "n"], rows, "csv", units="ms") == \
        "dur_ns,mean_ns,n\n15531481000,2.6,7\n1500,1,8\n"
    assert json.loads(render(["dur_ns"], [[1500]], "json", units="s")) == [{"dur_ns": 1500}]


def test_booleans_are_true_and_false_in_every_text_format(run_query):
    sql = "SELECT dur_ns > 0 AS positive, dur_ns < 0 AS negative FROM kernels LIMIT 1"
    (row,) = csv.DictReader(io.StringIO(run_query(sql, "csv")))
    assert row == {"positive": "true", "negative": "false"}
    assert _table_rows(run_query(sql)) == [["true", "false"]]
    assert "| true | false |" in run_query(sql, "markdown")
    assert json.loads(run_query(sql, "json")) == [{"positive": True, "negative": False}]


def test_control_characters_of_trace_text_do_not_reach_the_terminal(run_query):
    """An ESC in a kernel name would start an escape sequence (colours, cursor, title)."""
    text = run_query("SELECT 'a' || chr(27) || '[2Jb' || chr(9) || 'c' || chr(13) || 'd' AS s")
    assert "\x1b" not in text and "\r" not in text and "a\\x1b[2Jb c d" in text
    raw = run_query("SELECT 'a' || chr(27) || 'b' AS s", "csv")
    assert raw == "s\na\x1bb\n"  # csv and json keep every character


def test_csv_on_a_terminal_escapes_control_characters(run_query):
    """csv printed trace text raw to a terminal: `\\x1b]0;...\\x07` retitled it, `\\x1b[2J`
    cleared it. On a terminal its cells are escaped as the table's are; a pipe keeps every
    byte."""
    sql = ("SELECT 'a' || chr(27) || ']0;x' || chr(7) || 'b' AS s, 'c' || chr(10) || "
           "chr(27) || '[2Jd' AS t")
    command = [*TRACEWH, "--warehouse", str(run_query.root), "query", "--format", "csv", sql]
    screen, status = on_terminal(command, "stdout", env=ENV)
    assert status == 0
    assert screen.splitlines() == ["s,t", "a\\x1b]0;x\\x07b,c\\x0a\\x1b[2Jd"]
    piped = subprocess.run(command, capture_output=True, env=ENV, check=True).stdout
    assert piped == b's,t\na\x1b]0;x\x07b,"c\n\x1b[2Jd"\n'
