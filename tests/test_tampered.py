"""Data files changed outside tracewh: rewritten with the same rows (figures multiplied), cut,
or a byte flipped. Every commit records each file's size and sha256 (in its Delta add action's
`tags`); every command that reads files compares their sizes with their commits', `refresh`
their bytes. A changed table file is named in one line with the way out, and nothing is
written; a changed mart file (derived data) is made again by `refresh`, which says so."""

import json
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tracewh.storage import delta
from tracewh.derived.marts import mart_path

from .test_damage import RANKS, commit_file, damaged, one_line_error, pristine  # noqa: F401


def r1_kernels_file(warehouse):
    (path,) = (warehouse / "kernels" / "run=r1").rglob("*.parquet")
    return path


def state(warehouse):
    """What a command must not change: every log file's and data file's bytes."""
    return {path: path.read_bytes() for path in sorted(warehouse.rglob("*"))
            if path.is_file() and "_tracewh" not in path.parts
            and path.name != "tracewh.duckdb"}


def readers(warehouse, damaged):
    """Commands that read r1's kernels: each must refuse them."""
    out = warehouse.parent
    return [("refresh",), ("query", "SELECT sum(dur_ns) FROM kernels"),
            ("query", "SELECT sum(dur_ns) FROM kernels WHERE run = 'r1'"),
            ("report", "r1", "--out", out / "r1.html"), ("diff", "r0", "r1"),
            ("trend", "kernel:Memcpy"),
            ("export", "r1", "--rank", damaged["r1"]["rank"], "--out", out / "r1.json")]


def multiply(path, column, factor=1000):
    """Rewrite a Parquet file with the same rows but `column` multiplied, as a forger would."""
    table = pq.read_table(path)
    index = table.column_names.index(column)
    pq.write_table(table.set_column(index, column, pc.multiply(table[column], factor)), path)


def flip_a_byte(path):
    """Change one byte in the middle of the file: its size stays."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_every_add_records_the_size_and_sha256_of_its_file(damaged, warehouse):
    import hashlib

    for table in ("kernels", "traces"):
        path = warehouse / table
        for number in range(delta.latest_version(path) + 1):
            for line in commit_file(path, number).read_text().splitlines():
                add = json.loads(line).get("add")
                if add is None:
                    continue
                data = (path / add["path"]).read_bytes()
                assert add["size"] == len(data)
                assert add["tags"]["sha256"] == hashlib.sha256(data).hexdigest()


def test_a_table_file_rewritten_with_the_same_rows_is_named(tracewh, warehouse, damaged):
    file = r1_kernels_file(warehouse)
    rows = pq.read_metadata(file).num_rows
    multiply(file, "dur_ns")
    assert pq.read_metadata(file).num_rows == rows
    before = state(warehouse)
    for command in readers(warehouse, damaged):
        one_line_error(tracewh(*command, expect=None), f"{file}: changed outside tracewh",
                       f"a file of trace {damaged['r1']['trace_id']} {damaged['where']}",
                       damaged["repair"])
    assert state(warehouse) == before
    assert not any(warehouse.parent.glob("r1.*"))
    assert tracewh("query", "SELECT count(*) FROM kernels WHERE run = 'r0'").exit_code == 0
    tracewh("ingest", RANKS[1], "--run", "r1", "--phase", "train", "--rank",
            damaged["r1"]["rank"], "--replace")
    tracewh("refresh")


def test_a_table_file_of_the_same_size_is_named_by_refresh(tracewh, warehouse, damaged):
    file = r1_kernels_file(warehouse)
    flip_a_byte(file)
    before = state(warehouse)
    one_line_error(tracewh("refresh", expect=None), f"{file}: changed outside tracewh since "
                   "its commit (its bytes are not those its sha256 was taken of)",
                   damaged["repair"])
    assert state(warehouse) == before


@pytest.mark.parametrize("cut", [0, 100, -1])
def test_a_cut_table_file_is_named_by_every_reader(tracewh, warehouse, damaged, cut):
    file = r1_kernels_file(warehouse)
    data = file.read_bytes()
    file.write_bytes(data[:cut % len(data)])
    before = state(warehouse)
    for command in readers(warehouse, damaged):
        error = one_line_error(tracewh(*command, expect=None),
                               f"{file}: changed outside tracewh since its commit "
                               f"({cut % len(data):,} bytes, its commit says {len(data):,})",
                               damaged["repair"])
        assert "magic bytes" not in error
    assert state(warehouse) == before


def mart_file(warehouse, name):
    path = mart_path(warehouse, name)
    return path, Path(delta.live_paths(path, delta.latest_version(path))[-1])


@pytest.mark.parametrize("damage", ["multiply", "flip", "cut"])
def test_a_changed_mart_file_is_not_served_and_refresh_makes_it_again(tracewh, warehouse,
                                                                      damaged, sql, damage):
    path, file = mart_file(warehouse, "kernel_stats")
    query = "SELECT sum(total_ns) AS total FROM kernel_stats"
    (truth,) = sql(query)
    if damage == "multiply":
        multiply(file, "total_ns")
    elif damage == "flip":
        flip_a_byte(file)
    else:
        file.write_bytes(file.read_bytes()[:-10])
    if damage != "flip":  # a changed size: the mart is not read, the view is computed
        assert sql(query) == [truth]
    result = tracewh("refresh")
    assert f"{file}: changed outside tracewh since its commit" in result.stderr
    assert "mart kernel_stats made again" in result.stderr
    assert sql(query) == [truth]
    assert mart_file(warehouse, "kernel_stats")[1] != file
    assert tracewh("refresh").stdout.startswith("up to date")


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


def test_the_hashes_of_files_added_before_a_checkpoint_are_checked(tmp_path, monkeypatch):
    """delta-rs keeps add actions' tags in its checkpoints: a file whose add action is only
    in the checkpoint (its JSON commit cleaned up) is still checked."""
    import pyarrow as pa
    from deltalake import DeltaTable

    monkeypatch.setattr(delta, "CHECKPOINT_INTERVAL", 2)
    table = tmp_path / "t"
    DeltaTable.create(str(table), schema=pa.schema([("x", pa.int64())]))
    for version in (1, 2, 3):
        name = f"{version}.parquet"
        pq.write_table(pa.table({"x": [version] * 100}), table / name)
        size, sha256 = delta.file_digest(table / name)
        delta.commit(table, version, [delta.add_action(
            delta.DataFile(name, None, None, None, 100, size, sha256=sha256))], "WRITE")
    assert delta.last_checkpoint(table) == 2
    for version in (1, 2):
        commit_file(table, version).unlink()
    assert sorted(delta.recorded_hashes(table, 3)) == ["1.parquet", "2.parquet", "3.parquet"]
    assert delta.changed_files(table, 3, read=True) == []
    flip_a_byte(table / "1.parquet")
    assert delta.changed_files(table, 3) == []  # its size is the same
    assert delta.changed_files(table, 3, read=True) == [
        (table / "1.parquet", "changed outside tracewh since its commit (its bytes are not "
                              "those its sha256 was taken of)")]


def test_a_file_a_rollback_adds_again_keeps_its_hash(tracewh, warehouse, damaged):
    """A writer killed after removing a file (a --replace's first commit): the next writer's
    rollback adds it again, with the sha256 its first commit recorded."""
    path = warehouse / "kernels"
    file = r1_kernels_file(warehouse)
    version = delta.latest_version(path)
    (data_file,) = [f for f in delta.live_files(path, version) if path / f.path == file]
    delta.commit(path, version + 1, [delta.remove_action(data_file)], "WRITE")
    tracewh("refresh")  # rolls the killed commit back
    assert delta.latest_version(path) == version + 2
    flip_a_byte(file)
    one_line_error(tracewh("refresh", expect=None), f"{file}: changed outside tracewh since "
                   "its commit (its bytes are not those its sha256 was taken of)")
