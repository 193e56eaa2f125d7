"""Paths and names from users are hostile: an --out file's temporary name cannot be planted,
a URL is not taken for a local warehouse, and a file's name cannot forge or colour a line of
what tracewh prints."""

import gzip
import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tracewh import open as open_warehouse
from tracewh.cli import cli
from tracewh.errors import UsageError

from .conftest import EXAMPLES, error_lines

DLRM0 = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
FORGED = "run nightly: 8 files ingested"
RETITLE = "\x1b]0;x\x07"


def test_names_cannot_forge_lines_or_drive_the_terminal(tracewh, tmp_path, warehouse):
    """A newline in a file's name printed a line of the name's choosing; an OSC sequence
    retitled the terminal."""
    traces = tmp_path / "in"
    traces.mkdir()
    good = traces / f"a\n{FORGED}\n{RETITLE}.pt.trace.json.gz"
    shutil.copy(DLRM0, good)
    corrupt = traces / f"b\n{FORGED}{RETITLE}.json"
    corrupt.write_text('{"traceEvents": [')
    result = tracewh("ingest", traces, "--run", "r", "--phase", "train", expect=2)
    again = tracewh("ingest", good, "--run", "r", "--phase", "train")
    for text in (result.stdout, result.stderr, again.stdout, again.stderr):
        assert "\x1b" not in text and "\x07" not in text
        assert FORGED not in text.splitlines()
    (error,) = error_lines(result.stderr)
    assert error.startswith(f"error: {traces}/b\\x0a{FORGED}\\x1b]0;x\\x07.json: ")
    assert again.stderr.splitlines() == [
        f"unchanged: {traces}/a\\x0a{FORGED}\\x0a\\x1b]0;x\\x07.pt.trace.json.gz is already in "
        "run r, phase train, rank 0"]
    assert result.stdout.startswith("run r: 1 file ingested, ")
    (row,) = open_warehouse(warehouse).query("SELECT source_path FROM traces")[0][1]
    assert row == (str(good),)  # the stored path is the exact text


VICTIM = "the victim's own text\n"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """A warehouse holding DLRM's rank 0 as run d, which the tests only read."""
    root = tmp_path_factory.mktemp("paths") / "wh"
    result = CliRunner().invoke(cli, ["--warehouse", str(root), "ingest", str(DLRM0), "--run",
                                      "d", "--phase", "train"])
    assert result.exit_code == 0, result.output
    return root


def _plant(out):
    """A symbolic link where tracewh wrote its temporary file (`.<name>.<pid>.tmp`), to a
    file of someone else's; return that file."""
    victim = out.parent / "victim.txt"
    victim.write_text(VICTIM)
    (out.parent / f".{out.name}.{os.getpid()}.tmp").symlink_to(victim)
    return victim


def _written(victim, out):
    assert victim.read_text() == VICTIM
    assert out.is_file() and not out.is_symlink()


@pytest.mark.parametrize("name", ["kernels.csv", "kernels.parquet"])
def test_query_out_writes_no_file_through_a_planted_link(ingested, tracewh, tmp_path, name):
    out = tmp_path / name
    victim = _plant(out)
    tracewh("--warehouse", ingested, "query", "--format", "csv", "--out", out,
            "SELECT count(*) AS n FROM kernels")
    _written(victim, out)
    if name.endswith(".parquet"):
        assert pq.read_table(out).to_pylist() == [{"n": 261}]
    else:
        assert out.read_text() == "n\n261\n"


def test_report_out_writes_no_file_through_a_planted_link(ingested, tracewh, tmp_path):
    out = tmp_path / "report.html"
    victim = _plant(out)
    tracewh("--warehouse", ingested, "report", "d", "--out", out)
    _written(victim, out)
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_export_out_writes_no_file_through_a_planted_link(ingested, tracewh, tmp_path):
    out = tmp_path / "rank0.json.gz"
    victim = _plant(out)
    tracewh("--warehouse", ingested, "export", "d", "--rank", "0", "--out", out)
    _written(victim, out)
    events = json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
    original = json.loads(gzip.decompress(DLRM0.read_bytes()))["traceEvents"]
    assert len(events) == len(original)


def test_query_to_parquet_writes_no_file_through_a_planted_link(ingested, tmp_path):
    out = tmp_path / "kernels.parquet"
    victim = _plant(out)
    assert open_warehouse(ingested).query_to_parquet("SELECT ts_ns FROM kernels", out) == 261
    _written(victim, out)
    assert pq.read_table(out).num_rows == 261
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kernels.parquet.")
                and not p.is_symlink()]  # no temporary file left behind


def test_an_out_file_gets_the_modes_a_new_file_gets(ingested, tracewh, tmp_path):
    """The temporary file is private while it is written; the --out file is not."""
    out = tmp_path / "n.csv"
    mask = os.umask(0o022)
    try:
        tracewh("--warehouse", ingested, "query", "--format", "csv", "--out", out, "SELECT 1")
    finally:
        os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o644


# s3:// is a warehouse on an object store (tests/test_object_store.py); other schemes are not
URLS = ["gs://bucket/wh", "file:///tmp/wh", "az://container/wh"]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("command", [["ingest", str(DLRM0), "--run", "d", "--phase", "train"],
                                     ["runs"], ["query", "SELECT 1"]], ids=lambda c: c[0])
def test_a_url_for_a_warehouse_is_refused(tmp_path, monkeypatch, url, command):
    """Before object storage, `s3://bucket/path` made a local directory `s3:`; a scheme
    tracewh does not read must not make one either."""
    monkeypatch.chdir(tmp_path)
    for arguments, environment in ((["--warehouse", url], None), ([], url)):
        if environment:
            monkeypatch.setenv("TRACEWH_WAREHOUSE", environment)
        result = CliRunner().invoke(cli, [*arguments, *command])
        assert result.exit_code == 2, result.output
        assert error_lines(result.stderr) == [
            f"error: {url}: an unknown kind of storage ({url.split(':')[0]}://): a warehouse "
            "is a local directory or s3://"]
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", URLS)
def test_the_api_refuses_a_url(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="an unknown kind of storage"):
        open_warehouse(url)
    assert list(tmp_path.iterdir()) == []
