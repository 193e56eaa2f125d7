"""The library's one surface: a `Warehouse` (its catalog, one snapshot, the kernel rules), which
`tracewh.open` returns to notebooks and scripts and every CLI command works through.

    import tracewh
    wh = tracewh.open("my-warehouse")
    wh.ingest("traces/nightly-1129/", run="nightly-1129", phase="train")
    wh.sql("SELECT * FROM overlap WHERE run = 'nightly-1129'").df()    # or .pl(), .arrow()
    wh.diff("nightly-1128", "nightly-1129")["summary"]

A Warehouse answers from one snapshot: the one of its first query, until its own `ingest`
(or `reload()`) moves it to the newest. Tables, views and macros are those of `tracewh
query`; statements run on an in-memory DuckDB connection, so a CREATE TEMP TABLE is the
notebook's own. The directory is checked to be a warehouse once, by the first question asked
of it (a directory that does not exist yet is one the first `ingest` creates).

`sql` has DuckDB's full access, as `tracewh query --allow-write`: it runs in the user's own
process, which can read any file anyway, and a notebook joins its own DataFrames by name and
COPYs results out (DuckDB's confinement would refuse both). It is therefore no guard for SQL
from others: run that with `tracewh query`, or `Warehouse.query`, which check it and confine
DuckDB to the warehouse's tables.

DuckDB, and the modules that ask it questions (connections, marts, analyses), are imported
where they are first used, not with this module: an ingest reads, decodes and measures its
traces without them, in its command and in the workers it forks (~28 MB of the command's
memory, 16 MB of it DuckDB's library, while the workers are at their peak), and imports them
for the refresh after its commit.
"""

from pathlib import Path

import pyarrow.parquet as pq

from .allocator import keep_freed_memory, stop_keeping_freed_memory
from tracewh.ingest.pipeline import ingest_options, ingest_paths
from tracewh.ingest.reader import MAX_EVENT_SIZE

from .storage.catalog import TRACES, Catalog
from .errors import FollowUpFailed
from .storage.names import check_phase, parse_tag
from .output import write_atomically
from .query.library import defines_name, library, modules_read_by, tables_read_by
from .peaks import effective_peaks
from .rules import effective_rules
from .query.scope import check_runs


def refresh_derived(catalog):
    """`derived.refresh_derived`, imported at the first refresh (see `Warehouse.ingest_files`)."""
    from .derived import refresh_derived as refresh

    refresh(catalog)


class Warehouse:
    """A warehouse directory (created by the first `ingest` if it does not exist)."""

    def __init__(self, path, rules=None, peaks=None):
        self.catalog = Catalog(path)
        self.rules = None if rules is None else Path(rules)  # a kernel rules TOML file
        self.peaks = None if peaks is None else Path(peaks)  # a device peaks TOML file
        self._checked = None  # "read" or "write": what the directory was checked to allow
        self._snapshot = None
        self._kernel_rules = None
        self._device_peaks = None
        self._connection = None

    @property
    def path(self):
        return self.catalog.root

    def __repr__(self):
        return f"tracewh.open({str(self.path)!r})"

    def with_rules(self, rules):
        """This warehouse classifying kernels by the rules file `rules` (itself when None)."""
        return self if rules is None else Warehouse(self.path, rules, self.peaks)

    def with_peaks(self, peaks):
        """This warehouse measuring op_perf against the device peaks file `peaks` too
        (itself when None)."""
        return self if peaks is None else Warehouse(self.path, self.rules, peaks)

    # -- the warehouse's state, read once ----------------------------------------------------

    def readable(self):
        """The catalog, the directory checked to be a warehouse (once: every question asked
        of this object after the first trusts it)."""
        if self._checked != "read":
            self.catalog.check_readable()
            self._checked = "read"
        return self.catalog

    def writable(self):
        """The catalog, the directory checked to be a warehouse or one to become one."""
        if self._checked is None:
            self.catalog.check_not_foreign()
            self._checked = "write"
        return self.catalog

    @property
    def snapshot(self):
        """The snapshot this object answers from (see the module's docstring)."""
        if self._snapshot is None:
            self._snapshot = self.readable().snapshot()
        return self._snapshot

    @property
    def kernel_rules(self):
        """The kernel rules its queries classify by: the `rules` file's, else the
        warehouse's own, else the defaults."""
        if self._kernel_rules is None:
            self._kernel_rules = effective_rules(self.readable().root, self.rules)
        return self._kernel_rules

    @property
    def device_peaks(self):
        """The device peaks op_perf measures against: the `peaks` file's, then the
        defaults (a bad file is refused here, before any data is read)."""
        if self._device_peaks is None:
            self._device_peaks = effective_peaks(self.peaks)
        return self._device_peaks

    def run_infos(self):
        """The runs, in the order of their first commit: [catalog.RunInfo]."""
        return self.readable().runs(self.snapshot)

    # -- connections -------------------------------------------------------------------------

    def connect(self, runs=None, tables=None, allow_write=False, modules=None, marts=True):
        """A new DuckDB connection over the snapshot (see `connection.connect`), or over
        `runs` of it, confined to the warehouse's tables unless `allow_write`; with
        `modules`, only those library modules defined. The views whose marts hold their rows
        at this snapshot read them, of the connection's runs (unless `marts` is false): a
        question about all of a thousand runs reads a file per run, not a hundred, and the
        job's critical path of one run is read, not walked again (seconds to minutes)."""
        from .derived.marts import MARTS

        current = (self.current_marts(None if modules is None else set(modules) & set(MARTS))
                   if marts else None)
        return self._connect(runs, tables, allow_write, modules, current)

    def _connect(self, runs, tables, allow_write, modules, marts):
        from .query import connection as connections

        return connections.connect(self.readable(), self.snapshot, self.kernel_rules, runs,
                                   tables, allow_write, self.device_peaks, modules, marts)

    def current_marts(self, only=None):
        """{view: its mart's files} of the marts current for the snapshot and the rules (see
        `derived.current_marts`); with `only`, of those marts alone (a mart's log read costs
        ~0.1 s at 1,000 runs)."""
        from .derived import current_marts

        return current_marts(self.readable(), self.snapshot, self.kernel_rules, only)

    def connect_to_runs(self, runs, reads=None):
        """A connection over `runs` only, each checked to be in the warehouse first (an
        unknown one is refused with close names); with `reads` (names of views, macros or
        tables), over the tables they read only."""
        check_runs([info.run for info in self.run_infos()], *runs)
        return self.connect_over_runs(set(runs), reads)

    def connect_over_runs(self, runs, reads=None):
        """A confined connection over `runs` (with `reads`, over the tables they read only):
        the warehouse's tracewh.duckdb over those runs' files and the marts current when it
        was written, where it is of this snapshot and the warehouse's own rules and the
        default peaks are asked for (see `prepared.connect_prepared`: no library to define,
        ~1-4 s), else a new one (reading the marts current for this snapshot and rules)."""
        from .query.prepared import connect_prepared

        if self.rules is None and self.peaks is None:
            prepared = connect_prepared(self.path, runs, reads,
                                        {**self.snapshot.versions})
            if prepared is not None:
                return prepared
        return self.connect(runs, tables_read_by(*reads) if reads else None,
                            modules=modules_read_by(*reads) if reads else None)

    def connect_over_every_run(self, reads):
        """A confined connection over every run, defining what the views and macros `reads`
        read only."""
        return self.connect(modules=modules_read_by(*reads))

    @property
    def connection(self):
        """The DuckDB connection `sql` runs on, with full access (made at first use)."""
        if self._connection is None:
            self._connection = self.connect(allow_write=True)
        return self._connection

    # -- questions ---------------------------------------------------------------------------

    def sql(self, query, params=None):
        """A DuckDB relation of `query` over every run: `.df()`, `.pl()`, `.arrow()`,
        `.fetchall()`, or more SQL on it. Full access: see the module's docstring."""
        return self.connection.sql(query, params=params)

    def query(self, sql, allow_write=False):
        """Run every statement of `sql`: a list of (columns, rows), as `tracewh query`. A
        read-only query is checked and confined; one about given runs (see
        `runs_a_query_names`: a script's statements, the union of theirs) is asked of a
        connection over those runs."""
        from .query.statements import run_statements

        with self._connect_for(sql, allow_write) as connection:
            return run_statements(connection, sql, allow_write=allow_write)

    def query_to_parquet(self, sql, path, allow_write=False):
        """Run every statement of `sql` and write the last one's result to `path` as Parquet,
        its types kept (DuckDB's Arrow result; zstd); return the number of rows. The file
        appears whole or not at all."""
        from .query.statements import last_result_table

        with self._connect_for(sql, allow_write) as connection:
            table = last_result_table(connection, sql, allow_write=allow_write)
        write_atomically(path, lambda handle: pq.write_table(table, handle, compression="zstd"))
        return table.num_rows

    def _connect_for(self, sql, allow_write):
        """A connection for `sql`: over the runs it is about, when that can be told, and
        defining only the library modules it reads (binding all ~60 views costs ~1 s)."""
        from .derived.marts import MARTS
        from .query.query_analysis import names_a_query_reads, runs_a_query_names

        names = None if allow_write else names_a_query_reads(sql)
        modules = (modules_read_by(*names) if names is not None and all(map(defines_name, names))
                   else None)
        source = None if allow_write else runs_a_query_names(sql)
        if source is not None:
            runs, read = source
            return self.connect(runs, tables_read_by(*read), modules=modules)
        # the logs of the marts the query reads only, through the views it names (none read:
        # none opened)
        marts = self.current_marts(
            None if names is None else set(names if modules is None else modules) & set(MARTS))
        # only the tables read, but for the marts read instead: listing and binding all
        # 13 over 8,000 files each took 2.5 s of an all-runs count of kernels
        tables = (tables_read_by(*(name for name in names if name not in marts))
                  if modules is not None else None)
        return self._connect(None, tables, allow_write, modules, marts)

    def runs(self):
        """The `runs` view, in commit order: a DuckDB relation."""
        return self.sql("SELECT * FROM runs ORDER BY first_seq")

    def runs_table(self):
        """(columns, rows) of the `runs` view, in commit order, computed over the `traces`
        log alone: each traces file's statistics hold its row's values, so 1,000 runs (8,000
        files) take no data file read. A file without them (written by another engine) means
        the view is asked of the table itself."""
        import duckdb

        from .query.statements import run_query

        traces = self.readable().trace_rows(self.snapshot)
        sql = "SELECT * FROM runs ORDER BY first_seq"
        if traces is None:
            return self.query(sql)[0]
        with duckdb.connect() as connection:
            connection.register(TRACES, traces)
            connection.execute(library()["runs"][1])
            return run_query(connection, sql)

    def critical_path(self, run, phase=None, step=None, rank=None, top=10):
        """What set each step's length in `run`: {"breakdown": (columns, rows), "segments":
        (columns, rows)} — the critical path's time per class (the job's path,
        `critical_path_breakdown`, or with `rank` that rank's own) and its `top` longest
        events (`critical_path_by_name`, or with `rank` that rank's path by name). `phase`
        and `step` narrow them to one phase or step (its name, ProfilerStep#N)."""
        from .query.statements import run_query

        filters = "run = $run AND ($phase IS NULL OR phase = $phase) " \
                  "AND ($step IS NULL OR step = $step)"
        params = {"run": run, "phase": phase, "step": step}
        if rank is None:
            breakdown = ("SELECT phase, step, bound_by, ns, share FROM critical_path_breakdown "
                         f"WHERE {filters} ORDER BY phase, step, ns DESC, bound_by")
            segments = ("SELECT phase, step, rank, bound_by, ns, name "
                        f"FROM critical_path_by_name WHERE {filters} "
                        "ORDER BY ns DESC, phase, step, rank, name LIMIT $top")
        else:
            filters += " AND rank = $rank"
            params["rank"] = rank
            breakdown = ("SELECT phase, step, rank, bound_by, ns, edges "
                         f"FROM rank_critical_path_breakdown WHERE {filters} "
                         "ORDER BY phase, step, ns DESC, bound_by")
            segments = ("SELECT phase, step, rank, bound_by, "
                        "CAST(sum(ns) AS BIGINT) AS ns, name "
                        f"FROM rank_critical_path WHERE {filters} GROUP BY ALL "
                        "ORDER BY ns DESC, phase, step, name LIMIT $top")
        reads = ("critical_path_breakdown", "critical_path_by_name",
                 "rank_critical_path_breakdown", "rank_critical_path")
        with self.connect_to_runs([run], reads=reads) as connection:
            return {"breakdown": run_query(connection, breakdown, params=params),
                    "segments": run_query(connection, segments, params={**params, "top": top})}

    def diff(self, base, new, phase=None, rank=None, threshold=5.0, min_ns=10000, by="name",
             collective_size="pow2"):
        """Run `new` against run `base` (either may be "RUN:PHASE"), as `tracewh diff
        --format json`: a dict with kernels, metrics and a summary (`summary["regression"]`
        gates a nightly job; `summary["warnings"]` says where the sides differ)."""
        from .analyses.diff import DiffOptions

        options = DiffOptions(phase=phase, rank=rank, threshold_pct=threshold, min_ns=min_ns,
                              by=by, collective_size=collective_size)
        return self.diff_report(base, new, options)

    def diff_report(self, base, new, options):
        """`diff` with its DiffOptions."""
        from .analyses.diff import diff_in_warehouse

        return diff_in_warehouse(self, base, new, options)

    def trend(self, metric, last=None, tag=None, order_by_tag=None, phase=None):
        """One metric per run and phase (the median over ranks), as `tracewh trend`; `tag`
        is "KEY=VALUE": [{run, phase, ranks, value, min_value, max_value, tags}]."""
        columns, rows = self.trend_rows(
            metric, last=last, tag=None if tag is None else parse_tag(tag),
            order_by_tag=order_by_tag, phase=None if phase is None else check_phase(phase))
        return [dict(zip(columns, row)) for row in rows]

    def trend_rows(self, metric, last=None, tag=None, order_by_tag=None, phase=None):
        """(columns, rows) of `trend`, `tag` a (key, value) pair."""
        from .analyses.trend import trend_in_warehouse

        return trend_in_warehouse(self, metric, last, tag, order_by_tag, phase)

    # -- writing -----------------------------------------------------------------------------

    def ingest(self, *paths, run=None, phase=None, rank=None, tags=None, replace=False,
               strict=False, keep_secrets=False, jobs=1, max_event_size=MAX_EVENT_SIZE,
               max_json_size=None):
        """Ingest trace files, directories or globs, as `tracewh ingest` (the size limits in
        bytes, as --max-event-size and --max-json-size); return one
        IngestOutcome per file (`.status`: ingested, replaced, unchanged, failed or
        skipped; `.error` says why one failed). Later queries see what it committed (when
        the refresh after it fails, FollowUpFailed is raised, its `.done` the outcomes). With
        jobs > 1 and several files, the workers start from a forkserver: a script calling this
        must guard its main code with `if __name__ == "__main__":` (notebooks need nothing);
        one file's chunks are decoded on threads."""
        from tracewh.ingest.sources import expand_inputs

        options = ingest_options(run, phase, rank, tags, replace, strict, keep_secrets, jobs,
                                 embedded=True, max_event_size=max_event_size,
                                 max_json_size=max_json_size)
        self.close()
        try:
            return self.ingest_files(expand_inputs([str(p) for p in paths]), options)
        finally:
            self.reload()

    def ingest_files(self, files, options, on_done=None, on_bytes=None, engine=None,
                     transaction=None):
        """Ingest `files` (from `expand_inputs`) with IngestOptions and, when some were
        committed, refresh the derived tables: [IngestOutcome]. A refresh that fails raises
        FollowUpFailed with the outcomes as its `done`: what was committed stands, and is to
        be reported before it. With an `engine` (tracewh.ingest.engines), its workers decode
        the files and they are committed at once, with `transaction` (see
        tracewh.ingest.distributed)."""
        catalog = self.writable()
        keep_freed_memory()
        if engine is not None:
            from tracewh.ingest.distributed import ingest_with_engine

            outcomes = ingest_with_engine(catalog, files, options, engine, transaction,
                                          on_done=on_done)
        else:
            outcomes = ingest_paths(catalog, files, options, on_done=on_done,
                                    on_bytes=on_bytes)
        if not any(outcome.status in ("ingested", "replaced") for outcome in outcomes):
            return outcomes  # nothing to derive (a lag of other commands' is `refresh`'s)
        stop_keeping_freed_memory()  # the ingest's setting, not its refresh's
        try:
            refresh_derived(catalog)
        except FollowUpFailed as error:
            error.done = outcomes
            raise
        return outcomes

    # -- lifetime ----------------------------------------------------------------------------

    def reload(self):
        """Answer from the newest snapshot from now on (others' commits included)."""
        self.close()
        self._snapshot = self._kernel_rules = self._device_peaks = None
        if self._checked == "write":  # a warehouse created since is checked as one
            self._checked = None
        return self

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
