"""The local backend: a directory on this machine's file system."""

import os
import shutil
import uuid
from pathlib import Path

from . import links
from .base import Storage


class LocalStorage(Storage):
    def exists(self, where):
        return Path(where).exists()

    def is_dir(self, where):
        return Path(where).is_dir()

    def read_bytes(self, where):
        return Path(where).read_bytes()

    def size(self, where):
        return os.stat(where).st_size

    def mark(self, where):
        return os.stat(where).st_mtime_ns

    def create(self, where, data):
        """Written whole to a temporary sibling and synced, then linked in place: a link
        fails if the name exists, so a reader never sees a part-written file either."""
        where = Path(where)
        temporary = where.parent / f".{where.name}.{uuid.uuid4().hex}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, where)
        finally:
            temporary.unlink()

    def put_file(self, source, where):
        Path(where).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, where)

    def put_bytes(self, where, data):
        links.write_text(where, data.decode())

    def unlink_within(self, root, relative):
        return links.unlink_within(root, relative)

    def names(self, where):
        try:
            return os.listdir(where)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete(self, where):
        Path(where).unlink(missing_ok=True)
