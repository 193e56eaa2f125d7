"""Paths and names from users are hostile: an --out file's temporary name cannot be planted,
a URL is not taken for a local warehouse, and a file's name cannot forge or colour a line of
what tracewh prints."""

import shutil

from tracewh import open as open_warehouse

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
