"""Collective calls, instances, waits and stragglers against the independent reference
(tests/collective_reference.py), on the 8 DLRM ranks, HTA's NCCL trace and multi-rank
warehouses made from real single-rank traces (tests/collective_traces.py)."""

import math

import pytest

from .collective_reference import calls_of, instances, stragglers
from .collective_traces import rank_documents, write
from .conftest import EXAMPLES, load_reference, shared

HTA_NCCL = "hta/nccl_parser_config/nccl_data.json.gz"
INSTANCE_SQL = """
    SELECT capture_group, process_group, seq, collective, ranks, matched, unmatched_reason,
           msg_bytes, latency_ns, arrival_skew_ns, end_skew_ns, last_rank, algbw_gbps,
           busbw_gbps, size_imbalance, total_bytes
    FROM collective_instances WHERE run = '{run}'"""


def _close(a, b):
    return (a is None and b is None) or (a is not None and b is not None
                                        and math.isclose(a, b, rel_tol=1e-12))


def check_against_reference(sql, run, documents):
    """Every instance of `run` equals the reference's, figure by figure."""
    calls = [c for rank, window, document in documents
             for c in calls_of(document, rank, window)]
    expected = instances(calls)
    rows = sql(INSTANCE_SQL.format(run=run))
    windows = sorted({w for _, w, _ in documents})
    assert len(rows) == len(expected)
    for row in rows:
        figures = expected[(windows[row["capture_group"] - 1], row["process_group"],
                            row["seq"])]
        assert (row["ranks"], row["matched"], row["unmatched_reason"], row["collective"],
                row["msg_bytes"]) == (figures["ranks"], figures["matched"], figures["reason"],
                                      figures["collective"], figures["msg_bytes"]), row
        if row["matched"]:
            assert (row["latency_ns"], row["arrival_skew_ns"], row["end_skew_ns"],
                    row["last_rank"]) == (figures["latency"], figures["arrival_skew"],
                                          figures["end_skew"], figures["last_rank"])
            assert _close(row["algbw_gbps"], figures["algbw"])
            assert _close(row["busbw_gbps"], figures["busbw"])
            assert _close(row["size_imbalance"], figures["imbalance"])
        else:
            assert row["latency_ns"] is None and row["busbw_gbps"] is None
    straggled = {r["rank"]: (r["times_last"], r["wait_caused_ns"]) for r in sql(
        f"SELECT rank, times_last, wait_caused_ns FROM stragglers WHERE run = '{run}'")}
    assert straggled == stragglers(expected)
    return rows


def test_dlrm_8_ranks_match_reference_and_rank_7_is_the_straggler(tracewh, sql, tmp_path):
    tracewh("ingest", EXAMPLES, "--run", "dlrm", "--phase", "train")
    documents = [(load_reference(p)["distributedInfo"]["rank"], 0, load_reference(p))
                 for p in sorted(EXAMPLES.glob("*.json.gz"))]
    rows = check_against_reference(sql, "dlrm", documents)
    # old traces: sizes only on the record_param_comms ops and nccl:* ranges
    assert {r["collective"] for r in rows} == {"all_to_all", "all_reduce"}
    assert all(r["matched"] and r["msg_bytes"] for r in rows)
    sources = sql("SELECT size_source, count(*) AS n FROM collective_calls "
                  "GROUP BY size_source ORDER BY size_source")
    assert sources == [{"size_source": "nccl_range", "n": 24},
                       {"size_source": "record_param_comms", "n": 40}]
    (top,) = sql("SELECT rank, times_last FROM stragglers ORDER BY wait_caused_ns DESC LIMIT 1")
    assert top == {"rank": 7, "times_last": 5}
    waits = sql("SELECT sum(wait_ns) AS wait, sum(transfer_ns + sync_ns - dur_ns) AS zero "
                "FROM collective_waits")
    assert waits[0]["zero"] == 0 and waits[0]["wait"] > 0
    out = tmp_path / "report.html"
    tracewh("report", "dlrm", "--out", out)
    text = out.read_text()
    for key in ("bus-bandwidth", "waits", "stragglers"):
        assert f'<section id="{key}">' in text
    stragglers_table = text.split('<section id="stragglers">')[1].split("</section>")[0]
    assert stragglers_table.split("<tbody><tr>")[1].startswith('<td class="n">7</td>')


def test_hta_nccl_trace_figures(tracewh, sql):
    """HTA's own test of this trace: 21 NCCL kernels, the longest an allreduce of 2,049,000
    elements in and out, process group 0 (default_pg)."""
    tracewh("ingest", shared(HTA_NCCL), "--run", "hta")
    calls = sql("SELECT * FROM collective_calls ORDER BY dur_ns DESC")
    assert len(calls) == 21
    longest = calls[0]
    assert (longest["collective"], longest["in_elems"], longest["out_elems"],
            longest["process_group"], longest["process_group_desc"], longest["group_size"],
            longest["dtype"], longest["msg_bytes"], longest["size_source"],
            longest["algorithm"], longest["protocol"]) == (
        "all_reduce", 2049000, 2049000, "0", "default_pg", 2, "Float", 8196000, "kernel_args",
        "RING", "LL")
    # rank 1 of the 2-rank group was not captured: no instance is matched, none measured
    rows = sql("SELECT DISTINCT matched, unmatched_reason, missing_ranks FROM collective_instances")
    assert rows == [{"matched": False, "unmatched_reason": "missing ranks", "missing_ranks": 1}]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """One warehouse of runs made from HTA's NCCL trace: 4 ranks shifted, rank 2 stretched
    by 5/4, two collectives in groups of one, one all_to_all-v with text-list splits
    (run even); rank 1 missing its 10th collective (dropped); every rank captured twice,
    an hour apart (captures)."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    source = shared(HTA_NCCL)
    root = tmp_path_factory.mktemp("collectives")
    splits = {3: [[1, 2, 3, 4], [4, 4, 4, 4], [2, 2, 2, 10], [1, 1, 1, 1]]}
    runs = {
        "even": [(r, 0, d) for r, d in rank_documents(
            source, 4, shift_us=7, stretch=(5, 4), straggler=2, solo=(1, 2), splits=splits)],
        "dropped": [(r, 0, d) for r, d in rank_documents(source, 4, shift_us=3,
                                                          drop=(1, 10))],
    }
    first = rank_documents(source, 4, shift_us=2)
    later = rank_documents(source, 4, shift_us=2, straggler=3, stretch=(3, 2))
    for _, document in later:
        for event in document["traceEvents"]:
            event["ts"] += 3_600_000_000  # an hour later
    runs["captures"] = [(r, 0, d) for r, d in first] + [(r, 1, d) for r, d in later]
    warehouse = root / "wh"
    runner = CliRunner()
    for run, documents in runs.items():
        paths = write([(r, d) for r, w, d in documents if w == 0], root / run)
        paths += write([(r, d) for r, w, d in documents if w == 1], root / run, "-later")
        result = runner.invoke(cli, ["--warehouse", str(warehouse), "ingest", *map(str, paths),
                                     "--run", run, "--phase", "train"])
        assert result.exit_code == 0, result.output
    # the reference reads the files as written (their numbers as the ingest parsed them)
    written = {run: [(r, w, load_reference(root / run / f"rank-{r}{'-later' if w else ''}"
                                                  ".json.gz")) for r, w, _ in documents]
               for run, documents in runs.items()}
    return warehouse, written


@pytest.fixture
def generated_sql(generated):
    import json

    from click.testing import CliRunner

    from tracewh.cli import cli

    warehouse, _ = generated

    def query(text):
        result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "query", "--format",
                                          "json", text])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return query


def test_shifted_and_stretched_ranks_match_reference(generated, generated_sql):
    _, written = generated
    rows = check_against_reference(generated_sql, "even", written["even"])
    matched = [r for r in rows if r["matched"] and r["ranks"] > 1]
    assert len(matched) == 21 - 2 and all(r["last_rank"] == 2 for r in matched
                                          if r["arrival_skew_ns"] > 0)
    (top,) = generated_sql("SELECT rank FROM stragglers WHERE run = 'even' "
                           "ORDER BY wait_caused_ns DESC LIMIT 1")
    assert top["rank"] == 2


def test_a_group_of_one_is_matched_alone_without_bandwidth(generated_sql):
    solo = generated_sql("SELECT process_group, ranks, matched, arrival_skew_ns, mean_wait_ns, "
                         "busbw_gbps FROM collective_instances WHERE run = 'even' "
                         "AND process_group LIKE 'solo%' ORDER BY process_group, seq")
    assert len(solo) == 4 * 2  # the trace's first two collectives, on each of 4 ranks
    assert all(r["ranks"] == 1 and r["matched"] and r["arrival_skew_ns"] == 0
               and r["mean_wait_ns"] == 0 and r["busbw_gbps"] is None for r in solo)


def test_split_sizes_as_text_lists(generated_sql):
    (row,) = generated_sql("SELECT collective, matched, total_bytes, size_imbalance "
                           "FROM collective_instances WHERE run = 'even' "
                           "AND collective = 'all_to_all'")
    assert row["matched"] and row["total_bytes"] == (10 + 16 + 16 + 4) * 4
    assert row["size_imbalance"] == pytest.approx(10 / ((2.5 + 4 + 4 + 1) / 4))


def test_a_missing_collective_shifts_no_match_silently(generated, generated_sql):
    _, written = generated
    rows = check_against_reference(generated_sql, "dropped", written["dropped"])
    # the dropped call's seq: where rank 0's 10th kernel (in file order) falls in time
    rank_0 = calls_of(written["dropped"][0][2], 0, 0)
    dropped_seq = sorted(c.start for c in rank_0).index(rank_0[9].start) + 1
    assert all(r["seq"] < dropped_seq for r in rows if r["matched"])
    assert len([r for r in rows if r["matched"]]) == dropped_seq - 1
    assert {r["unmatched_reason"] for r in rows if not r["matched"]} == {
        "sizes differ", "collectives differ", "missing ranks"}


def test_several_captures_per_rank_are_never_matched_across(generated, generated_sql):
    _, written = generated
    rows = check_against_reference(generated_sql, "captures", written["captures"])
    assert sorted({r["capture_group"] for r in rows}) == [1, 2]
    assert all(r["ranks"] == 4 and r["matched"] for r in rows)
    later = [r for r in rows if r["capture_group"] == 2 and r["arrival_skew_ns"] > 0]
    assert later and all(r["last_rank"] == 3 for r in later)


def test_deepep_without_sizes_is_matched_by_op_and_order(tracewh, sql, tmp_path):
    documents = rank_documents(shared("deepseek-profile-data/train.json"), 2, shift_us=4)
    tracewh("ingest", *write(documents, tmp_path / "ds"), "--run", "ds")
    rows = sql("SELECT collective, count(*) AS n, count(msg_bytes) AS sized, "
               "bool_and(matched) AS matched FROM collective_instances "
               "GROUP BY collective ORDER BY collective")
    assert rows == [{"collective": c, "n": n, "sized": 0, "matched": True} for c, n in (
        ("cached_notify", 12), ("combine", 8), ("dispatch", 8), ("get_dispatch_layout", 4),
        ("notify_dispatch", 4))]
    assert sql("SELECT DISTINCT size_source FROM collective_calls") == [{"size_source": "none"}]


def test_wait_records_are_no_calls_and_rccl_matches_reference(tracewh, sql):
    """MI300's RCCL trace has record_param_comms 'wait' ops with no kernel: they are no
    calls; every ncclDevKernel_Generic is, its collective and size from its args or ops."""
    path = shared("tracelens/mi300/resnet_act_checkpoint.json.gz")
    tracewh("ingest", path, "--run", "mi300")
    expected = sorted((c.collective, c.msg_bytes, c.start)
                      for c in calls_of(load_reference(path), 0, 0))
    rows = sql("SELECT collective, msg_bytes, start_ns FROM collective_calls")
    assert sorted((r["collective"], r["msg_bytes"], r["start_ns"]) for r in rows) == expected
    assert len(rows) == 17 and "wait" not in {r["collective"] for r in rows}


def test_diff_by_collective_and_trend_of_bus_bandwidth(generated, generated_sql):
    import json

    from click.testing import CliRunner

    from tracewh.cli import cli

    warehouse, written = generated
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "diff", "even", "dropped",
                                      "--by", "collective", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)["kernels"]}
    # rank 2 of `even` runs every collective 5/4 as long: the time per collective and size
    # is lower in `dropped`, whose ranks are not stretched
    row = rows["all_reduce group 0 4-8 MiB"]  # 8,196,000 bytes
    assert row["class"] == "communication" and row["status"] == "improved"
    assert row["base_count"] == row["new_count"] == 4 * 3
    expected = instances([c for r, w, d in written["even"] for c in calls_of(d, r, w)])
    busbw = sorted(f["busbw"] for f in expected.values()
                   if f["matched"] and f["msg_bytes"] == 8196000 and f["collective"] == "all_reduce")
    assert row["base_busbw_gbps"] == pytest.approx(busbw[(len(busbw) + 1) // 2 - 1], rel=1e-12)
    result = CliRunner().invoke(cli, ["--warehouse", str(warehouse), "trend",
                                      "collective_wait_ns", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert {r["run"] for r in json.loads(result.stdout)} == {"even", "dropped", "captures"}
