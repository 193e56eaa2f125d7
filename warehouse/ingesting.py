"""Ingesting, for the CLI's `ingest` and the Python API alike: options checked as names and
ranks, the files committed, then what the warehouse derives from them brought up to date."""

from tracewh.ingest.allocator import keep_freed_memory
from tracewh.ingest.pipeline import IngestOptions, ingest_paths
from tracewh.ingest.reader import MAX_EVENT_SIZE

from .derived import refresh_derived
from .errors import FollowUpFailed
from .names import check_name, check_phase, check_rank


def ingest_options(run=None, phase=None, rank=None, tags=None, replace=False, strict=False,
                   keep_secrets=False, jobs=1, embedded=False, max_event_size=MAX_EVENT_SIZE,
                   max_json_size=None):
    """IngestOptions with the run, phase, rank and tags checked (they become paths and
    literals), before anything is read or written."""
    tags = {check_name("tag key", key): check_name("tag value", value)
            for key, value in (tags or {}).items()}
    return IngestOptions(run=None if run is None else check_name("run", run),
                         phase=None if phase is None else check_phase(phase),
                         rank=None if rank is None else check_rank(rank),
                         tags=tags, replace=replace, strict=strict, keep_secrets=keep_secrets,
                         jobs=jobs, embedded=embedded, max_event_size=max_event_size,
                         max_json_size=max_json_size)


def ingest_files(catalog, files, options, on_done=None, on_bytes=None):
    """Ingest `files` (from `expand_inputs`) and, when some were committed, refresh the
    derived tables: [IngestOutcome]. A refresh that fails raises FollowUpFailed with the
    outcomes as its `done`: what was committed stands, and is to be reported before it."""
    catalog.check_not_foreign()
    keep_freed_memory()
    outcomes = ingest_paths(catalog, files, options, on_done=on_done, on_bytes=on_bytes)
    if not any(outcome.status in ("ingested", "replaced") for outcome in outcomes):
        return outcomes  # nothing to derive (a lag of other commands' is `refresh`'s)
    try:
        refresh_derived(catalog)
    except FollowUpFailed as error:
        error.done = outcomes
        raise
    return outcomes
