"""window_time (ingest/windows.py, numpy) against the SQL it stands in for
(sql/live/_window_time.sql over _overlap_intervals): on DLRM's 8 ranks and every trace of
../shared with steps or annotations, row for row, and on generated traces whose windows nest,
overlap and hold kernels launched inside, outside and without a launch."""

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracewh
from tracewh.ingest.pipeline import ingest_options, ingest_paths
from tracewh.ingest.sources import expand_inputs
from tracewh.query.library import _live_texts

from .conftest import EXAMPLES, SHARED, define_helpers
from .test_ops import _insert_rows, _staged_tables

TRACES = {
    "dlrm": EXAMPLES,  # 8 ranks: DLRM's annotations and ProfilerStep#12
    "deepseek": SHARED / "deepseek-profile-data/train.json",  # DualPipe's annotations
    "hta-sampled": SHARED / "hta/trace_filter/sampled_rank-0.json.gz",  # two ProfilerSteps
    "b200": SHARED / "tracelens/b200/eager_trace.json.gz",
    "mi300": SHARED / "tracelens/mi300/resnet_act_checkpoint.json.gz",
    "sglang": SHARED / "tracelens/inference/sglang_Qwen3-8B_prefilldecode.json.gz",
    "nccl": SHARED / "hta/nccl_parser_config/nccl_data.json.gz",
}
LIVE = dict(_live_texts())["_window_time"].replace("VIEW _window_time AS",
                                                   "VIEW _window_time_live AS")


@pytest.fixture(scope="module")
def windows_warehouse(tmp_path_factory):
    """One warehouse, one run per trace (DLRM's 8 ranks one run), committed without the
    refresh of the marts (which these helpers do not read)."""
    wh = tracewh.open(tmp_path_factory.mktemp("windows") / "wh")
    for run, path in TRACES.items():
        if path.exists():
            options = ingest_options(run, "train", None if run == "dlrm" else 0, jobs=1,
                                     embedded=True)
            for outcome in ingest_paths(wh.writable(), expand_inputs([str(path)]), options):
                assert outcome.status == "ingested", outcome.error
    wh.reload()
    yield wh
    wh.close()


def test_the_stored_windows_equal_the_sql_windows(windows_warehouse):
    """Every step and annotation window's lengths as the ingest stored them are those the
    SQL measures from the kernels, their launches and the windows (the views' old path)."""
    connection = windows_warehouse.connection
    define_helpers(connection, "_window_time", "_overlap_lengths")
    connection.execute(LIVE)
    stored = sorted(connection.execute("SELECT * FROM _window_time").fetchall(), key=repr)
    live = sorted(connection.execute("SELECT * FROM _window_time_live").fetchall(), key=repr)
    assert stored == live
    held = {run for (run,) in connection.execute("SELECT DISTINCT run FROM _window_time")
            .fetchall()}
    assert held == {run for run, path in TRACES.items() if path.exists()}
    ranks = connection.execute(
        "SELECT count(DISTINCT rank) FROM _window_time WHERE run = 'dlrm'").fetchone()
    assert ranks == (8,)


def test_overlap_by_annotation_reads_the_stored_windows(windows_warehouse):
    """The public views over the stored rows: DeepSeek's dispatch(F) windows, 4 of them, and
    the whole step's overlap, as test_views checks over the kernels."""
    rows = windows_warehouse.connection.execute(
        "SELECT count(*) FROM overlap_by_annotation WHERE run = 'deepseek' "
        "AND annotation = 'dispatch(F)'").fetchone()
    if not TRACES["deepseek"].exists():
        pytest.skip("DeepSeek's trace is not available")
    assert rows == (4,)
    (step,) = windows_warehouse.connection.execute(
        "SELECT comm_ns, overlap_ns FROM overlap_by_step WHERE run = 'deepseek'").fetchall()
    assert step == (113440000, 109250000)


# Generated traces: windows (start, duration or None, step or annotation) and kernels
# (start, duration, communication or computation or memory, launch offset or None).
WINDOW = st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(-2, 30)),
                   st.booleans())
KERNEL = st.tuples(st.integers(0, 60), st.integers(-1, 15),
                   st.sampled_from(["nccl_allreduce", "sgemm", "memcpy_like"]),
                   st.one_of(st.none(), st.integers(0, 50)))
NAMES = {"nccl_allreduce": ("kernel", 11), "sgemm": ("kernel", 12),
         "memcpy_like": ("gpu_memcpy", 13)}


@functools.cache
def _live_connection():
    """One library connection over empty tables with the live twin defined, which each
    example fills (defining the library takes seconds)."""
    from tracewh.query.define import library_connection

    connection = library_connection()
    define_helpers(connection, "_overlap_lengths")
    connection.execute(LIVE)
    return connection


@settings(max_examples=60, deadline=None)
@given(windows=st.lists(WINDOW, max_size=8), kernels=st.lists(KERNEL, max_size=15),
       pair_rows=st.sampled_from([1, 2, 5, 1 << 20]))
def test_window_time_equals_the_sql_on_generated_traces(windows, kernels, pair_rows):
    """window_table's rows equal the live SQL's on generated windows and kernels, measured
    by batches of windows of at most `pair_rows` (window, kernel) pairs (a window holding
    more, alone) as in one batch."""
    from tracewh.ingest import windows as module
    from tracewh.ingest.summaries import default_fingerprint
    from tracewh.ingest.windows import COLUMNS, window_table
    import pyarrow as pa

    cpu = [{"event_index": i, "category": "cpu_op" if step else "user_annotation",
            "name": f"ProfilerStep#{i}" if step else f"a{i % 3}", "pid": "1", "tid": "1",
            "ts_ns": start, "dur_ns": duration}
           for i, (start, duration, step) in enumerate(windows)]
    runtime, gpu = [], []
    for i, (start, duration, name, launch) in enumerate(kernels):
        category, name_id = NAMES[name]
        gpu.append({"event_index": 100 + i, "category": category, "name": name,
                    "name_id": name_id, "ts_ns": start, "dur_ns": duration,
                    "correlation": i + 1, "stream": 7})
        if launch is not None:  # two calls with one id: the earlier is the launch
            for offset, index in ((launch, 200 + i), (launch + 3, 300 + i)):
                runtime.append({"event_index": index, "category": "cuda_runtime",
                                "name": "cudaLaunchKernel", "pid": "1", "tid": "2",
                                "ts_ns": offset, "dur_ns": 1, "correlation": i + 1})
    rows = {"cpu_ops": cpu, "runtime": runtime, "kernels": gpu}
    staged = _staged_tables(rows, COLUMNS)
    names = pa.table({"category": [c for c, _ in NAMES.values()],
                      "name_id": [n for _, n in NAMES.values()], "name": list(NAMES)})
    default_rows, module.PAIR_ROWS = module.PAIR_ROWS, pair_rows
    try:
        stored = window_table(staged, "t", names if gpu else None, default_fingerprint())
    finally:
        module.PAIR_ROWS = default_rows
    got = [] if stored is None else [
        (r["scope"], r["event_index"], r["name"], r["start_ns"], r["end_ns"], r["comm_ns"],
         r["compute_ns"], r["union_ns"]) for r in stored.to_pylist()]
    connection = _live_connection()
    _insert_rows(connection, rows)
    connection.execute("DELETE FROM kernel_names")
    for category, name_id in NAMES.values():
        name = next(n for n, key in NAMES.items() if key == (category, name_id))
        connection.execute("INSERT INTO kernel_names (run, phase, rank, trace_id, category, "
                           "name_id, name) VALUES ('r', 'p', 0, 't', ?, ?, ?)",
                           [category, name_id, name])
    expected = connection.execute(
        "SELECT scope, window_index, window_name, window_start_ns, window_end_ns, first_ns, "
        "second_ns, union_ns FROM _window_time_live").fetchall()
    assert sorted(got, key=repr) == sorted(expected, key=repr)
