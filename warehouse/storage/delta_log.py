"""Reading a Delta table's log as JSON, without pyarrow or delta-rs: its newest version, a
commit's commitInfo, damage in its commit files, in a local directory or an object store
(see `storage`). What a query answered from tracewh.duckdb reads to know the warehouse's
newest snapshot (see `prepared`); `delta` holds the rest.
"""

import json
import os
from pathlib import Path

from .. import storage
from ..errors import WarehouseError

LOG_DIR = "_delta_log"
CHECKPOINT_INTERVAL = 100


def is_table(path):
    return exists(commit_file(path, 0))


def exists(where):
    return storage.of(where).exists(where)


def read_bytes(where):
    """A log file's bytes, from its storage."""
    return storage.of(where).read_bytes(where)


def latest_version(path):
    """The table's newest version, found from its last checkpoint onwards without listing or
    loading the log."""
    version = last_checkpoint(path)
    if not exists(commit_file(path, version)) and version != 0:
        raise WarehouseError(f"{log_dir(path)}: version {version} is missing")
    while exists(commit_file(path, version + 1)):
        version += 1
    return version


def commit_info(path, version):
    """The commitInfo action of one version (its custom keys included), or {}."""
    file = commit_file(path, version)
    try:
        lines = read_bytes(file).decode().splitlines()
        empty = not lines
        for line in lines:
            action = json.loads(line)
            if "commitInfo" in action:
                return action["commitInfo"]
    except (OSError, ValueError) as error:
        raise WarehouseError(f"{file}: unreadable commit ({error})") from None
    if empty:  # no commit has no action: emptied from outside, and its pointer lost with it
        raise DamagedLog(path, version, "empty")
    return {}


def actions(path, version):
    """The actions of a JSON commit; none when it is gone (log cleanup: a checkpoint holds
    it). DamagedLog naming its first line that is not JSON."""
    try:
        lines = read_bytes(commit_file(path, version)).decode().splitlines()
    except FileNotFoundError:
        return []
    found = []
    for number, line in enumerate(lines, 1):
        try:
            found.append(json.loads(line))
        except ValueError:
            raise DamagedLog(path, version, f"cut or corrupt (line {number} is not "
                                            "JSON)") from None
    return found


def commit_file(path, version):
    return log_dir(path) / f"{version:020d}.json"


def log_dir(path):
    return storage.location(path) / LOG_DIR


class DamagedLog(WarehouseError):
    """A commit file that is empty or not JSON lines: damaged from outside (tracewh writes
    each one whole, then links it in place). Its actions are lost, so the table's rows of
    that version are not known: only a copy of the file brings them back."""

    def __init__(self, path, version, problem):
        super().__init__(f"{commit_file(path, version)}: {problem}: version {version} of table "
                         f"{storage.location(path).name} was damaged outside tracewh, and its rows with it: "
                         "restore the file from a backup, or ingest the traces again into a "
                         "new warehouse")
        self.path, self.version = storage.location(path), version


def check_commits(path, first, last, read=None):
    """Raise DamagedLog for the first commit file of versions first..last that is empty (a
    stat each); with read="end", whose last line is not a whole JSON object (its last bytes
    read: what a cut leaves; the first line that is not JSON named); with read="all", that is not JSON lines (every line parsed:
    ~50 ms for 8,000 actions, so where delta-rs failed only)."""
    if not isinstance(storage.location(path), Path):
        _check_objects(path, first, last, read)
        return
    for version in range(first, last + 1):
        file = commit_file(path, version)
        try:
            with open(file, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0:
                    raise DamagedLog(path, version, "empty")
                if read == "end":
                    handle.seek(max(0, size - 64))
                    if not handle.read().rstrip().endswith(b"}"):
                        handle.seek(0)  # damaged: name its first line that is not JSON
                        _check_lines(path, version, handle)
                        raise DamagedLog(path, version, "cut (its last line is not whole)")
                elif read == "all":
                    handle.seek(0)
                    _check_lines(path, version, handle)
        except FileNotFoundError:
            continue  # older versions cleaned up, or a missing one delta-rs reports itself
        except OSError as error:
            raise DamagedLog(path, version, f"unreadable ({error})") from None


def _check_objects(path, first, last, read):
    """check_commits of a table in an object store: a commit there is one PUT, whole or
    absent, so only `read` asks for its bytes."""
    for version in range(first, last + 1):
        file = commit_file(path, version)
        try:
            data = read_bytes(file) if read else None
            if (data is None and storage.of(file).size(file) == 0) or data == b"":
                raise DamagedLog(path, version, "empty")
        except FileNotFoundError:
            continue
        if read == "end" and not data.rstrip().endswith(b"}"):
            _check_lines(path, version, data.splitlines())  # its first line not JSON
            raise DamagedLog(path, version, "cut (its last line is not whole)")
        if read == "all":
            _check_lines(path, version, data.splitlines())


def _check_lines(path, version, handle):
    for number, line in enumerate(handle, 1):
        try:
            json.loads(line)
        except ValueError:
            raise DamagedLog(path, version, f"cut or corrupt (line {number} is not "
                                            "JSON)") from None


def first_replayed(path, version):
    """The first commit file that loading `version` replays: the one after its checkpoint."""
    checkpoint = last_checkpoint(path)  # 0: none (no version 0 is a checkpoint's)
    return (checkpoint + 1 if 0 < checkpoint <= version
            else version - version % CHECKPOINT_INTERVAL)  # an older checkpoint, or none


def last_checkpoint(path):
    """The version of the table's last checkpoint (delta-rs replays the commits after it
    only), or 0."""
    try:
        return json.loads(read_bytes(log_dir(path) / "_last_checkpoint"))["version"]
    except FileNotFoundError:
        return 0
    except (ValueError, KeyError, TypeError, OSError) as error:
        raise WarehouseError(f"{log_dir(path)}: unreadable _last_checkpoint "
                             f"({error})") from None


def size_problem(found, recorded):
    """What a file of `found` bytes whose commit recorded `recorded` is."""
    return f"{found:,} bytes, its commit says {recorded:,}"


def changed_problem(problem):
    """The problem of a data file changed since its commit (see `delta.changed_files`)."""
    return f"changed outside tracewh since its commit ({problem})"
