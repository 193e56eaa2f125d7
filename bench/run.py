"""`make bench`: tracewh's speed and memory, measured side by side with a baseline.

1. Ingest: a ~250 MB trace made by ../shared/tools/scale_trace.py from DeepSeek's train.json
   (64 copies) is ingested by `tracewh ingest`, and parsed by Python's `json.load`, alternately,
   each in a fresh process, three times; the best times, their ratio and peak RSS are printed.
   The goal: ingest in at most half of json.load's time, peak RSS at most 2x the file.
2. Views: that trace's Parquet is copied to 64 ranks (~58M events, a real-shaped warehouse),
   and `overlap` and `kernel_stats` are timed. The goal: each under 2 s.
3. Huge trace (several minutes; TRACEWH_BENCH_QUICK=1 skips it): a ~2 GB trace ingests with
   peak RSS under 2 GB, the file streamed, not held whole.

Generated files go to a temporary directory and are deleted. Needs ../shared (skips if absent).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TRAIN = SHARED / "traces" / "deepseek-profile-data" / "train.json"
SCALE = SHARED / "tools" / "scale_trace.py"

# Peak RSS: this process's VmHWM (ru_maxrss would include the parent's size, inherited by the
# fork that preceded exec) and the largest of its own children (the ingest workers).
MEASURE = r"""
import resource, sys, time
started = time.perf_counter()
{body}
elapsed = time.perf_counter() - started
own = next(int(line.split()[1]) for line in open("/proc/self/status")
           if line.startswith("VmHWM:"))
peak = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
print(elapsed, peak)
"""

JSON_LOAD = "import json\nwith open(sys.argv[1]) as f: json.load(f)"
INGEST = ("import sys\nfrom warehouse.cli import cli\n"
          "try:\n    cli(['--warehouse', sys.argv[2], 'ingest', sys.argv[1], '--run', 'bench',"
          " '--phase', 'train', '--replace'], prog_name='tracewh')\n"
          "except SystemExit as e:\n    assert not e.code, e.code")


# Alternating rounds; each side's best is compared. The machine's speed drifts by 30-50% within
# minutes, so one round of each can compare a fast moment with a slow one.
ROUNDS = 3


def measure(body, *args):
    """(seconds, peak RSS bytes) of `body` run in a fresh Python process."""
    output = subprocess.run([sys.executable, "-c", MEASURE.format(body=body), *map(str, args)],
                            check=True, capture_output=True, text=True).stdout
    seconds, peak = output.strip().splitlines()[-1].split()
    return float(seconds), int(peak)


def generate(copies, directory):
    target = Path(directory) / f"train_x{copies}.json"
    subprocess.run([sys.executable, str(SCALE), str(TRAIN), str(target), str(copies)], check=True)
    return target


def mb(value):
    return f"{value / 1e6:,.0f} MB"


def bench_ingest(trace, warehouse):
    size = trace.stat().st_size
    print(f"\n== ingest: {trace.name}, {mb(size)} ==")
    loads, ingests = [], []
    for _ in range(ROUNDS):
        loads.append(measure(JSON_LOAD, trace))
        ingests.append(measure(INGEST, trace, warehouse))
    load_s, load_rss = min(loads)
    ingest_s, ingest_rss = min(ingests)
    print(f"json.load (baseline)  {load_s:6.2f} s  {size / 1e6 / load_s:6.1f} MB/s  "
          f"peak RSS {mb(load_rss)}")
    print(f"tracewh ingest        {ingest_s:6.2f} s  {size / 1e6 / ingest_s:6.1f} MB/s  "
          f"peak RSS {mb(ingest_rss)} ({ingest_rss / size:.2f}x the file)")
    print(f"ratio ingest / json.load = {ingest_s / load_s:.2f}  (goal <= 0.50); "
          f"RSS / file = {ingest_rss / size:.2f}  (goal <= 2.00)")


def fan_out(warehouse, ranks):
    """Copy rank 0's committed files to ranks 1..ranks-1, committing each as its own trace."""
    sys.path.insert(0, str(ROOT))
    from warehouse.catalog import Catalog, staged_name

    catalog = Catalog(warehouse)
    (entry,) = catalog.entries()
    for rank in range(1, ranks):
        staging = catalog.new_staging_dir()
        for table, part, path in entry.files():
            shutil.copy(warehouse / path, staging / staged_name(table, part))
        copy = type(entry)(**{**entry.__dict__, "rank": rank,
                              "sha256": f"{rank:064x}", "trace_id": f"{rank:016x}"})
        catalog.commit(copy, staging)
    return entry.events * ranks


def bench_views(warehouse):
    sys.path.insert(0, str(ROOT))
    from warehouse.query import connect

    events = fan_out(warehouse, 64)
    print(f"\n== views over 64 ranks, {events:,} events ==")
    connection = connect(warehouse)
    for view in ("overlap", "kernel_stats"):
        started = time.perf_counter()
        rows = connection.execute(f"SELECT * FROM {view}").fetchall()
        seconds = time.perf_counter() - started
        print(f"{view:<14} {seconds:6.2f} s  {len(rows):,} rows  (goal < 2 s)")


def main():
    if not TRAIN.exists() or not SCALE.exists():
        print(f"skipped: {TRAIN} or {SCALE} is not available")
        return
    with tempfile.TemporaryDirectory(prefix="tracewh-bench-") as directory:
        trace = generate(64, directory)
        warehouse = Path(directory) / "warehouse"
        bench_ingest(trace, warehouse)
        bench_views(warehouse)
        trace.unlink()
        if not os.environ.get("TRACEWH_BENCH_QUICK"):
            huge = generate(512, directory)
            size = huge.stat().st_size
            seconds, peak = measure(INGEST, huge, Path(directory) / "huge-warehouse")
            print(f"\n== huge trace: {mb(size)} ==\ningest {seconds:.1f} s, "
                  f"{size / 1e6 / seconds:.1f} MB/s, peak RSS {mb(peak)} (goal < 2,000 MB)")


if __name__ == "__main__":
    main()
