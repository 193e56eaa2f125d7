"""What the warehouse derives from its tables after every writing command: the marts (Delta
tables of the main views' answers, `marts`) and the DuckDB database file that BI tools open
(`duckdb_file`)."""

import concurrent.futures
import json
import shutil
import time
from dataclasses import dataclass, field

import duckdb

from ..storage import links
from .duckdb_file import FILE_NAME, write_duckdb_file
from ..errors import FollowUpFailed, RefreshInterrupted
from ..storage.layout import DONE_FILE, RECOMPUTE_FILE
from .marts import changed_marts, current_mart_files, mart_path, refresh_marts
from ..query.library import library_fingerprint
from ..rules import effective_rules


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
    if not catalog.store.local:  # marts and tracewh.duckdb are kept on local disk only
        return DerivedRefresh()
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
                shutil.rmtree(mart_path(catalog.root, name))
        if _read_json(done_file) == {**done, "file": _stamp(catalog.root / FILE_NAME)} \
                and not recompute:
            return DerivedRefresh(up_to_date=True)
        try:
            # The DuckDB file does not read the marts: it is written beside them, on the
            # core their Python leaves free (DuckDB and delta-rs release the GIL).
            with concurrent.futures.ThreadPoolExecutor(1) as beside:
                file_written = beside.submit(_timed, write_duckdb_file, catalog, snapshot, rules)
                marts, marts_seconds = _timed(refresh_marts, catalog, snapshot, rules, recompute)
                _, file_seconds = file_written.result()
            links.write_text(done_file,
                             json.dumps({**done, "file": _stamp(catalog.root / FILE_NAME)}))
            recompute_file.unlink(missing_ok=True)
        except (OSError, duckdb.Error) as error:  # the caller says what it committed
            raise FollowUpFailed(f"{catalog.root}: the marts and {FILE_NAME} were not brought "
                                 f"up to date ({error}); `tracewh refresh` tries again") from None
        except KeyboardInterrupt:
            raise RefreshInterrupted(f"interrupted: what was committed stays; the marts and "
                                     f"{FILE_NAME} may lag behind it until `tracewh refresh` "
                                     "(or the next ingest)") from None
        return DerivedRefresh(marts.runs, marts_seconds, file_seconds, remade=remade)


def _timed(function, *arguments):
    """(function(*arguments), the seconds it took)."""
    started = time.perf_counter()
    return function(*arguments), time.perf_counter() - started


def current_marts(catalog, snapshot, rules, only=None):
    """{mart: its files} of the marts that hold exactly their views' rows at `snapshot` under
    `rules`, for a query to read instead of computing the views over every file: the last
    refresh derived from this snapshot with these rules and no run waits to be computed
    again. {} otherwise (the views are computed). With `only`, of those marts alone."""
    if not catalog.store.local:  # none kept there (see refresh_derived)
        return {}
    done = _read_json(catalog.state / DONE_FILE) or {}
    derived_from = _derived_from(snapshot, rules)
    if ({key: done.get(key) for key in derived_from} != derived_from
            or _read_json(catalog.state / RECOMPUTE_FILE)):
        return {}
    return current_mart_files(catalog.root, snapshot, rules, only)


def _derived_from(snapshot, rules):
    """What the done file records a refresh derived from (beside the DuckDB file's stamp)."""
    return {"versions": snapshot.versions, "fingerprint": library_fingerprint(rules)}


def mark_for_recompute(catalog, run):
    """Have the next refresh compute the marts' rows of `run` again, whatever its traces'
    sequence numbers say (under the writers' lock, without its recovery: this touches no
    table, and is called inside a repair's commits, which a recovery would roll back)."""
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
