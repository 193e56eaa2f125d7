"""Engines that run an ingest's decode jobs elsewhere than in tracewh's own worker pool: the
jobs of `distributed` (a trace file, or a chunk of a large one, then the trace the chunks
make, written straight into the warehouse's storage) run on an engine's workers.

An engine is small on purpose, so another one (Dask) is a class more: `submit` starts
`function(*arguments)` and gives back a handle of the job, where a handle among the
arguments stands for its job's result (a later job takes earlier ones' results where they
are, not through this process); `first_done` waits for one of some handles' jobs to finish,
`result` is what it returned, `throttle` waits until few of some jobs are unfinished (what
is queued for workers stays bounded), `cancel` stops jobs no longer wanted, and `close`
gives back what the engine started. `InProcess` runs each job here as it is submitted (no
engine to start: the Python API, and the tests of the commit); `Ray` runs each as a Ray
task, retried by Ray when its worker dies.
"""

import logging
import os

from tracewh.errors import TracewhError, UsageError, printable

# A task whose worker died (killed, out of memory) is run again this many times by Ray.
RAY_RETRIES = 3


class Engine:
    """Where decode jobs run (see the module)."""

    name = ""

    def submit(self, function, *arguments):
        raise NotImplementedError

    def first_done(self, handles):
        """One of `handles` whose job has finished, waiting for one if none has."""
        raise NotImplementedError

    def result(self, handle):
        raise NotImplementedError

    def slots(self):
        """How many jobs run at once."""
        return 1

    def throttle(self, handles, unfinished):
        """Wait until at most `unfinished` of `handles`' jobs are not finished."""

    def cancel(self, handles):
        """Stop the jobs of `handles` that have not finished."""

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


class _Done:
    """The handle of a job InProcess ran: its result."""

    def __init__(self, value):
        self.value = value


class InProcess(Engine):
    """Each job runs here, at once, as it is submitted."""

    name = "in-process"

    def submit(self, function, *arguments):
        return _Done(function(*(each.value if isinstance(each, _Done) else each
                                for each in arguments)))

    def first_done(self, handles):
        return next(iter(handles))

    def result(self, handle):
        return handle.value


class Ray(Engine):
    """The jobs run as Ray tasks (one CPU each), on the cluster at `address`, or else on a
    Ray started here for this ingest (every core of this machine, on 127.0.0.1, no
    dashboard) and shut down after it. A Ray this process already joined is used as it is,
    and left running."""

    name = "ray"

    def __init__(self, address=None):
        try:
            import ray
        except ImportError:
            raise UsageError("--engine ray needs Ray: pip install 'tracewh[ray]'") from None
        self.ray = ray
        self._tasks = {}  # {function: its Ray remote function}
        self.started = not ray.is_initialized()
        if not self.started:
            return
        settings = {"logging_level": logging.WARNING, "log_to_driver": False}
        try:
            if address:
                ray.init(address=address, **settings)
            else:
                ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False,
                         _node_ip_address="127.0.0.1", **settings)
        except (ConnectionError, RuntimeError, ValueError) as error:
            where = f"the Ray cluster at {printable(address)}" if address else "a local Ray"
            problem = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise UsageError(f"cannot start or reach {where}: {problem}") from None

    def submit(self, function, *arguments):
        task = self._tasks.get(function)
        if task is None:
            task = self._tasks[function] = self.ray.remote(
                num_cpus=1, max_retries=RAY_RETRIES)(function)
        return task.remote(*arguments)

    def first_done(self, handles):
        done, _ = self.ray.wait(list(handles), num_returns=1, fetch_local=False)
        return done[0]

    def slots(self):
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def throttle(self, handles, unfinished):
        if len(handles) > unfinished:
            self.ray.wait(list(handles), num_returns=len(handles) - unfinished,
                          fetch_local=False)

    def cancel(self, handles):
        for reference in handles:
            self.ray.cancel(reference, force=True)

    def result(self, reference):
        """The task's result; a TracewhError it raised (the warehouse refused a write) as it
        was, one line, not wrapped in Ray's error with the worker's traceback."""
        try:
            return self.ray.get(reference)
        except self.ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, TracewhError):
                raise error.cause from None
            raise

    def close(self):
        if self.started:
            self.ray.shutdown()


ENGINES = {"ray": Ray}


def engine(name, address=None):
    """The engine called `name` (only `ray` from the command line)."""
    return ENGINES[name](address)
