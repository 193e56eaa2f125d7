"""A warehouse's files opened and deleted without following symbolic links.

A warehouse directory may be shared (a team's NFS directory, a CI cache), and anyone who can
write to it could plant a link: `_tracewh/staging` pointing at a home directory would have
the clean-up of dead ingests delete its subfolders named like PIDs, `_tracewh/derived.json`
pointing at a user's file would be overwritten by the next ingest, a partition directory
pointing elsewhere would have `vacuum` delete what is there. tracewh makes no link itself, so
it follows none: the warehouse's control paths must not be links (`check_no_links`, at every
command), its own files are opened with O_NOFOLLOW, and what it deletes is reached one
directory at a time, none of them a link (`unlink_within`).
"""

import contextlib
import errno
import os
import stat
from pathlib import Path

from ..errors import HINT, WarehouseError, printable


def check_no_links(paths):
    """Refuse a warehouse where one of `paths` (its control files and directories) is a
    symbolic link: one line naming it."""
    for path in paths:
        if Path(path).is_symlink():
            raise WarehouseError(f"{printable(path)} is a symbolic link: tracewh follows no "
                                 f"link in a warehouse's own files (remove the link{HINT})",
                                 cli_hint="; pass --warehouse to use another directory")


def open_no_follow(path, flags, mode=0o666):
    """os.open(path) that refuses a link in the last component (WarehouseError)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            check_no_links([path])
        raise


def read_text(path):
    """The text of a warehouse file, not through a link."""
    with os.fdopen(open_no_follow(path, os.O_RDONLY)) as handle:
        return handle.read()


def write_text(path, text):
    """Write a warehouse file whole, not through a link."""
    with os.fdopen(open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as handle:
        handle.write(text)


def touch(path):
    os.close(open_no_follow(path, os.O_WRONLY | os.O_CREAT))


@contextlib.contextmanager
def directory(path):
    """A file descriptor of the directory `path`, refused if it is a link: listing it and
    removing what it holds through the descriptor stays inside it, whatever is swapped in
    under its name meanwhile."""
    handle = open_no_follow(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield handle
    finally:
        os.close(handle)


def unlink_within(root, relative):
    """Delete the regular file `root/relative`, reaching it one directory at a time from
    `root` without following a link; return its size. A link on the way (or as the file)
    is a WarehouseError, and nothing is deleted."""
    *folders, name = Path(relative).parts
    if ".." in folders or name == "..":
        raise WarehouseError(f"{printable(Path(root) / relative)}: a path leaving its table")
    descriptors = [open_no_follow(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for folder in folders:
            try:
                descriptors.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY
                                           | os.O_NOFOLLOW | os.O_CLOEXEC,
                                           dir_fd=descriptors[-1]))
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    _refuse_link(root, relative)
                raise
        status = os.stat(name, dir_fd=descriptors[-1], follow_symlinks=False)
        if not stat.S_ISREG(status.st_mode):
            _refuse_link(root, relative)
        os.unlink(name, dir_fd=descriptors[-1])
        return status.st_size
    finally:
        for descriptor in descriptors:
            os.close(descriptor)


def _refuse_link(root, relative):
    raise WarehouseError(f"{printable(Path(root) / relative)}: not deleted: a symbolic link "
                         "(or what is not a regular file) is on its path, which tracewh "
                         "does not follow (remove the link)")
