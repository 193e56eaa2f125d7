"""A warehouse on an object store: SeaweedFS's S3 on 127.0.0.1 (tests/object_store.py),
against a local warehouse of the same traces as the reference. Every command answers as it
does locally; two ingests from two processes at once lose nothing; a killed ingest leaves no
partial trace visible; a store that ignores conditional writes, and wrong keys, are refused
in one line."""

import dataclasses
import gzip
import http.client
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from tracewh.storage import delta
from tracewh import storage
from tracewh.cli import cli

from tracewh.ingest import reader
from tracewh.ingest.sources import expand_inputs

from .conftest import EXAMPLES, error_lines, shared, table_contents
from .object_store import ACCESS_KEY, SECRET_KEY, make_bucket, seaweedfs

pytestmark = pytest.mark.s3

BUCKET = "tracewh-test"
RANKS = sorted(EXAMPLES.glob("*.json*"))
FEW = RANKS[:4]  # enough for every reader, a quarter of the test's time less than 8


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The server's environment (AWS_* variables, and a cache of the tests' own), set in this
    process too."""
    with seaweedfs() as env:
        make_bucket(env, BUCKET)
        env = {**env, "TRACEWH_CACHE": str(tmp_path_factory.mktemp("cache"))}
        saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        storage._STORES.clear()  # clients made under another environment
        try:
            yield env
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            storage._STORES.clear()


def _cli(warehouse, *args, expect=0):
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), *map(str, args)])
    if expect is not None:
        assert result.exit_code == expect, (result.output, result.exception)
    return result


def _process(env, warehouse, *args):
    """`tracewh` in a process of its own, with `env`'s AWS variables."""
    return subprocess.Popen([sys.executable, "-m", "tracewh", "--warehouse", warehouse,
                             *map(str, args)], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _rows(warehouse, sql):
    return json.loads(_cli(warehouse, "query", "--format", "json", sql).stdout)


@pytest.fixture(scope="module")
def pair(s3, tmp_path_factory):
    """(local warehouse, s3:// warehouse), each with 4 ranks as runs a and b."""
    local = tmp_path_factory.mktemp("reference") / "wh"
    remote = f"s3://{BUCKET}/pair"
    for warehouse in (local, remote):
        for run in ("a", "b"):
            _cli(warehouse, "ingest", *FEW, "--run", run, "--phase", "train")
    return local, remote


COUNTS = ("SELECT run, rank, count(*) AS n, sum(dur_ns) AS dur_ns FROM kernels GROUP BY ALL "
          "ORDER BY ALL")


@pytest.mark.parametrize("command", [
    ["query", "--format", "json", COUNTS],
    ["query", "--format", "json", "SELECT * FROM overlap ORDER BY ALL"],
    ["query", "--format", "json",
     "SELECT run, phases, ranks, files, events, bytes FROM runs ORDER BY ALL"],
    ["diff", "a", "b", "--format", "json"],
    ["trend", "overlap_ratio"],
    ["critical-path", "a"],
    ["tables"],
    ["views"],
], ids=lambda command: command[0] if command[0] != "query" else command[-1][:30])
def test_every_reader_answers_as_it_does_locally(pair, command):
    local, remote = pair
    assert _cli(remote, *command).stdout == _cli(local, *command).stdout


def test_export_and_report_as_locally(pair, tmp_path):
    local, remote = pair
    for name, warehouse in (("local", local), ("remote", remote)):
        _cli(warehouse, "export", "a", "--rank", "3", "--out", tmp_path / f"{name}.json")
    assert (json.loads((tmp_path / "remote.json").read_text())
            == json.loads((tmp_path / "local.json").read_text()))
    _cli(remote, "report", "b", "--base", "a", "--out", tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert "ProfilerStep" in html and "<svg" in html


def test_deltalake_polars_and_duckdb_agree(pair):
    """The tables are Delta tables other engines read straight from the store."""
    import polars as pl
    from deltalake import DeltaTable

    local, remote = pair
    expected = {(row["run"], row["rank"]): row["n"] for row in _rows(local, COUNTS)}
    assert {(row["run"], row["rank"]): row["n"] for row in _rows(remote, COUNTS)} == expected
    options = storage.of(storage.location(remote)).delta_options()
    table = DeltaTable(f"{remote}/kernels", storage_options=options).to_pyarrow_table(
        columns=["run", "rank"])
    counted = {}
    for run, rank in zip(table["run"].to_pylist(), table["rank"].to_pylist()):
        counted[run, rank] = counted.get((run, rank), 0) + 1
    assert counted == expected
    frame = (pl.scan_delta(f"{remote}/kernels", storage_options=options)
             .group_by("run", "rank").len().collect())
    assert {(run, rank): n for run, rank, n in frame.iter_rows()} == expected


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_text('/etc/passwd')",
    f"SELECT count(*) FROM read_parquet('s3://{BUCKET}/pair/kernels/*/*/*/*.parquet')",
    f"SELECT * FROM read_text('s3://{BUCKET}/pair/_tracewh/format')",
])
def test_a_query_reads_nothing_but_the_snapshot(pair, sql):
    """DuckDB's confinement holds for the object store's file system as for local files."""
    result = _cli(pair[1], "query", sql, expect=None)
    assert result.exit_code != 0
    assert len(error_lines(result.stderr)) == 1 and "Traceback" not in result.output


def test_two_ingests_at_once_from_two_processes(s3, pair):
    """No lock: both runs are committed whole, every row once."""
    remote = f"s3://{BUCKET}/concurrent"
    _cli(remote, "ingest", RANKS[0], "--run", "first", "--phase", "train")
    ingests = [_process(s3, remote, "ingest", *FEW, "--run", run, "--phase", "train")
               for run in ("c1", "c2")]
    for ingest in ingests:
        out, err = ingest.communicate(timeout=300)
        assert ingest.returncode == 0, err
    counts = {(row["run"], row["rank"]): row["n"] for row in _rows(remote, COUNTS)}
    reference = {rank: row["n"] for row in _rows(pair[0], COUNTS) if row["run"] == "a"
                 for rank in [row["rank"]]}
    assert {key: n for key, n in counts.items() if key[0] != "first"} == {
        (run, rank): n for run in ("c1", "c2") for rank, n in reference.items()}
    # every table's log took both writers' commits (no version lost to the other)
    traces = storage.location(remote) / "traces"
    assert delta.latest_version(traces) >= 1 + 1 + 2 * len(FEW)


def test_a_killed_ingest_leaves_no_partial_trace(s3, tmp_path):
    remote = f"s3://{BUCKET}/killed"
    _cli(remote, "ingest", RANKS[0], "--run", "first", "--phase", "train")
    traces = storage.location(remote) / "traces"
    before = delta.latest_version(traces)
    ingest = _process(s3, remote, "ingest", EXAMPLES, "--run", "k", "--phase", "train")
    deadline = time.monotonic() + 120
    while delta.latest_version(traces) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    ingest.send_signal(signal.SIGKILL)
    ingest.wait()
    local = tmp_path / "wh"
    _cli(local, "ingest", EXAMPLES, "--run", "k", "--phase", "train")
    reference = {row["rank"]: row["n"] for row in _rows(local, COUNTS)}
    ranks = [row["rank"] for row in _rows(remote, "SELECT rank FROM traces WHERE run = 'k'")]
    assert 2 <= len(ranks) < len(RANKS)  # killed mid-run
    counts = {row["rank"]: row["n"] for row in _rows(remote, COUNTS) if row["run"] == "k"}
    assert counts == {rank: reference[rank] for rank in ranks}  # each trace whole, or absent
    _cli(remote, "ingest", EXAMPLES, "--run", "k", "--phase", "train")
    counts = {row["rank"]: row["n"] for row in _rows(remote, COUNTS) if row["run"] == "k"}
    assert counts == reference


class _IgnoringProxy(http.server.BaseHTTPRequestHandler):
    """Forwards to the real store, but answers a conditional PUT the store refused (412) as
    if it had written it: what a store that ignores If-None-Match looks like to a client."""

    target = None

    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection(*self.target)
        upstream.request(self.command, self.path, body, dict(self.headers))
        reply = upstream.getresponse()
        data = reply.read()
        status = reply.status
        if self.command == "PUT" and "If-None-Match" in self.headers and status == 412:
            status, data = 200, b""
        self.send_response(status)
        for name, value in reply.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _forward

    def log_message(self, *args):
        pass


def test_a_store_that_ignores_conditional_writes_is_refused(s3, tmp_path):
    host, port = s3["AWS_ENDPOINT_URL"].removeprefix("http://").split(":")
    handler = type("Proxy", (_IgnoringProxy,), {"target": (host, int(port))})
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        env = {**s3, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{proxy.server_address[1]}"}
        ingest = _process(env, f"s3://{BUCKET}/ignoring", "ingest", RANKS[0], "--run", "x",
                          "--phase", "train")
        out, err = ingest.communicate(timeout=120)
    finally:
        proxy.shutdown()
    assert ingest.returncode != 0
    assert error_lines(err) == [
        f"error: s3://{BUCKET} at {env['AWS_ENDPOINT_URL']}: the object store does not honour "
        "conditional writes (a second PUT with If-None-Match: * replaced an object instead of "
        "failing with 412): two writers could both commit a version of a table and one commit "
        "would be lost, so tracewh does not write there"]
    assert "Traceback" not in err
    location = storage.location(f"s3://{BUCKET}/ignoring")
    assert not storage.of(location).exists(location / "traces/_delta_log/" / f"{0:020d}.json")


INPUTS = "tracewh-inputs"


@pytest.fixture(scope="module")
def trace_objects(s3):
    """s3://tracewh-inputs/: the first four DLRM ranks under dlrm/, DeepSeek's train.json
    under big/; the local files they are copies of."""
    make_bucket(s3, INPUTS)
    bucket = storage.location(f"s3://{INPUTS}")
    files = {"dlrm": FEW, "big": [shared("deepseek-profile-data/train.json")]}
    for folder, paths in files.items():
        for path in paths:
            storage.of(bucket).put_file(path, bucket / folder / path.name)
    return files


def test_trace_objects_are_ingested_as_their_local_files_are(trace_objects, tmp_path,
                                                             monkeypatch):
    """`ingest s3://...` (a prefix, an object) into a local and an S3 warehouse: the rows of
    the local files' ingest. train.json is cut into 256 KB chunks, decoded on threads from the
    bytes streamed (no ranged GET each)."""
    monkeypatch.setattr(reader, "BLOCK_SIZE", 256 << 10)
    reference = tmp_path / "reference"
    _cli(reference, "ingest", *trace_objects["dlrm"], "--run", "a", "--phase", "train")
    _cli(reference, "ingest", *trace_objects["big"], "--run", "big", "--phase", "train")
    expected = table_contents(reference, drop=["source_path"])
    for warehouse in (tmp_path / "local", f"s3://{BUCKET}/from-objects"):
        result = _cli(warehouse, "ingest", f"s3://{INPUTS}/dlrm", "--run", "a", "--phase",
                      "train", "--jobs", "2")
        assert "run a: 4 files ingested" in result.stdout
        _cli(warehouse, "ingest", f"s3://{INPUTS}/big/train.json", "--run", "big", "--phase",
             "train", "--jobs", "2")
        assert table_contents(warehouse, drop=["source_path"]) == expected
        assert _rows(warehouse, "SELECT source_path FROM traces WHERE run = 'big'") == [
            {"source_path": f"s3://{INPUTS}/big/train.json"}]
        again = _cli(warehouse, "ingest", f"s3://{INPUTS}/dlrm/", "--run", "a", "--phase",
                     "train")
        assert "4 unchanged" in again.stdout


@pytest.mark.parametrize("url, line", [
    (f"s3://{INPUTS}/dlrm/no-such.json",
     f"error: s3://{INPUTS}/dlrm/no-such.json: no trace objects (*.json, *.json.gz) under "
     "this prefix"),
    ("s3://no-such-bucket/traces/", "error: s3://no-such-bucket at {endpoint}: no such bucket"),
])
def test_a_missing_trace_object_or_bucket_is_one_line(s3, trace_objects, tmp_path, url, line):
    result = _cli(tmp_path / "wh", "ingest", url, expect=2)
    assert error_lines(result.output) == [line.format(endpoint=s3["AWS_ENDPOINT_URL"])]
    assert "Traceback" not in result.output


GLOB_TREE = ["x.json", "a/rank0.json", "a/rank1.json", "a/rank10.json.gz", "a/notes.txt",
             "a/.hidden.json", "a/[x].json", "a/b/rank2.json", "a/b/c/rank4.json",
             "a/.h/rank3.json", "ab/rank5.json"]
GLOBS = ["a/rank*.json", "a/rank?.json", "a/rank[01].json", "a/rank[!0].json*", "a/*",
         "a/.*", "a/**", "a/**/rank*.json", "**/*.json", "a/*/rank*", "*/b/*/*.json",
         "a/.h/*", "a/**/c/*", "a/[[]x].json", "a*/rank*", "**", "a/**/.*"]


def test_a_glob_of_trace_objects_expands_as_a_local_glob(s3, trace_objects, tmp_path):
    """s3://bucket/prefix/PATTERN names the objects a local glob names of the same tree:
    `*`, `?`, `[...]` within a name, `**` across folders, hidden names matched only by a
    pattern's that starts with a dot; a glob into the DLRM ranks ingests the ones it
    names; none matching is one line."""
    bucket = storage.location(f"s3://{INPUTS}")
    for name in GLOB_TREE:
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_text("{}")
        storage.of(bucket).put_file(tmp_path / "tree" / name, bucket / "tree" / name)
    for pattern in GLOBS:
        local = expand_inputs([str(tmp_path / "tree" / pattern)])
        objects = expand_inputs([f"s3://{INPUTS}/tree/{pattern}"])
        assert local, pattern
        assert (sorted(str(key.relative_to(bucket / "tree")) for key in objects)
                == sorted(str(path.relative_to(tmp_path / "tree")) for path in local)), pattern
    result = _cli(tmp_path / "wh", "ingest", f"s3://{INPUTS}/dlrm/worker[13]_*.json.gz",
                  "--run", "a", "--phase", "train")
    assert "run a: 2 files ingested" in result.stdout
    assert _rows(tmp_path / "wh", "SELECT rank FROM traces ORDER BY rank") == [
        {"rank": 1}, {"rank": 3}]
    for url, problem in ((f"s3://{INPUTS}/dlrm/rank*.json", "no object matches this glob"),
                         ("s3://tracewh-*/dlrm/x.json",
                          "a glob matches keys, not buckets: name the bucket")):
        result = _cli(tmp_path / "wh", "ingest", url, expect=2)
        assert error_lines(result.output) == [f"error: {url}: {problem}"]
        assert "Traceback" not in result.output


def test_trace_objects_with_wrong_keys_are_one_line_and_no_secret(s3, trace_objects,
                                                                   tmp_path):
    wrong = "wrong-secret-that-must-not-be-printed"
    process = _process({**s3, "AWS_SECRET_ACCESS_KEY": wrong}, str(tmp_path / "wh"), "ingest",
                       f"s3://{INPUTS}/dlrm/")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2
    assert error_lines(err) == [
        f"error: s3://{INPUTS} at {s3['AWS_ENDPOINT_URL']}: access denied "
        "(SignatureDoesNotMatch): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and the "
        "bucket's policy)"]
    assert "Traceback" not in err and wrong not in out + err
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("command", [["runs"], ["ingest", RANKS[0], "--run", "w"]])
def test_wrong_keys_are_one_line_and_no_secret(s3, pair, command):
    wrong = "wrong-secret-that-must-not-be-printed"
    env = {**s3, "AWS_SECRET_ACCESS_KEY": wrong}
    process = _process(env, pair[1], *command)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2
    assert error_lines(err) == [
        f"error: s3://{BUCKET} at {s3['AWS_ENDPOINT_URL']}: access denied "
        "(SignatureDoesNotMatch): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and the "
        "bucket's policy)"]
    assert "Traceback" not in err and wrong not in out + err


def test_no_credential_is_stored_in_the_warehouse(pair):
    location = storage.location(f"s3://{BUCKET}/pair")
    store = storage.of(location)
    found = store.client.list_objects_v2(Bucket=BUCKET, Prefix="pair/")["Contents"]
    assert len(found) > 100
    for item in found:
        data = store.read_bytes(storage.location(f"s3://{BUCKET}/{item['Key']}"))
        assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data


def _each(pair, *command):
    """The command's output on the local warehouse and on the object store's."""
    return [_cli(warehouse, *command).stdout for warehouse in pair]


def _both(pair, *command):
    """The command's output on the local warehouse and on the object store's, which must
    be the same."""
    local, remote = _each(pair, *command)
    assert remote == local, command
    return local


def _same_rows(pair):
    for sql in (COUNTS, "SELECT * FROM overlap ORDER BY ALL",
                "SELECT run, phases, ranks, files, events FROM runs ORDER BY ALL"):
        assert _rows(pair[1], sql) == _rows(pair[0], sql), sql


@pytest.fixture
def maintained(s3, tmp_path, monkeypatch):
    """(local, s3://) warehouses of runs a (its rank 0 in many small files, as a large
    trace's) and b, b's rank 1 replaced: files to merge, retired files."""
    from tracewh.ingest import reader, writer

    pair = (tmp_path / "wh", f"s3://{BUCKET}/maintained-{tmp_path.name}")
    big = tmp_path / "big_train.json"  # a file per table and lane: several per table
    document = json.loads(RANKS[0].read_bytes() if RANKS[0].suffix == ".json" else
                          gzip.decompress(RANKS[0].read_bytes()))
    document["traceEvents"] = document["traceEvents"] * 6
    big.write_text(json.dumps(document))
    for warehouse in pair:
        with monkeypatch.context() as patched:
            patched.setattr(writer, "MERGE_BELOW_ROWS", 0)
            patched.setattr(reader, "BLOCK_SIZE", 1 << 16)
            _cli(warehouse, "ingest", big, "--run", "a", "--phase", "train", "--rank", "0",
                 "--jobs", "2")
        _cli(warehouse, "ingest", *RANKS[1:3], "--run", "b", "--phase", "train")
        _cli(warehouse, "ingest", RANKS[3], "--run", "b", "--phase", "train", "--rank", "1",
             "--replace")
    return pair


def test_maintenance_on_an_object_store_answers_as_locally(maintained):
    """optimize, delete, vacuum, repair and refresh on the object store, with Delta's
    protocol and no lock: the same outputs and the same rows as on a local warehouse."""
    local, remote = maintained
    _same_rows(maintained)
    # How many files optimize merges and vacuum deletes is each warehouse's own: the big
    # trace's chunks go to whichever of the two workers is free, and a worker writes a
    # table's file only when its chunks held rows of it. Their effect is compared: the same
    # rows, and nothing left to merge or delete on either.
    for merged in _each(maintained, "optimize"):
        assert re.fullmatch(r"merged ([\d,]+) files into ([\d,]+) in \2 tables\n", merged)
        assert not merged.startswith("merged 0 ")
    _same_rows(maintained)
    assert _both(maintained, "optimize") == "merged 0 files into 0 in 0 tables\n"
    assert _both(maintained, "delete", "b", "--yes").startswith("deleted run b: 2 captures")
    _same_rows(maintained)
    for vacuumed in _each(maintained, "vacuum", "--retain", "0"):
        assert vacuumed.startswith("deleted ") and not vacuumed.startswith("deleted 0 ")
    _same_rows(maintained)
    assert _both(maintained, "vacuum", "--retain", "0").startswith("deleted 0 files")
    assert _both(maintained, "repair") == "nothing to repair: Delta can read every partition value\n"
    assert _cli(remote, "refresh").stdout == (
        "up to date: marts/ were derived from the newest snapshot\n")
    for warehouse in maintained:
        _cli(warehouse, "ingest", *RANKS[1:3], "--run", "b", "--phase", "train")
    _same_rows(maintained)


def test_an_object_store_s_marts_are_written_there_and_read(maintained):
    """An ingest's refresh writes the marts into the bucket, and a query over every run
    reads them (their rows are the views' own)."""
    from tracewh.api import Warehouse
    from tracewh.derived.marts import MARTS

    local, remote = maintained
    location = storage.location(remote)
    assert all(delta.is_table(location / "marts" / name) for name in MARTS)
    current = Warehouse(remote).current_marts()
    assert set(current) == set(MARTS)
    for name in ("overlap", "kernel_stats", "run_metrics"):
        sql = f"SELECT * EXCLUDE (start_time, relative_time, start_ns) FROM {name} ORDER BY ALL"
        computed = Warehouse(remote).connect(marts=False).sql(
            sql.replace(" EXCLUDE (start_time, relative_time, start_ns)", "")).fetchall()
        from_mart = Warehouse(remote).sql(
            sql.replace(" EXCLUDE (start_time, relative_time, start_ns)", "")).fetchall()
        assert from_mart == computed and from_mart
        assert _rows(remote, f"SELECT * FROM {name} ORDER BY ALL") == _rows(
            local, f"SELECT * FROM {name} ORDER BY ALL")


def test_vacuum_keeps_the_files_of_an_ingest_in_flight(maintained):
    """A file no commit names (a worker's, before its driver commits) is deleted only once
    older than --retain-uncommitted, whatever --retain says."""
    remote = maintained[1]
    location = storage.location(remote)
    store = storage.of(location)
    name = "kernels/run=a/phase=train/rank=7/0123456789abcdef-00000.parquet"
    store.put_bytes(location / name, b"written by a worker, not committed yet")
    _cli(remote, "vacuum", "--retain", "0")  # the files --replace retired
    assert store.exists(location / name)
    # files a killed ingest appended to a table, whose trace `traces` never got: retired
    # and deleted once added more than --retain-uncommitted ago, not before
    kernels = location / "kernels"
    model = delta.live_files(kernels, delta.latest_version(kernels), ["a"])[0]
    data = store.read_bytes(kernels / model.path)
    orphans = []
    for trace_id, age_ms in (("0000000000000001", 2 * 3600 * 1000), ("0000000000000002", 0)):
        orphan = dataclasses.replace(model, path=f"run=a/phase=train/rank=0/{trace_id}-00000"
                                                 ".parquet", sha256=None)
        store.put_bytes(kernels / orphan.path, data)
        action = delta.add_action(orphan)
        action["add"]["modificationTime"] -= age_ms
        delta.commit(kernels, delta.latest_version(kernels) + 1, [action], "WRITE")
        orphans.append(kernels / orphan.path)
    counts = _rows(remote, COUNTS)
    assert _cli(remote, "vacuum", "--retain", "0").stdout.startswith("deleted 1 files")
    assert not store.exists(orphans[0]) and store.exists(orphans[1])
    assert _rows(remote, COUNTS) == counts
    # the stray file and the second orphan
    assert _cli(remote, "vacuum", "--retain", "0", "--retain-uncommitted", "0").stdout \
        .startswith("deleted 2 files")
    assert not store.exists(location / name) and not store.exists(orphans[1])
    assert _rows(remote, COUNTS) == counts


def test_a_duckdb_file_for_bi_tools_written_next_to_the_user(s3, pair, tmp_path):
    """`refresh --duckdb-file PATH`: a DuckDB file over local copies of the snapshot's
    files, which DuckDB opens read-only and offline, with no credential in it."""
    import duckdb

    target = tmp_path / "bi" / "tracewh.duckdb"
    target.parent.mkdir()
    result = _cli(pair[1], "refresh", "--duckdb-file", target)
    assert result.stdout.endswith(f"wrote {target}\n")
    with duckdb.connect(str(target), read_only=True) as connection:
        rows = connection.execute(COUNTS).fetchall()
        overlap = connection.execute("SELECT * FROM overlap ORDER BY ALL").fetchall()
    assert [dict(zip(("run", "rank", "n", "dur_ns"), row)) for row in rows] == _rows(pair[0],
                                                                                      COUNTS)
    assert len(overlap) == 8
    data = target.read_bytes()
    assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data


def test_a_local_warehouse_imports_no_object_store_library(tmp_path):
    """botocore costs start-up time every local command would pay."""
    code = ("import sys; from click.testing import CliRunner; from tracewh.cli import cli; "
            f"result = CliRunner().invoke(cli, ['--warehouse', {str(tmp_path / 'wh')!r}, "
            "'ingest', sys.argv[1], '--run', 'r']); assert result.exit_code == 0, result.output; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('botocore', 's3fs', 'aiobotocore', 'boto3')))")
    found = subprocess.run([sys.executable, "-c", code, str(RANKS[0])], capture_output=True,
                           text=True, check=True).stdout
    assert found.strip() == "[]"


def _count_requests(location, operation):
    """A list the keys of every `operation` request (HeadObject, GetObject...) of this
    process's client of `location`'s bucket are appended to, and a function to stop."""
    client = storage.of(storage.location(location)).client
    keys = []

    def count(params, **_):
        keys.append(params.get("Key"))

    event = f"before-parameter-build.s3.{operation}"
    client.meta.events.register(event, count)
    return keys, lambda: client.meta.events.unregister(event, count)


def test_a_query_sends_no_request_per_data_file_to_check_its_size(pair):
    """The sizes a query checks the files against are its Delta log's add actions', and
    the files' local copies are what is measured: no HEAD per file."""
    heads, stop = _count_requests(pair[1], "HeadObject")
    try:
        assert _rows(pair[1], COUNTS) == _rows(pair[0], COUNTS)
    finally:
        stop()
    assert heads and [key for key in heads if key.endswith(".parquet")] == []


def test_a_cut_object_is_named_as_a_local_file_is(s3, tmp_path, monkeypatch):
    remote = f"s3://{BUCKET}/cut"
    _cli(remote, "ingest", RANKS[0], "--run", "r", "--phase", "train")
    location = storage.location(remote)
    store = storage.of(location)
    key = next(item["Key"] for item in store.client.list_objects_v2(
        Bucket=BUCKET, Prefix="cut/kernels/run=")["Contents"])
    whole = store.read_bytes(storage.location(f"s3://{BUCKET}/{key}"))
    store.client.put_object(Bucket=BUCKET, Key=key, Body=whole[:-10])
    monkeypatch.setenv("TRACEWH_CACHE", str(tmp_path / "cache"))
    result = _cli(remote, "query", "SELECT count(*) FROM kernels", expect=2)
    assert error_lines(result.stderr)[0].startswith(
        f"error: s3://{BUCKET}/{key}: changed outside tracewh since its commit "
        f"({len(whole) - 10:,} bytes, its commit says {len(whole):,}): a file of trace ")
    store.client.put_object(Bucket=BUCKET, Key=key, Body=whole)  # put back: read as before
    assert _rows(remote, "SELECT count(*) AS n FROM kernels")[0]["n"] > 0
