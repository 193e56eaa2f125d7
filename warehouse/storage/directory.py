"""A warehouse directory as every command checks it before reading a table: a warehouse's
state directory, the control paths that must not be links, the newest pointer of the
`traces` log (see `catalog`), in a local directory or an object store (see `storage`).
Without pyarrow or delta-rs (a third of a second to import): a
query answered from tracewh.duckdb (see `prepared`) checks all of it too, at the cost of a
few stats.
"""

import os

from . import layout, links
from .. import storage
from .delta_log import LOG_DIR, commit_info, is_table, latest_version
from ..errors import HINT, WarehouseError
from ..rules import WAREHOUSE_RULES

STATE_DIR = "_tracewh"
TRACES = "traces"
OLD_MANIFEST = "manifest.json"
COMMITTING = "committing"  # present while a commit is under way
DAMAGED = "damaged"  # damaged commits of killed writers, set aside
LOCK = "lock"
STAGING = "staging"


def default_location():
    """$TRACEWH_WAREHOUSE as given (a Path would make `s3://b` `s3:/b`), else ./warehouse."""
    return os.environ.get("TRACEWH_WAREHOUSE") or "warehouse"


def check_readable(root, tables, lost_state):
    """Refuse to read a directory that does not exist or is not a warehouse (see
    `check_not_foreign`): a mistyped --warehouse would otherwise answer every query with no
    rows."""
    if not storage.of(root).is_dir(root):
        raise WarehouseError(f"no warehouse at {root}: the directory does not exist "
                             f"(ingest traces into it first{HINT})",
                             cli_hint=", or pass --warehouse DIR")
    check_not_foreign(root, tables, lost_state)


def check_not_foreign(root, tables, lost_state):
    """Refuse a directory that holds other things (a source tree, say), and a warehouse
    of an earlier tracewh, for reading or writing: a warehouse is a new or empty
    directory, or one with the catalog's state; and one whose control paths (of `tables`)
    are links. `lost_state()`: whether the state directory is gone from a warehouse."""
    # One listing decides: a concurrent first ingest creates _tracewh/ before anything else.
    store = storage.of(root)
    names = set(store.names(root))
    if names and STATE_DIR not in names:
        if lost_state():
            raise WarehouseError(f"{root}: its {STATE_DIR}/ is gone, but its tables are "
                                 f"a tracewh warehouse's: `tracewh refresh` recreates "
                                 f"{STATE_DIR}/ (put back kernel_rules.toml by hand, if it "
                                 "held one)")
        raise WarehouseError(f"{root} is not a tracewh warehouse: it holds other files "
                             f"and no {STATE_DIR}/", cli_hint=" (pass --warehouse DIR)")
    if store.exists(root / STATE_DIR / OLD_MANIFEST):
        raise WarehouseError(f"{root} was written by an earlier tracewh (warehouse "
                             f"format 4 or older, before Delta Lake tables): ingest the "
                             f"traces again into a new warehouse")
    if store.local:  # an object store has no links
        links.check_no_links(control_paths(root, tables))


def control_paths(root, tables):
    """The paths tracewh writes, deletes or trusts, which must not be links (see
    `links`): its state, the tables and their logs, the marts (what marts/ holds),
    tracewh.duckdb."""
    state_dir = root / STATE_DIR
    state = [state_dir / name for name in (LOCK, STAGING, COMMITTING, DAMAGED,
                                           layout.DONE_FILE, layout.RECOMPUTE_FILE)]
    table_paths = [root / name for name in tables]
    marts_dir = root / layout.MARTS_DIR
    marts = (list(marts_dir.iterdir()) if marts_dir.is_dir() and not marts_dir.is_symlink()
             else [])
    return [state_dir, *state, root / WAREHOUSE_RULES, root / layout.DUCKDB_FILE,
            marts_dir, *table_paths, *marts, *(path / LOG_DIR for path in table_paths + marts)]


def newest_pointer(root):
    """(version of `traces`, its pointer: {"format", "seq", "class_rules", "versions"}) of
    the newest commit of `traces` that holds one; None for a warehouse not yet written."""
    traces = storage.location(root) / TRACES
    if not is_table(traces):
        return None
    version = latest_version(traces)
    while version >= 0:
        pointer = commit_info(traces, version).get("tracewh")
        if pointer is not None:
            return version, pointer
        version -= 1
    return None
