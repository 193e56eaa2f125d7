"""The SQL views against a pure-Python reference, property-based tests and golden figures."""

import json

import duckdb
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.query.dialects import transpile
from tracewh.query.library import library, library_in_order, public_library

from .conftest import (EXAMPLES, SHARED, built_once, cli_on, load_reference, require, shared,
                       sql_on, written_library_connection)
from .reference import (capture_groups, gpu_intervals, idle_reference, intersection_length,
                        overlap_from_trace, overlap_of, union_length)

OVERLAP_TRACES = [
    "deepseek-profile-data/train.json",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "tracelens/mi300/resnet_act_checkpoint.json.gz",
    "tracelens/b200/eager_trace.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
]


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory):
    """The 8-rank DLRM step as run dlrm, phase train, made once for the module's tests that
    only read it (checked unchanged after them)."""
    yield from built_once(tmp_path_factory, "dlrm", lambda tracewh: tracewh(
        "ingest", EXAMPLES, "--run", "dlrm", "--phase", "train"))


@pytest.mark.parametrize("relative", OVERLAP_TRACES)
def test_overlap_matches_reference(relative, tracewh, sql):
    path = shared(relative)
    comm, compute, overlap = overlap_from_trace(load_reference(path))
    tracewh("ingest", path, "--run", "r", "--rank", "0")
    (row,) = sql("SELECT * FROM overlap")
    assert (row["comm_ns"], row["compute_ns"], row["overlap_ns"]) == (comm, compute, overlap)
    assert row["exposed_comm_ns"] == comm - overlap
    assert row["overlap_ratio"] == (overlap / comm if comm else None)


def test_deepseek_dualpipe_hides_96_percent_of_deepep(tracewh, sql):
    tracewh("ingest", shared("deepseek-profile-data/train.json"), "--run", "ds")
    (row,) = sql("SELECT * FROM overlap")
    assert row == {"run": "ds", "phase": "train", "rank": 0, "comm_ns": 113440000,
                   "compute_ns": 124310000, "overlap_ns": 109250000,
                   "overlap_ratio": 109250000 / 113440000, "exposed_comm_ns": 4190000}
    (step,) = sql("SELECT step, comm_ns, overlap_ns FROM overlap_by_step")
    assert step == {"step": "ProfilerStep#1", "comm_ns": 113440000, "overlap_ns": 109250000}
    windows = sql("SELECT annotation, count(*) AS n FROM overlap_by_annotation GROUP BY 1")
    assert {r["annotation"]: r["n"] for r in windows}["dispatch(F)"] == 4
    collectives = sql("SELECT collective, count(*) AS n FROM kernel_classes "
                      "WHERE class = 'communication' GROUP BY 1 ORDER BY 1")
    assert collectives == [{"collective": "combine", "n": 8}, {"collective": "dispatch", "n": 16},
                           {"collective": "other", "n": 12}]


def test_dlrm_overlap_per_rank_matches_reference(dlrm):
    sql = sql_on(cli_on(dlrm))
    rows = {r["rank"]: r for r in sql("SELECT * FROM overlap")}
    for path in sorted(EXAMPLES.glob("*.gz")):
        document = load_reference(path)
        rank = int(document["distributedInfo"]["rank"])
        comm, compute, overlap = overlap_from_trace(document)
        assert (rows[rank]["comm_ns"], rows[rank]["compute_ns"], rows[rank]["overlap_ns"]) == \
            (comm, compute, overlap)
    assert rows[1]["comm_ns"] == 11336000 and rows[1]["overlap_ns"] == 280000


@pytest.mark.parametrize("second", [
    EXAMPLES / "worker1_step_12.1694128201556.pt.trace.json.gz",  # same moments: merged
    SHARED / "hta/nccl_parser_config/nccl_data.json.gz",  # another day: lengths summed
])
def test_several_captures_of_one_rank_count_time_once(second, tracewh, sql):
    """A rank's figures are the union over all its captures: the per-trace lengths measured at
    ingest are summed only when the captures do not overlap in time."""
    require(second)
    first = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
    for path in (first, second):
        tracewh("ingest", path, "--run", "caps", "--phase", "train", "--rank", "0")
    sets = {kind: [] for kind in ("communication", "computation", "busy")}
    for path in (first, second):
        for kind, intervals in gpu_intervals(load_reference(path)).items():
            sets[kind] += intervals
    (row,) = sql("SELECT comm_ns, compute_ns, overlap_ns FROM overlap")
    assert (row["comm_ns"], row["compute_ns"], row["overlap_ns"]) == overlap_of(sets)
    (busy,) = sql("SELECT busy_ns, first_ns, last_ns FROM gpu_busy")
    assert busy == {"busy_ns": union_length(sets["busy"]), "first_ns": min(sets["busy"])[0],
                    "last_ns": max(end for _, end in sets["busy"])}


def test_every_step_is_kept(tracewh, sql):
    tracewh("ingest", shared("hta/trace_filter/sampled_rank-0.json.gz"), "--run", "r")
    steps = [r["step"] for r in sql("SELECT step FROM overlap_by_step ORDER BY start_ns")]
    names = sorted({e["name"] for e in load_reference(
        shared("hta/trace_filter/sampled_rank-0.json.gz"))["traceEvents"]
        if e.get("name", "").startswith("ProfilerStep#")})
    assert steps and sorted(steps) == names


def test_kernel_stats_and_histogram_match_reference(tracewh, sql):
    path = shared("tracelens/mi300/resnet_act_checkpoint.json.gz")
    tracewh("ingest", path, "--run", "r")
    durations = {}
    for event in load_reference(path)["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") == "kernel":
            durations.setdefault(event["name"], []).append(int(round(event["dur"] * 1000)))
    rows = {r["name"]: r for r in sql("SELECT * FROM kernel_stats WHERE category = 'kernel'")}
    assert set(rows) == set(durations)
    for name, values in durations.items():
        values.sort()
        row = rows[name]
        assert (row["count"], row["total_ns"], row["min_ns"], row["max_ns"]) == \
            (len(values), sum(values), values[0], values[-1])
        assert row["p50_ns"] in values and row["p99_ns"] in values
    histogram = sql("SELECT name, sum(kernels) AS n, min(lower_ns) AS low FROM kernel_histogram "
                    "WHERE category = 'kernel' GROUP BY name")
    assert {r["name"]: r["n"] for r in histogram} == {n: len(v) for n, v in durations.items()}
    buckets = sql("SELECT lower_ns, upper_ns FROM kernel_histogram")
    assert all(b["upper_ns"] == max(1, 2 * b["lower_ns"]) for b in buckets)


def test_gpu_idle_is_span_minus_busy(dlrm):
    sql = sql_on(cli_on(dlrm))
    rows = sql("SELECT * FROM gpu_idle")
    assert rows
    for row in rows:
        assert row["idle_ns"] == row["span_ns"] - row["busy_ns"]
        assert row["host_wait_ns"] + row["kernel_wait_ns"] + row["other_idle_ns"] == row["idle_ns"]


@pytest.mark.parametrize("second", [
    EXAMPLES / "worker1_step_12.1694128201556.pt.trace.json.gz",  # same moments: one group
    SHARED / "hta/nccl_parser_config/nccl_data.json.gz",  # 258 days later: two groups
])
def test_idle_time_is_measured_within_captures_never_between(second, tracewh, sql):
    """A rank captured twice, months apart: the months between are not GPU idle time."""
    require(second)
    first = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
    for path in (first, second):
        tracewh("ingest", path, "--run", "caps", "--phase", "train", "--rank", "0")
    pooled, streams = idle_reference([load_reference(first), load_reference(second)])
    (metric,) = sql("SELECT value FROM run_metrics WHERE metric = 'gpu_idle_ns'")
    assert metric["value"] == pooled < 2 * 10**9
    rows = {r["stream"]: r for r in sql("SELECT * FROM gpu_idle")}
    assert {stream: (r["span_ns"], r["idle_ns"]) for stream, r in rows.items()} == streams
    (busy,) = sql("SELECT busy_ns, span_ns FROM gpu_busy")
    assert busy["span_ns"] - busy["busy_ns"] == pooled


def test_gpu_annotations_are_windows_not_kernels(tracewh, sql):
    """gpu_user_annotation ranges (Optimizer.step...) stay out of kernel rankings and busy
    shares, and have their own statistics."""
    path = shared("hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz")
    tracewh("ingest", path, "--run", "ann")
    ranges = {}
    for event in load_reference(path)["traceEvents"]:
        if event.get("cat") == "gpu_user_annotation":
            ranges.setdefault(event["name"], []).append(int(event["dur"] * 1000))
    assert len(ranges) == 2
    stats = {r["name"]: r for r in sql("SELECT * FROM gpu_annotation_stats")}
    assert {name: (r["count"], r["total_ns"], r["max_ns"]) for name, r in stats.items()} == \
        {name: (len(d), sum(d), max(d)) for name, d in ranges.items()}
    kernel_rows = sql("SELECT category, name, busy_share FROM kernel_stats")
    assert not [r for r in kernel_rows if r["category"] == "gpu_user_annotation"]
    assert 0 < max(r["busy_share"] for r in kernel_rows) <= 1
    for view in ("rank_skew", "kernel_histogram"):
        names = {r["name"] for r in sql(f"SELECT DISTINCT name FROM {view}")}
        assert names and not names & set(ranges), view


def test_launch_latency_and_rank_skew(dlrm):
    sql = sql_on(cli_on(dlrm))
    (summary,) = sql("SELECT * FROM launch_latency_summary WHERE rank = 0")
    assert summary["launches"] == 261
    (latency,) = sql("SELECT name, short_name FROM launch_latency WHERE rank = 0 "
                     "AND name LIKE 'volta_sgemm_128x32_nt%' ORDER BY ts_ns LIMIT 1")
    assert latency["short_name"] == "volta_sgemm_128x32_nt"
    skew = {r["class"]: r for r in sql("SELECT * FROM rank_skew WHERE level = 'class'")}
    assert skew["communication"]["slowest_rank"] == 1
    assert skew["communication"]["max_ns"] == 11336000 and skew["communication"]["ranks"] == 8


intervals = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 500)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(comm=intervals, compute=intervals)
def test_union_formula_matches_reference(comm, compute):
    """The windowed union-length SQL of the overlap views against the merging reference."""
    rows = [("first", s, s + d) for s, d in comm] + [("second", s, s + d) for s, d in compute]
    connection = duckdb.connect()
    connection.execute("CREATE TABLE _overlap_intervals (run VARCHAR, phase VARCHAR, rank INT, "
                       "scope VARCHAR, trace_id VARCHAR, window_index BIGINT, window_name VARCHAR,"
                       " window_start_ns BIGINT, window_end_ns BIGINT, side VARCHAR, "
                       "start_ns BIGINT, end_ns BIGINT)")
    if rows:
        connection.executemany("INSERT INTO _overlap_intervals VALUES ('r', 'p', 0, 'rank', "
                               "NULL, NULL, NULL, NULL, NULL, ?, ?, ?)", rows)
    connection.execute(library()["_overlap_lengths"][1])
    result = connection.execute("SELECT first_ns, second_ns, first_ns + second_ns - union_ns "
                                "FROM _overlap_lengths") \
        .fetchall()
    first = [(s, s + d) for s, d in comm]
    second = [(s, s + d) for s, d in compute]
    expected = (union_length(first), union_length(second), intersection_length(first, second))
    if not rows:
        assert result == []
    else:
        assert result == [expected]


kernels = st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 500),
                             st.sampled_from(["communication", "computation", "memory"])),
                   min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(captures=st.lists(kernels, min_size=1, max_size=3),
       offsets=st.lists(st.sampled_from([0, 5_000, 1_000_000]), min_size=3, max_size=3))
def test_rank_gpu_time_matches_reference(captures, offsets):
    """rank_gpu_time over one rank's captures (overlapping in time or not) against the merging
    reference over all their kernels: per-trace lengths summed or intervals merged, the
    figures are those of the union."""
    connection = duckdb.connect()
    connection.execute("CREATE TABLE gpu_time (run VARCHAR, phase VARCHAR, rank INT, "
                       "trace_id VARCHAR, first_ns BIGINT, last_ns BIGINT, busy_ns BIGINT, "
                       "comm_ns BIGINT, compute_ns BIGINT, comm_or_compute_ns BIGINT)")
    connection.execute("CREATE TABLE gpu_intervals (run VARCHAR, phase VARCHAR, rank INT, "
                       "trace_id VARCHAR, kind VARCHAR, start_ns BIGINT, end_ns BIGINT)")
    everything = {"communication": [], "computation": [], "busy": []}
    spans = []
    for number, (capture, offset) in enumerate(zip(captures, offsets)):
        sets = {"communication": [], "computation": [], "busy": []}
        for start, duration, kind in capture:
            interval = (offset + start, offset + start + duration)
            sets["busy"].append(interval)
            if kind != "memory":
                sets[kind].append(interval)
        rows = [(str(number), kind, a, b) for kind, pairs in sets.items() for a, b in pairs]
        connection.executemany("INSERT INTO gpu_intervals VALUES ('r', 'p', 0, ?, ?, ?, ?)", rows)
        for kind, intervals in sets.items():
            everything[kind] += intervals
        both = sets["communication"] + sets["computation"]
        spans.append((min(sets["busy"])[0], max(b for _, b in sets["busy"])))
        connection.execute(
            "INSERT INTO gpu_time VALUES ('r', 'p', 0, ?, ?, ?, ?, ?, ?, ?)",
            (str(number), min(sets["busy"])[0], max(b for _, b in sets["busy"]),
             union_length(sets["busy"]), union_length(sets["communication"]),
             union_length(sets["computation"]), union_length(both)))
    for view in ("_rank_class_intervals", "_trace_class_time", "capture_spans", "rank_gpu_time"):
        connection.execute(library()[view][1])
    result = connection.execute("SELECT busy_ns, comm_ns, compute_ns, overlap_ns, span_ns "
                                "FROM rank_gpu_time").fetchall()
    comm, compute, overlap = overlap_of(everything)
    span = sum(max(spans[i][1] for i in group) - min(spans[i][0] for i in group)
               for group in capture_groups(spans))
    assert result == [(union_length(everything["busy"]), comm, compute, overlap, span)]


def test_views_are_defined_once_each_after_what_it_reads():
    """Each library module, in the order connections define them, binds on the first try:
    every view or macro it reads exists already."""
    assert sorted(library_in_order()) == sorted(text for _, text in library().values())
    written_library_connection()  # a CatalogException here: a view before its input


@pytest.mark.parametrize("dialect", ["spark", "trino"])
def test_every_view_transpiles(dialect):
    for name, (_, text) in library().items():
        out = transpile(text, dialect)
        assert (f"VIEW {name}" in out or f"table macro {name}" in out
                or (dialect == "spark" and f"TEMPORARY FUNCTION {name}" in out))
        for statement in sqlglot.parse(out, read=dialect):
            assert statement is not None


@pytest.mark.parametrize("dialect", ["spark", "trino"])
def test_percentiles_stay_exact_in_every_dialect(dialect):
    """sqlglot writes percentile_disc as percentile_approx / approx_percentile: the library's
    are written as the nearest-rank value (element_at of the sorted values) instead."""
    texts = [transpile(text, dialect) for _, text in library().values()]
    assert not any("approx" in text.lower() for text in texts)
    exact = sum(text.count("ELEMENT_AT(") for text in texts)
    assert exact == sum(text.count("percentile_disc") for _, text in library().values()) > 0


def test_views_listing_wraps_descriptions_whole(tracewh):
    """Every description is listed whole (wrapped at the terminal's width), none cut."""
    listing = tracewh("views").output
    assert "…" not in listing
    words = " ".join(listing.split())
    for name, (description, _) in public_library().items():
        assert f"{name} {' '.join(description.split())}" in words, name


def test_views_command_lists_and_transpiles(tracewh):
    listing = tracewh("views").output
    assert "overlap " in listing and "kernel_stats" in listing
    spark = tracewh("views", "overlap", "--dialect", "spark").output
    assert "CREATE OR REPLACE TEMPORARY VIEW overlap" in spark
    assert tracewh("views", "nope", expect=2).output.startswith("error: no view")


def test_user_rules_override_defaults(tracewh, sql, tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[class]]\ncategory = "kernel"\npattern = "sgemm"\nclass = "communication"\n'
                     '[[collective]]\npattern = "sgemm"\ncollective = "gemm_is_comm"\n')
    tracewh("ingest", EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz", "--run", "r")
    out = tracewh("query", "--rules", rules, "--format", "json",
                  "SELECT DISTINCT collective FROM kernel_classes WHERE name LIKE '%sgemm%'")
    assert json.loads(out.stdout) == [{"collective": "gemm_is_comm"}]


def test_overlap_merged_at_ingest_equals_live_classification(tracewh, tmp_path):
    """The rank-level unions merged at ingest (default rules) and the live path (taken as soon
    as the user has rules, here rules that change nothing) give the same figures."""
    tracewh("ingest", EXAMPLES, "--run", "dlrm", "--phase", "train")
    tracewh("ingest", shared("deepseek-profile-data/train.json"), "--run", "ds")
    same = tmp_path / "same.toml"
    same.write_text('[[class]]\ncategory = "kernel"\npattern = "dpsk::ep::"\n'
                    'class = "communication"\n')
    query = "SELECT * FROM overlap ORDER BY run, rank"
    cached = json.loads(tracewh("query", "--format", "json", query).stdout)
    live = json.loads(tracewh("query", "--format", "json", "--rules", same, query).stdout)
    assert cached == live and len(cached) == 9


# Each phase-level view and the per-rank view it sums: (view, its per-rank source, the group
# columns beyond run and phase, the summed columns).
PHASE_ROLLUPS = [
    ("op_phase_stats", "op_stats", ["name"],
     ["calls", "gpu_kernels", "gpu_self_ns", "gpu_self_busy_ns", "gpu_total_ns",
      "gpu_total_busy_ns"]),
    ("module_phase_stats", "module_stats", ["module_path"],
     ["calls", "gpu_kernels", "gpu_self_ns", "gpu_total_ns"]),
    ("kernel_class_phase_histogram", "kernel_class_histogram", ["class", "bucket"],
     ["kernels", "total_ns"]),
    ("launch_latency_phase_histogram", "launch_latency_histogram", ["bucket"], ["launches"]),
]


@pytest.fixture(scope="module")
def dlrm_rows(dlrm):
    """{view: rows as dicts} of the 8-rank DLRM step, for the phase-level views and theirs."""
    import tracewh

    wh = tracewh.open(dlrm)
    names = {name for rollup in PHASE_ROLLUPS for name in rollup[:2]}
    found = {}
    for name in names:
        [(columns, rows)] = wh.query(f"SELECT * FROM {name}")
        found[name] = [dict(zip(columns, row)) for row in rows]
    return found


@pytest.mark.parametrize("rollup", PHASE_ROLLUPS, ids=lambda rollup: rollup[0])
def test_phase_views_sum_their_per_rank_view_over_the_ranks(dlrm_rows, rollup):
    view, source, keys, summed = rollup
    expected = {}
    for row in dlrm_rows[source]:
        group = expected.setdefault(tuple(row[k] for k in ["run", "phase", *keys]),
                                    {"ranks": set(), **{column: 0 for column in summed}})
        group["ranks"].add(row["rank"])
        for column in summed:
            group[column] += row[column]
    got = {tuple(row[k] for k in ["run", "phase", *keys]): row for row in dlrm_rows[view]}
    assert got and got.keys() == expected.keys()
    for key, group in expected.items():
        assert {column: got[key][column] for column in summed} == \
            {column: group[column] for column in summed}, key
        if "ranks" in got[key]:
            assert got[key]["ranks"] == len(group["ranks"])
    assert len({row["rank"] for row in dlrm_rows[source]}) == 8
