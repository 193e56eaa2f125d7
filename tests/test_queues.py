"""Launch queues and step verdicts against a pure-Python reference: vLLM's full-graph decode
(one graph launch, hundreds of kernels), DLRM and HTA's sampled rank (no graphs), and the
verdicts with the figures behind them."""

import pytest

from .conftest import EXAMPLES, load_reference, shared
from .reference_resources import queue_summaries, step_figures

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
