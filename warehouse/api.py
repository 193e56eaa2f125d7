"""The Python API, for notebooks and scripts: the CLI's work as methods, answers as DuckDB
relations and plain dicts.

    import tracewh
    wh = tracewh.open("my-warehouse")
    wh.ingest("traces/nightly-1129/", run="nightly-1129", phase="train")
    wh.sql("SELECT * FROM overlap WHERE run = 'nightly-1129'").df()    # or .pl(), .arrow()
    wh.diff("nightly-1128", "nightly-1129")["summary"]

A Warehouse answers from one snapshot: the one of its first query, until its own `ingest`
(or `reload()`) moves it to the newest. Tables, views and macros are those of `tracewh
query`; statements run on an in-memory DuckDB connection, so a CREATE TEMP TABLE is the
notebook's own.

`sql` has DuckDB's full access, as `tracewh query --allow-write`: it runs in the user's own
process, which can read any file anyway, and a notebook joins its own DataFrames by name and
COPYs results out (DuckDB's confinement would refuse both). It is therefore no guard for SQL
from others: run that with `tracewh query`, or `tracewh.query.query_warehouse`, which check
it and confine DuckDB to the warehouse's tables.
"""

from pathlib import Path

from .catalog import Catalog
from .diff import DIFF_READS, DiffOptions, diff_runs, trend_in_warehouse
from .ingesting import MAX_EVENT_SIZE, ingest_files, ingest_options
from .names import check_phase, parse_tag
from .query import connect, connect_to_runs


class Warehouse:
    """A warehouse directory (created by the first `ingest` if it does not exist)."""

    def __init__(self, path, rules=None):
        self.catalog = Catalog(path)
        self.rules = None if rules is None else Path(rules)  # a kernel rules TOML file
        self._connection = None

    @property
    def path(self):
        return self.catalog.root

    def __repr__(self):
        return f"tracewh.open({str(self.path)!r})"

    @property
    def connection(self):
        """The DuckDB connection the queries run on (made at first use)."""
        if self._connection is None:
            self._connection = connect(self.path, self.rules, allow_write=True)
        return self._connection

    def sql(self, query, params=None):
        """A DuckDB relation of `query` over every run: `.df()`, `.pl()`, `.arrow()`,
        `.fetchall()`, or more SQL on it. Full access: see the module's docstring."""
        return self.connection.sql(query, params=params)

    def runs(self):
        """The `runs` view, in commit order: a DuckDB relation."""
        return self.sql("SELECT * FROM runs ORDER BY first_seq")

    def reload(self):
        """Answer from the newest snapshot from now on (others' commits included)."""
        self.close()
        return self

    def ingest(self, *paths, run=None, phase=None, rank=None, tags=None, replace=False,
               strict=False, keep_secrets=False, jobs=1, max_event_size=MAX_EVENT_SIZE,
               max_json_size=None):
        """Ingest trace files, directories or globs, as `tracewh ingest` (the size limits in
        bytes, as --max-event-size and --max-json-size); return one
        IngestOutcome per file (`.status`: ingested, replaced, unchanged, failed or
        skipped; `.error` says why one failed). Later queries see what it committed (when
        the refresh after it fails, FollowUpFailed is raised, its `.done` the outcomes). With
        jobs > 1, the workers start from a forkserver: a script calling this must guard its
        main code with `if __name__ == "__main__":` (notebooks need nothing)."""
        from tracewh.ingest.sources import expand_inputs

        options = ingest_options(run, phase, rank, tags, replace, strict, keep_secrets, jobs,
                                 embedded=True, max_event_size=max_event_size,
                                 max_json_size=max_json_size)
        self.close()
        outcomes = ingest_files(self.catalog, expand_inputs([str(p) for p in paths]), options)
        self.reload()
        return outcomes

    def diff(self, base, new, phase=None, rank=None, threshold=5.0, min_ns=10000, by="name"):
        """Run `new` against run `base`, as `tracewh diff --format json`: a dict with
        kernels, metrics and a summary (`summary["regression"]` gates a nightly job)."""
        options = DiffOptions(phase=phase, rank=rank, threshold_pct=threshold, min_ns=min_ns,
                              by=by)
        connection = connect_to_runs(self.path, [base, new], self.rules, reads=DIFF_READS)
        return diff_runs(connection, base, new, options)

    def trend(self, metric, last=None, tag=None, order_by_tag=None, phase=None):
        """One metric per run and phase (the median over ranks), as `tracewh trend`; `tag`
        is "KEY=VALUE": [{run, phase, ranks, value, min_value, max_value, tags}]."""
        columns, rows = trend_in_warehouse(
            self.path, metric, last=last, tag=None if tag is None else parse_tag(tag),
            order_by_tag=order_by_tag, phase=None if phase is None else check_phase(phase))
        return [dict(zip(columns, row)) for row in rows]

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

