"""Engines that run an ingest's decode jobs elsewhere than in tracewh's own worker pool: the
jobs of `distributed` (one trace file each, written straight into the warehouse's storage)
mapped over an engine's workers, their results coming back as each finishes.

An engine is small on purpose, so another one (Dask) is a class more: `map` runs
`function(*arguments)` for each tuple of arguments and yields (index, result) as each
finishes, and `close` gives back what the engine started. `InProcess` runs the jobs one after
another here (no engine to start: the Python API, and the tests of the commit); `Ray` runs
each as a Ray task, retried by Ray when its worker dies.
"""

import logging
import os

from tracewh.errors import TracewhError, UsageError, printable

# A task whose worker died (killed, out of memory) is run again this many times by Ray.
RAY_RETRIES = 3


class Engine:
    """Where decode jobs run (see the module)."""

    name = ""

    def map(self, function, arguments):
        raise NotImplementedError

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


class InProcess(Engine):
    """The jobs run one after another in this process."""

    name = "in-process"

    def map(self, function, arguments):
        for index, each in enumerate(arguments):
            yield index, function(*each)


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

    def map(self, function, arguments):
        task = self.ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(function)
        pending = {task.remote(*each): index for index, each in enumerate(arguments)}
        try:
            while pending:
                done, _ = self.ray.wait(list(pending), num_returns=1)
                for reference in done:
                    yield pending.pop(reference), self._result(reference)
        finally:  # stopped early (an error, Ctrl-C): what is left would write for nobody
            for reference in pending:
                self.ray.cancel(reference, force=True)

    def _result(self, reference):
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
