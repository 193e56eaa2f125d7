"""`tracewh.torch.trace_handler` in real training jobs: a small model profiled on CPU with
PyTorch from PyPI, several profiler cycles, ranks started as processes of one gloo process
group. Marker `torch`: needs the torch extra (`make test-torch` installs it)."""

import logging
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from tracewh.api import Warehouse
from tracewh.storage.catalog import Catalog
from tracewh.errors import UsageError

pytestmark = [pytest.mark.torch,  # torch's note that a cycle's events are not kept for the next
              pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")]
pytest.importorskip("torch", reason="torch is not installed (the torch extra: make test-torch)")

from tracewh.torch import trace_handler  # noqa: E402 - only once torch is known to be there

from .conftest import ROOT, other_writer  # noqa: E402
from .torch_job import ACTIVE, WAIT, WARMUP, train  # noqa: E402

JOB = Path(__file__).resolve().parent / "torch_job.py"
JOB_SECONDS = 240  # a rank imports torch and trains 12 steps: seconds, on a loaded machine


def test_ranks_of_a_process_group_ingest_each_cycle_as_tracewh_ingest_does(tmp_path, warehouse,
                                                                           tracewh):
    handled_at, kept = tmp_path / "handled", tmp_path / "kept"
    outputs = _run_ranks(handled_at, kept, tmp_path / "rendezvous", world_size=2, cycles=3)
    for output in outputs:
        assert output.stdout.split() == [str(3 * (WAIT + WARMUP + ACTIVE))]
        assert "tracewh" not in output.stderr, output.stderr  # nothing spooled
    files = sorted(kept.iterdir())
    assert [f.name.split(".")[2] for f in files] == ["rank0"] * 3 + ["rank1"] * 3
    assert not (tmp_path / "handled.spool").exists()

    tracewh("ingest", *files, "--run", "job", "--phase", "train", "--tag", "model=mlp")
    handled, ingested = Warehouse(handled_at), Warehouse(warehouse)
    assert _rows(handled, "SELECT rank, count(*), count(DISTINCT sha256) FROM traces "
                          "GROUP BY rank ORDER BY rank") == [(0, 3, 3), (1, 3, 3)]
    ops = _rows(handled, "SELECT count(DISTINCT trace_id) FROM cpu_ops "
                         "WHERE name IN ('aten::addmm', 'c10d::allreduce_')")
    assert ops == [(6,)]  # every capture holds the model's and the process group's work
    for query in (
        "SELECT * EXCLUDE (ingested_at) FROM runs",
        "SELECT rank, sha256, source_path, events, bytes, world_size, backend, tags "
        "FROM traces ORDER BY rank, sha256",
        "SELECT t.rank, t.sha256, e.relation, e.events FROM event_counts e "
        "JOIN traces t USING (trace_id) ORDER BY ALL",
        "SELECT t.rank, t.sha256, o.name, count(*), sum(o.dur_ns) FROM cpu_ops o "
        "JOIN traces t USING (trace_id) GROUP BY ALL ORDER BY ALL",
    ):
        assert _rows(handled, query) == _rows(ingested, query), query
    # tracewh.duckdb was derived after the last commit
    with duckdb.connect(str(handled_at / "tracewh.duckdb"), read_only=True) as db:
        assert db.sql("SELECT count(*) FROM traces").fetchall() == [(6,)]


def test_a_busy_warehouse_spools_the_trace_and_training_goes_on(tmp_path, warehouse, tracewh,
                                                                  caplog, monkeypatch):
    monkeypatch.setenv("RANK", "3")  # no process group: the launcher's RANK
    with caplog.at_level(logging.WARNING, "tracewh.torch"), other_writer(warehouse, seconds=60):
        steps = train(trace_handler(warehouse, run="job", phase="train", tags={"model": "mlp"},
                                    lock_timeout=0.3), cycles=2)
    assert steps == 2 * (WAIT + WARMUP + ACTIVE)
    spooled = sorted((tmp_path / f"{warehouse.name}.spool").iterdir())
    assert len(spooled) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and all("\n" not in m for m in messages)
    assert f"{warehouse} is busy: another writer has held its lock for more than 0.3 s" \
        in messages[0]
    command = shlex.split(messages[0].split("ingest it later with: ")[1])
    assert command == ["tracewh", "--warehouse", str(warehouse), "ingest", str(spooled[0]),
                       "--run", "job", "--phase", "train", "--rank", "3", "--tag", "model=mlp"]
    assert Catalog(warehouse).snapshot().seq == 0  # nothing committed meanwhile
    assert not list((warehouse / "_tracewh" / "staging").glob("*"))

    for message in messages:  # the commands it printed, as a user pastes them
        tracewh(*shlex.split(message.split("ingest it later with: ")[1])[3:])
    assert _rows(Warehouse(warehouse), "SELECT rank, count(*) FROM traces GROUP BY rank") \
        == [(3, 2)]


def test_an_unwritable_warehouse_spools_to_the_temporary_directory(tmp_path, caplog,
                                                                    monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with caplog.at_level(logging.WARNING, "tracewh.torch"):
        steps = train(trace_handler(blocker / "wh", run="job", rank=1), cycles=1)
    assert steps == WAIT + WARMUP + ACTIVE
    [message] = [r.getMessage() for r in caplog.records]
    [spooled] = (tmp_path / "tmp" / "tracewh-spool").iterdir()
    assert f"cannot spool to {blocker}/wh.spool" in message
    assert f"kept as {spooled}; ingest it later with: tracewh --warehouse {blocker}/wh " \
           f"ingest {spooled} --run job --rank 1" in message
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == ["tracewh-spool"]  # no leftovers


@pytest.mark.parametrize("names, problem", [({"run": None}, "invalid run None"),
                                             ({"run": "job", "phase": "train step"},
                                              "invalid phase 'train step'"),
                                             ({"run": "job", "tags": {"git": "3f 2a"}},
                                              "invalid tag value '3f 2a'")])
def test_a_bad_name_is_refused_before_training_starts(names, problem, warehouse):
    with pytest.raises(UsageError, match=problem):
        trace_handler(warehouse, **names)
    assert not warehouse.exists()


def _run_ranks(warehouse, kept, rendezvous, world_size, cycles):
    """Start one job process per rank, wait for all (killing them all on a timeout or a
    failure): their CompletedProcess."""
    processes = [subprocess.Popen(
        [sys.executable, str(JOB), str(warehouse), "--run", "job", "--world-size",
         str(world_size), "--rank", str(rank), "--rendezvous", str(rendezvous), "--keep",
         str(kept), "--cycles", str(cycles), "--lock-timeout", str(JOB_SECONDS)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # gloo binds to the address of the host name, which a container may not route
        env={"GLOO_SOCKET_IFNAME": "lo", **os.environ})
        for rank in range(world_size)]
    try:
        outputs = []
        for process in processes:
            stdout, stderr = process.communicate(timeout=JOB_SECONDS)
            assert process.returncode == 0, stderr
            outputs.append(subprocess.CompletedProcess(process.args, 0, stdout, stderr))
        return outputs
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def _rows(wh, query, params=None):
    return wh.sql(query, params).fetchall()
