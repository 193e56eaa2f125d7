"""Damage from outside that the Delta logs alone show: a first commit that is not JSON."""

import pytest

from .test_damage import commit_file, damaged, one_line_error, pristine  # noqa: F401


def state(warehouse):
    """What a command must not change: every log file's and data file's bytes."""
    return {path: path.read_bytes() for path in sorted(warehouse.rglob("*"))
            if path.is_file() and "_tracewh" not in path.parts
            and path.name != "tracewh.duckdb"}


@pytest.mark.parametrize("table", ["kernels", "traces"])
def test_a_garbage_first_commit_is_one_line(tracewh, warehouse, damaged, table):
    commit = commit_file(warehouse / table, 0)
    commit.write_text("this is not JSON\n")
    before = state(warehouse)
    for command in (("runs",), ("refresh",), ("query", "SELECT count(*) FROM kernels")):
        result = tracewh(*command, expect=None)
        if table == "kernels" and command == ("runs",) and result.exit_code == 0:
            continue  # runs reads the traces log alone
        one_line_error(result, f"{commit}: cut or corrupt (line 1 is not JSON)",
                       "restore the file from a backup")
    assert state(warehouse) == before
