"""Where a warehouse's bytes are: a local directory or an object store (s3://bucket/prefix).

One interface (`base.Storage`), two backends: `local.LocalStorage` (the file system, what
tracewh always did) and `objects.ObjectStorage` (S3 and what speaks its protocol: MinIO,
SeaweedFS, R2, GCS's XML API). The warehouse's modules name places by *locations*: a
`pathlib.Path` for a local directory, a `base.Location` for an object store's key, built
by `location()` from what the user typed, and ask `of(location)` for the backend that
reads and writes them. The object store's libraries are imported only for an s3:// location
(the CLI's start-up stays that of a local warehouse).
"""

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
_STORES = {}  # {bucket: ObjectStorage}: one client (and its connections) per bucket


def of(where):
    """The backend that holds `where` (a location)."""
    if not isinstance(where, Location):
        return _LOCAL
    store = _STORES.get(where.bucket)
    if store is None:
        from .objects import ObjectStorage  # botocore: only for an object store

        store = _STORES[where.bucket] = ObjectStorage(where.bucket)
    return store


__all__ = ["Location", "Storage", "is_url", "location", "of"]
