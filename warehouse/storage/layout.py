"""Where a warehouse's files are: the partition layout every layer that names a file follows,
and the names of what is derived from the tables.

    <table>/run=<run>/phase=<phase>/rank=<rank>/<trace_id>-<part>.parquet     ingested parts
    <table>/run=<run>/phase=<phase>/rank=<rank>/<trace_id>-v<version>.parquet merged by optimize
    _tracewh/staging/<pid>-<random>/<table>.<part>.parquet                   being ingested
    marts/<view>/run=<run>/...                                               the marts
    tracewh.duckdb                                                           for BI tools

Every file is named after its trace, so what a trace owns is known from its path alone (see
`trace_id_of`); the Hive directories give Spark, Trino and DuckDB the partition values.
"""

from pathlib import Path

# The tables of a trace's events; the others are derived from them (kernel_names,
# gpu_intervals, gpu_time, step_time), or from its top-level keys (devices, traces).
EVENT_TABLES = ("kernels", "cpu_ops", "runtime", "flows", "counters", "instants", "metadata",
                "other_events")
# A table's data files, for readers that scan a directory (tracewh.duckdb's tables).
FILES_GLOB = "*/*/*/*.parquet"
MARTS_DIR = "marts"
DUCKDB_FILE = "tracewh.duckdb"
DONE_FILE = "derived.json"  # in _tracewh/: the snapshot and fingerprint last derived from
# In _tracewh/: runs whose mart rows must be computed again though no trace of theirs is newer
# than the marts (a phase deleted); written before the commits, removed once derived.
RECOMPUTE_FILE = "recompute.json"


def partition(run, phase, rank):
    """A partition's directory, relative to its table."""
    return f"run={run}/phase={phase}/rank={rank}"


def part_file(trace_id, part):
    """An ingested part's file name."""
    return f"{trace_id}-{part:05d}.parquet"


def merged_file(trace_id, version):
    """The file name of parts merged by `optimize` at a table's `version`."""
    return f"{trace_id}-v{version:06d}.parquet"


def staged_name(table, part):
    """A part's file name in a staging directory."""
    return f"{table}.{part:05d}.parquet"


def trace_prefix(run, phase, rank, trace_id):
    """The start of every path, relative to its table, of a trace's files."""
    return f"{partition(run, phase, rank)}/{trace_id}-"


def trace_id_of(path):
    """The trace a file belongs to, from its name (`<trace_id>-<part>.parquet`)."""
    return Path(path).name.split("-", 1)[0]
