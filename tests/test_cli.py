"""The query, runs, tables commands; read-only guard; secrets; crash safety."""

import contextlib
import csv
import io
import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from click.testing import CliRunner

from tracewh.api import Warehouse
from tracewh.storage.catalog import Catalog
from tracewh.cli import cli

from .conftest import (EXAMPLES, ROOT, built_once, cli_on, connect, live_files, other_writer,
                       shared)

DLRM0 = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"


@pytest.fixture(scope="module")
def dlrm0(tmp_path_factory):
    """A warehouse of DLRM's rank 0, made once for the module's tests, which only read it
    (checked unchanged after them)."""
    yield from built_once(tmp_path_factory, "dlrm0", lambda tracewh: tracewh(
        "ingest", DLRM0, "--run", "d", "--phase", "train", "--tag", "git=abc"))


def test_formats(dlrm0):
    tracewh = cli_on(dlrm0)
    query = "SELECT rank, count(*) AS kernels, sum(dur_ns) AS ns FROM kernels GROUP BY rank"
    assert json.loads(tracewh("query", "--format", "json", query).stdout) == \
        [{"rank": 0, "kernels": 261, "ns": 6851000}]
    rows = list(csv.DictReader(io.StringIO(tracewh("query", "--format", "csv", query).stdout)))
    assert rows == [{"rank": "0", "kernels": "261", "ns": "6851000"}]
    markdown = tracewh("query", "--format", "markdown", query).stdout.splitlines()
    assert markdown[0] == "| rank | kernels | ns |" and markdown[2] == "| 0 | 261 | 6,851,000 |"
    table = tracewh("query", query).stdout.splitlines()
    assert table[0].split() == ["rank", "kernels", "ns"] and table[-1] == "(1 row)"


def test_out_file(dlrm0, tmp_path):
    tracewh = cli_on(dlrm0)
    target = tmp_path / "out.json"
    tracewh("query", "--format", "json", "--out", target, "SELECT 1 AS one")
    assert json.loads(target.read_text()) == [{"one": 1}]


@pytest.mark.parametrize("statement", [
    "COPY (SELECT 1) TO '/tmp/x.csv'", "ATTACH 'x.db'", "INSTALL httpfs",
    "CREATE TABLE t AS SELECT 1", "SET threads = 1", "SELECT 1; DROP VIEW kernels"])
def test_query_is_read_only(dlrm0, statement):
    tracewh = cli_on(dlrm0)
    result = tracewh("query", statement, expect=2)
    assert "refused: queries are read-only" in result.output
    assert "Traceback" not in result.output


def test_allow_write(dlrm0, tmp_path):
    tracewh = cli_on(dlrm0)
    target = tmp_path / "k.csv"
    tracewh("query", "--allow-write", f"COPY (SELECT name FROM kernels) TO '{target}'")
    assert len(target.read_text().splitlines()) == 262


def test_sql_error_is_one_line(dlrm0):
    tracewh = cli_on(dlrm0)
    result = tracewh("query", "SELECT nope FROM kernels", expect=2)
    assert result.output.startswith("error: ") and result.output.count("\n") == 1


def test_runs_and_tables(dlrm0):
    tracewh = cli_on(dlrm0)
    runs = json.loads(tracewh("runs", "--format", "json").stdout)
    assert runs[0]["run"] == "d" and runs[0]["events"] == 3290
    # rank 0 of DLRM's 8 (distributedInfo.world_size): 7 ranks are missing, and runs says so
    assert (runs[0]["ranks"], runs[0]["world_size"], runs[0]["ranks_missing"]) == (1, 8, 7)
    assert json.loads(runs[0]["tags"]) == {"git": "abc"}
    described = tracewh("tables", "kernels").stdout
    assert "ts_ns" in described and "registers_per_thread" in described
    assert tracewh("tables", "nope", expect=2).output.startswith("error: no table")


def test_empty_warehouse_queries(tracewh, warehouse):
    warehouse.mkdir()
    assert json.loads(tracewh("query", "--format", "json",
                              "SELECT count(*) AS n FROM overlap").stdout) == [{"n": 0}]


@pytest.mark.parametrize("command", [["query", "SELECT 1"], ["runs"], ["trend", "overlap_ratio"],
                                     ["diff", "a", "b"]])
def test_read_commands_refuse_a_missing_warehouse(tracewh, warehouse, command):
    result = tracewh(*command, expect=2)
    assert result.output == (f"error: no warehouse at {warehouse}: the directory does not exist "
                             "(ingest traces into it first, or pass --warehouse DIR)\n")
    assert not warehouse.exists()


def test_a_source_tree_is_not_a_warehouse(tmp_path):
    """./warehouse is the package's source in this repository: neither read nor written."""
    result = CliRunner().invoke(cli, ["--warehouse", str(ROOT / "warehouse"), "query", "SELECT 1"])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {ROOT / 'warehouse'} is not a tracewh warehouse")
    result = CliRunner().invoke(cli, ["--warehouse", str(ROOT / "warehouse"), "ingest",
                                      str(DLRM0), "--run", "r"])
    assert result.exit_code == 2 and "is not a tracewh warehouse" in result.output
    assert not (ROOT / "warehouse" / "_tracewh").exists()


def test_secrets_are_redacted(tracewh, sql, tmp_path):
    document = json.loads(shared("hta/call_stack/backward_thread.json").read_text())
    document["environment"] = {"HF_TOKEN": "hf_live_1234", "PATH": "/usr/bin",
                               "AWS_SECRET_ACCESS_KEY": "abc"}
    document["INFO"] = ["launch: WANDB_API_KEY=0123456789abcdef python train.py"]
    path = tmp_path / "secret.json"
    path.write_text(json.dumps(document))
    tracewh("ingest", path, "--run", "s")
    (row,) = sql("SELECT metadata, secrets_redacted FROM traces")
    assert row["secrets_redacted"] == 3
    assert "hf_live_1234" not in row["metadata"] and "0123456789abcdef" not in row["metadata"]
    assert "/usr/bin" in row["metadata"]
    tracewh("ingest", path, "--run", "kept", "--keep-secrets")
    (kept,) = sql("SELECT metadata FROM traces WHERE run = 'kept'")
    assert "hf_live_1234" in kept["metadata"]


def test_kill_midway_leaves_no_partial_partition(tmp_path):
    """kill -9 an ingest of a large trace at several moments: afterwards each partition is
    absent or complete, and the next command cleans up the leftovers."""
    source = shared("deepseek-profile-data/train.json")
    big = tmp_path / "big_rank-1.json"
    document = json.loads(source.read_text())
    document["traceEvents"] = document["traceEvents"] * 8
    big.write_text(json.dumps(document))
    warehouse = tmp_path / "wh"
    command = [sys.executable, "-m", "tracewh", "--warehouse", str(warehouse),
               "ingest", str(big), "--run", "k", "--jobs", "2"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for delay in (0.3, 0.8, 1.5):
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for path in live_files(warehouse):  # whatever is committed is whole
            assert path.is_file()
    subprocess.run(command, env=env, check=True, capture_output=True)
    (trace,) = Catalog(warehouse).stored_traces(run=None)
    assert trace.events == 14240 * 8
    committed = live_files(warehouse)
    assert {p.name.split("-")[0] for p in committed} == {trace.trace_id}  # no orphans live
    assert not list((warehouse / "_tracewh" / "staging").iterdir())
    # no ingest in flight: files no commit names go now too
    subprocess.run([*command[:5], "vacuum", "--retain", "0", "--retain-uncommitted", "0"],
                   env=env, check=True, capture_output=True)
    tables = {p for p in warehouse.rglob("*.parquet") if "marts" not in p.parts}
    assert tables == set(committed)  # and none left on disk


def test_concurrent_ingests_all_land(tmp_path):
    warehouse = tmp_path / "wh"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [subprocess.Popen([sys.executable, "-m", "tracewh", "--warehouse",
                                   str(warehouse), "ingest", str(path), "--run", "c",
                                   "--phase", "train", "--jobs", "1"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for path in sorted(EXAMPLES.glob("*.gz"))]
    for process in processes:
        assert process.wait() == 0, process.stderr.read()
    traces = Catalog(warehouse).stored_traces(run=None)
    assert sorted(t.rank for t in traces) == list(range(8))
    assert sorted(t.ingest_seq for t in traces) == list(range(1, 9))


def test_a_writer_that_stops_waiting_for_the_lock_leaves_nothing_behind(tmp_path):
    """A writer with a lock timeout (a training job's trace handler) whose commit finds the
    lock held for longer: WarehouseBusy, and its staged files are gone (its process lives
    on, so the next writer would keep them)."""
    from tracewh.errors import WarehouseBusy
    from tracewh.ingest.pipeline import IngestOptions, ingest_paths

    catalog = Catalog(tmp_path / "wh", lock_timeout=0.2)
    taken = []
    with contextlib.ExitStack() as held:
        def lock_while_staging(_path, _done):  # once the ingest has looked at the tables
            if not taken:
                taken.append(held.enter_context(other_writer(catalog.root)))

        with pytest.raises(WarehouseBusy, match="has held its lock for more than 0.2 s"):
            ingest_paths(catalog, [DLRM0], IngestOptions(run="d"), on_bytes=lock_while_staging)
    assert list((catalog.state / "staging").iterdir()) == []
    assert Catalog(catalog.root).stored_traces(run=None) == []


def test_queries_during_ingests_see_whole_traces(tmp_path):
    """While ranks are being ingested, every query sees each committed trace whole: its rows in
    every table add up to its event count, never a table at a time."""
    warehouse = tmp_path / "wh"
    warehouse.mkdir()  # an empty warehouse, readable before the ingest's first commit
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ingest = subprocess.Popen([sys.executable, "-m", "tracewh", "--warehouse",
                               str(warehouse), "ingest", str(EXAMPLES), "--run", "live",
                               "--phase", "train", "--jobs", "1"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = set()
    while True:
        finished = ingest.poll() is not None
        rows = connect(warehouse).execute(
            "SELECT t.trace_id, t.events, sum(c.events) FROM traces AS t "
            "JOIN event_counts AS c ON c.trace_id = t.trace_id GROUP BY ALL").fetchall()
        for trace_id, events, counted in rows:
            assert events == counted
            seen.add(trace_id)
        if finished:
            break
    assert ingest.returncode == 0 and len(seen) == 8


def test_a_query_on_the_snapshot_before_a_replace_still_reads_it(tracewh, warehouse):
    """Files a commit retires stay until `vacuum`: a query that took its snapshot before a
    --replace reads it whole, and a new one sees the replacement."""
    path = shared("hta/call_stack/backward_thread.json")
    tracewh("ingest", path, "--run", "r", "--tag", "v=1")
    stale = connect(warehouse)
    tracewh("ingest", path, "--run", "r", "--replace", "--tag", "v=2")
    assert stale.execute("SELECT count(*), any_value(tags) FROM cpu_ops JOIN traces "
                         "USING (trace_id)").fetchall() == [(5, '{"v": "1"}')]
    ((_, rows),) = Warehouse(warehouse).query("SELECT count(*), any_value(tags) "
                                              "FROM cpu_ops JOIN traces USING (trace_id)")
    assert rows == [(5, '{"v": "2"}')]


def test_query_reads_sql_from_stdin(dlrm0):
    result = CliRunner().invoke(cli, ["--warehouse", str(dlrm0), "query", "--format", "json",
                                      "-"], input="SELECT count(*) AS n FROM kernels")
    assert result.exit_code == 0 and json.loads(result.stdout) == [{"n": 261}]


def test_every_statement_prints_its_result(dlrm0):
    tracewh = cli_on(dlrm0)
    table = tracewh("query", "SELECT 1 AS one; SELECT count(*) AS kernels FROM kernels").stdout
    assert table.split("\n\n") == ["one\n---\n  1\n(1 row)", "kernels\n-------\n    261\n(1 row)\n"]
    result = tracewh("query", "--format", "json", "SELECT 1 AS one; SELECT 2 AS two")
    assert json.loads(result.stdout) == [{"two": 2}]
    assert "note: 2 statements returned rows; json holds one result: the last" in result.stderr


def test_max_rows_cuts_a_table_and_counts_the_rest(dlrm0):
    tracewh = cli_on(dlrm0)
    lines = tracewh("query", "--max-rows", "5", "SELECT ts_ns FROM kernels").stdout.splitlines()
    assert len(lines) == 2 + 5 + 1
    assert lines[-1] == ("(261 rows, the first 5 shown: --max-rows 0 shows all, --format or "
                         "--out writes all)")
    assert len(tracewh("query", "--format", "csv", "--max-rows", "5",
                       "SELECT ts_ns FROM kernels").stdout.splitlines()) == 262


def on_terminal(command, stream, env):
    """Run `command` with its `stream` (stdout or stderr) on a pseudo-terminal, the other
    discarded; return (what the terminal received, exit status)."""
    leader, follower = pty.openpty()
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: follower}
    process = subprocess.Popen(command, env=env, **streams)
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return received.decode(), process.wait()


def test_a_terminal_shows_40_rows_and_a_pipe_all(dlrm0):
    """On a real terminal (a pty) a big result is cut; through a pipe it is whole."""
    command = [str(ROOT / ".venv" / "bin" / "tracewh"), "--warehouse", str(dlrm0), "query",
               "SELECT ts_ns FROM kernels"]
    if not os.path.exists(command[0]):
        command[0:1] = [sys.executable, "-m", "tracewh"]
    screen, _ = on_terminal(command, "stdout", env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = screen.splitlines()
    assert len(lines) == 2 + 40 + 1 and lines[-1].startswith("(261 rows, the first 40 shown")
    piped = subprocess.run(command, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.splitlines()
    assert len(piped) == 2 + 261 + 1 and piped[-1] == "(261 rows)"


def test_doubles_print_plainly_in_tables_and_exactly_in_csv(dlrm0):
    tracewh = cli_on(dlrm0)
    sql = "SELECT 12345678.9 :: DOUBLE AS big, 0.000000123456 :: DOUBLE AS tiny, 1 AS n"
    assert tracewh("query", sql).stdout.splitlines()[2].split() == ["12,345,679", "0.0000001235",
                                                                   "1"]
    assert tracewh("query", "--units", "ms", "SELECT 1500000 AS dur_ns, 2 AS n").stdout \
        .splitlines()[2].split() == ["1.500", "2"]
    assert tracewh("query", "--format", "csv", sql).stdout.splitlines()[1] == \
        "12345678.9,1.23456e-07,1"
    ratio = tracewh("query", "--format", "csv",
                    "SELECT overlap_ratio FROM overlap").stdout.splitlines()[1]
    assert float(ratio) == 261000 / 5798000 and ratio == repr(261000 / 5798000)


def test_ingest_seconds_are_wall_time_not_summed_over_workers(warehouse):
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "ingest", str(EXAMPLES),
                                      "--run", "d", "--jobs", "2"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    seconds = float(result.stdout.split(", ")[-1].removesuffix(" s\n"))
    assert 0 < seconds <= elapsed + 0.05


def test_the_command_and_its_workers_import_neither_pandas_nor_acero(tmp_path):
    """pyarrow imports pandas, where installed, at its first conversion of Python values:
    0.25-0.33 s in every process of a command. The `tracewh` command's processes (the
    ingest's workers too, two here) do without; `-X importtime` lists every module a process
    of it imported, pandas' submodules only where pandas was imported. Nor do they import
    pyarrow.acero (Table.group_by and join) or pyarrow.dataset (pyarrow.parquet.read_table),
    which bring ~30 modules into each process (see tracewh.ingest.keyed)."""
    pytest.importorskip("pandas")  # installed here: what would be imported
    command = [sys.executable, "-X", "importtime", "-m", "tracewh", "--warehouse",
               str(tmp_path / "wh"), "ingest", str(EXAMPLES), "--run", "a", "--jobs", "2"]
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "8 files ingested" in done.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")]
    assert "pyarrow.lib" in imported and not [m for m in imported if m.startswith("pandas.")]
    assert "pyarrow.parquet" in imported
    assert not {"pyarrow.acero", "pyarrow.dataset"} & set(imported)


@pytest.mark.parametrize("chosen, expected", [(None, "system"), ("jemalloc", "jemalloc")])
def test_the_command_s_arrow_allocates_through_glibc_unless_the_user_chose(tmp_path, chosen,
                                                                         expected):
    """The command's Arrow buffers come from the heap whose freed memory ingest keeps for
    reuse (mimalloc, pyarrow's default, held ~2.5x what Arrow had allocated); a pool the user
    names in ARROW_DEFAULT_MEMORY_POOL is theirs. Asked of the ingest's own process, at its
    exit, after pyarrow has done its work."""
    report = ("import atexit, sys\n"
              "atexit.register(lambda: print('pool', __import__('pyarrow')"
              ".default_memory_pool().backend_name, file=sys.stderr))\n"
              "from tracewh.entry import main\nmain()\n")
    env = {key: value for key, value in os.environ.items()
           if key != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    done = subprocess.run([sys.executable, "-c", report, "--warehouse", str(tmp_path / "wh"),
                           "ingest", str(EXAMPLES), "--run", "a", "--jobs", "2"],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"pool {expected}" in done.stderr.splitlines()


def test_a_large_file_shows_a_byte_bar_on_a_terminal_only(tmp_path):
    """On a pty, one large file draws a progress bar of its bytes on stderr; through a pipe,
    nothing but the summary."""
    big = tmp_path / "big_train.json"
    subprocess.run([sys.executable, str(ROOT.parent / "shared" / "tools" / "scale_trace.py"),
                    str(shared("deepseek-profile-data/train.json")), str(big), "6"],
                   check=True, capture_output=True)
    assert big.stat().st_size >= 16 << 20
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tracewh", "--warehouse", str(tmp_path / "wh"),
               "ingest", str(big), "--run", "big"]
    text, status = on_terminal(command, "stderr", env=env)
    assert status == 0
    assert f"ingesting big_train.json ({big.stat().st_size / 1e6:,.0f} MB)" in text
    assert "100%" in text
    piped = subprocess.run(command[:-2] + ["--run", "again", "--replace"], capture_output=True,
                           text=True, env=env)
    assert piped.returncode == 0 and piped.stderr == ""


@pytest.fixture(scope="module")
def large_trace(tmp_path_factory):
    """A ~95 MB trace (DeepSeek's train.json, 24 copies in time): seconds of work for workers."""
    big = tmp_path_factory.mktemp("large") / "big_train.json"
    subprocess.run([sys.executable, str(ROOT.parent / "shared" / "tools" / "scale_trace.py"),
                    str(shared("deepseek-profile-data/train.json")), str(big), "24"],
                   check=True, capture_output=True)
    return big


def _default_sigint():
    """Ctrl-C as in a terminal: a shell starts background jobs (a CI runner's, say) with
    SIGINT ignored, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_ingest_with_workers(warehouse, *paths):
    """An ingest in its own process group, once it is into the work (a part file staged):
    (process, worker pids): two worker processes for several files, none for one (its chunks
    are decoded on threads of the command)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tracewh", "--warehouse", str(warehouse), "ingest",
         *map(str, paths), "--run", "big", "--jobs", "2"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_default_sigint)
    expected = 2 if len(paths) > 1 else 0
    deadline = time.monotonic() + 10
    workers = []
    while time.monotonic() < deadline and (
            len(workers) < expected or not list(warehouse.glob("_tracewh/staging/*/*"))):
        time.sleep(0.05)
        workers = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True,
                                 text=True).stdout.split()
    assert len(workers) == expected and process.poll() is None
    return process, workers


def running(pids):
    """The pids that are still running (not gone, not zombies)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def test_workers_end_within_2_s_of_their_parent_killed(large_trace, tmp_path):
    copy = tmp_path / "copy_train.json"
    os.link(large_trace, copy)
    process, workers = start_ingest_with_workers(tmp_path / "wh", large_trace, copy)
    os.kill(process.pid, signal.SIGKILL)  # the parent alone, as the OOM killer would
    process.wait()
    deadline = time.monotonic() + 2
    while running(workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(workers) == []


@pytest.mark.parametrize("copies", [1, 2])  # one file in chunks; two files side by side
def test_ctrl_c_stops_within_2_s_with_one_line_and_status_130(copies, large_trace, tmp_path):
    paths = [large_trace]
    for number in range(1, copies):
        paths.append(tmp_path / f"copy{number}_train.json")
        os.link(large_trace, paths[-1])
    warehouse = tmp_path / "wh"
    process, workers = start_ingest_with_workers(warehouse, *paths)
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole process group
    _, stderr = process.communicate(timeout=10)
    assert time.monotonic() - started < 2
    assert process.returncode == 130
    assert stderr == "interrupted: files not yet committed were not written\n"
    assert running(workers) == []
    committed = Catalog(warehouse).stored_traces(run=None)
    assert all(trace.events == 14240 * 24 for trace in committed)  # whole or absent
    assert not list(warehouse.glob("_tracewh/staging/*"))


def test_query_out_parquet_keeps_types_and_every_digit(dlrm0, tmp_path):
    import pyarrow.parquet as pq

    tracewh = cli_on(dlrm0)
    out = tmp_path / "stats.parquet"
    result = tracewh("query", "SELECT rank, total_ns, busy_share, name FROM kernel_stats "
                     "ORDER BY total_ns DESC", "--out", out)
    table = pq.read_table(out)
    assert result.stderr == f"wrote {table.num_rows:,} rows to {out}\n" and table.num_rows > 10
    assert [str(f.type) for f in table.schema] == ["int32", "int64", "double", "string"]
    csv_rows = list(csv.DictReader(io.StringIO(tracewh(
        "query", "--format", "csv", "SELECT busy_share FROM kernel_stats ORDER BY total_ns DESC"
    ).stdout)))
    assert [float(r["busy_share"]) for r in csv_rows] == table["busy_share"].to_pylist()
    refused = tracewh("query", "SELECT 1; SET threads = 1", "--allow-write", "--out",
                      tmp_path / "none.parquet", expect=2)
    assert "not a SELECT" in refused.stderr and not (tmp_path / "none.parquet").exists()


def test_a_gz_name_that_is_not_gzip_says_so_in_text(tracewh, tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gz\n")
    result = tracewh("ingest", bad, "--run", "r", expect=2)
    assert result.output.splitlines()[0] == (
        f'error: {bad}: not gzip (the name ends in .gz, but the file does not start with '
        'gzip\'s bytes 1f 8b) and not JSON either: it starts with "not gz\\n" at byte 0')
    assert "bytearray" not in result.output


def test_the_seconds_an_ingest_prints_are_the_command_s_wall_time(tracewh, monkeypatch):
    """They were the files' own reading (0.1 s of a 1.59 s command): the refresh after, and
    what comes before, count too."""
    import re
    import time

    real = Warehouse.ingest_files

    def slow_refresh(*args, **kwargs):
        outcomes = real(*args, **kwargs)
        time.sleep(1.5)  # as a slow refresh of the marts would
        return outcomes

    monkeypatch.setattr(Warehouse, "ingest_files", slow_refresh)
    out = tracewh("ingest", EXAMPLES, "--run", "a", "--phase", "train").stdout
    seconds = float(re.fullmatch(r"run a: 8 files ingested, [\d,]+ events, [\d.]+ MB, "
                                 r"([\d.]+) s\n", out).group(1))
    assert seconds >= 1.5
