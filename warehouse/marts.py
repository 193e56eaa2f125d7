"""Derived tables (marts): the answers of the main views, as Delta tables under
`<warehouse>/marts/<view>/`, for tools that read Parquet or Delta but cannot run the library
(Spark jobs, polars, BI tools over files).

A mart holds its view's rows at the warehouse's snapshot, partitioned by run, and three
columns for dashboards:

  start_ns        the rank's first GPU activity (for rank_skew, the earliest of the phase's
                  ranks), ns, on the trace's clock (as `capture_spans.first_ns`)
  start_time      start_ns as a TIMESTAMP (UTC, microseconds); NULL when the time is relative
  relative_time   true when the trace's clock does not count from the Unix epoch (start_ns
                  before 2000-01-01: a trace written with time from its own start)

A refresh computes the rows of the runs committed since the mart's last refresh only (each
mart commit records the warehouse's commit sequence number it reflects), and drops runs the
warehouse no longer holds; a mart written from other SQL or other kernel rules is rebuilt.
"""

import shutil
import uuid
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from . import delta
from .delta import DataFile
from .connection import connect
from .layout import MARTS_DIR
from .library import library_fingerprint, modules_read_by, tables_read_by

MARTS = ("overlap", "kernel_stats", "run_metrics", "gpu_idle", "rank_skew",
         "launch_latency_summary", "kernel_class_histogram")
STATE_KEY = "tracewhMart"  # the commitInfo key of a mart's state
FORMAT = 1  # of the marts' extra columns: a change rebuilds them
RELATIVE_BEFORE_NS = 946_684_800 * 10**9  # 2000-01-01T00:00:00Z


@dataclass
class MartPlan:
    """What a refresh does to one mart."""

    version: int | None  # the mart's newest version; None when it is to be created
    rebuild: bool  # created again (other SQL, rules or format): every run recomputed
    recompute: set = field(default_factory=set)  # runs whose rows are computed again
    drop: set = field(default_factory=set)  # runs the warehouse no longer holds
    live: list = field(default_factory=list)  # the mart's files at `version` (DataFile)

    @property
    def needed(self):
        return bool(self.rebuild or self.recompute or self.drop)


@dataclass
class MartsRefresh:
    runs: list  # the runs recomputed (in any mart)
    marts: int  # marts committed


def mart_path(root, name):
    return root / MARTS_DIR / name


def mart_paths(root):
    """The marts' Delta tables that exist."""
    return [mart_path(root, name) for name in MARTS if delta.is_table(mart_path(root, name))]


def current_mart_files(root, snapshot, rules, only=None):
    """{mart: the paths of its live files} of the marts written from the library under
    `rules`, by the same tracewh, at `snapshot` or before it (a refresh committing meanwhile
    for a newer one makes its marts not current), whose newest commit is readable: the caller
    has established that the last refresh derived them from `snapshot`. Read only: a damaged
    mart is left for the next refresh to make again (it is not current). With `only`, of
    those marts alone."""
    fingerprint = _fingerprint(rules)
    current = {}
    for name in MARTS if only is None else [name for name in MARTS if name in only]:
        path = mart_path(root, name)
        try:
            if not delta.is_table(path):
                continue
            version = delta.latest_version(path)
            state = delta.commit_info(path, version).get(STATE_KEY)
            if (state is not None and state["fingerprint"] == fingerprint
                    and state["seq"] <= snapshot.seq):
                current[name] = delta.live_paths(path, version)
        except delta.DamagedLog:
            continue
    return current


def _fingerprint(rules):
    return f"{FORMAT}-{library_fingerprint(rules)}"


def refresh_marts(catalog, snapshot, rules, recompute=()):
    """Bring every mart to `snapshot` under the kernel `rules` (under the writers' lock,
    which the caller holds); the runs in `recompute` are computed again in any case (or
    dropped, when gone)."""
    newest = _newest_seq_of_runs(catalog, snapshot)
    fingerprint = _fingerprint(rules)
    plans = {name: _plan(mart_path(catalog.root, name), newest, snapshot, fingerprint)
             for name in MARTS}
    for plan in plans.values():
        plan.recompute |= set(recompute) & set(newest)
        plan.drop |= set(recompute) - set(newest)
    runs = set().union(*(plan.recompute for plan in plans.values()))
    if not any(plan.needed for plan in plans.values()):
        return MartsRefresh([], 0)
    committed = 0
    with connect(catalog, snapshot, rules, runs=runs,
                 tables=tables_read_by(*MARTS, "capture_spans"),
                 modules=modules_read_by(*MARTS, "capture_spans")) as connection:
        for name, plan in plans.items():
            if not plan.needed:
                continue
            _commit(mart_path(catalog.root, name), plan, _rows(connection, name),
                    {STATE_KEY: {"seq": snapshot.seq, "fingerprint": fingerprint}})
            committed += 1
    return MartsRefresh(sorted(runs), committed)


def _newest_seq_of_runs(catalog, snapshot):
    """{run: the newest ingest_seq of its traces}."""
    rows = catalog.trace_rows(snapshot)
    if rows is None:  # files without statistics: from the rows
        pairs = [(t.run, t.ingest_seq) for t in catalog.stored_traces(None, snapshot=snapshot)]
    else:
        pairs = zip(rows["run"].to_pylist(), rows["ingest_seq"].to_pylist())
    newest = {}
    for run, seq in pairs:
        newest[run] = max(seq, newest.get(run, seq))
    return newest


def _plan(path, newest, snapshot, fingerprint):
    try:
        if not delta.is_table(path):
            return MartPlan(None, True, set(newest))
        version = delta.latest_version(path)
        state = delta.commit_info(path, version).get(STATE_KEY)
        if state is None or state["fingerprint"] != fingerprint or state["seq"] > snapshot.seq:
            return MartPlan(version, True, set(newest))
        live = delta.live_files(path, version)
    except delta.DamagedLog:  # damaged from outside; what it derives is made again whole
        shutil.rmtree(path)
        return MartPlan(None, True, set(newest))
    return MartPlan(version, False, {run for run, seq in newest.items() if seq > state["seq"]},
                    {f.run for f in live} - set(newest), live)


def _rows(connection, name):
    """The view's rows (of the runs the connection holds), with the extra columns."""
    keys = "run, phase" if name == "rank_skew" else "run, phase, rank"
    on = " AND ".join(f"v.{key} = s.{key}" for key in keys.split(", "))
    table = connection.sql(
        f"SELECT v.*, s.start_ns FROM {name} v LEFT JOIN "
        f"(SELECT {keys}, min(first_ns) AS start_ns FROM capture_spans GROUP BY ALL) s "
        f"ON {on}").to_arrow_table()
    start = table["start_ns"]
    relative = pc.less(start, RELATIVE_BEFORE_NS)
    start_time = pc.if_else(relative, pa.scalar(None, pa.timestamp("us", tz="UTC")),
                            pc.cast(pc.divide(start, 1000), pa.timestamp("us", tz="UTC")))
    return table.append_column("start_time", start_time).append_column("relative_time",
                                                                      relative)


def _commit(path, plan, rows, info):
    """Write the rows' files, one directory per run, and commit them in place of the files of
    the recomputed and dropped runs."""
    from deltalake import DeltaTable

    version = plan.version
    if plan.rebuild:  # a new schema; every file removed
        DeltaTable.create(str(path), schema=rows.schema, partition_by=["run"],
                          mode="ignore" if version is None else "overwrite")
        version = delta.latest_version(path)
    removed = [] if plan.rebuild else [f for f in plan.live
                                       if f.run in plan.recompute | plan.drop]
    added = []

    def visit(written):
        relative = written.path[len(str(path)) + 1:]
        run = relative.split("/", 1)[0].removeprefix("run=")
        added.append(DataFile(relative, run, None, None, written.metadata.num_rows,
                              written.size))

    if rows.num_rows:
        # imported here: pyarrow.dataset imports pandas where it is installed (~0.3 s), a
        # cost every command would pay, not only those that write marts
        import pyarrow.dataset as ds

        ds.write_dataset(rows, str(path), format="parquet", partitioning=["run"],
                         partitioning_flavor="hive", existing_data_behavior="overwrite_or_ignore",
                         basename_template=f"{uuid.uuid4().hex}-{{i}}.parquet",
                         file_options=ds.ParquetFileFormat().make_write_options(
                             compression="zstd"),
                         file_visitor=visit)
    actions = [delta.remove_action(f) for f in removed] + [delta.add_action(f) for f in added]
    delta.commit(path, version + 1, actions, "WRITE", info)
