"""What the warehouse derives from its tables after every writing command: the marts (Delta
tables of the main views' answers, `marts`) and the DuckDB database file that BI tools open
(`duckdb_file`)."""

import concurrent.futures
import json
import time
from dataclasses import dataclass, field

import duckdb

from ..storage import links
from ..storage.catalog import Snapshot
from ..storage.delta import VersionTaken
from .duckdb_file import FILE_NAME, write_duckdb_file
from ..errors import FollowUpFailed, RefreshInterrupted
from ..storage.layout import DONE_FILE, RECOMPUTE_FILE
from ..query.engine_memory import give_back_freed_memory
from .marts import (changed_marts, current_mart_files, mart_listing, mart_path, refresh_marts,
                    remove_mart)
from ..query.library import library_fingerprint
from ..query.prepared import FILES_FORMAT
from ..rules import effective_rules

UNLOCKED_ATTEMPTS = 5  # an object store's refresh, planned again after a lost version
RECOMPUTE_MARKS = "recompute"  # an object store's folder of runs marked for recompute


@dataclass
class DerivedRefresh:
    runs: list = field(default_factory=list)  # the runs whose mart rows were computed again
    marts_seconds: float = 0.0
    file_seconds: float = 0.0
    up_to_date: bool = False  # nothing to do: derived from this snapshot already
    # {mart: (file, problem)}: marts made again, a file of theirs changed outside tracewh
    remade: dict = field(default_factory=dict)


def refresh_derived(catalog, verify=False):
    """Bring the marts and `tracewh.duckdb` to the newest snapshot, under the writers' lock
    (a concurrent ingest's refresh waits, then finds its runs done or does them). A failure
    leaves the committed traces as they are: the next writing command, or `tracewh refresh`,
    derives again. With `verify`, every mart's files are read, and a mart with a file not as
    its commit wrote it is made again (see `marts.changed_marts`)."""
    give_back_freed_memory()  # what the command freed before (an ingest's chunks)
    if not catalog.store.local:
        return _refresh_unlocked(catalog, verify)
    with catalog.locked():
        snapshot = catalog.snapshot()
        rules = effective_rules(catalog.root)
        done = _derived_from(snapshot, rules)
        done_file = catalog.state / DONE_FILE
        recompute_file = catalog.state / RECOMPUTE_FILE
        recompute = set(_read_json(recompute_file) or [])
        remade = changed_marts(catalog.root) if verify else {}
        if remade:  # made again whole (a damaged log's way): until then, no query reads it
            done_file.unlink(missing_ok=True)
            for name in remade:
                remove_mart(mart_path(catalog.root, name))
        before = _read_json(done_file)
        if (isinstance(before, dict) and {**before, "seq": None} == {
                **done, "file": _stamp(catalog.root / FILE_NAME), "seq": None}
                and not recompute):
            return DerivedRefresh(up_to_date=True)
        try:
            # The DuckDB file does not read the marts: it is written beside them, on the
            # core their Python leaves free (DuckDB and delta-rs release the GIL), and records
            # their files last, once they are current (none, where their refresh failed).
            listed, waited = concurrent.futures.Future(), []

            def listing():  # the file's seconds are its own, not the marts' it waited for
                found, seconds = _timed(listed.result)
                waited.append(seconds)
                return found

            with concurrent.futures.ThreadPoolExecutor(1) as beside:
                file_written = beside.submit(_timed, write_duckdb_file, catalog, snapshot, rules,
                                             None, listing)
                try:
                    marts, marts_seconds = _timed(refresh_marts, catalog, snapshot, rules,
                                                  recompute, _snapshot_of(before))
                    listed.set_result(mart_listing(catalog.root, marts.files))
                finally:
                    if not listed.done():
                        listed.set_result({})
                file_seconds = file_written.result()[1] - sum(waited)
            links.write_text(done_file, json.dumps(
                {**done, "file": _stamp(catalog.root / FILE_NAME), "seq": snapshot.seq}))
            recompute_file.unlink(missing_ok=True)
        except (OSError, duckdb.Error) as error:  # the caller says what it committed
            raise FollowUpFailed(f"{catalog.root}: the marts and {FILE_NAME} were not brought "
                                 f"up to date ({error}); `tracewh refresh` tries again") from None
        except KeyboardInterrupt:
            raise RefreshInterrupted(f"interrupted: what was committed stays; the marts and "
                                     f"{FILE_NAME} may lag behind it until `tracewh refresh` "
                                     "(or the next ingest)") from None
        return DerivedRefresh(marts.runs, marts_seconds, file_seconds, remade=remade)


def _refresh_unlocked(catalog, verify):
    """refresh_derived on an object store: the marts only (tracewh.duckdb is written to a
    local path, by `refresh --duckdb-file`). No lock orders writers there: each mart commit
    is created only if its version is free, and a refresh that lost one to another writer's
    plans again from the newest snapshot and marts (a mart of a newer snapshot than its own
    is left as it is, see marts._plan). A run marked for recompute (one object per run, so
    that no writer's mark overwrites another's) is unmarked once a refresh dropped it: one
    still in the snapshot it refreshed is marked by a `delete` not committed yet."""
    remade = changed_marts(catalog.root) if verify else {}
    for name in remade:
        remove_mart(mart_path(catalog.root, name))
    for _ in range(UNLOCKED_ATTEMPTS):
        snapshot = catalog.snapshot()
        marked = _marked_runs(catalog)
        try:
            marts, seconds = _timed(refresh_marts, catalog, snapshot,
                                    effective_rules(catalog.root), set(marked))
        except VersionTaken:
            continue
        except (OSError, duckdb.Error) as error:
            raise FollowUpFailed(f"{catalog.root}: the marts were not brought up to date "
                                 f"({error}); `tracewh refresh` tries again") from None
        held = {info.run for info in catalog.runs(snapshot)}
        for run, key in marked.items():
            if run not in held:
                catalog.store.delete(key)
        return DerivedRefresh(marts.runs, seconds, up_to_date=not marts.marts, remade=remade)
    raise FollowUpFailed(f"{catalog.root}: the marts were not brought up to date (other "
                         f"writers took their versions {UNLOCKED_ATTEMPTS} times); `tracewh "
                         "refresh` tries again")


def _marked_runs(catalog):
    """{run: its mark's location} of an object store's runs marked for recompute."""
    folder = catalog.state / RECOMPUTE_MARKS
    return {bytes.fromhex(name).decode(): folder / name
            for name in catalog.store.names(folder)}


def _timed(function, *arguments):
    """(function(*arguments), the seconds it took)."""
    started = time.perf_counter()
    return function(*arguments), time.perf_counter() - started


def current_marts(catalog, snapshot, rules, only=None):
    """{mart: its files} of the marts that hold exactly their views' rows at `snapshot` under
    `rules`, for a query to read instead of computing the views over every file: the last
    refresh derived from this snapshot with these rules and no run waits to be computed
    again. {} otherwise (the views are computed). With `only`, of those marts alone."""
    if not catalog.store.local:  # each mart's own state says (see current_mart_files)
        if _marked_runs(catalog):
            return {}
        return current_mart_files(catalog.root, snapshot, rules, only)
    done = _read_json(catalog.state / DONE_FILE) or {}
    derived_from = _derived_from(snapshot, rules)
    if ({key: done.get(key) for key in derived_from} != derived_from
            or _read_json(catalog.state / RECOMPUTE_FILE)):
        return {}
    return current_mart_files(catalog.root, snapshot, rules, only)


def _derived_from(snapshot, rules):
    """What the done file records a refresh derived from (beside the DuckDB file's stamp): a
    DuckDB file of an earlier format is written again by the next refresh."""
    return {"versions": snapshot.versions, "fingerprint": library_fingerprint(rules),
            "files": FILES_FORMAT}


def _snapshot_of(done):
    """The snapshot the done file says the last refresh derived from (its versions, and its
    seq, recorded beside them since the refresh lists a new run's files from the commits
    after it), or None (none recorded, or an earlier tracewh's record)."""
    try:
        return Snapshot(dict(done["versions"]), int(done["seq"]), ())
    except (KeyError, TypeError, ValueError):
        return None


def mark_for_recompute(catalog, run):
    """Have the next refresh compute the marts' rows of `run` again, whatever its traces'
    sequence numbers say (under the writers' lock, without its recovery: this touches no
    table, and is called inside a repair's commits, which a recovery would roll back)."""
    if not catalog.store.local:  # see _refresh_unlocked
        catalog.store.put_bytes(catalog.state / RECOMPUTE_MARKS / run.encode().hex(), b"")
        return
    with catalog.locked(recover=False):
        path = catalog.state / RECOMPUTE_FILE
        links.write_text(path, json.dumps(sorted(set(_read_json(path) or []) | {run})))


def _stamp(path):
    """[size, modification time] of the DuckDB file as written, or None: a file changed or
    replaced since (damaged, say) is written again, at the cost of a stat."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def _read_json(path):
    try:
        return json.loads(links.read_text(path))
    except (OSError, ValueError):
        return None
