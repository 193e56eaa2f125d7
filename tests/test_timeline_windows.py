"""The report's timeline windows (`timeline_windows`) against a reference written without SQL:
ranks of two and three steps of unequal lengths in one phase, and a phase of two captures
without steps."""

from pathlib import Path

from .conftest import load_reference, shared
from .reference_resources import steps

# rank: trace of ../shared/traces, each with ProfilerStep#N spans of unequal lengths
STEPPED = {0: "hta/trace_filter/sampled_rank-0.json.gz",
           1: "hta/trace_filter/sampled_rank-1.json.gz",
           2: "tracelens/mi300/resnet_act_checkpoint.json.gz",
           3: "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"}
CAPTURES = ("tracelens/inference/vllm_decode_full_graph_execution.json.gz",
            "tracelens/inference/sglang_Qwen3-8B_prefilldecode.json.gz")
COLUMNS = ("rank", "trace_id", "window_index", "step", "start_ns", "end_ns", "dur_ns",
           "rank_median_ns", "slowest_rank", "is_default")


def expected_windows(windows):
    """The view's rows of one phase from its windows, (rank, trace_id, window_index, step,
    start_ns, end_ns) each: the median the ceil(n/2)-th shortest of a rank's, the slowest
    rank the one of the longest median (ties: the lowest), its default window the first by
    start, trace id and step of those lasting that median."""
    durations = {}
    for rank, _, _, _, start, end in windows:
        durations.setdefault(rank, []).append(end - start)
    medians = {rank: sorted(d)[(len(d) + 1) // 2 - 1] for rank, d in durations.items()}
    slowest = min(medians, key=lambda rank: (-medians[rank], rank))
    default = min((start, trace, index) for rank, trace, index, _, start, end in windows
                  if rank == slowest and end - start == medians[rank])
    return sorted(
        (rank, trace, index, step, start, end, end - start, medians[rank], rank == slowest,
         (start, trace, index) == default)
        for rank, trace, index, step, start, end in windows)


def got_windows(sql, phase):
    rows = sql(f"SELECT * FROM timeline_windows WHERE phase = '{phase}'")
    return sorted(tuple(row[column] for column in COLUMNS) for row in rows)


def test_steps_medians_slowest_rank_and_default_match_a_reference(tracewh, sql):
    paths = {rank: shared(relative) for rank, relative in STEPPED.items()}
    for rank, path in paths.items():
        tracewh("ingest", path, "--run", "job", "--phase", "train", "--rank", rank)
    traces = {Path(row["source_path"]).name: row["trace_id"]
              for row in sql("SELECT source_path, trace_id FROM traces")}
    windows = [(rank, traces[path.name], index, event["name"], start, end)
               for rank, path in paths.items()
               for index, event, start, end in steps(load_reference(path))]
    assert {len([w for w in windows if w[0] == rank]) for rank in paths} == {2, 3}
    assert got_windows(sql, "train") == expected_windows(windows)


def test_a_phase_without_steps_has_a_window_per_capture(tracewh, sql):
    for relative in CAPTURES:
        tracewh("ingest", shared(relative), "--run", "job", "--phase", "infer", "--rank", "0")
    spans = sql("SELECT trace_id, first_ns, last_ns FROM capture_spans")
    assert len(spans) == 2
    windows = [(0, span["trace_id"], None, None, span["first_ns"], span["last_ns"])
               for span in spans]
    expected = expected_windows(windows)
    assert got_windows(sql, "infer") == expected
    # two captures: the median is the shorter one, the one drawn
    assert [row[-1] for row in expected if row[6] == row[7]] == [True]
