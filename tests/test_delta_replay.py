"""A table's add actions replayed from its log (`delta.add_actions`, see delta_replay) are
delta-rs's `get_add_actions(flatten=True)`, value for value, type for type, row for row; and
an ingest and its refresh no longer import delta-rs at all."""

import datetime
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tracewh.storage import delta
from tracewh.storage.schema import TABLES

from .conftest import EXAMPLES

RANKS = sorted(EXAMPLES.glob("worker*"))


def delta_rs_actions(path, version):
    return pa.RecordBatchReader.from_stream(
        DeltaTable(str(path), version=version).get_add_actions(flatten=True)).read_all()


def assert_same_actions(path, versions):
    """add_actions(path, v) equals delta-rs's at each of `versions`: the same schema (names,
    types, nullability) and the same rows in the same order."""
    for version in versions:
        delta._LOADED.pop(str(path), None)  # replayed, not the last one kept
        ours, theirs = delta.add_actions(path, version), delta_rs_actions(path, version)
        assert ours.schema == theirs.schema, (path, version)
        assert ours.equals(theirs), (path, version)


def some_versions(path):
    newest = delta.latest_version(path)
    return sorted({0, 1, newest // 2, newest - 1, newest} & set(range(newest + 1)))


def test_every_table_and_mart_of_a_run_with_a_replaced_trace(tracewh, warehouse):
    """The demo's 8 ranks, then rank 0 ingested again in their place (its files removed, new
    ones added) and another run: every table and mart, at several of their versions."""
    tracewh("ingest", EXAMPLES, "--run", "a", "--phase", "train")
    tracewh("ingest", RANKS[0], "--run", "a", "--phase", "train", "--rank", "0", "--replace")
    tracewh("ingest", RANKS[1], "--run", "b")
    tables = [warehouse / name for name in TABLES] + sorted((warehouse / "marts").iterdir())
    for path in tables:
        assert_same_actions(path, some_versions(path))
    newest = {name: delta.add_actions(warehouse / name, delta.latest_version(warehouse / name))
              for name in ("kernels", "traces")}
    assert newest["kernels"].num_rows == 9  # 8 ranks of a (one replaced), rank 1 of b
    assert sorted(newest["traces"]["partition.rank"].to_pylist()) == [0, 1, 1, 2, 3, 4, 5, 6, 7]
    assert newest["traces"]["min.ingested_at"].type == pa.timestamp("us", "UTC")


def traces_file(number, rank):
    """A `traces` file's add action's content: one row of every ROW_STATS column."""
    row = {"trace_id": f"{number:016x}", "sha256": f"{number:064x}", "events": 1000 + number,
           "bytes": 2 ** 40 + number, "tags": '{"k": "v"}', "ingest_seq": number,
           "ingested_at": datetime.datetime(2026, 12, 6, 18, 0, number % 60, 123456,
                                            tzinfo=datetime.timezone.utc),
           "world_size": 8}
    return delta.DataFile(f"run=r/phase=train/rank={rank}/{number:016x}-00000.parquet",
                          "r", "train", rank, 1, 7000 + number, row=row,
                          sha256=f"{number + 1:064x}")


def test_a_table_past_its_checkpoints(tmp_path):
    """125 versions of a `traces` table, each adding a file and every third removing the
    one added before it: checkpoints at versions 100 and 200 (of a mart, its bounds of
    run), versions before, at and after each, and the versions before the last checkpoint
    (which start from an older one, or from the first commit)."""
    path = tmp_path / "traces"
    delta.create(path, TABLES["traces"])
    files = []
    for version in range(1, 126):
        files.append(traces_file(version, version % 8))
        actions = [delta.add_action(files[-1])]
        if version % 3 == 0:
            actions.append(delta.remove_action(files.pop(-2)))
        delta.commit(path, version, actions, "WRITE")
    assert (path / "_delta_log" / f"{100:020d}.checkpoint.parquet").exists()
    assert_same_actions(path, [1, 50, 99, 100, 101, 124, 125])
    assert delta.add_actions(path, 125).num_rows == len(files)
    # the tags delta-rs does not give: from the checkpoint's and the commits' add actions
    assert delta.recorded_hashes(path, 125) == {f.path: f.sha256 for f in files}

    mart = tmp_path / "mart"
    delta.create_table(mart, pa.schema([("run", pa.string()), ("n", pa.int64()),
                                        ("start_time", pa.timestamp("us", "UTC"))]))
    for version in range(1, 202):
        data_file = delta.DataFile(f"{version:08d}.parquet", None, None, None, version, 100,
                                   runs=(f"r{version:03d}", f"r{version + 5:03d}"))
        delta.commit(mart, version, [delta.add_action(data_file)], "WRITE")
    assert (mart / "_delta_log" / f"{200:020d}.checkpoint.parquet").exists()
    assert_same_actions(mart, [0, 99, 100, 150, 199, 200, 201])


def test_an_ingest_and_its_refresh_never_import_delta_rs(tmp_path):
    """Into a new warehouse, then a second run into it: neither command imports deltalake
    (an audit hook names any import of it, in the command or a process it starts); a vacuum,
    which lists a table's unreferenced files through delta-rs, does."""
    watch = ("import sys\n"
             "def hook(event, args):\n"
             "    if event == 'import' and args[0].split('.')[0] == 'deltalake':\n"
             "        sys.stderr.write(f'imported {args[0]}\\n')\n"
             "sys.addaudithook(hook)\n"
             "from tracewh.entry import main\n"
             "sys.argv[0] = 'tracewh'\n"
             "main()\n")
    warehouse = tmp_path / "wh"

    def run(*args):
        result = subprocess.run([sys.executable, "-c", watch, "--warehouse", str(warehouse),
                                 *map(str, args)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result

    for paths, name in ((RANKS, "a"), (RANKS[:2], "b")):
        result = run("ingest", *paths, "--run", name)
        assert "imported" not in result.stderr, result.stderr
        assert f"run {name}: {len(paths)} files ingested" in result.stdout
    assert delta.latest_version(warehouse / "traces") < delta.CHECKPOINT_INTERVAL  # none due
    assert "imported deltalake\n" in run("vacuum").stderr


@pytest.mark.parametrize("damage", ["empty", "cut"])
def test_a_damaged_commit_is_named_as_before(tmp_path, damage):
    """The replay refuses what open_table refused: an emptied commit (which delta-rs reads
    as a commit of no actions), a cut one."""
    path = tmp_path / "traces"
    delta.create(path, TABLES["traces"])
    for version in (1, 2):
        delta.commit(path, version, [delta.add_action(traces_file(version, 0))], "WRITE")
    commit = path / "_delta_log" / f"{2:020d}.json"
    commit.write_bytes(b"" if damage == "empty" else commit.read_bytes()[:-40])
    with pytest.raises(delta.DamagedLog, match=f"{commit}: {damage}"):
        delta.add_actions(path, 2)
