"""A warehouse that is shared or full: links planted in it are not followed, a maintenance
command lets no writer in midway, and a full disk is reported file by file and can still be
vacuumed."""

import errno
import fcntl
import os
import shutil
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from tracewh.cli import cli

from .conftest import EXAMPLES, ROOT, connect

DLRM = sorted(EXAMPLES.glob("*.json.gz"))
NO_SPACE = os.strerror(errno.ENOSPC)


def invoke(warehouse, *args):
    return CliRunner().invoke(cli, ["--warehouse", str(warehouse), *map(str, args)])


def whole_traces(warehouse):
    """{run: traces} of the warehouse, once every trace's rows in every table are found to
    add up to its event count (so none has lost or is missing a file)."""
    rows = connect(warehouse).execute(
        "SELECT t.run, t.events, (SELECT sum(c.events) FROM event_counts AS c "
        "WHERE c.trace_id = t.trace_id) FROM traces AS t").fetchall()
    assert [events for _, events, _ in rows] == [counted for _, _, counted in rows]
    runs = {}
    for run, _, _ in rows:
        runs[run] = runs.get(run, 0) + 1
    return runs


def build(warehouse):
    """Run `a`: two DLRM ranks, rank 0 ingested again with --replace (its first files are
    retired: something for vacuum to delete)."""
    for args in ([DLRM[0], DLRM[1], "--run", "a"],
                 [DLRM[0], "--run", "a", "--replace", "--tag", "v=2"]):
        result = invoke(warehouse, "ingest", *args, "--jobs", "1")
        assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    warehouse = tmp_path_factory.mktemp("built") / "wh"
    build(warehouse)
    return warehouse


@pytest.fixture
def copied(built, warehouse):
    """A copy of `built` of the test's own, at the `tracewh` fixture's warehouse."""
    shutil.copytree(built, warehouse, symlinks=True)
    return warehouse


def replace_with_link(path, tmp_path):
    """Move `path` (or, when absent, a file of ours) out of the warehouse, and put a link to
    it in its place: returns what the link points at."""
    target = tmp_path / "elsewhere" / path.name
    target.parent.mkdir(exist_ok=True)
    if path.exists():
        shutil.move(path, target)
    else:
        target.write_text("a file of someone else\n")
    os.symlink(target, path)
    return target


def refused(result, path):
    assert result.exit_code == 2, result.output
    assert result.output == (f"error: {path} is a symbolic link: tracewh follows no link in a "
                             "warehouse's own files (remove the link; pass --warehouse to use "
                             "another directory)\n")


# -- links -----------------------------------------------------------------------------------

def test_vacuum_deletes_nothing_through_a_staging_link(tracewh, copied, tmp_path):
    """`_tracewh/staging` pointing at a directory with a folder named like a dead process's
    staging: vacuum refuses, and the folder keeps its file."""
    staging = copied / "_tracewh" / "staging"
    shutil.rmtree(staging)
    home = tmp_path / "home"
    (home / "999999999-notes").mkdir(parents=True)
    (home / "999999999-notes" / "todo.txt").write_text("keep me\n")
    os.symlink(home, staging)
    refused(tracewh("vacuum", "--retain", "0", expect=None), staging)
    assert (home / "999999999-notes" / "todo.txt").read_text() == "keep me\n"


def test_an_ingest_writes_nothing_through_a_derived_json_link(tracewh, copied, tmp_path):
    done = copied / "_tracewh" / "derived.json"
    done.unlink()
    mine = tmp_path / "mine.txt"
    mine.write_text("my notes\n")
    os.symlink(mine, done)
    refused(tracewh("ingest", DLRM[2], "--run", "b", expect=None), done)
    assert mine.read_text() == "my notes\n"
    done.unlink()
    assert whole_traces(copied) == {"a": 2}  # the ingest committed nothing


@pytest.mark.parametrize("control", [
    "_tracewh", "_tracewh/lock", "_tracewh/committing", "_tracewh/kernel_rules.toml",
    "tracewh.duckdb", "marts", "marts/overlap", "kernels", "traces/_delta_log"])
def test_a_warehouse_whose_control_paths_are_links_is_refused(tracewh, copied, tmp_path,
                                                              control):
    """Readers and writers alike, in one line, and what the link points at is unchanged."""
    path = copied / control
    target = replace_with_link(path, tmp_path)
    before = sorted((p.relative_to(target), p.stat().st_mtime_ns)
                    for p in [target, *target.rglob("*")])
    refused(tracewh("ingest", DLRM[2], "--run", "b", expect=None), path)
    refused(tracewh("query", "SELECT 1", expect=None), path)
    assert sorted((p.relative_to(target), p.stat().st_mtime_ns)
                  for p in [target, *target.rglob("*")]) == before


def test_vacuum_deletes_nothing_through_a_partition_link(tracewh, copied, tmp_path):
    """A run's directory of a table swapped for a link: the retired file vacuum would delete
    is reached through it, so it is not deleted, and the command says why."""
    partition = copied / "kernels" / "run=a"
    target = replace_with_link(partition, tmp_path)
    files = sorted(target.rglob("*.parquet"))
    assert len(files) == 3  # rank 1's, rank 0's live and retired files
    result = tracewh("vacuum", "--retain", "0", expect=2)
    assert result.output.startswith(f"error: {partition}/phase=unknown/rank=0/")
    assert result.output.endswith(": not deleted: a symbolic link (or what is not a regular "
                                  "file) is on its path, which tracewh does not follow "
                                  "(remove the link)\n")
    assert sorted(target.rglob("*.parquet")) == files


# -- maintenance and writers -----------------------------------------------------------------

def test_a_writer_let_in_whenever_vacuum_lets_go_of_the_lock_commits(copied, monkeypatch):
    """The worst timing, made certain: each time `vacuum` releases the writers' lock, an
    ingest of another run goes first. Every one commits (none finds a version taken past the
    pointer it read), and every trace is whole afterwards."""
    real_flock = fcntl.flock
    let_in, inside = [], []

    def flock(descriptor, operation):
        real_flock(descriptor, operation)
        if operation == fcntl.LOCK_UN and not inside:
            inside.append(True)
            try:
                run = f"w{len(let_in)}"
                result = invoke(copied, "ingest", DLRM[2 + len(let_in)], "--run", run,
                                "--jobs", "1")
                let_in.append((run, result.exit_code, result.output))
            finally:
                inside.clear()

    monkeypatch.setattr(fcntl, "flock", flock)
    result = invoke(copied, "vacuum", "--retain", "0")
    monkeypatch.undo()
    assert result.exit_code == 0, result.output
    assert result.output.startswith("deleted ") and not result.output.startswith("deleted 0 ")
    assert let_in and all(code == 0 for _, code, _ in let_in), let_in
    assert whole_traces(copied) == {"a": 2, **{run: 1 for run, _, _ in let_in}}


def test_vacuum_beside_ingests_and_replaces(copied):
    """The loops of the report, bounded: `vacuum --retain 0`, `ingest --replace` and plain
    ingests of 8 ranks side by side in processes; none fails, every run is whole."""
    warehouse = copied
    command = [sys.executable, "-m", "tracewh", "--warehouse", str(warehouse)]
    loops = {
        "vacuum": lambda i: ["vacuum", "--retain", "0"],
        "replace": lambda i: ["ingest", DLRM[0], "--run", "a", "--replace", "--tag", f"v={i}"],
        "ingest": lambda i: ["ingest", *DLRM, "--run", f"r{i}"]}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    running, finished, ingested = {}, [], 0
    deadline = time.monotonic() + 8
    while running or time.monotonic() < deadline:
        for name, arguments in loops.items():
            process = running.get(name)
            if process is not None and process.poll() is not None:
                finished.append((name, process.returncode, process.stderr.read()))
                ingested += name == "ingest" and process.returncode == 0
                del running[name]
            if name not in running and time.monotonic() < deadline:
                running[name] = subprocess.Popen(
                    [*command, *map(str, arguments(len(finished))), *(
                        ["--jobs", "1"] if name != "vacuum" else [])],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.05)
    assert all(code == 0 for _, code, _ in finished), [f for f in finished if f[1]]
    assert {name for name, _, _ in finished} == set(loops)
    runs = whole_traces(warehouse)
    assert runs.pop("a") == 2 and list(runs.values()) == [8] * ingested


# -- a full disk -----------------------------------------------------------------------------

def test_an_ingest_on_a_full_disk_shows_each_file_s_error(tracewh, copied, monkeypatch):
    """The second and third files cannot be staged, and the refresh after the first cannot
    write tracewh.duckdb: each file's own error is on its line, the summary says what was
    committed, and the refresh's error comes last."""
    from tracewh import derived
    from tracewh.ingest.writer import PartFiles

    write, first = PartFiles.write, []

    def fills_up(files, name, table):
        first[:] = first or [files.directory]
        if files.directory != first[0]:
            raise OSError(errno.ENOSPC, NO_SPACE)
        return write(files, name, table)

    def no_space(*_):
        raise OSError(errno.ENOSPC, NO_SPACE)

    monkeypatch.setattr(PartFiles, "write", fills_up)
    monkeypatch.setattr(derived, "write_duckdb_file", no_space)
    lines = tracewh("ingest", *DLRM[2:5], "--run", "b", "--jobs", "1",
                    expect=2).output.splitlines()
    for path in DLRM[3:5]:
        assert f"error: {path}: cannot write to the warehouse {copied}: {NO_SPACE}" in lines
    assert [line.split(",")[0] for line in lines if line.startswith("run ")] == \
        ["run b: 1 file ingested"]
    assert "2 files failed; nothing was written for them" in lines
    assert lines[-1] == (f"error: {copied}: the marts and tracewh.duckdb were not brought up "
                         f"to date ([Errno {errno.ENOSPC}] {NO_SPACE}); `tracewh refresh` "
                         "tries again")
    first[:] = [None]  # every file fails now: nothing committed, no word of the refresh
    lines = tracewh("ingest", *DLRM[5:7], "--run", "c", "--jobs", "1",
                    expect=2).output.splitlines()
    assert lines[-1] == "2 files failed; nothing was written for them"
    assert not any("marts" in line or line.startswith("run ") for line in lines)
    monkeypatch.undo()
    assert whole_traces(copied) == {"a": 2, "b": 1}


@pytest.fixture
def small_disk(tmp_path):
    """A 24 MB file system of its own (tmpfs), where mounting one is permitted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"cannot mount a tmpfs here: {error}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path):
    """Write to `path` until the file system is full."""
    with open(path, "wb", buffering=0) as handle:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    handle.write(bytes(size))
            except OSError as error:
                assert error.errno == errno.ENOSPC


def free_bytes(path):
    status = os.statvfs(path)
    return status.f_bavail * status.f_frsize


def test_a_full_disk_for_real(built, small_disk):
    """On a full file system: an ingest shows each file's ENOSPC and commits nothing; vacuum
    deletes the retired files (deleting needs no space) without a traceback; once there is
    room again, the ingest goes through."""
    warehouse = small_disk / "wh"
    shutil.copytree(built, warehouse, symlinks=True)
    fill(small_disk / "filler")
    result = invoke(warehouse, "ingest", *DLRM[2:4], "--run", "b", "--jobs", "1")
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    for path, line in zip(DLRM[2:4], lines):  # pyarrow's words, then the system's
        assert line.startswith(f"error: {path}: cannot write to the warehouse {warehouse}: ")
        assert line.endswith(NO_SPACE)
    assert lines[-1] == "2 files failed; nothing was written for them"
    full = free_bytes(small_disk)
    result = invoke(warehouse, "vacuum", "--retain", "0")
    assert result.exit_code == 0, (result.output, result.exception)
    deleted = int(result.output.split()[1])
    assert deleted >= 8 and free_bytes(small_disk) > full  # rank 0's first files, at least
    assert whole_traces(warehouse) == {"a": 2}
    (small_disk / "filler").unlink()
    result = invoke(warehouse, "ingest", *DLRM[2:4], "--run", "b", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert whole_traces(warehouse) == {"a": 2, "b": 2}


def test_vacuum_deletes_files_no_commit_names(tracewh, warehouse):
    """A file a killed ingest moved into a partition but never committed goes at vacuum
    (Delta's light vacuum only lists files that commits retired)."""
    tracewh("ingest", DLRM[0], "--run", "a", "--phase", "train")
    (partition,) = (warehouse / "kernels").glob("run=a/phase=train/rank=*")
    stray = partition / "0123456789abcdef-00000.parquet"
    stray.write_bytes(next(partition.glob("*.parquet")).read_bytes())
    os.utime(stray, (1, 1))
    kernels = tracewh("query", "SELECT count(*) AS n FROM kernels").stdout
    tracewh("vacuum", "--retain", "0")
    assert not stray.exists()
    assert tracewh("query", "SELECT count(*) AS n FROM kernels").stdout == kernels
