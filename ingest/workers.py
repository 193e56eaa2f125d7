"""The worker processes of an ingest: forked, leaving Ctrl-C to the parent, and dying with it.

A worker that outlives its parent keeps reading and writing staging files nobody will commit
(seen: minutes after a `kill -9`, ~200 MB each). So each worker asks the kernel for SIGKILL when
its parent goes (Linux prctl PR_SET_PDEATHSIG). Ctrl-C reaches the whole process group; workers
ignore it and the parent, the one that knows what is committed, stops them at once instead of
waiting for their files to finish.
"""

import concurrent.futures
import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal

PR_SET_PDEATHSIG = 1  # linux/prctl.h


@contextlib.contextmanager
def worker_pool(jobs, embedded=False):
    """A process pool whose workers are forked at once, before this process starts threads of
    its own (the hashing thread): a fork copies only the calling thread, and a lock another
    thread held at that moment would stay locked in the child. `embedded`: this process is
    not tracewh's own (the Python API, in a notebook) and may run threads of any library (an
    open DuckDB connection's crashed forked workers): the workers then come from a fresh
    forkserver process (a script must then guard its main code with `if __name__ ==
    "__main__":`, as multiprocessing requires). On any exception, Ctrl-C
    included, the workers are stopped at once; otherwise the pool finishes its work."""
    context = multiprocessing.get_context("forkserver" if embedded else "fork")
    # A forkserver's children are not ours: they die with the forkserver, which ends with us.
    parent = None if embedded else os.getpid()
    pool = concurrent.futures.ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(parent,))
    try:
        _start_workers(pool, jobs)
        yield pool
    except BaseException:
        children = multiprocessing.active_children()
        for child in children:
            child.kill()
        for child in children:
            child.join(1)  # reaped: their staging directories are now those of dead processes
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(cancel_futures=True)


def _start_workers(pool, jobs):
    """Fork the workers with every object of this process out of their collector's reach: a
    forked child that collects garbage it inherited runs its finalizers, and a DuckDB
    connection's (left by an earlier query of the same process) crashed workers with a
    segmentation fault. Garbage is collected here first, and what is left is frozen (kept
    from the collector) until the workers are started."""
    gc.collect()
    gc.freeze()
    try:
        list(pool.map(abs, range(jobs)))
    finally:
        gc.unfreeze()


def _start_worker(parent):
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _die_with(parent):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: no such call
        return
    if parent is not None and os.getppid() != parent:  # it died before the request took effect
        os._exit(1)
