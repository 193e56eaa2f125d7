"""The worker processes of an ingest: forked, leaving Ctrl-C to the parent, and dying with it;
given tasks one by one or lanes (see `Workers.in_lanes`).

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
import itertools
import multiprocessing
import os
import queue
import signal
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h
FEED_WAIT_S = 0.1  # how long a put into the full feed waits before it looks at the lanes
_END = None  # the item that ends a lane
_lanes = None  # in a worker: the pool's (feed, stop), see Workers


class Workers:
    """A pool's worker processes: tasks submitted one by one, or lanes fed from one queue."""

    def __init__(self, executor, jobs, feed, stop):
        self.executor = executor
        self.jobs = jobs
        self._feed = feed
        self._stop = stop  # the index of the first item a lane failed at, in this generation
        self._generations = itertools.count()

    def submit(self, function, *arguments):
        return self.executor.submit(function, *arguments)

    def in_lanes(self, function, arguments, items):
        """Call `function(taken, *arguments)` in every worker at once, and return the calls'
        results: each call (a lane) takes the (index, item) pairs of `items` it is given
        from one queue as it is free, so the work is balanced as with a task per item, yet
        what a lane builds (a file per table) spans all the items it took. A lane that
        fails at an item says so with `fail_at`: no item after it is fed, and the lanes skip
        those already fed. Every lane has ended when this returns or raises, but on Ctrl-C,
        where the pool stops its workers at once."""
        generation = next(self._generations)
        self._stop.value = sys.maxsize
        lanes = [self.executor.submit(_run_lane, generation, function, arguments)
                 for _ in range(self.jobs)]
        try:
            for index, item in enumerate(items):
                if self._stop.value < index:
                    break
                self._put((generation, index, item), lanes)
        except Exception:
            self._stop.value = -1
            self._end(generation, lanes)
            raise
        self._end(generation, lanes)
        return [lane.result() for lane in lanes]

    def _put(self, entry, lanes):
        """Put `entry` into the feed, waiting while it is full and some lane may take it; a
        lane ended before its end failed: its error is raised."""
        while True:
            try:
                self._feed.put(entry, timeout=FEED_WAIT_S)
                return
            except queue.Full:
                for lane in lanes:
                    if lane.done():
                        lane.result()

    def _end(self, generation, lanes):
        for _ in lanes:
            try:
                self._put((generation, 0, _END), lanes)
            except Exception:  # that lane's error is raised by its result
                break
        concurrent.futures.wait(lanes)


def fail_at(index):
    """In a lane: the item `index` failed, so the items after it are not needed."""
    stop = _lanes[1]
    with stop.get_lock():
        stop.value = min(stop.value, index)


def _run_lane(generation, function, arguments):
    """A lane in a worker: `function` over the items fed to it, the rest of them taken
    (skipped) up to its end after it returns, so the feed holds no item of this generation
    when every lane has ended. An item of an earlier generation (of a lane that died) is
    skipped."""
    taken = _taken(generation)
    try:
        return function(taken, *arguments)
    except BaseException:
        fail_at(-1)
        raise
    finally:
        for _ in taken:
            pass


def _taken(generation):
    feed, stop = _lanes
    while True:
        entry_generation, index, item = feed.get()
        if entry_generation != generation:
            continue
        if item is _END:
            return
        if index <= stop.value:
            yield index, item


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
    feed, stop = context.Queue(2 * jobs), context.Value("q", sys.maxsize)
    pool = concurrent.futures.ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(parent, feed, stop))
    try:
        _start_workers(pool, jobs)
        yield Workers(pool, jobs, feed, stop)
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


def _start_worker(parent, feed, stop):
    global _lanes
    _lanes = (feed, stop)
    die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def die_with(parent=None):
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere nothing):
    in a child before exec, it outlives no killed parent. With `parent`, exit at once if that
    parent is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: no such call
        return
    if parent is not None and os.getppid() != parent:  # it died before the request took effect
        os._exit(1)
