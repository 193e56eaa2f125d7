"""What the warehouse derives from its tables after every writing command: the marts (Delta
tables of the main views' answers, `marts`) and the DuckDB database file that BI tools open
(`duckdb_file`)."""

import json
import time
from dataclasses import dataclass, field

import duckdb

from .duckdb_file import FILE_NAME, write_duckdb_file
from .errors import RefreshInterrupted, WarehouseError
from .marts import refresh_marts
from .query import library_fingerprint
from .rules import effective_rules

DONE_FILE = "derived.json"  # in _tracewh/: the snapshot and fingerprint last derived from


@dataclass
class DerivedRefresh:
    runs: list = field(default_factory=list)  # the runs whose mart rows were computed again
    marts_seconds: float = 0.0
    file_seconds: float = 0.0
    up_to_date: bool = False  # nothing to do: derived from this snapshot already


def refresh_derived(catalog):
    """Bring the marts and `tracewh.duckdb` to the newest snapshot, under the writers' lock
    (a concurrent ingest's refresh waits, then finds its runs done or does them). A failure
    leaves the committed traces as they are: the next writing command, or `tracewh refresh`,
    derives again."""
    with catalog.locked():
        snapshot = catalog.snapshot()
        rules = effective_rules(catalog.root)
        done = {"versions": snapshot.versions, "fingerprint": library_fingerprint(rules)}
        done_file = catalog.state / DONE_FILE
        if _read_json(done_file) == {**done, "file": _stamp(catalog.root / FILE_NAME)}:
            return DerivedRefresh(up_to_date=True)
        try:
            started = time.perf_counter()
            marts = refresh_marts(catalog, snapshot, rules)
            between = time.perf_counter()
            write_duckdb_file(catalog, snapshot, rules)
        except (OSError, duckdb.Error) as error:
            raise WarehouseError(f"{catalog.root}: the traces are committed, but the marts and "
                                 f"{FILE_NAME} were not brought up to date ({error}); "
                                 "`tracewh refresh` tries again") from None
        except KeyboardInterrupt:
            raise RefreshInterrupted(f"interrupted: what was committed stays; the marts and "
                                     f"{FILE_NAME} may lag behind it until `tracewh refresh` "
                                     "(or the next ingest)") from None
        done_file.write_text(json.dumps({**done, "file": _stamp(catalog.root / FILE_NAME)}))
        return DerivedRefresh(marts.runs, between - started, time.perf_counter() - between)


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
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
