"""Launch queues and step verdicts against a pure-Python reference: vLLM's full-graph decode
(one graph launch, hundreds of kernels), DLRM and HTA's sampled rank (no graphs), and the
verdicts with the figures behind them."""

import pytest

from .conftest import EXAMPLES, connect, load_reference, shared
from .reference_resources import queue_blocked, queue_summaries, step_figures

VLLM = "tracelens/inference/vllm_decode_full_graph_execution.json.gz"
HTA = "hta/trace_filter/sampled_rank-0.json.gz"
DLRM_RANK0 = "worker0_step_12.*.pt.trace.json.gz"


def _check_summary(sql, document):
    expected = queue_summaries(document)
    got = {r["stream"]: r for r in sql("SELECT * FROM stream_queue_summary")}
    assert set(got) == set(expected)
    for stream, (changes, longest, weighted, empty, at_max) in expected.items():
        row = got[stream]
        assert (row["changes"], row["max_queue_length"], row["empty_ns"],
                row["time_at_max_ns"]) == (changes, longest, empty, at_max)
        assert row["time_weighted_mean_queue_length"] == pytest.approx(float(weighted), 1e-12)
    return expected


def test_graph_launch_counts_each_kernel(tracewh, sql):
    path = shared(VLLM)
    tracewh("ingest", path, "--run", "vllm", "--phase", "decode")
    expected = _check_summary(sql, load_reference(path))
    (graph,) = sql("SELECT launch_name, min(launch_ts_ns) AS at_ns, count(*) AS kernels "
                   "FROM kernel_launches WHERE launch_name = 'hipGraphLaunch' GROUP BY 1")
    # The graph's 421 kernels all join the queue at the one launch call's start, behind 9
    # copies and 3 kernels launched before it and one after.
    (jump,) = sql("SELECT count(*) AS launches FROM stream_queue WHERE change = 'launch' "
                  f"AND ts_ns = {graph['at_ns']}")
    assert jump["launches"] == graph["kernels"] == 421
    assert max(summary[1] for summary in expected.values()) == 434
    (queue,) = sql("SELECT max(queue_length) AS longest, min(queue_length) AS shortest "
                   "FROM stream_queue")
    assert queue == {"longest": 434, "shortest": 0}


@pytest.mark.parametrize("which", ["dlrm", "hta"])
def test_queue_lengths_without_graphs(which, tracewh, sql):
    path = next(EXAMPLES.glob(DLRM_RANK0)) if which == "dlrm" else shared(HTA)
    tracewh("ingest", path, "--run", which, "--rank", "0")
    expected = _check_summary(sql, load_reference(path))
    assert len(expected) >= 2
    lengths = sql("SELECT stream, sum(CASE WHEN change = 'launch' THEN 1 ELSE -1 END) AS net "
                  "FROM stream_queue GROUP BY 1")
    assert {r["net"] for r in lengths} == {0}  # every launched kernel started


def test_step_verdicts_match_reference(tracewh, sql):
    tracewh("ingest", EXAMPLES, "--run", "dlrm", "--phase", "train")
    got = {(r["rank"], r["event_index"]): r for r in sql("SELECT * FROM step_bottleneck")}
    assert len(got) == 8
    for path in sorted(EXAMPLES.glob("*.gz")):
        rank = int(path.name.split("_")[0].removeprefix("worker"))
        for index, figures in step_figures(load_reference(path)).items():
            row = got[(rank, index)]
            assert {k: row[k] for k in figures} == pytest.approx(figures)
            assert row["host_wait_share"] == figures["host_wait_ns"] / row["dur_ns"]
    verdicts = {rank: row["verdict"] for (rank, _), row in got.items()}
    # Rank 1's step: 55.6% of it is exposed NCCL time; rank 7's: the GPU waits on the host
    # for 66.3% of it with nothing queued.
    assert verdicts[1] == "communication_bound" and verdicts[7] == "host_bound"
    assert got[(1, next(i for r, i in got if r == 1))]["exposed_comm_share"] > 0.5


def test_inference_step_is_host_bound(tracewh, sql):
    path = shared("tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz")
    tracewh("ingest", path, "--run", "h100", "--rank", "0")
    (row,) = sql("SELECT * FROM step_bottleneck")
    (expected,) = step_figures(load_reference(path)).values()
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert row["verdict"] == "host_bound" and row["gpu_busy_share"] < 0.2


STEP_ROWS = "SELECT * FROM step_bottleneck ORDER BY run, rank, trace_id, event_index"
# A rule no kernel name matches: the classes are the defaults', but the figures stored at
# ingest no longer hold for the rules, so every step is measured live.
NO_OP_RULES = '[[class]]\npattern = "no kernel is named this"\nclass = "communication"\n'


@pytest.mark.parametrize("path", [
    "deepseek-profile-data/train.json",
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    HTA, VLLM])
def test_steps_measured_at_ingest_equal_the_live_measure(path, tracewh, warehouse, tmp_path):
    """step_bottleneck reads the figures step_time stored at ingest for a rank of one
    capture; measured live from the kernels (other rules), the rows are the same."""
    tracewh("ingest", EXAMPLES, "--run", "dlrm")
    tracewh("ingest", shared(path), "--run", "trace")
    rules = tmp_path / "rules.toml"
    rules.write_text(NO_OP_RULES)
    stored = connect(warehouse).execute(STEP_ROWS).fetchall()
    live = connect(warehouse, rules).execute(STEP_ROWS).fetchall()
    assert stored == live and len(stored) >= 8  # DLRM's 8 steps and the trace's
    (count,) = connect(warehouse).execute("SELECT count(*) FROM step_time").fetchone()
    assert count == len(stored)


def test_a_rank_captured_twice_is_measured_live(tracewh, sql):
    """Two captures of one rank pool their GPU time in each other's steps: their steps are
    measured live, with each trace's own figures as stored and the classes of both."""
    first, second = sorted(EXAMPLES.glob("*.gz"))[:2]
    tracewh("ingest", first, "--run", "twice", "--rank", "0")
    tracewh("ingest", second, "--run", "twice", "--rank", "0")
    own = ("kernels", "gpu_busy_ns", "host_wait_ns", "empty_queue_ns")
    rows = sql("SELECT * FROM step_bottleneck ORDER BY trace_id")
    stored = sql("SELECT * FROM step_time ORDER BY trace_id")
    assert len(rows) == len(stored) == 2
    assert [{k: r[k] for k in own} for r in rows] == [{k: r[k] for k in own} for r in stored]
    # The two ranks' steps overlap in time: each step's window holds the other's NCCL time
    assert [r["exposed_comm_ns"] for r in rows] != [r["exposed_comm_ns"] for r in stored]


@pytest.mark.parametrize("full_at", [1, 2, 20])
def test_time_blocked_on_a_full_queue(full_at, tracewh, sql):
    """HTA's time blocked on a full launch queue, at a threshold of the caller's choosing."""
    path = next(EXAMPLES.glob(DLRM_RANK0))
    tracewh("ingest", path, "--run", "dlrm", "--rank", "0")
    expected = queue_blocked(load_reference(path), full_at)
    got = {r["stream"]: r for r in sql(f"SELECT * FROM stream_queue_blocked({full_at})")}
    assert {stream: (r["blocked_ns"], r["span_ns"]) for stream, r in got.items()} == expected
    assert all(r["queue_full_at"] == full_at for r in got.values())
    # HTA's own figures (get_time_spent_blocked_on_full_queue and the series' durations, HTA
    # 0.5 on this trace): the compute stream 7 held 20 or more launches (its longest queue:
    # 25) for 152 us of its 12,552 us of launches, and no other stream did.
    if full_at == 20:
        assert got[7]["blocked_ns"] == 152_000 and got[7]["span_ns"] == 12_552_000
        assert {s for s, r in got.items() if r["blocked_ns"]} == {7}
