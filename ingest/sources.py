"""Finding trace files and opening them: paths, directories and globs; plain or gzipped JSON."""

import glob
import gzip
import hashlib
import os
from pathlib import Path

from tracewh.errors import TraceError, UsageError

TRACE_SUFFIXES = (".json", ".json.gz")
_GZIP_MAGIC = b"\x1f\x8b"
# By default a gzipped trace may hold at most this many times its size of JSON, and at least
# GZIP_LIMIT_FLOOR: real traces compress 7-20x, a gzip bomb of whitespace or repeated events
# ~1000x (4 MB holding 4 GB). A plain file has no limit: its size is what it takes on disk.
GZIP_RATIO_LIMIT = 100
GZIP_LIMIT_FLOOR = 1 << 30


def is_trace_name(path):
    return path.name.endswith(TRACE_SUFFIXES)


def expand_inputs(patterns):
    """Each PATH argument as a list of trace files: a file as is, a directory as every trace
    file under it, anything else as a glob. Sorted, without repeats."""
    files = []
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
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
        unique.setdefault(os.path.abspath(path), path)
    return list(unique.values())


def open_trace(path):
    """A binary stream of the JSON text, decompressing gzip by its magic bytes (not its name)."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise TraceError(path, f"cannot open: {error.strerror}") from None
    if handle.read(2) == _GZIP_MAGIC:
        handle.seek(0)
        return gzip.GzipFile(fileobj=handle, mode="rb")
    handle.seek(0)
    return handle


def json_size_limit(path, compressed, limit=None):
    """The most JSON text to read from `path`: `limit` when given, else by GZIP_RATIO_LIMIT
    for a `compressed` file, else None (no limit)."""
    if limit is not None or not compressed:
        return limit
    return max(GZIP_LIMIT_FLOOR, GZIP_RATIO_LIMIT * os.path.getsize(path))


def stored_position(stream):
    """How far into the file as stored a stream from open_trace has read (for a gzipped file,
    the compressed bytes consumed): progress against the file's size."""
    return getattr(stream, "fileobj", stream).tell()


def file_digest(path):
    """sha256 hex digest and size in bytes of the file as stored (compressed or not)."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")  # into one reused buffer
        return digest.hexdigest(), handle.tell()
