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
import multiprocessing
import os
import signal

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def fork_context():
    return multiprocessing.get_context("fork")


@contextlib.contextmanager
def worker_pool(jobs, initializer=None, initargs=()):
    """A process pool whose workers are forked at once, before this process starts threads of
    its own (the hashing thread): a fork copies only the calling thread, and a lock another
    thread held at that moment would stay locked in the child. On any exception, Ctrl-C
    included, the workers are stopped at once; otherwise the pool finishes its work."""
    pool = concurrent.futures.ProcessPoolExecutor(
        jobs, mp_context=fork_context(), initializer=_start_worker,
        initargs=(os.getpid(), initializer, initargs))
    try:
        list(pool.map(abs, range(jobs)))
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


def _start_worker(parent, initializer, initargs):
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def _die_with(parent):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: no such call
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
