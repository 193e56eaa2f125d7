"""Finding trace files and opening them: paths, directories and globs, or the objects of an
object store (s3://bucket/prefix: an object, or every trace under the prefix); plain or
gzipped JSON.

An object is named by a storage location (tracewh.storage.Location) wherever a local file is
by its path, and read with the warehouse's object-store client (the same AWS variables):
front to back as one streamed GET, and a chunk that another process normalises by a ranged
GET of its own (an engine's worker needs no copy, nor the path of a driver's disk).
"""

import fnmatch
import glob
import gzip
import hashlib
import os
import re
from pathlib import Path

from tracewh import storage
from tracewh.errors import TraceError, UsageError, path_text

TRACE_SUFFIXES = (".json", ".json.gz")
_GZIP_MAGIC = b"\x1f\x8b"
# By default a gzipped trace may hold at most this many times its size of JSON, and at least
# GZIP_LIMIT_FLOOR: real traces compress 7-20x, a gzip bomb of whitespace or repeated events
# ~1000x (4 MB holding 4 GB). A plain file has no limit: its size is what it takes on disk.
GZIP_RATIO_LIMIT = 100
GZIP_LIMIT_FLOOR = 1 << 30
_WILDCARD = re.compile(r"[*?[]")  # what makes a name a glob's pattern


def is_trace_name(path):
    return path.name.endswith(TRACE_SUFFIXES)


def expand_inputs(patterns):
    """Each PATH argument as a list of trace files: a file as is, a directory as every trace
    file under it, an s3:// URL as a glob when it holds one (see `_matching_objects`), else
    as its object or every trace object under it as a prefix, anything else as a glob.
    Sorted, without repeats."""
    files = []
    for pattern in patterns:
        path = Path(pattern)
        if storage.is_url(pattern):
            found = (_matching_objects(pattern) if _WILDCARD.search(pattern)
                     else _objects(pattern))
        elif path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and is_trace_name(p))
            if not found:
                raise UsageError(f"{pattern}: no trace files (*.json, *.json.gz) in this directory")
        elif path.exists():
            found = [path]
        else:
            found = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
            if not found:
                raise UsageError(f"{pattern}: no such file, directory or matching glob")
        files.extend(found)
    unique = {}
    for path in files:
        unique.setdefault(str(path) if is_object(path) else os.path.abspath(path), path)
    return list(unique.values())


def _objects(url):
    """The trace object `url` names, or the trace objects under it as a prefix; a missing
    bucket, or keys the store refuses, raise its one-line WarehouseError."""
    where = storage.location(url)
    store = storage.of(where)
    if is_trace_name(where) and store.exists(where):
        return [where]
    found = [key for key in store.keys(where) if is_trace_name(key)]
    if not found:
        raise UsageError(f"{url}: no trace objects (*.json, *.json.gz) under this prefix")
    return found


def _matching_objects(url):
    """The objects a glob URL matches, by the rules of a local glob (recursive): `*`, `?`
    and `[...]` within one name, `**` as a whole name for any number of folders, a name
    starting with `.` matched only by a pattern's that starts with one, any suffix (a
    glob names its files). One listing: of the keys that start as the URL does up to its
    first wildcard. None matching is a UsageError."""
    where = storage.location(url)
    names = where.key.split("/")
    magic = [index for index, name in enumerate(names) if _WILDCARD.search(name)]
    if not magic:
        raise UsageError(f"{url}: a glob matches keys, not buckets: name the bucket")
    magic = magic[0]
    folder = storage.Location(where.scheme, where.bucket, "/".join(names[:magic]))
    start = _WILDCARD.split(names[magic], maxsplit=1)[0]
    found = [key for key in storage.of(where).keys(folder, start)
             if _glob_matches(key.key.split("/")[magic:], names[magic:])]
    if not found:
        raise UsageError(f"{url}: no object matches this glob")
    return found


def _glob_matches(names, patterns):
    """Whether a key's names (after the folder listed) match the glob's, as glob.glob
    matches a path's."""
    if not patterns:
        return not names
    first, rest = patterns[0], patterns[1:]
    if first == "**":
        return any(_glob_matches(names[skipped:], rest) for skipped in range(len(names) + 1)
                   if not any(name.startswith(".") for name in names[:skipped]))
    return (bool(names) and fnmatch.fnmatchcase(names[0], first)
            and (first.startswith(".") or not names[0].startswith("."))
            and _glob_matches(names[1:], rest))


def is_object(path):
    """True for an object store's trace (a Location), False for a local file."""
    return isinstance(path, storage.Location)


def input_size(path):
    """The trace's size in bytes as stored."""
    if is_object(path):
        return storage.of(path).size(path)
    return os.path.getsize(path)


def source_name(path):
    """How the `traces` table records where a trace came from: an absolute path, or a URL."""
    return str(path) if is_object(path) else path_text(os.path.abspath(path))


def read_range(path, offset, length):
    """Up to `length` bytes of the trace from `offset`, as a bytearray (fewer at its end)."""
    if is_object(path):
        return bytearray(storage.of(path).read_range(path, offset, length))
    data = bytearray(length)  # read into it: one copy of the bytes, not two
    handle = os.open(path, os.O_RDONLY)
    try:
        del data[os.preadv(handle, [data], offset):]
    finally:
        os.close(handle)
    return data


def open_trace(path):
    """A binary stream of the JSON text, decompressing gzip by its magic bytes (not its name)."""
    handle = _open(path)
    if handle.peek(2)[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=handle, mode="rb")
    return handle


def _open(path):
    if is_object(path):
        try:
            return storage.of(path).stream(path)
        except FileNotFoundError:
            raise TraceError(path, "cannot open: no such object") from None
    try:
        return open(path, "rb")
    except OSError as error:
        raise TraceError(path, f"cannot open: {error.strerror}") from None


class HashedTrace:
    """A trace file read once, front to back, its bytes (as stored) hashed as they are read:
    the sha256 is of the bytes parsed, not of the file as it is when hashed again. Use as a
    context manager: `stream` is the JSON text, as from open_trace; `compressed` whether it
    is gzip; `finish()`, once the JSON is read, hashes what is left (bytes after a gzip
    stream) and returns (sha256 hex digest, bytes read)."""

    def __init__(self, path):
        self._handle = _open(path)
        self._digest = hashlib.sha256()
        self._size = 0
        self.compressed = self._handle.peek(2)[:2] == _GZIP_MAGIC
        self.stream = gzip.GzipFile(fileobj=self, mode="rb") if self.compressed else self

    def read(self, size=-1):
        data = self._handle.read(size)
        self._digest.update(data)
        self._size += len(data)
        return data

    def tell(self):
        return self._handle.tell()

    def finish(self):
        while self.read(1 << 20):
            pass
        return self._digest.hexdigest(), self._size

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self.compressed:
            self.stream.close()
        self._handle.close()


def file_state(path):
    """(size, mtime_ns, ctime_ns) of a file, (size, ETag, time) of an object: what changes
    when it is written, in place or replaced. Compared before a file is opened and after it
    is read, it tells a file written meanwhile (a write in the same tick of a coarse file
    system clock aside: Linux stamps with a fine clock once the times were read, as this
    does)."""
    if is_object(path):
        store = storage.of(path)
        try:
            return (store.size(path), *store.mark(path))
        except FileNotFoundError:
            raise TraceError(path, "cannot read: no such object") from None
    try:
        state = os.stat(path)
    except OSError as error:
        raise TraceError(path, f"cannot read: {error.strerror}") from None
    return state.st_size, state.st_mtime_ns, state.st_ctime_ns


def json_size_limit(path, compressed, limit=None):
    """The most JSON text to read from `path`: `limit` when given, else by GZIP_RATIO_LIMIT
    for a `compressed` file, else None (no limit)."""
    if limit is not None or not compressed:
        return limit
    return max(GZIP_LIMIT_FLOOR, GZIP_RATIO_LIMIT * input_size(path))


def stored_position(stream):
    """How far into the file as stored a stream from open_trace or HashedTrace has read (for
    a gzipped file, the compressed bytes consumed): progress against the file's size."""
    return getattr(stream, "fileobj", stream).tell()


def file_digest(path):
    """sha256 hex digest and size in bytes of the file as stored (compressed or not)."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")  # into one reused buffer
        return digest.hexdigest(), handle.tell()
