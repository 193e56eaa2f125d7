"""The storage interface, and the name of a place in an object store.

A backend reads and writes whole objects by location. What a warehouse needs of it is little:
to read a file, to know whether one is there and its size, to put a file, to list a folder,
to delete, and one operation that makes Delta's protocol safe without a lock: `create`, which
writes an object only if there is none under its name, atomically (a local link; an object
store's conditional put, `If-None-Match: *`). Two writers can never both create a version of a
table's log.
"""

from dataclasses import dataclass
from pathlib import PurePosixPath

from ..errors import UsageError, printable


@dataclass(frozen=True)
class Location:
    """A key in an object store's bucket: `s3://bucket/key`. Like a PurePath where the
    warehouse needs one (`/`, `name`, `parent`), but with no __fspath__: handing one to a
    local file function fails at once instead of making a directory named `s3:`."""

    scheme: str
    bucket: str
    key: str  # no leading or trailing slash; "" for the bucket's root

    @classmethod
    def parse(cls, url, schemes):
        scheme, _, rest = url.partition("://")
        bucket, _, key = rest.partition("/")
        if scheme.lower() not in schemes:
            raise UsageError(f"{printable(url)}: an unknown kind of storage ({scheme}://): "
                             f"a warehouse is a local directory or {', '.join(schemes)}://")
        if not bucket:
            raise UsageError(f"{printable(url)}: no bucket (s3://BUCKET/PREFIX)")
        return cls(scheme.lower(), bucket, key.strip("/"))

    def __truediv__(self, other):
        key = "/".join(part for part in (self.key, str(other).strip("/")) if part)
        return Location(self.scheme, self.bucket, key)

    def __str__(self):
        return f"{self.scheme}://{self.bucket}/{self.key}".rstrip("/")

    @property
    def name(self):
        return PurePosixPath(self.key).name

    @property
    def parent(self):
        return Location(self.scheme, self.bucket, str(PurePosixPath(self.key).parent).strip("."))

    @property
    def path(self):
        """bucket/key: how fsspec and DuckDB's registered file systems name it."""
        return f"{self.bucket}/{self.key}"

    def relative_to(self, other):
        return PurePosixPath(self.key).relative_to(PurePosixPath(other.key))


class ChangedObject(Exception):
    """An object whose size is not the one its commit recorded: (url, found, recorded)."""


class Storage:
    """A backend: where a warehouse's objects are read and written (see the module)."""

    local = True

    def exists(self, where):
        raise NotImplementedError

    def is_dir(self, where):
        """True if `where` holds anything (a folder of an object store is its keys' prefix)."""
        raise NotImplementedError

    def read_bytes(self, where):
        """The object's bytes; FileNotFoundError when there is none."""
        raise NotImplementedError

    def size(self, where):
        """The object's size in bytes; FileNotFoundError when there is none."""
        raise NotImplementedError

    def mark(self, where):
        """What tells this object from another written later under the same name (a local
        file's modification time, an object's ETag and time); FileNotFoundError."""
        raise NotImplementedError

    def create(self, where, data):
        """Write `data` as a new object, only if there is none under that name (atomically:
        of two writers, one wins); FileExistsError otherwise."""
        raise NotImplementedError

    def put_file(self, source, where):
        """Copy the local file `source` to `where`, replacing what is there."""
        raise NotImplementedError

    def put_bytes(self, where, data):
        """Write `data` as the object `where`, replacing what is there (a state file)."""
        raise NotImplementedError

    def unlink_within(self, root, relative):
        """Delete the file `relative` of the folder `root` (never through a link); return its
        size. FileNotFoundError when there is none."""
        raise NotImplementedError

    def names(self, where):
        """The names of what a folder holds directly (files and folders); [] if nothing."""
        raise NotImplementedError

    def delete(self, where):
        """Remove an object (none there: nothing to do)."""
        raise NotImplementedError

    def delta_options(self):
        """The storage_options delta-rs opens a table here with (None: a local path)."""
        return None
