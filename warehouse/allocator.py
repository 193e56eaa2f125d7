"""Keep memory that ingest frees in the heap for reuse, instead of handing it back to the kernel.

Ingest allocates and frees tens of megabytes per chunk (the block read, the compacted text,
Arrow buffers). glibc returns blocks above its mmap threshold (128 KiB at first) to the kernel
when they are freed, so the next chunk touches fresh pages and takes a page fault for each 4 KiB
of them. On the 2-core VMs tracewh is benchmarked on a fault costs 2-5 µs: ingesting a 254 MB
trace took 400k faults, 1.7 s of system time out of 8.7 s of CPU. Raising the mmap and trim
thresholds keeps the memory for the next chunk: about half the faults and system time go away,
at the price of the process holding its peak heap until it exits (an ingest is short-lived).
A no-op where the C library is not glibc. In the package's base: the ingest gives its heap
back between its phases, and the refresh too (`tracewh.query.engine_memory`), which runs
with glibc's own thresholds again (`stop_keeping_freed_memory`).

A process that starts as `tracewh ingest` allocates from one heap (`use_one_heap`): glibc
gives each thread that allocates an arena of its own, so what the Parquet reader's threads or
the writing thread free is kept in their arenas, out of reach of the next measure on the main
thread; each measure's heap then had to be given back (and faulted in again by the next: 160k
faults, ~0.4 s of system time of the 254 MB trace's measures) or it piled up (the ingest's peak
218 -> 339 MB). On one heap the next measure reuses it (`release_between_phases`).
"""

import ctypes
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
THRESHOLD = 64 << 20
GLIBC_THRESHOLD = 128 << 10  # glibc's initial mmap and trim thresholds (M_MMAP_THRESHOLD)


def keep_freed_memory():
    """Ask glibc to keep freed memory (up to THRESHOLD-sized blocks) for reuse; True if it
    agreed. Worker processes forked afterwards inherit the setting."""
    return _thresholds(THRESHOLD)


def stop_keeping_freed_memory():
    """Undo keep_freed_memory: glibc's initial thresholds again, a large block freed handed
    back at once; True if glibc agreed. For the work after an ingest in its process (the
    refresh), whose blocks are reused less than the chunks': kept, the refresh after the
    254 MB trace peaked 13-20 MB higher than with these (245-283 against 229-245 MB)."""
    return _thresholds(GLIBC_THRESHOLD)


def _thresholds(size):
    """Set glibc's mmap and trim thresholds to `size`; True if it agreed."""
    return _mallopt((M_MMAP_THRESHOLD, size), (M_TRIM_THRESHOLD, size))


def _mallopt(*settings):
    """Set glibc's malloc options, (option, value) pairs, in turn; True if glibc agreed to
    each (False where the C library is not glibc)."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return all(mallopt(option, value) for option, value in settings)


_one_heap = False  # use_one_heap was agreed to: this process's threads share one arena


def use_one_heap():
    """Have every thread allocate from glibc's main arena; True if glibc agreed. Only in a
    process of one thread (`tracewh ingest`'s entry, before pyarrow's import starts its
    allocator's thread), else nothing (False): a thread keeps the arena it started with, and
    threads started after would share the arenas there are in turn, their freed memory
    again out of each other's reach (without the trims, the peak 4% higher). One heap costs the
    chunks' two lanes a little waiting for its lock (their phase ~0.03 s longer on the 254
    MB trace) and saves the measures after them ~0.15 s. Worker processes forked afterwards
    inherit it."""
    global _one_heap
    if not _single_threaded():
        return False  # what an earlier call agreed to stands
    _one_heap = _mallopt((M_ARENA_MAX, 1))
    return _one_heap


def _single_threaded():
    """Whether this process runs one thread (False where that cannot be known)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def release_between_phases():
    """release_freed_memory between phases of work that each allocate about as much (the
    per-trace measures), unless the process allocates from one heap (use_one_heap), where
    the next phase reuses what this one freed: given back, it is faulted in again."""
    if not _one_heap:
        release_freed_memory()


def release_freed_memory():
    """Give the heap's free pages back to the system (glibc's malloc_trim; elsewhere nothing):
    at the end of a phase of work in a long-lived worker, which keep_freed_memory otherwise
    has hold its peak heap while the ingest's other processes reach theirs."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
