"""The workers of an ingest: processes for whole files, threads for one large file's chunks.

Several files are staged in worker processes (`worker_pool`), forked, leaving Ctrl-C to the
parent, and dying with it. A worker that outlives its parent keeps reading and writing staging
files nobody will commit (seen: minutes after a `kill -9`, ~200 MB each). So each worker asks
the kernel for SIGKILL when its parent goes (Linux prctl PR_SET_PDEATHSIG). Ctrl-C reaches the
whole process group; workers ignore it and the parent, the one that knows what is committed,
stops them at once instead of waiting for their files to finish.

One large file's chunks are decoded in lanes of threads of the command (`thread_lanes`): the
work of a chunk releases the GIL for the most part (the native core, Parquet's writes), and a
thread needs no copy of the command's heap and imports, which forked lanes and the worker that
measured after them held: the ingest's peak of memory fell by 7% (docs/ingest-speed.md).
Threads die with the process; on Ctrl-C their lanes end after the chunk in hand.
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
import threading

PR_SET_PDEATHSIG = 1  # linux/prctl.h
FEED_WAIT_S = 0.1  # how long a put into the full feed waits before it looks at the lanes
_END = None  # the item that ends a lane


class ThreadLanes:
    """Threads of this process: tasks submitted one by one, or lanes fed from one queue."""

    def __init__(self, executor, jobs):
        self.executor = executor
        self.jobs = jobs
        self._feed = queue.Queue(2 * jobs)
        self._stop = _Index(sys.maxsize)  # the first item a lane failed at, this generation
        self._generations = itertools.count()

    def submit(self, function, *arguments):
        return self.executor.submit(function, *arguments)

    def in_lanes(self, function, arguments, items):
        """Call `function(lane, *arguments)` in every worker at once, and return the calls'
        results: each call (a lane) takes the (index, item) pairs of `items` it is given
        from one queue as it is free (iterating over its Lane), so the work is balanced as
        with a task per item, yet what a lane builds (a file per table) spans all the items
        it took. A lane that fails at an item says so with `Lane.fail_at`: no item after it
        is fed, and the lanes skip those already fed. Every lane has ended when this returns
        or raises, Ctrl-C included: the lanes then skip what is fed and end after the item in
        hand."""
        generation = next(self._generations)
        self._stop.value = sys.maxsize
        lanes = [self.executor.submit(_run_lane, Lane(generation, self._feed, self._stop),
                                      function, arguments)
                 for _ in range(self.jobs)]
        try:
            for index, item in enumerate(items):
                if self._stop.value < index:
                    break
                self._put((generation, index, item), lanes)
        except BaseException:  # Ctrl-C too: threads cannot be killed, their lanes are ended
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


class Lane:
    """What a lane's function is given: iterated, the (index, item) pairs fed to it in this
    generation (an item of an earlier one, of a lane that died, is skipped); `fail_at`."""

    def __init__(self, generation, feed, stop):
        self._generation = generation
        self._feed = feed
        self._stop = stop
        self._taken = self._take()  # one iteration, however often iterated: up to its end

    def __iter__(self):
        return self._taken

    def _take(self):
        while True:
            generation, index, item = self._feed.get()
            if generation != self._generation:
                continue
            if item is _END:
                return
            if index <= self._stop.value:
                yield index, item

    def fail_at(self, index):
        """The item `index` failed, so the items after it are not needed."""
        with self._stop.get_lock():
            self._stop.value = min(self._stop.value, index)


def _run_lane(lane, function, arguments):
    """A lane: `function` over the items fed to it, the rest of them taken (skipped) up to
    its end after it returns, so the feed holds no item of this generation when every lane
    has ended."""
    try:
        return function(lane, *arguments)
    except BaseException:
        lane.fail_at(-1)
        raise
    finally:
        for _ in lane:
            pass


class _Index:
    """multiprocessing.Value's `value` and `get_lock` for the threads of one process."""

    def __init__(self, value):
        self.value = value
        self._lock = threading.Lock()

    def get_lock(self):
        return self._lock


@contextlib.contextmanager
def thread_lanes(jobs):
    """ThreadLanes of `jobs` threads, for the chunks of one large file and what is measured
    after them. Tasks submitted run to their end."""
    with concurrent.futures.ThreadPoolExecutor(jobs, thread_name_prefix="lane") as executor:
        yield ThreadLanes(executor, jobs)


@contextlib.contextmanager
def worker_pool(jobs, embedded=False):
    """A process pool (an Executor) whose workers are forked at once, before this process
    starts threads of its own (the hashing thread): a fork copies only the calling thread,
    and a lock another thread held at that moment would stay locked in the child.
    `embedded`: this process is not tracewh's own (the Python API, in a notebook) and may run
    threads of any library (an open DuckDB connection's crashed forked workers): the workers
    then come from a fresh forkserver process (a script must then guard its main code with
    `if __name__ == "__main__":`, as multiprocessing requires). On any exception, Ctrl-C
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
