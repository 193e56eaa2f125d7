"""The storage layer: where a warehouse's bytes are, and the tables kept there.

Its base is the warehouse's contracts, which import nothing of tracewh but each other and the
errors: `schema` (the tables), `layout` (their files' paths), `parquet` (how they are
written), `names`. On them: `delta_log`, `delta_schema`, `delta` and `catalog` (the Delta
tables, their snapshots and commits), `directory` and `integrity` (a warehouse's state, and
damage from outside), `links` (no symbolic link followed).

Every one of them names places by *locations*, through one interface (`base.Storage`) with
two backends: `local.LocalStorage` (the file system, what tracewh always did) and
`objects.ObjectStorage` (S3 and what speaks its protocol: MinIO, SeaweedFS, R2, GCS's XML
API). A location is a `pathlib.Path` for a local directory, a `base.Location` for an object
store's key, built by `location()` from what the user typed; `of(location)` is the backend
that reads and writes it. The object store's libraries are imported only for an s3://
location (the CLI's start-up stays that of a local warehouse).
"""

import os
import re
from pathlib import Path

from .base import Location, Storage
from .local import LocalStorage

# scheme://...: an object store's address (s3://bucket/path), not a local directory's name
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")
SCHEMES = ("s3",)


def is_url(text):
    return isinstance(text, (str, Location)) and bool(_URL.match(str(text)))


def location(where):
    """A location from a path, a URL or a location: a Path for a local directory, a Location
    for an object store's (s3://bucket/prefix). A URL of another scheme is a UsageError."""
    if isinstance(where, (Path, Location)):
        return where
    if is_url(where):
        return Location.parse(str(where), SCHEMES)
    return Path(where)


_LOCAL = LocalStorage()
# {(process id, bucket): ObjectStorage}: one client (and its connections) per bucket and
# process: a forked ingest worker would otherwise share its parent's open connections.
_STORES = {}


def of(where):
    """The backend that holds `where` (a location)."""
    if not isinstance(where, Location):
        return _LOCAL
    key = (os.getpid(), where.bucket)
    store = _STORES.get(key)
    if store is None:
        from .objects import ObjectStorage  # botocore: only for an object store

        store = _STORES[key] = ObjectStorage(where.bucket)
    return store


__all__ = ["Location", "Storage", "has_size", "is_url", "location", "of"]


def has_size(where, size):
    """Whether the file at `where` (a location, or a local path's text) is there with `size`
    bytes: what a reader checks of a file whose size a commit recorded, a stat each."""
    where = location(where)
    try:
        return of(where).size(where) == size
    except FileNotFoundError:
        return False
