"""`make bench`: tracewh's speed and memory, measured side by side with a baseline.

1. Ingest: a ~250 MB trace made by ../shared/tools/scale_trace.py from DeepSeek's train.json
   (64 copies) is ingested by `tracewh ingest`, parsed by Python's `json.load` and loaded by
   HTA's `TraceAnalysis` (HolisticTraceAnalysis, installed in a virtual environment of the
   bench's own, .venv/bench-hta, not among tracewh's dependencies; skipped when it cannot be
   installed), alternately, each in a fresh process, three times; the best times, their ratios
   and peak RSS are printed, and beside them the floor of this design: an ingest of one
   event, plus the CPU time of the decode, hash and Parquet of the trace's events shared by
   the cores (see docs/ingest-speed.md). Then the decode alone on one core, and the ingest of a 1 GB trace
   (x256), whose peak RSS is to be flat in the file's size. And every public
   view is timed over that one rank (goal: at most 2 s each).
2. Views: that trace's Parquet is copied to 64 ranks (~58M events, a real-shaped warehouse),
   and `overlap`, `kernel_stats`, `memory_peaks`, `step_bottleneck` and
   `collective_instances` and `op_stats` (from op_time) are timed; `op_stats` from the call
   tree in SQL (its live twin) over the one rank, before the copies (over 64 it takes many
   minutes). The goal: each under 2 s over 64 ranks; the views over the host call tree
   (op_calls, op_kernels, module_stats, ...) at most 20 s each. They are timed
   again after `tracewh optimize` when it merged files (an ingest writes one file per table
   and worker, and merges a table's parts when they hold under 65,536 rows).
   DeepSeek's traces hold no memory events, so `memory_peaks` is timed again (with
   `memory_events`) over 64 ranks of TraceLens's H100 trace scaled x64 (2.5M memory events).
   Fleet64: every public view over one run of 64 such ranks (the rank ingested once, its
   files copied to 63 more ranks with new trace ids, committed through the Delta log), each
   beside the bar of 20 s; a view still running after 60 s is interrupted. Then the refresh
   the copies did not run (every mart, the job's critical path among them), timed, and the
   critical path views again, from their mart.
   Then tracewh's critical path of DeepSeek's train.json (graph, path and segments, as the
   ingest computes them, and the job's path, as the refresh stores it) beside HTA's
   critical_path_analysis of the same step (goal: 20x).
3. Huge trace (several minutes; TRACEWH_BENCH_QUICK=1 skips it): a ~2 GB trace ingests with
   peak RSS under 2 GB, the file streamed, not held whole.
00. Start-up (first of all): TraceLens's H100 trace ingested as 20 one-rank runs; `tracewh
   query "select 1"`, a one-run view and a two-statement script beside the floor (`python -c
   "import duckdb; duckdb.sql('select 1')"`) and beside the script's statements run one by
   one, medians of 7 fresh processes in alternation; then `report` (with its base), `trend`
   and `diff`, medians of 3, each beside its bar (see docs/query-speed.md).
0. Many runs (first, needs only the bundled example): warehouses of 10 and 1,000 runs of the
   8-rank demo (copied by bench/fleet.py), one command at a time on each, alternately; and one
   more 8-rank ingest into each (the goal: at most 1.5x at 1,000 runs). After them, nine
   ingests in a row into each, the refresh that ends each timed (best and worst).

The bars (#43) are printed last, side by side, each figure beside its goal: the ingest,
refresh included, at most 0.25x json.load's time (and its MB/s); the native decode at least
400 MB/s on one core; peak RSS at most 1.0x the 254 MB file, and at most 1.2x that for the 1 GB
one (the command's own peak, and the PSS of the ingest's processes together, its workers
included); the refresh after one 8-rank run at most 0.3 s and 15% of the 254 MB ingest; HTA's load
at least 20x the ingest's time.

`bench/run.py SECTION...` runs only those sections, of: startup, fleet, refresh, ingest, decode, scale,
views, fleet64, critpath, memory, huge, ray (default: all). Generated files go to a temporary directory and are
deleted. Needs ../shared (skips what needs it if absent).
"""

import importlib.metadata
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb

from tracewh.storage import delta
from tracewh.api import Warehouse
from tracewh.storage.catalog import Catalog
from tracewh.derived import refresh_derived
from tracewh.derived.duckdb_file import FILE_NAME
from tracewh.ingest.pipeline import ingest_options, ingest_paths
from tracewh.ingest.sources import expand_inputs
from tracewh.query.library import published_modules
from tracewh.derived.maintenance import optimize
from tracewh.derived.marts import MARTS, MAX_SMALL_FILES, mart_path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TRAIN = SHARED / "traces" / "deepseek-profile-data" / "train.json"
# TraceLens's H100 inference trace: 620 [memory] events (DeepSeek's have none)
WITH_MEMORY = (SHARED / "traces" / "tracelens" / "h100"
               / "Falconsai_nsfw_image_detection__1016002.json.gz")
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
# The `tracewh` command's own entry point (main), as the console script runs it.
INGEST_WITH = ("import sys\nfrom {entry} import main\n"
               "sys.argv[1:] = ['--warehouse', sys.argv[2], 'ingest', sys.argv[1], '--run', "
               "'bench', '--phase', 'train', '--replace']\n"
               "try:\n    main()\n"
               "except SystemExit as e:\n    assert not e.code, e.code")
INGEST = INGEST_WITH.format(entry="tracewh.entry")
# Today's ingest, timing the refresh of the marts and tracewh.duckdb that ends it.
INGEST_TIMING_REFRESH = ("import time\nfrom tracewh.entry import prepare_process\n"
                         "prepare_process(['ingest'])  # before pyarrow's import, as main()\n"
                         "from tracewh import api\n"
                         "refresh, spent = api.refresh_derived, []\n"
                         "def timed(catalog):\n    started = time.perf_counter()\n"
                         "    refresh(catalog)\n    spent.append(time.perf_counter() - started)\n"
                         "api.refresh_derived = timed\n" + INGEST
                         + "\nprint('refresh', sum(spent))")
PREVIOUS_INGEST = INGEST_WITH.format(entry="warehouse.cli")  # the package's name until #11


# HTA's load of a trace directory, the figure its users wait for before any analysis.
HTA_LOAD = ("from hta.trace_analysis import TraceAnalysis\n"
            "TraceAnalysis(trace_dir=sys.argv[1])")
# HTA 0.5.0's critical path analysis needs pandas < 2.2 and numpy < 2
HTA_PACKAGE = ("HolisticTraceAnalysis==0.5.0", "pandas<2.2", "numpy<2")

# The last release before Delta Lake storage (#10), whose ingest speed must be kept.
PREVIOUS_RELEASE = "b0ea198"

SECTIONS = ("startup", "fleet", "refresh", "ingest", "decode", "scale", "views", "fleet64",
            "critpath", "memory", "huge", "ray")
# A view over 64 ranks still running after this many seconds is interrupted (fleet64).
FLEET64_LIMIT = 60
DLRM = SHARED / "traces" / "param-dlrm-8rank"
# The ray section's ranks: the 8 DLRM ones, then DeepSeek-shaped ones (train.json repeated
# RAY_COPIES times) up to RAY_RANKS: 64, as the issue asks (~10 min on 2 loaded cores; fewer
# for a quicker look).
RAY_RANKS = int(os.environ.get("TRACEWH_BENCH_RAY_RANKS", "64"))
RAY_COPIES = int(os.environ.get("TRACEWH_BENCH_RAY_COPIES", "8"))
# Its one large file: train.json repeated this many times (~100 MB), whose chunks are Ray tasks.
RAY_LARGE_COPIES = int(os.environ.get("TRACEWH_BENCH_RAY_LARGE_COPIES", "32"))
# The figures of the bars, as the sections measure them: printed together by print_bars.
BARS = {}

# Alternating rounds; each side's best is compared. The machine's speed drifts by 30-50% within
# minutes, so one round of each can compare a fast moment with a slow one.
ROUNDS = 3


def measure(body, *args, source=ROOT, python=None):
    """(seconds, peak RSS bytes) of `body` run in a fresh Python process (`python`, else this
    one's), importing tracewh from `source` (a checkout)."""
    seconds, peak = _run(body, args, source, python)[-1].split()
    return float(seconds), int(peak)


def measure_ingest(trace, warehouse):
    """(seconds, peak RSS bytes, seconds of the refresh ending it, peak of the process
    tree's memory: see _sample_tree) of `tracewh ingest`."""
    tree = {}
    lines = _run(INGEST_TIMING_REFRESH, (trace, warehouse), ROOT, tree=tree)
    refresh = next(float(line.split()[1]) for line in lines if line.startswith("refresh "))
    seconds, peak = lines[-1].split()
    return float(seconds), int(peak), refresh, tree["peak"]


def _run(body, args, source, python=None, tree=None):
    """The lines `body` printed, run in a fresh process with MEASURE's timing around it;
    `tree` (a dict), when given, is given the peak memory of the process and its children
    together ("peak", see _sample_tree)."""
    command = [python or sys.executable, "-c", MEASURE.format(body=body), *map(str, args)]
    options = dict(text=True, cwd=source, env={**os.environ, "PYTHONPATH": str(source)})
    if tree is None:
        return subprocess.run(command, check=True, capture_output=True,
                              **options).stdout.splitlines()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          **options) as process:
        sampler = threading.Thread(target=_sample_tree, args=(process, tree))
        sampler.start()
        out, err = process.communicate()
        sampler.join()
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command, out, err)
    return out.splitlines()


# How often the process tree's memory is sampled (reading smaps_rollup costs ~1 ms a process).
TREE_SAMPLE_S = 0.05


def _sample_tree(process, tree):
    """Until `process` ends, sample the proportional set size (PSS) of it and all its
    descendants, summed, into tree["peak"] (bytes): the memory its processes take together,
    each page they share (forked workers' inherited heap, the libraries) counted once. A
    process's own peak (VmHWM, MEASURE's figure) leaves out its workers; summing their RSS
    counts the shared pages once per process."""
    tree["peak"] = 0
    while process.poll() is None:
        tree["peak"] = max(tree["peak"], sum(map(_pss, _descendants(process.pid))))
        time.sleep(TREE_SAMPLE_S)


def _descendants(root):
    """`root` and the ids of every process below it (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path("/proc", entry, "stat").read_text()
            except OSError:  # gone
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


def _pss(pid):
    """The PSS of process `pid` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            return next(int(line.split()[1]) * 1024 for line in rollup
                        if line.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0


def generate(copies, directory, source=TRAIN):
    target = Path(directory) / f"{source.name.split('.')[0]}_x{copies}.json"
    subprocess.run([sys.executable, str(SCALE), str(source), str(target), str(copies)],
                   check=True)
    return target


def mb(value):
    return f"{value / 1e6:,.0f} MB"


def previous_release(directory):
    """A checkout of PREVIOUS_RELEASE (the last one storing a manifest, not Delta tables),
    to measure ingest beside it, its bytecode compiled; None when git or the commit is not
    there."""
    target = Path(directory) / "previous-release"
    done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target),
                           PREVIOUS_RELEASE], capture_output=True)
    if done.returncode != 0:
        return None
    compile_bytecode(target)
    return target


def compile_bytecode(*directories):
    """Write the modules' bytecode, as pip does when it installs a package: under
    PYTHONDONTWRITEBYTECODE (this machine's environment sets it) a checkout's modules
    are otherwise compiled from source in every process, ~0.06 s of each command's start."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, directories)],
                   check=True, capture_output=True)


def hta_python():
    """The Python of the bench's own environment with HTA installed (made on first use), or
    None, said in one line, when it cannot be made (no network, no wheel for this Python)."""
    environment = ROOT / ".venv" / "bench-hta"
    python = environment / "bin" / "python"
    if (environment / ".installed").exists():
        return python
    made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(environment)],
                          capture_output=True, text=True)
    if made.returncode == 0:
        made = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *HTA_PACKAGE],
                              capture_output=True, text=True)
    if made.returncode != 0:
        problem = (made.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"skipped HTA: {' '.join(HTA_PACKAGE)} cannot be installed ({problem})")
        return None
    (environment / ".installed").touch()
    return python


def measure_hta(python, trace):
    """(seconds, peak RSS bytes) of HTA's TraceAnalysis loading a directory holding only
    `trace`, or None, said in one line, when HTA fails on it."""
    directory = trace.parent / "hta-trace"
    directory.mkdir(exist_ok=True)
    link = directory / trace.name
    if not link.exists():
        link.symlink_to(trace)
    try:
        return measure(HTA_LOAD, directory, source=directory, python=python)
    except subprocess.CalledProcessError as error:
        problem = (error.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"skipped HTA: its load of {trace.name} failed ({problem})")
        return None


def rate(size, seconds):
    return f"{seconds:6.2f} s  {size / 1e6 / seconds:6.1f} MB/s"


def bench_ingest(trace, warehouse, previous):
    size = trace.stat().st_size
    print(f"\n== ingest: {trace.name}, {mb(size)}, best of {ROUNDS}, fresh processes ==")
    hta = hta_python()
    loads, ingests, before, htas = [], [], [], []
    for _ in range(ROUNDS):
        loads.append(measure(JSON_LOAD, trace))
        ingests.append(measure_ingest(trace, warehouse))
        if previous is not None:
            before.append(measure(PREVIOUS_INGEST, trace, warehouse.with_name("previous-warehouse"),
                                  source=previous))
        if hta is not None:
            loaded = measure_hta(hta, trace)
            if loaded is None:
                hta = None
            else:
                htas.append(loaded)
    load_s, load_rss = min(loads)
    ingest_s, ingest_rss, refresh_s, _ = min(ingests)
    tree_pss = min(ingest[3] for ingest in ingests)
    BARS.update(size=size, load_s=load_s, ingest_s=ingest_s, ingest_rss=ingest_rss,
                ingest_tree=tree_pss)
    proper_s = ingest_s - refresh_s
    print(f"json.load (baseline)     {rate(size, load_s)}  peak RSS {mb(load_rss)}")
    print(f"tracewh ingest           {rate(size, ingest_s)}  peak RSS {mb(ingest_rss)} "
          f"({ingest_rss / size:.2f}x the file); its processes together (PSS) "
          f"{mb(tree_pss)} ({tree_pss / size:.2f}x)")
    print(f"  the ingest proper      {rate(size, proper_s)}")
    print(f"  the refresh after it   {refresh_s:6.2f} s  ({refresh_s / proper_s:.0%} of the "
          f"ingest proper; goal < 10%), the marts and {FILE_NAME}")
    print(f"ratio ingest / json.load = {ingest_s / load_s:.2f} (goal <= 0.25); the ingest proper "
          f"{proper_s / load_s:.2f}; RSS / file = {ingest_rss / size:.2f} (goal <= 1.0)")
    if htas:
        hta_s, hta_rss = min(htas)
        BARS["hta_s"] = hta_s
        print(f"HTA TraceAnalysis load   {rate(size, hta_s)}  peak RSS {mb(hta_rss)}: tracewh "
              f"ingest takes {ingest_s / hta_s:.2f}x its time and {ingest_rss / hta_rss:.2f}x "
              "its memory")
    if before:
        before_s, before_rss = min(before)
        print(f"previous release {PREVIOUS_RELEASE} {before_s:6.2f} s, peak RSS {mb(before_rss)}:"
              f" the ingest proper takes {proper_s / before_s:.2f}x its time (goal <= 1.05), "
              f"with the refresh {ingest_s / before_s:.2f}x")
    bench_floor(trace, warehouse, load_s)


# The CPU-timed bodies' common part: the trace's chunks as the ingest reads them, and
# print_best_cpu, which prints each piece of work's best CPU time (the process's: other
# processes on the shared machine do not count in it) of two rounds as a "name seconds" line.
CPU_TIMED = """from tracewh.ingest.reader import TraceReader
path = sys.argv[1]
with open(path, 'rb') as f:
    chunks = [bytes(c.load(path)) for c in TraceReader(f, path).chunks()]
def each_chunk(decode):
    def work():
        for chunk in chunks:
            decode(chunk)
    return work
def print_best_cpu(works):
    for name, work in works:
        best = None
        for _ in range(2):
            began = time.process_time()
            work()
            spent = time.process_time() - began
            best = spent if best is None else min(best, spent)
        print(name, best)
"""


def cpu_seconds(body, *args):
    """{name: CPU seconds} that `body` (after CPU_TIMED, in a fresh process given the trace
    and `args`) printed."""
    return {name: float(seconds) for name, seconds in
            (line.split() for line in _run(CPU_TIMED + body, args, ROOT)[:-1])}


# What any ingest of a trace must spend with this design on this machine, in CPU time: the
# native core's decode of its chunks, the sha256 of its bytes (the traces row's), and the
# Parquet of its events' tables as the ingest stores them (read back from the warehouse the
# ingest wrote, as dictionaries where it writes dictionaries, written with its options).
BYTES_WORK = """import tempfile
import pyarrow.parquet as pq
from tracewh.ingest import _decode
from tracewh.ingest.sources import file_digest
from tracewh.storage.catalog import Catalog
from tracewh.storage.layout import EVENT_TABLES
from tracewh.storage.parquet import dictionary_columns, write_table
warehouse = sys.argv[2]
catalog = Catalog(warehouse)
live = catalog.snapshot().files(catalog.root, runs={'bench'})  # not the replaced runs' files
tables = []
for name in EVENT_TABLES:
    for file in live.get(name, []):
        where = f'{warehouse}/{name}/{file.path}'
        tables.append(pq.read_table(where, read_dictionary=dictionary_columns(
            pq.read_schema(where))))
def write():
    with tempfile.TemporaryDirectory() as directory:
        for number, table in enumerate(tables):
            write_table(table, f'{directory}/{number}.parquet')
print_best_cpu((('decode', each_chunk(_decode.decode_events)),
                ('sha256', lambda: file_digest(path)), ('parquet', write)))
"""


def bench_floor(trace, warehouse, load_s):
    """The least an ingest of `trace` could take with this design on this machine, beside the
    goal of 0.25x json.load (`load_s`): what an ingest of one event takes whole (the
    interpreter's imports, the commit, the refresh's marts and tracewh.duckdb) plus the CPU
    time of the bytes' decode, hash and events' Parquet shared perfectly by the cores. It
    leaves out everything else the ingest does (the op time, call tree, critical path, steps
    and windows; the marts of the trace's rows; reading the file): no ingest is faster."""
    one_event = trace.with_name("one-event.json")
    one_event.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", '
                         '"pid": 1, "tid": 1, "ts": 1, "dur": 2}]}')
    fixed = min(measure_ingest(one_event, warehouse.with_name("floor-warehouse"))[0]
                for _ in range(ROUNDS))
    work = cpu_seconds(BYTES_WORK, trace, warehouse)
    cores = len(os.sched_getaffinity(0))
    floor = fixed + sum(work.values()) / cores
    BARS.update(floor_s=floor)
    print(f"the floor: an ingest of one event {fixed:.2f} s + (decode {work['decode']:.2f} + "
          f"sha256 {work['sha256']:.2f} + the events' Parquet {work['parquet']:.2f} CPU s) / "
          f"{cores} cores = {floor:.2f} s = {floor / load_s:.2f}x json.load (goal 0.25x), "
          "before any measure or the marts of the trace's rows")


# The decode alone on one core (pinned), over the trace's chunks as the ingest reads them and
# with its default redaction: the native core alone, the native path (core and tables), and
# the Python reference (with the compaction it needs).
DECODE = """import os, msgspec
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from tracewh.ingest import _decode, decoder
from tracewh.ingest.normalize import normalize_chunk
print_best_cpu((
    ('core', each_chunk(_decode.decode_events)),
    ('native', each_chunk(lambda c: decoder.normalize(c, 't', 0, True))),
    ('reference', each_chunk(lambda c: normalize_chunk(msgspec.json.format(c, indent=-1), 't', 0,
                                                       True)))))
"""


def bench_decode(trace):
    size = trace.stat().st_size
    print(f"\n== decode on one core: {trace.name}, its chunks as the ingest reads them, best of 2, "
          "CPU time ==")
    times = cpu_seconds(DECODE, trace)
    for name, label in (("core", "native core alone"), ("native", "native, tables built"),
                        ("reference", "Python reference")):
        print(f"{label:24} {rate(size, times[name])}")
    BARS["core_mb_s"] = size / 1e6 / times["core"]
    print(f"native / reference = {times['native'] / times['reference']:.2f}; the core alone "
          f"{size / 1e6 / times['core']:.0f} MB/s (goal >= 400; simdjson visiting every field: "
          "~600)")


# timed over the tables, not read from the marts (which hold overlap and kernel_stats)
VIEWS_OVER_64_RANKS = ("overlap", "kernel_stats", "memory_peaks", "step_bottleneck",
                       "collective_instances", "op_stats")
# The views over the host call tree, timed over 64 ranks (the goal: at most 20 s each).
TREE_VIEWS_OVER_64_RANKS = ("op_kernels", "op_calls", "op_backward", "op_stats_by_shape",
                            "gemm_shapes", "module_stats", "module_phase_stats", "op_perf",
                            "collective_calls", "memory_events")


def fan_out(warehouse, ranks):
    """Copy rank 0's committed files to ranks 1..ranks-1 of the same run, as new traces."""
    from fleet import replicate

    replicate(warehouse, "bench", [("bench", rank) for rank in range(1, ranks)])
    return sum(t.events for t in Catalog(warehouse).stored_traces("bench"))


def bench_every_view(warehouse, label="the one rank ingested", goal=2.0, limit=None,
                     views=None, marts=False):
    """Every public view over the run (or `views`), as a user would ask it (count(*), the
    run named): the call tree, the launches' ops and the ancestors are stored at ingest
    (call_tree, kernel_ops, call_ancestors), so no view rebuilds them; with `marts`, on a
    connection over the run that reads the marts current for it, as `tracewh query` does. A
    view still running after `limit` seconds is interrupted and printed as over it."""
    connection = (Warehouse(warehouse).connect_to_runs(["bench"]) if marts
                  else Warehouse(warehouse).connect(marts=False))
    views = views or [name for name, text in published_modules().items()
                      if "CREATE OR REPLACE MACRO" not in text]
    print(f"\n== every public view over {label}, "
          f"select count(*) from V where run = 'bench' (goal <= {goal:g} s each) ==")
    slowest, over = 0.0, []
    for view in views:
        timer = threading.Timer(limit, connection.interrupt) if limit else None
        if timer:
            timer.start()
        started = time.perf_counter()
        try:
            try:
                (count,) = connection.execute(
                    f"SELECT count(*) FROM {view} WHERE run = 'bench'").fetchone()
            except duckdb.BinderException:  # a view without a run column (rules, peaks, ...)
                (count,) = connection.execute(f"SELECT count(*) FROM {view}").fetchone()
            rows = f"{count:,} rows"
        except duckdb.InterruptException:
            rows = f"interrupted after {limit:g} s"
        finally:
            if timer:
                timer.cancel()
        seconds = time.perf_counter() - started
        slowest = max(slowest, seconds)
        if seconds > goal:
            over.append(view)
        print(f"{view:<34} {seconds:7.2f} s  {rows}  (bar {goal:g} s{', OVER' if seconds > goal else ''})")
    print(f"slowest {slowest:.2f} s (goal <= {goal:g} s); over the bar: {', '.join(over) or 'none'}")


def bench_fleet64(directory, trace):
    """Every public view over one run of 64 ranks shaped like the 254 MB one (the bar: at most
    20 s each). The trace is ingested once as rank 0 and its committed files copied to ranks
    1-63 (bench/fleet.py: new trace ids in every file, committed through the Delta log in
    bulk): an ingest of the same file as another rank writes the same rows but for the trace
    id, and 64 ingests of 254 MB would take most of an hour."""
    warehouse = Path(directory) / "fleet64-warehouse"
    try:
        measure_ingest(trace, warehouse)
        events = fan_out(warehouse, 64)
        # the marts (the job's critical path, graph_replay_kernels, ...) are made by the
        # refresh, which the copies of the files did not run
        started = time.perf_counter()
        refresh_derived(Catalog(warehouse))
        print(f"\nrefresh of every mart over the 64 ranks: {time.perf_counter() - started:.1f} s")
        bench_every_view(warehouse, f"64 ranks of {trace.name}, {events:,} events, as "
                         "`tracewh query` asks them (the current marts read)", goal=20.0,
                         limit=FLEET64_LIMIT, marts=True)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


def bench_views(warehouse):
    # op_stats from the call tree in SQL (custom rules, or a warehouse older than op_time) is
    # timed over the one rank ingested, before the fan-out: over 64 it takes many minutes
    connection = Warehouse(warehouse).connect()
    connection.execute(published_modules(("_op_time",))["op_stats"])
    time_view(connection, "op_stats", "from the call tree in SQL, over 1 rank")
    events = fan_out(warehouse, 64)
    print(f"\n== views over 64 ranks, {events:,} events ==")
    time_views(warehouse, "as ingested: one file per table and ingest worker, small ones merged")
    started = time.perf_counter()
    result = optimize(Catalog(warehouse))
    print(f"\ntracewh optimize: {result.files_removed:,} files merged into "
          f"{result.files_added:,}, {time.perf_counter() - started:.1f} s")
    if result.files_removed:
        time_views(warehouse, "after optimize: one file per table and trace")


def bench_memory(directory):
    """memory_peaks where there is memory to look at: TraceLens's H100 trace scaled x64
    (39,680 [memory] events) on 64 ranks; and memory_events, the per-event view, beside it."""
    trace = generate(64, directory, WITH_MEMORY)
    warehouse = Path(directory) / "memory-warehouse"
    measure_ingest(trace, warehouse)
    trace.unlink()
    events = fan_out(warehouse, 64)
    connection = Warehouse(warehouse).connect(marts=False)
    memory = connection.execute("SELECT count(*) FROM instants WHERE name = '[memory]'").fetchone()
    print(f"\n== memory views over 64 ranks of TraceLens H100 x64, {events:,} events, "
          f"{memory[0]:,} memory events ==")
    time_view(connection, "memory_peaks", "goal < 2 s")
    time_view(connection, "memory_events", "one row per event, with its op")


def time_views(warehouse, layout):
    print(f"-- {layout}")
    connection = Warehouse(warehouse).connect(marts=False)
    for view in VIEWS_OVER_64_RANKS:
        time_view(connection, view, "goal < 2 s")
    for view in TREE_VIEWS_OVER_64_RANKS:
        time_view(connection, view, "goal < 20 s")


def time_view(connection, view, goal):
    started = time.perf_counter()
    rows = connection.execute(f"SELECT * FROM {view}").fetchall()
    seconds = time.perf_counter() - started
    print(f"{view:<20} {seconds:6.2f} s  {len(rows):,} rows  ({goal})")


# Commands timed on warehouses of 10 and 1,000 runs (#14), each in a fresh process.
FLEET_COMMANDS = [
    ("runs", ["runs"]),
    ("overlap of one run", ["query", "SELECT * FROM overlap WHERE run = 'r0003'"]),
    ("kernel_stats of one run", ["query", "SELECT * FROM kernel_stats WHERE run = 'r0003'"]),
    ("diff r0001 r0002", ["diff", "r0001", "r0002"]),
    ("trend --last 30", ["trend", "overlap_ratio", "--last", "30"]),
    ("overlap of all runs", ["query", "SELECT run, avg(overlap_ratio) FROM overlap GROUP BY run"]),
    ("kernels of all runs", ["query", "SELECT run, count(*) FROM kernels GROUP BY run"]),
]
CLI = ("import sys\nfrom tracewh.entry import main\n"
       "try:\n    main()\n"
       "except SystemExit as e:\n    assert not e.code, e.code")


def build_fleets(directory, large_too=True):
    """Warehouses of 10 and 1,000 runs (None, unless `large_too`): the demo's 8 ranks
    ingested once, then copied."""
    from fleet import replicate

    small, large = Path(directory) / "runs-10", Path(directory) / "runs-1000"
    subprocess.run([sys.executable, "-m", "tracewh", "--warehouse", str(small),
                    "ingest", str(ROOT / "examples" / "dlrm-8rank"), "--run", "r0000",
                    "--phase", "train"], check=True, capture_output=True)
    replicate(small, "r0000", [(f"r{n:04d}", 0) for n in range(1, 10)])
    if not large_too:
        refresh_derived(Catalog(small))
        return small, None
    shutil.copytree(small, large)
    started = time.perf_counter()
    replicate(large, "r0000", [(f"r{n:04d}", 0) for n in range(10, 1000)])
    print(f"(built 1,000 runs by copying in {time.perf_counter() - started:.0f} s)")
    for warehouse in (small, large):  # the copies' marts, all at once
        derived = refresh_derived(Catalog(warehouse))
        print(f"(derived the marts of {len(derived.runs):,} runs in "
              f"{derived.marts_seconds:.1f} s, {FILE_NAME} in {derived.file_seconds:.2f} s)")
    return small, large


def bench_refresh(small, large):
    """What every commit of a run adds: the marts of that run and tracewh.duckdb, beside the
    ingest of the run itself (in one process, as the CLI's ingest does both). One round more
    than a tier of a mart's files holds, so that one of them merges a tier: the worst is
    printed beside the best, as users meet it."""
    files = expand_inputs([ROOT / "examples" / "dlrm-8rank"])
    rounds_count = MAX_SMALL_FILES + 1
    print(f"\n== refresh after committing one run (8 ranks), {rounds_count} in a row: "
          "best, and worst ==")
    for label, warehouse in (("10 runs", small), ("1,000 runs", large)):
        if warehouse is None:
            continue
        rounds = []
        for round_ in range(rounds_count):
            catalog = Catalog(warehouse)
            options = ingest_options(run=f"refresh{round_}", phase="train", jobs=2)
            started = time.perf_counter()
            ingest_paths(catalog, files, options)
            ingested = time.perf_counter() - started
            cpu = time.process_time()
            derived = refresh_derived(catalog)
            refreshed = time.perf_counter() - started - ingested
            rounds.append((ingested, refreshed, derived.marts_seconds, derived.file_seconds,
                           time.process_time() - cpu))
        ingest_s, refresh_s, marts_s, file_s, cpu_s = (min(r[i] for r in rounds)
                                                       for i in range(5))
        # the smaller warehouse's; its CPU time (all threads) too, the figure a loaded
        # machine changes least
        BARS.setdefault("refresh_s", refresh_s)
        BARS.setdefault("refresh_cpu_s", cpu_s)
        # tracewh.duckdb is written beside the marts: the refresh takes less than both
        print(f"{label:<11} ingest {ingest_s:5.2f} s | marts {marts_s:5.2f} s, {FILE_NAME} "
              f"{file_s:5.2f} s beside them | the refresh {refresh_s:5.2f} s (CPU "
              f"{cpu_s:.2f} s): "
              f"{refresh_s / ingest_s:4.0%} of the ingest (goal < 10%)")
        worst = max(rounds, key=lambda r: r[1])
        print(f"{'':<11} the worst refresh {worst[1]:5.2f} s (marts {worst[2]:5.2f} s), "
              f"{worst[1] / worst[0]:4.0%} of its ingest")
        held = [len(delta.live_files(mart_path(warehouse, name),
                                     delta.latest_version(mart_path(warehouse, name))))
                for name in MARTS]
        print(f"{'':<11} then the marts' files: {min(held)}-{max(held)} "
              f"a mart, {len(Catalog(warehouse).runs()):,} runs (compacted, not one per run)")


def bench_fleet(small, large):
    print("\n== warehouses of 10 and 1,000 runs (8 ranks each), best of 3, fresh processes ==")
    print(f"{'what':<26} {'10 runs':>16} {'1,000 runs':>16} {'ratio':>6}")
    rows = [(name, [("--warehouse", str(w), *args) for w in (small, large)])
            for name, args in FLEET_COMMANDS]
    ingest = [("--warehouse", str(w), "ingest", str(ROOT / "examples" / "dlrm-8rank"),
               "--phase", "train", "--run") for w in (small, large)]
    # a run's traces replaced: every rank's commit removes its old files, and each mart's
    # file holding the run is rewritten without it
    replace = [(*args, "r0005", "--replace") for args in ingest]
    for name, (at_small, at_large) in rows + [("ingest one more run", ingest),
                                              ("replace one run", replace)]:
        times = {0: [], 1: []}
        for round_ in range(ROUNDS):
            for side, args in enumerate((at_small, at_large)):
                if name == "ingest one more run":
                    args = (*args, f"extra{round_}")
                times[side].append(measure(CLI, *args))
        (small_s, small_rss), (large_s, large_rss) = min(times[0]), min(times[1])
        print(f"{name:<26} {small_s:6.2f} s {mb(small_rss):>7} {large_s:6.2f} s "
              f"{mb(large_rss):>7} {large_s / small_s:6.2f}")
    print("goals: one- or two-run queries <= 1.5x and < 2 s; trend <= 2x; ingest < 1.5x; "
          "peak RSS < 500 MB")


def bench_scale(directory):
    """Peak RSS of the ingest of a 1 GB trace (x256) beside the 254 MB one's: the memory is
    to be bounded by the chunks in flight, not by the file."""
    huge = generate(256, directory)
    size = huge.stat().st_size
    seconds, peak, _, tree_pss = measure_ingest(huge, Path(directory) / "x256-warehouse")
    huge.unlink()
    BARS.update(scale_size=size, scale_rss=peak, scale_tree=tree_pss)
    print(f"\n== ingest of {mb(size)} (x256) ==\n{rate(size, seconds)}  peak RSS {mb(peak)} "
          f"({peak / size:.2f}x the file); its processes together (PSS) {mb(tree_pss)} "
          f"({tree_pss / size:.2f}x)")


def print_bars():
    """The bars of #43, side by side, from the sections that ran."""
    print("\n== the bars, side by side ==")
    b = BARS
    if "ingest_s" in b:
        print(f"ingest x64, refresh included  {b['ingest_s'] / b['load_s']:5.2f}x json.load "
              f"(goal <= 0.25), {b['size'] / 1e6 / b['ingest_s']:6.1f} MB/s (goal ~250)")
        print(f"peak RSS x64                  {b['ingest_rss'] / b['size']:5.2f}x the file "
              f"(goal <= 1.0); all its processes (PSS) {b['ingest_tree'] / b['size']:.2f}x")
    if "floor_s" in b:
        print(f"  the floor of this design    {b['floor_s'] / b['load_s']:5.2f}x json.load: "
              "one event's ingest, and the decode, hash and Parquet of the bytes on every core")
    if "hta_s" in b and "ingest_s" in b:
        print(f"HTA load / ingest             {b['hta_s'] / b['ingest_s']:5.1f}x (goal >= 20)"
              + (f"; HTA load / the floor {b['hta_s'] / b['floor_s']:.1f}x"
                 if "floor_s" in b else ""))
    if "core_mb_s" in b:
        print(f"native decode, one core       {b['core_mb_s']:6.1f} MB/s (goal >= 400; "
              "simdjson visiting every field: ~600)")
    if "scale_rss" in b:
        print(f"peak RSS x256                 {b['scale_rss'] / b['scale_size']:5.2f}x the file"
              + (f", {b['scale_rss'] / b['ingest_rss']:.2f}x the x64 peak (goal <= 1.2); all "
                 f"its processes (PSS) {b['scale_tree'] / b['ingest_tree']:.2f}x"
                 if "ingest_rss" in b else ""))
    if "refresh_s" in b:
        share = (f", {b['refresh_s'] / b['ingest_s']:.0%} of the x64 ingest (goal <= 15%)"
                 if "ingest_s" in b else "")
        print(f"refresh after an 8-rank run   {b['refresh_s']:5.2f} s (goal <= 0.3){share}; "
              f"its CPU {b['refresh_cpu_s']:.2f} s")


def bench_critical_path(directory):
    """tracewh's critical path of every step of DeepSeek's train.json beside HTA's
    critical_path_analysis of the same step (bench/hta_critical_path.py, in HTA's
    environment): what tracewh spends on it is the graph and its longest paths as the ingest
    computes them (from the trace's tables, with its syncs), and the job's path as the
    refresh stores it (job_path, over the stored edges). The goal: 20x faster."""
    from tracewh.derived.job_path import job_path_rows
    from tracewh.ingest.critical_path import COLUMNS, SYNC_COLUMNS, path_table
    from tracewh.query.library import live_helpers

    warehouse = Path(directory) / "path-warehouse"
    measure_ingest(TRAIN, warehouse)
    opened = Warehouse(warehouse)
    connection = opened.connect(marts=False)
    staged = {table: connection.sql(f"SELECT {', '.join(columns)} FROM {table}").to_arrow_table()
              for table, columns in COLUMNS.items()}
    staged["syncs"] = connection.sql(f"SELECT {', '.join(SYNC_COLUMNS)} FROM kernels "
                                     "WHERE category = 'cuda_sync'").to_arrow_table()
    names = connection.sql("SELECT category, name_id, name FROM kernel_names").to_arrow_table()
    live = live_helpers(opened.snapshot, opened.kernel_rules)
    seconds, job_seconds = [], []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        rows = path_table(staged, "t", names)
        seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        job = job_path_rows(connection, live)
        job_seconds.append(time.perf_counter() - started)
    print(f"\n== critical path of {TRAIN.name}, {rows.num_rows:,} rows (path and segments), "
          f"best of {ROUNDS} ==\ntracewh (graph, path, segments)  {min(seconds):6.3f} s\n"
          f"tracewh job path ({job.num_rows:,} rows)   {min(job_seconds):6.3f} s")
    seconds = [a + b for a, b in zip(seconds, job_seconds)]
    hta = hta_python()
    if hta is None:
        return
    found = subprocess.run([str(hta), str(ROOT / "bench" / "hta_critical_path.py"), str(TRAIN)],
                           capture_output=True, text=True)
    if found.returncode != 0:
        print(f"skipped HTA: its critical path failed ({found.stderr.strip()[-200:]})")
        return
    hta_seconds = sum(step["seconds"] for step in json.loads(found.stdout)["steps"])
    print(f"HTA critical_path_analysis       {hta_seconds:6.3f} s: tracewh (both) "
          f"{hta_seconds / min(seconds):.0f}x faster (goal >= 20x)")


# Start-up, scripts and commands (bench_startup): the floor, what each is measured beside.
FLOOR = ("-c", "import duckdb; duckdb.sql('select 1')")
ONE_RUN_VIEW = "SELECT * FROM overlap WHERE run = 'r3'"
SCRIPT = ("SELECT count(*) FROM kernels WHERE run = 'r3'",
          "SELECT count(*) FROM op_perf WHERE run = 'r3'")
STARTUP_ROUNDS = 7
COMMANDS = (("report of one rank with its base", 5.0, ("report", "r2", "--base", "r1", "--out")),
            ("trend step_time_ns --last 5", 1.0,
             ("trend", "step_time_ns", "--order-by-tag", "date", "--last", "5")),
            ("trend overlap_ratio", 1.0, ("trend", "overlap_ratio")),
            ("diff r1 r2", 1.0, ("diff", "r1", "r2")))


def timed(*args):
    """(wall seconds, CPU seconds) of a fresh `python ARGS` process: as a user waits for it,
    and what it used (user and system, its threads' too), steadier on a loaded machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def medians(commands, rounds=STARTUP_ROUNDS):
    """{name: (median wall seconds, median CPU seconds)} of each command (args to python), run
    in turn, `rounds` times: the machine's speed drifts, so each round measures all of them
    side by side."""
    times = {name: [] for name in commands}
    for _ in range(rounds):
        for name, args in commands.items():
            times[name].append(timed(*args))
    return {name: tuple(map(statistics.median, zip(*found))) for name, found in times.items()}


def twenty_runs(directory):
    """A warehouse of TraceLens's H100 trace ingested as 20 one-rank runs r1..r20, tagged by
    date."""
    warehouse = Path(directory) / "twenty"
    for number in range(1, 21):
        Warehouse(warehouse).ingest(WITH_MEMORY, run=f"r{number}", phase="infer",
                                    tags={"date": f"2026-01-{number:02d}"})
    return warehouse


def bench_startup(directory):
    """`tracewh query` beside the floor (a Python that imports DuckDB and asks it `select 1`),
    a script beside its statements run one by one, and the commands beside their bars."""
    warehouse = twenty_runs(directory)
    tracewh = ("-m", "tracewh", "--warehouse", str(warehouse))
    print(f"\n== start-up: medians of {STARTUP_ROUNDS} fresh processes, 20 one-rank runs of "
          "TraceLens H100 ==")
    found = {name: seconds for name, (seconds, _) in medians({
        "floor": FLOOR, "select 1": (*tracewh, "query", "select 1"),
        "one-run view": (*tracewh, "query", ONE_RUN_VIEW),
        **{statement: (*tracewh, "query", statement) for statement in SCRIPT},
        "script": (*tracewh, "query", "; ".join(SCRIPT))}).items()}
    floor = found["floor"]
    print(f"{'floor: import duckdb, select 1':<36} {floor:6.2f} s")
    for name, bar in (("select 1", 1.6), ("one-run view", 2.0)):
        print(f"{'tracewh query ' + repr(name):<36} {found[name]:6.2f} s  "
              f"{found[name] / floor:5.2f}x the floor (bar {bar}x)")
    one_by_one = sum(found[statement] for statement in SCRIPT)
    print(f"{'script of 2 statements about r3':<36} {found['script']:6.2f} s  "
          f"{found['script'] / one_by_one:5.2f}x its statements one by one, "
          f"{one_by_one:.2f} s (bar 1.3x)")
    report = Path(directory) / "report.html"
    found = medians({"floor": FLOOR, **{
        name: (*tracewh, *args, *([str(report)] if args[0] == "report" else []))
        for name, _, args in COMMANDS}}, rounds=3)
    print("\n== commands over that warehouse, medians of 3: wall and CPU seconds ==")
    floor_wall, floor_cpu = found["floor"]
    print(f"{'floor: import duckdb, select 1':<36} {floor_wall:6.2f} s  CPU {floor_cpu:5.2f} s")
    for name, bar, _ in COMMANDS:
        seconds, used = found[name]
        print(f"{name:<36} {seconds:6.2f} s  CPU {used:5.2f} s, {used / floor_cpu:4.1f}x the "
              f"floor's  (bar {bar:g} s of wall)")


def ray_ranks(directory):
    """RAY_RANKS rank files in `directory`: DLRM's 8, then DeepSeek-shaped ones, each its own
    rank (distributedInfo), so none is taken for another's copy."""
    ranks = Path(directory) / "ranks"
    ranks.mkdir()
    for source in sorted(DLRM.glob("*.json.gz"))[:RAY_RANKS]:
        shutil.copy(source, ranks)
    shaped = generate(RAY_COPIES, directory)
    text = shaped.read_text()
    shaped.unlink()
    for rank in range(8, RAY_RANKS):
        (ranks / f"deepseek-rank{rank}.json").write_text(
            text.replace('"rank": 0, "world_size": 64', f'"rank": {rank}, "world_size": 64', 1))
    return ranks


def _timed_cli(warehouse, *args, env=None, cpu=False):
    """The wall seconds of a `tracewh` command; with `cpu`, (wall, CPU seconds of it and of
    the worker processes it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracewh", "--warehouse", str(warehouse), *args],
                   check=True, capture_output=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return (wall, used) if cpu else wall


RAY_QUERY = ("SELECT rank, count(*) AS kernels, sum(dur_ns) AS busy_ns FROM kernels "
             "GROUP BY rank ORDER BY rank")
RAY_START = ("import os, ray\nray.init(num_cpus=os.cpu_count(), include_dashboard=False, "
             "_node_ip_address='127.0.0.1', logging_level='WARNING')\nray.shutdown()")


def bench_ray(directory):
    """RAY_RANKS ranks ingested into SeaweedFS's S3 by Ray tasks (a local Ray on this
    machine's cores) beside the same into a local directory in-process; one query over each
    warehouse; the per-core rate that sizes a cluster (docs/object-storage.md). The one large
    file first, so that its figures print even when the long run of ranks is cut short."""
    from tests.object_store import make_bucket, seaweedfs

    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", RAY_START], check=True, capture_output=True)
    ray_start = time.perf_counter() - started
    bench_ray_large(directory, ray_start)
    ranks = ray_ranks(directory)
    size = sum(path.stat().st_size for path in ranks.iterdir())
    cores = os.cpu_count() or 1
    print(f"\n== ray: {RAY_RANKS} ranks, {mb(size)}, on {cores} cores ==")
    local = Path(directory) / "ray-local"
    seconds, used = _timed_cli(local, "ingest", str(ranks), "--run", "bench", "--phase",
                               "train", cpu=True)
    print(f"in-process into a directory   {rate(size, seconds)}  "
          f"{size / 1e6 / seconds / cores:6.1f} MB/s per core; {size / 1e6 / used:6.1f} MB "
          f"per CPU second (the per-core rate on an idle machine; load now "
          f"{os.getloadavg()[0]:.1f})")
    with seaweedfs() as env:
        make_bucket(env, "bench")
        env = {**env, "TRACEWH_CACHE": str(Path(directory) / "cache")}
        remote = "s3://bench/warehouse"
        seconds = _timed_cli(remote, "ingest", str(ranks), "--run", "bench", "--phase",
                             "train", "--engine", "ray", env=env)
        work = max(seconds - ray_start, 1e-3)
        print(f"ray into S3 (SeaweedFS)       {rate(size, seconds)}  "
              f"{size / 1e6 / work / cores:6.1f} MB/s per core without Ray's start "
              f"and stop ({ray_start:.1f} s)")
        times = {name: [_timed_cli(where, "query", RAY_QUERY, env=env) for _ in range(2)]
                 for name, where in (("local", local), ("s3", remote))}
    print(f"query, local directory        {times['local'][0]:6.2f} s "
          f"(again {times['local'][1]:.2f} s)")
    print(f"query, S3 (first, downloads)  {times['s3'][0]:6.2f} s "
          f"(again, from the cache {times['s3'][1]:.2f} s)")


def bench_ray_large(directory, ray_start):
    """One large file into a local directory: cut by the driver and each chunk a Ray task
    (a local Ray on this machine's cores), beside the in-process ingest's workers (as many
    as the cores); alternating rounds, each side's best."""
    trace = generate(RAY_LARGE_COPIES, directory)
    size, cores = trace.stat().st_size, os.cpu_count() or 1
    print(f"\n== ray: one file of {mb(size)}, chunk by chunk, on {cores} cores ==")
    found = {"in-process": [], "ray": []}
    for round_ in range(2):
        for name, engine in (("in-process", "local"), ("ray", "ray")):
            warehouse = Path(directory) / f"large-{name}-{round_}"
            found[name].append(_timed_cli(warehouse, "ingest", str(trace), "--run", "large",
                                          "--phase", "train", "--engine", engine))
            shutil.rmtree(warehouse)
    best = {name: min(times) for name, times in found.items()}
    print(f"in-process ({cores} workers)       {rate(size, best['in-process'])}")
    print(f"ray, a task per chunk         {rate(size, best['ray'])}  "
          f"{rate(size, max(best['ray'] - ray_start, 1e-3))} without Ray's start and stop "
          f"({ray_start:.1f} s)")
    print(f"ray / in-process              {best['ray'] / best['in-process']:6.2f}x "
          f"({(best['ray'] - ray_start) / best['in-process']:.2f}x without Ray's start; "
          f"load {os.getloadavg()[0]:.1f})")
    trace.unlink()


def print_machine():
    """The machine and the libraries the figures were taken with: hosts of one machine kind
    differ (the native core ran at 653 MB/s of one core on one, 390 MB/s on another, where
    json.load took 1.08x as long), so figures of two runs compare only beside these."""
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "an unknown CPU")
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}"
                         for name in ("duckdb", "pyarrow", "numpy"))
    print(f"== {model}, {len(os.sched_getaffinity(0))} cores; Python "
          f"{sys.version.split()[0]}, {versions} ==")


def main(sections):
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    compile_bytecode(*(ROOT / name for name in ("warehouse", "ingest", "sql")))
    print_machine()
    if "startup" in sections and WITH_MEMORY.exists():
        with tempfile.TemporaryDirectory(prefix="tracewh-bench-") as directory:
            bench_startup(directory)
    if {"fleet", "refresh"} & sections:
        with tempfile.TemporaryDirectory(prefix="tracewh-bench-") as directory:
            small, large = build_fleets(directory, large_too="fleet" in sections)
            if "fleet" in sections:
                bench_fleet(small, large)
            if "refresh" in sections:
                bench_refresh(small, large)
    if not TRAIN.exists() or not SCALE.exists():
        print(f"skipped: {TRAIN} or {SCALE} is not available")
        print_bars()
        return
    with tempfile.TemporaryDirectory(prefix="tracewh-bench-") as directory:
        trace = generate(64, directory)
        warehouse = Path(directory) / "warehouse"
        if "ingest" in sections:
            previous = previous_release(directory)
            try:
                bench_ingest(trace, warehouse, previous)
            finally:
                if previous is not None:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                    str(previous)], capture_output=True)
        if "decode" in sections:
            bench_decode(trace)
        if "views" in sections:
            if not warehouse.exists():
                measure_ingest(trace, warehouse)
            bench_every_view(warehouse)
            bench_views(warehouse)
        if "fleet64" in sections:
            bench_fleet64(directory, trace)
        trace.unlink()
        if "scale" in sections:
            bench_scale(directory)
        if "critpath" in sections:
            bench_critical_path(directory)
        if "memory" in sections and WITH_MEMORY.exists():
            bench_memory(directory)
        if "ray" in sections:
            bench_ray(directory)
        if "huge" in sections and not os.environ.get("TRACEWH_BENCH_QUICK"):
            huge = generate(512, directory)
            size = huge.stat().st_size
            seconds, peak, refresh_s, _ = measure_ingest(huge,
                                                         Path(directory) / "huge-warehouse")
            print(f"\n== huge trace: {mb(size)} ==\ningest {seconds:.1f} s, "
                  f"{size / 1e6 / seconds:.1f} MB/s, peak RSS {mb(peak)} (goal < 2,000 MB); "
                  f"of which the refresh {refresh_s:.1f} s")
    print_bars()


if __name__ == "__main__":
    unknown = set(sys.argv[1:]) - set(SECTIONS)
    if unknown:
        sys.exit(f"unknown sections: {' '.join(sorted(unknown))} (of: {' '.join(SECTIONS)})")
    main(set(sys.argv[1:]) or set(SECTIONS))
