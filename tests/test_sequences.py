"""Frequent kernel sequences and memory bandwidth over time (HTA's analyses) against
pure-Python references over the decoded JSON, and the figures they give on real traces."""

import pytest

from .conftest import EXAMPLES, load_reference, shared
from .reference_resources import kernel_trigrams, memory_bandwidth, memory_bytes

DLRM_RANK0 = "worker0_step_12.*.pt.trace.json.gz"


def test_kernel_sequences_are_the_streams_trigrams(tracewh, sql):
    path = next(EXAMPLES.glob(DLRM_RANK0))
    tracewh("ingest", path, "--run", "dlrm", "--rank", "0")
    short_name = {r["name"]: r["short_name"] for r in sql(
        "SELECT DISTINCT name, short_name FROM kernel_classes WHERE category = 'kernel'")}
    expected = kernel_trigrams(load_reference(path), short_name)
    got = {(r["stream"], r["first_kernel"], r["second_kernel"], r["third_kernel"]):
           (r["occurrences"], r["total_ns"]) for r in sql("SELECT * FROM kernel_sequences")}
    assert got == expected
    (top,) = sql("SELECT * FROM kernel_sequences ORDER BY occurrences DESC, total_ns DESC "
                 "LIMIT 1")
    assert (top["stream"], top["first_kernel"], top["second_kernel"], top["third_kernel"],
            top["occurrences"]) == TOP_DLRM_SEQUENCE


# The sequence DLRM's rank 0 repeats most, 11 times in its step: the optimizer's sqrt, add
# and addcdiv (found by the reference above from the trace's JSON).
ELEMENTWISE = "at::native::vectorized_elementwise_kernel<at::native::{}>"
TOP_DLRM_SEQUENCE = (7, ELEMENTWISE.format("sqrt_kernel_cuda"),
                     ELEMENTWISE.format("CUDAFunctorOnSelf_add"),
                     ELEMENTWISE.format("addcdiv_cuda_kernel"), 11)


@pytest.mark.parametrize("trace", ["dlrm", "hta"])
def test_memory_bandwidth_is_htas_time_series(trace, tracewh, sql):
    path = (next(EXAMPLES.glob(DLRM_RANK0)) if trace == "dlrm"
            else shared("hta/trace_filter/sampled_rank-0.json.gz"))
    tracewh("ingest", path, "--run", trace, "--rank", "0")
    document = load_reference(path)
    expected = memory_bandwidth(document)
    assert expected
    for kind, series in expected.items():
        # the value after every change at a time: the rows of length 0 between are not figures
        held = list({ts: (ts, copies, rate) for ts, copies, rate in series}.values())
        rows = sql(f"SELECT * FROM memory_bandwidth WHERE kind = '{kind}' AND "
                   "(next_ts_ns IS NULL OR next_ts_ns > ts_ns) ORDER BY ts_ns")
        assert [(r["ts_ns"], r["copies"]) for r in rows] == [s[:2] for s in held]
        assert [r["bandwidth_gbps"] for r in rows] == pytest.approx(
            [float(s[2]) for s in held], rel=1e-9, abs=1e-9)
    moved = {r["kind"]: r["bytes"] for r in sql(
        "SELECT kind, sum(bytes) AS bytes FROM memory_bandwidth GROUP BY kind")}
    assert moved == pytest.approx(memory_bytes(document), rel=1e-9)
    if trace == "dlrm":  # the changes of HTA 0.5's get_memory_bw_time_series on this trace
        assert {r["kind"]: r["changes"] for r in sql(
            "SELECT kind, count(*) AS changes FROM memory_bandwidth GROUP BY kind")} == {
            "Memcpy DtoD": 2, "Memcpy DtoH": 4, "Memcpy HtoD": 26}
