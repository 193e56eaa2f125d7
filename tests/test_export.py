"""tracewh export: Chrome-trace JSON out of the warehouse, whole captures and windows."""

import gzip
import json
import shlex

import pytest

from tracewh.storage.schema import TABLES

from .conftest import EXAMPLES, SHARED, connect, load_reference, require

REAL_TRACES = sorted(SHARED.rglob("*.json*")) if SHARED.exists() else []
DLRM0 = EXAMPLES / "worker0_step_12.1694128201545.pt.trace.json.gz"
# Columns that name the file, or what its ingest did, rather than describe its contents: an
# export holds `<redacted>` where the original held a secret, which its ingest finds nothing to
# redact in (counted apart below).
FILE_COLUMNS = {"run", "trace_id", "sha256", "source_path", "bytes", "ingested_at", "ingest_seq",
                "secrets_redacted"}


def rows_differ(connection, table, first, second):
    """Rows of `table` in run `first` that run `second` lacks, and the other way round,
    counting repeats (file columns left out)."""
    columns = [c for (c,) in connection.execute(
        f"SELECT column_name FROM (DESCRIBE {table})").fetchall() if c not in FILE_COLUMNS]
    select = f"SELECT {', '.join(columns)} FROM {table} WHERE run = ?"
    missing = connection.execute(f"{select} EXCEPT ALL {select}", [first, second]).fetchall()
    extra = connection.execute(f"{select} EXCEPT ALL {select}", [second, first]).fetchall()
    return missing, extra


@pytest.mark.parametrize("path", [DLRM0, *REAL_TRACES],
                         ids=lambda p: str(p.relative_to(p.parents[1])))
def test_an_exported_capture_ingests_to_the_same_rows(path, tracewh, warehouse, tmp_path):
    require(path)
    tracewh("ingest", path, "--run", "orig", "--phase", "train", "--rank", "0")
    exported = tmp_path / "whole.json.gz"
    tracewh("export", "orig", "--rank", "0", "--out", exported)
    document = json.loads(gzip.decompress(exported.read_bytes()))
    assert len(document["traceEvents"]) == len(load_reference(path)["traceEvents"])
    tracewh("ingest", exported, "--run", "back", "--phase", "train", "--rank", "0")
    connection = connect(warehouse)
    for table in TABLES:
        missing, extra = rows_differ(connection, table, "orig", "back")
        assert (missing[:3], extra[:3]) == ([], []), table
    assert connection.execute("SELECT secrets_redacted FROM traces WHERE run = 'back'"
                              ).fetchall() == [(0,)]


def test_a_step_window_keeps_overlapping_events_and_whole_flows(tracewh, sql, tmp_path):
    tracewh("ingest", DLRM0, "--run", "d", "--phase", "train")
    (step,) = sql("SELECT ts_ns, dur_ns FROM cpu_ops WHERE name = 'ProfilerStep#10'")
    start, end = step["ts_ns"], step["ts_ns"] + step["dur_ns"]
    out = tmp_path / "step.json"
    result = tracewh("export", "d", "--rank", "0", "--step", "ProfilerStep#10", "--out", out)
    assert result.stdout.startswith("wrote ")
    events = json.loads(out.read_text())["traceEvents"]
    base = 0  # old Kineto: absolute µs
    timed = [e for e in events if e["ph"] == "X"]
    assert timed and all(round(e["ts"] * 1000) < end and round((e["ts"] + e["dur"]) * 1000)
                         >= start for e in timed)
    expected = sql(f"SELECT count(*) AS n FROM cpu_ops WHERE ts_ns < {end} "
                   f"AND ts_ns + coalesce(dur_ns, 0) >= {start}")[0]["n"]
    assert sum(e.get("cat") in ("cpu_op", "user_annotation", "python_function") or
               e.get("cat") == "Trace" for e in timed) <= expected
    flows = {}
    for event in events:
        if event["ph"] in ("s", "t", "f"):
            flows.setdefault((event["cat"], event["id"]), []).append(event["ts"] * 1000 + base)
    assert flows and all(start <= min(ends) and max(ends) < end for ends in flows.values())
    assert {e["name"] for e in events if e["ph"] == "M"} >= {"process_name", "thread_name"}


def test_a_repeated_annotation_needs_an_occurrence(tracewh, tmp_path):
    tracewh("ingest", DLRM0, "--run", "d", "--phase", "train")
    result = tracewh("export", "d", "--rank", "0", "--annotation",
                     "nccl:all_to_all", "--out", tmp_path / "a.json", expect=2)
    assert result.output.startswith("error: annotation 'nccl:all_to_all' occurs 5 times")
    assert "pick one with --occurrence 1-" in result.output
    tracewh("export", "d", "--rank", "0", "--annotation", "nccl:all_to_all",
            "--occurrence", "2", "--out", tmp_path / "a.json")
    assert json.loads((tmp_path / "a.json").read_text())["traceEvents"]


@pytest.mark.parametrize("arguments, message", [
    (["--rank", "9"], "error: run 'd' has no rank 9 (its ranks: 0)\n"),
    (["--rank", "0", "--phase", "decode"], "error: rank 0 of run 'd' has no phase 'decode'"),
    (["--rank", "0", "--step", "ProfilerStep#99"], "error: no step named 'ProfilerStep#99' in "
     "rank 0 of run 'd', phase 'train' (its 1 step: ProfilerStep#10)\n"),
    (["--rank", "0", "--from", "5ms"], "error: --from and --to go together"),
    (["--rank", "0", "--from", "5ms", "--to", "7"],
     "error: --to '7' is not a time (such as 12.5ms; units ns, us, ms, s)"),
    (["--rank", "0", "--from", "1.5ns", "--to", "7ns"],
     "error: --from '1.5ns' is not a whole number of ns"),
    (["--rank", "0", "--from", "1ms", "--to", "2ms", "--from-ns", "1", "--to-ns", "2"],
     "error: --from-ns and --from both name a window"),
    (["--rank", "0", "--from", "100s", "--to", "200s"], "error: no event of rank 0"),
    (["--rank", "0", "--from-ns", "5"], "error: --from-ns and --to-ns go together"),
    (["--rank", "0", "--from-ns", "5", "--to-ns", "9"], "error: no event of rank 0"),
    (["--rank", "0", "--step", "ProfilerStep#10", "--from-ns", "1", "--to-ns", "2"],
     "error: --step and --from-ns both name a window"),
])
def test_export_mistakes_are_one_line(arguments, message, tracewh, tmp_path):
    tracewh("ingest", DLRM0, "--run", "d", "--phase", "train")
    result = tracewh("export", "d", *arguments, "--out", tmp_path / "x.json", expect=2)
    assert result.output.startswith(message) and result.output.count("\n") == 1
    assert not (tmp_path / "x.json").exists()


def test_a_missing_step_names_the_first_and_last_steps(tracewh, tmp_path):
    tracewh("ingest", require(SHARED / "hta/trace_filter/sampled_rank-0.json.gz"), "--run", "h",
            "--phase", "train")
    result = tracewh("export", "h", "--rank", "0", "--step", "ProfilerStep#5", "--out",
                     tmp_path / "x.json", expect=2)
    assert result.output == ("error: no step named 'ProfilerStep#5' in rank 0 of run 'h', phase "
                             "'train' (its 2 steps: ProfilerStep#551 to ProfilerStep#552)\n")


def test_a_window_relative_to_the_capture_start_is_the_absolute_one(tracewh, sql, tmp_path):
    """--from 12.5ms --to 20ms counts from the capture's first event; it exports what
    --from-ns/--to-ns export at those epoch times."""
    tracewh("ingest", DLRM0, "--run", "d", "--phase", "train")
    (start,) = sql("SELECT min(ts_ns) AS s FROM (SELECT ts_ns FROM cpu_ops UNION ALL "
                   "SELECT ts_ns FROM runtime UNION ALL SELECT ts_ns FROM kernels)")
    begin, end = start["s"] + 12_500_000, start["s"] + 20_000_000
    relative = tracewh("export", "d", "--rank", "0", "--from", "12.5ms", "--to", "20ms",
                       "--out", tmp_path / "relative.json")
    tracewh("export", "d", "--rank", "0", "--from-ns", begin, "--to-ns", end,
            "--out", tmp_path / "absolute.json")
    assert (tmp_path / "relative.json").read_bytes() == (tmp_path / "absolute.json").read_bytes()
    assert f"12500000 to 20000000 ns after the capture's start ({begin} to {end} ns)" in \
        relative.output
    assert len(json.loads((tmp_path / "relative.json").read_text())["traceEvents"]) > 100


@pytest.mark.parametrize("view, window", [
    ("overlap_by_step", "start_ns, end_ns, dur_ns"),
    ("overlap_by_annotation", "start_ns, end_ns, dur_ns"),
    ("launch_latency", "launch_ts_ns AS start_ns, ts_ns + dur_ns AS end_ns, dur_ns"),
])
def test_views_that_name_a_window_print_the_command_that_exports_it(view, window, tracewh, sql,
                                                                      tmp_path, monkeypatch):
    tracewh("ingest", DLRM0, "--run", "d", "--phase", "train")
    (row,) = sql(f"SELECT {window}, export_command FROM {view} WHERE rank = 0 "
                 "ORDER BY start_ns DESC LIMIT 1")
    command = shlex.split(row["export_command"])
    assert command[:2] == ["tracewh", "export"] and row["dur_ns"] > 0
    monkeypatch.chdir(tmp_path)
    tracewh(*command[1:])
    (written,) = tmp_path.glob("d-rank0-*.json.gz")
    events = json.loads(gzip.decompress(written.read_bytes()))["traceEvents"]
    starts = [round(e["ts"] * 1000) for e in events if e["ph"] == "X"]
    assert starts and max(starts) < row["end_ns"]


def test_an_exported_annotation_window_reproduces_its_view_row(tracewh, sql, tmp_path,
                                                              monkeypatch):
    """A window holds what its row counted: kernels by launch (DeepSeek's attn(F) #2 counted
    4,258,000 ns of computation, of which its export by time kept 3,126,000), their launches
    and flows; ingested again, the window's row is the same."""
    tracewh("ingest", require(SHARED / "deepseek-profile-data" / "train.json"), "--run", "ds",
            "--phase", "train", "--rank", "0")
    figures = "annotation, dur_ns, comm_ns, compute_ns, overlap_ns"
    rows = sql(f"SELECT {figures}, export_command FROM overlap_by_annotation WHERE "
               "annotation IN ('attn(F)', 'dispatch(F)', 'mlp(B)') ORDER BY annotation, start_ns")
    chosen = [r for r in rows if r["annotation"] == "attn(F)"][1:2] + [
        r for r in rows if r["annotation"] != "attn(F)"][:1]
    assert chosen[0]["compute_ns"] == 4_258_000 and len(chosen) == 2
    monkeypatch.chdir(tmp_path)
    for number, row in enumerate(chosen):
        command = shlex.split(row.pop("export_command"))
        tracewh(*command[1:])
        tracewh("ingest", command[-1], "--run", f"again{number}", "--phase", "train",
                "--rank", "0")
        again = sql(f"SELECT {figures} FROM overlap_by_annotation WHERE run = 'again{number}' "
                    f"AND annotation = '{row['annotation']}' AND dur_ns = {row['dur_ns']}")
        assert again == [row]
