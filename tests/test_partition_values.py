"""Partition values: a rank must fit the int32 `rank` column, whichever source gives it, and a
warehouse where an earlier tracewh committed one that does not is repaired by `repair`."""

import gzip
import json

import pytest

import tracewh
from tracewh.storage import delta
from tracewh.storage.catalog import StagedTrace
from tracewh.errors import HINT, TraceError, UsageError

from .conftest import EXAMPLES, error_lines, live_files

WORKERS = sorted(EXAMPLES.glob("worker*.pt.trace.json.gz"))
TOO_LARGE = 2**32
RANGE = "0..2147483647"


def document(worker):
    return json.loads(gzip.decompress(WORKERS[worker].read_bytes()))


def gpu_events(worker):
    """The events of a DLRM worker's trace that the `kernels` table holds."""
    return sum(event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               for event in document(worker)["traceEvents"])


def trace_file(directory, name, worker=0, **distributed):
    """A DLRM worker's trace under `name`, its distributedInfo replaced by `distributed`
    (none at all when empty)."""
    trace = document(worker)
    trace.pop("distributedInfo")
    if distributed:
        trace["distributedInfo"] = distributed
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(gzip.compress(json.dumps(trace).encode()))
    return path


def written_ranks(warehouse):
    """The rank directories of every table: what an ingest wrote, committed or not."""
    return sorted({path.name for path in warehouse.glob("*/run=*/phase=*/rank=*")})


@pytest.mark.parametrize("rank", ["2147483648", "99999999999", "-1"])
def test_a_rank_option_outside_int32_is_one_error_line_and_writes_nothing(tracewh, warehouse,
                                                                           rank):
    result = tracewh("ingest", WORKERS[0], "--run", "r", "--rank", rank, expect=2)
    assert result.stderr.splitlines() == [f"error: invalid rank {rank}: it is outside {RANGE}"]
    assert not warehouse.exists()


@pytest.mark.parametrize("rank", [2**31, -1, True, "3"])
def test_the_api_refuses_a_rank_outside_int32_before_writing(warehouse, rank):
    with pytest.raises(UsageError, match=r"invalid rank .*: it is (outside|not an integer)"):
        tracewh.open(warehouse).ingest(str(WORKERS[0]), run="r", rank=rank)
    assert not warehouse.exists()


def test_a_file_name_rank_outside_int32_fails_that_file_only(tracewh, sql, warehouse, tmp_path):
    bad = trace_file(tmp_path / "in", f"trace_rank-{TOO_LARGE}.json.gz")
    trace_file(tmp_path / "in", "trace_rank-5.json.gz", worker=1)
    result = tracewh("ingest", tmp_path / "in", "--run", "r", "--jobs", "1", expect=2)
    assert error_lines(result.stderr) == [
        f"error: {bad}: rank {TOO_LARGE} from the file name is outside {RANGE}: pass --rank"]
    assert "run r: 1 file ingested" in result.stdout
    assert written_ranks(warehouse) == ["rank=5"]
    assert not list((warehouse / "_tracewh" / "staging").iterdir())
    assert sql("SELECT rank, count(*) AS kernels FROM kernels GROUP BY rank") == [
        {"rank": 5, "kernels": gpu_events(1)}]


def test_a_distributed_rank_that_is_no_rank_fails_that_file_naming_it(tracewh, sql, warehouse,
                                                                      tmp_path):
    """Before, each of these fell through to the file name's number (2 here), or rank 0. A
    string of digits is a rank: some writers store distributedInfo numbers as strings."""
    refused = [(2**31, "2147483648", f"is outside {RANGE}"), (-1, "-1", f"is outside {RANGE}"),
               (True, "true", "is not an integer"), (1.5, "1.5", "is not an integer"),
               ("-1", '"-1"', "is not an integer"),
               ("x" * 60, '"' + "x" * 38 + "…", "is not an integer")]
    expected = []
    for number, (value, shown, problem) in enumerate(refused):
        bad = trace_file(tmp_path / "in", f"t{number}_rank-2.json.gz", rank=value, world_size=8)
        expected.append(f"error: {bad}: distributedInfo.rank {shown} {problem}: pass --rank")
    trace_file(tmp_path / "in", "u.json.gz", worker=1, rank="3", world_size="8")
    result = tracewh("ingest", tmp_path / "in", "--run", "r", "--jobs", "1", expect=2)
    assert error_lines(result.stderr) == expected
    assert written_ranks(warehouse) == ["rank=3"]
    assert sql("SELECT rank, world_size FROM traces") == [{"rank": 3, "world_size": 8}]


@pytest.mark.parametrize("run, phase, rank", [("r", "train", 2**31), ("r", "train", "0"),
                                              ("_r", "train", 0), ("r", "a/b", 0)])
def test_no_staged_trace_has_a_partition_value_delta_cannot_read(run, phase, rank):
    """The last guard, whatever path gave the values."""
    with pytest.raises(UsageError):
        StagedTrace("0123456789abcdef", "0" * 64, run, phase, rank, {})


# -- a warehouse an earlier tracewh bricked ------------------------------------------------------

def ingest_unchecked(tracewh, monkeypatch, path, run):
    """Ingest `path` as tracewh did before it checked ranks: its file name's rank, however
    large, committed as a partition value. The refresh after it is the first to fail."""
    with monkeypatch.context() as patch:
        patch.setattr("tracewh.ingest.identity.rank_problem", lambda rank: None)
        patch.setattr("tracewh.storage.catalog.check_partition", lambda *values: None)
        return tracewh("ingest", path, "--run", run, expect=2)


def other_runs_rows(sql):
    """Every row of run `good` in the tables and views a user reads."""
    return {name: sql(f"SELECT * FROM {name} WHERE run = 'good' ORDER BY ALL")
            for name in ("traces", "kernels", "cpu_ops", "runtime", "overlap")}


def every_command(bad, tmp_path):
    """A command of each kind that reads or writes the tables; the first ingests `bad` again
    as the error of the file name's rank says to."""
    return [("ingest", bad, "--run", "bad", "--rank", "2"), ("runs",),
            ("query", "SELECT count(*) FROM kernels"), ("diff", "good", "bad"), ("optimize",),
            ("vacuum",), ("refresh",),
            ("export", "good", "--rank", "0", "--out", tmp_path / "x.json"),
            ("trend", "overlap_ratio")]


def test_repair_restores_every_command_and_keeps_every_other_row(tracewh, sql, warehouse,
                                                                 tmp_path, monkeypatch):
    """A trace committed under rank 2**32, as tracewh did before it checked ranks: every
    command fails naming the table, the version and the value; `repair` (run again after it
    was killed) removes that trace alone, and every command works again."""
    tracewh("ingest", WORKERS[0], "--run", "good", "--phase", "train")
    before = other_runs_rows(sql)
    bad = trace_file(tmp_path / "in", f"trace_rank-{TOO_LARGE}.json.gz", worker=2)
    result = ingest_unchecked(tracewh, monkeypatch, bad, "bad")
    assert f"rank '{TOO_LARGE}', a partition value Delta cannot read" in result.stderr
    for command in every_command(bad, tmp_path):
        result = tracewh(*command, expect=2)
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: table ") and f"rank '{TOO_LARGE}'" in line, command
        assert "its version " in line and "`tracewh repair`" in line, command

    files = list(warehouse.glob(f"*/run=bad/phase=unknown/rank={TOO_LARGE}/*.parquet"))
    tables = {path.parents[3].name for path in files}
    assert "traces" in tables
    real_commit = delta.commit

    def killed_before_the_pointer(path, version, actions, operation, info=None):
        if operation == "REPAIR" and info is not None:
            raise RuntimeError("killed")  # as a SIGKILL would: nothing runs after it
        return real_commit(path, version, actions, operation, info)

    with monkeypatch.context() as patch:
        patch.setattr(delta, "commit", killed_before_the_pointer)
        tracewh("repair", expect=1)
    assert f"rank '{TOO_LARGE}'" in tracewh("runs", expect=2).stderr
    lines = tracewh("repair").stdout.splitlines()  # again: it finishes the work
    assert lines[0].startswith("removed trace ") and lines[0].endswith(
        f" of run bad, phase unknown, rank '{TOO_LARGE}' (from {bad}): {len(files)} files; "
        "ingest it again with --rank")
    assert lines[1:] == [f"repaired: 1 trace removed from {len(tables)} tables; their files "
                         "stay on disk until `tracewh vacuum`"]
    assert other_runs_rows(sql) == before
    for command in every_command(bad, tmp_path):
        tracewh(*command)
    assert sql("SELECT run, rank, count(*) AS kernels FROM kernels GROUP BY ALL ORDER BY ALL") == [
        {"run": "bad", "rank": 2, "kernels": gpu_events(2)},
        {"run": "good", "rank": 0, "kernels": gpu_events(0)}]
    assert tracewh("repair").stdout == "nothing to repair: Delta can read every partition value\n"
    tracewh("vacuum", "--retain", "0")  # deletes the removed trace's files
    assert not any(path.exists() for path in files)


def test_repair_rolls_back_a_commit_cut_short_by_the_value(tracewh, sql, warehouse, tmp_path,
                                                           monkeypatch):
    """Before, a checkpoint due at the unreadable commit's version failed: the commit stopped
    after its first table, without a pointer, and every writer's recovery then failed."""
    tracewh("ingest", WORKERS[0], "--run", "good", "--phase", "train")
    before = other_runs_rows(sql)
    bad = trace_file(tmp_path / "in", f"trace_rank-{TOO_LARGE}.json.gz", worker=2)
    monkeypatch.setattr(delta, "CHECKPOINT_INTERVAL", 1)
    ingest_unchecked(tracewh, monkeypatch, bad, "bad")
    monkeypatch.undo()
    # readers read the tables at the pointer, before the commit; writers recover them first
    assert f"rank '{TOO_LARGE}'" in tracewh("vacuum", expect=2).stderr
    result = tracewh("repair")
    assert f"of run bad, phase unknown, rank '{TOO_LARGE}': 1 file;" in result.stdout
    assert other_runs_rows(sql) == before
    assert not [path for path in live_files(warehouse) if "run=bad" in str(path)]
    tracewh("vacuum")  # a writer: the recovery works again


def test_the_api_says_how_to_give_the_rank_in_its_own_words(warehouse, tmp_path):
    """The library's message names the API's argument where the CLI names its flag; both
    survive the trip from a worker process (pickling)."""
    import pickle

    bad = trace_file(tmp_path / "in", f"trace_rank-{TOO_LARGE}.json.gz")
    [outcome] = tracewh.open(warehouse).ingest(str(bad), run="r")
    assert outcome.status == "failed"
    assert outcome.error == (f"{bad}: rank {TOO_LARGE} from the file name is outside {RANGE}: "
                             "give its rank (rank=)")
    assert outcome.cli_error.endswith(": pass --rank")
    error = TraceError(bad, f"value too large{HINT}", " (--max-event-size)", " (max_event_size)")
    crossed = pickle.loads(pickle.dumps(error))
    assert (str(crossed), crossed.cli_message()) == (
        f"{bad}: value too large (max_event_size)", f"{bad}: value too large (--max-event-size)")
