"""Freed memory handed back to the system at a refresh's turns: DuckDB's and the C heap's.

DuckDB's Linux builds allocate through a jemalloc of their own (its symbols prefixed
`duckdb_je_`), configured to keep the pages a query frees for about a second
(`dirty_decay_ms` 1000) and with no background thread to purge them: they are purged only as
later allocations advance the decay. A refresh asks its questions back to back, so the
freed working memory of the questions before stayed resident under the largest one (the
job's critical path, see derived.job_path): in the refresh after the 254 MB trace, DuckDB's
allocator held 79-110 MB of resident pages at the command's peak, of which 14-48 MB were
allocated.

`give_back_freed_memory()` purges every arena of that allocator at once (jemalloc's
`arena.<MALLCTL_ARENAS_ALL>.purge`: what DuckDB's own flush does after a deallocation larger
than its `allocator_bulk_deallocation_flush_threshold`; lowering that setting to zero purged
after every bulk free, and took 0.5 s more CPU in that refresh), and the C heap's free pages
with it (glibc's, where pyarrow and numpy allocate, see `tracewh.allocator`). Where
DuckDB has no such allocator (its macOS and Windows builds), only the C heap's.
"""

import ctypes
import functools
import sys

from ..allocator import release_freed_memory

MALLCTL_ARENAS_ALL = 4096  # jemalloc's arena index meaning every arena
PURGE_ALL = f"arena.{MALLCTL_ARENAS_ALL}.purge".encode()


def give_back_freed_memory():
    """Give back the pages DuckDB's allocator and the C heap hold freed; True when DuckDB's
    were purged (its allocator found, and the purge done)."""
    release_freed_memory()
    mallctl = _duckdb_mallctl()
    return mallctl is not None and mallctl(PURGE_ALL, None, None, None, 0) == 0


def give_back_engine_memory(above):
    """Give back the pages DuckDB's allocator holds freed when they come to more than
    `above` bytes (its resident pages less those in use and its own metadata); True when
    they were purged.
    Between a connection's questions, cheaper than give_back_freed_memory after each: a
    page given back is faulted in again by the next question that needs it, so up to
    `above` is left for the next to reuse."""
    mallctl = _duckdb_mallctl()
    if mallctl is None:
        return False
    one = ctypes.c_uint64(1)  # a new epoch: the statistics brought up to date
    mallctl(b"epoch", None, None, ctypes.byref(one), ctypes.sizeof(one))
    freed = (_statistic(mallctl, b"stats.resident") - _statistic(mallctl, b"stats.active")
             - _statistic(mallctl, b"stats.metadata"))
    return freed > above and mallctl(PURGE_ALL, None, None, None, 0) == 0


def _statistic(mallctl, name):
    """A size_t statistic of DuckDB's allocator (0 where its build keeps none)."""
    value, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
    mallctl(name, ctypes.byref(value), ctypes.byref(size), None, 0)
    return value.value


@functools.cache
def _duckdb_mallctl():
    """The `mallctl` of DuckDB's own jemalloc, in DuckDB's extension module (loaded with
    `duckdb`), or None where the build has none."""
    import duckdb  # noqa: F401  (loads the extension module)

    module = sys.modules.get("_duckdb") or sys.modules.get("duckdb.duckdb")
    try:
        mallctl = ctypes.CDLL(module.__file__).duckdb_je_mallctl
    except (AttributeError, OSError, TypeError):
        return None
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_size_t]
    mallctl.restype = ctypes.c_int
    return mallctl
