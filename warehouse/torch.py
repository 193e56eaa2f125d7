"""Traces into the warehouse from the training job, as torch.profiler finishes them:

    from tracewh.torch import trace_handler
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=3)
    handler = trace_handler("wh", run="nightly-1129", phase="train", tags={"git": "3f2a"})
    with torch.profiler.profile(schedule=schedule, on_trace_ready=handler) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Each profiler cycle is one capture of the rank: its rank is the `rank` argument, else the
process group's (torch.distributed), else $RANK, else 0. The handler never raises into the
training job: a trace it cannot ingest (the warehouse busy for longer than `lock_timeout`
seconds, unreachable, not writable) is kept in a spool directory, `<warehouse>.spool/` by
default, and one warning line (logger `tracewh.torch`, on stderr unless logging is set up)
says where, with the `tracewh ingest` command that ingests it later. Only a bad run, phase or
tag name raises, when the handler is made: before training starts, not at its first trace.

Ingest runs in the training process itself, one file at a time (no worker processes), and
leaves its memory allocator as it found it (the CLI's tuning is for short-lived processes).
"""

import contextlib
import dataclasses
import logging
import os
import shlex
import shutil
import socket
import tempfile
import time
from pathlib import Path

import torch

from tracewh.ingest.pipeline import ingest_options, ingest_paths

from .storage.catalog import Catalog, local_root
from .derived import refresh_derived
from .errors import RefreshInterrupted, escaped, printable
from .storage.names import check_name

LOG = logging.getLogger(__name__)
LOCK_TIMEOUT = 30.0  # seconds a step may wait for another writer before its trace is spooled
TRACE_SUFFIX = ".pt.trace.json.gz"  # TensorBoard's profiler plugin reads these names too


def trace_handler(warehouse, run, phase=None, tags=None, rank=None, spool_dir=None,
                  keep_dir=None, lock_timeout=LOCK_TIMEOUT):
    """An `on_trace_ready` callable for torch.profiler.profile that ingests each trace into
    `warehouse` (a directory, created by the first trace) as run `run`, phase `phase` (else a
    phase word of the file name, else unknown) with `tags` ({key: value}). `keep_dir`: also
    keep every trace file there (for Perfetto or TensorBoard). `spool_dir`: where traces that
    could not be ingested wait [default: `<warehouse>.spool` beside it]."""
    catalog = Catalog(local_root(warehouse).absolute(), lock_timeout=lock_timeout)
    # the run is required: the ingest's default, the file's directory, would be a temporary one
    options = ingest_options(check_name("run", run), phase, rank, tags, embedded=True)
    return _TraceHandler(catalog, options, Path(spool_dir or f"{catalog.root}.spool"),
                         None if keep_dir is None else Path(keep_dir))


@dataclasses.dataclass
class _TraceHandler:
    catalog: Catalog  # with the lock timeout
    options: object  # IngestOptions, its rank None unless given
    spool_dir: Path
    keep_dir: Path | None

    def __call__(self, prof):
        try:
            self._handle(prof)
        except RefreshInterrupted:  # Ctrl-C while deriving: the user stops the job
            raise KeyboardInterrupt from None
        except Exception as error:  # noqa: BLE001 - a trace is never worth a training job
            _warn(f"a profiler trace was lost ({_reason(error)})")

    def _handle(self, prof):
        options = dataclasses.replace(self.options, rank=self._rank())
        with contextlib.ExitStack() as stack:
            directory = self.keep_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="tracewh-")))
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / _file_name(options)
            prof.export_chrome_trace(str(path))
            try:
                problem = self._ingest(path, options)
            except RefreshInterrupted:
                raise
            except Exception as error:  # noqa: BLE001 - the warehouse side, whatever it is
                problem = _reason(error)
            if problem is not None:
                self._spool(path, options, problem)

    def _rank(self):
        if self.options.rank is not None:
            return self.options.rank
        distributed = torch.distributed
        if distributed.is_available() and distributed.is_initialized():
            return distributed.get_rank()
        environ = os.environ.get("RANK", "")
        return int(environ) if environ.isdigit() else 0

    def _ingest(self, path, options):
        """Commit the trace, then derive the marts; None, or why the trace was not committed.
        Not `Warehouse.ingest_files`: a refresh that fails leaves the trace committed (that
        only warns, nothing to spool), and its allocator tuning is for short-lived processes."""
        [outcome] = ingest_paths(self.catalog, [path], options)
        if outcome.status == "failed":
            return outcome.error
        LOG.info("tracewh: %s: %s, run %s, phase %s, rank %s, %d events", printable(path),
                 outcome.status, outcome.run, outcome.phase, outcome.rank, outcome.events)
        try:
            refresh_derived(self.catalog)
        except RefreshInterrupted:
            raise
        except Exception as error:  # noqa: BLE001
            _warn(f"the trace of rank {options.rank} is in {_shown(self.catalog.root)}, but its "
                  f"marts and tracewh.duckdb lag behind ({_reason(error)}): `tracewh "
                  f"--warehouse {_shown(self.catalog.root)} refresh` brings them up to date")
        return None

    def _spool(self, path, options, reason):
        """Keep the trace where a later `tracewh ingest` finds it, and say so: in the spool,
        else in the temporary directory (the spool beside the warehouse shares its problem
        when the warehouse's parent is the problem)."""
        for directory in (self.spool_dir, Path(tempfile.gettempdir()) / "tracewh-spool"):
            kept = directory / path.name
            try:
                directory.mkdir(parents=True, exist_ok=True)
                (shutil.copy2 if self.keep_dir else shutil.move)(path, kept)
            except OSError as error:
                reason += f"; cannot spool to {printable(directory)}: {_reason(error)}"
                continue
            break
        else:
            if not self.keep_dir:
                _warn(f"a profiler trace was lost: not ingested ({reason})")
                return
            kept = path
        _warn(f"trace not ingested ({reason}); kept as {_shown(kept)}; ingest it later with: "
              + _ingest_command(self.catalog.root, kept, options))


def _file_name(options):
    """Unique in a spool that several ranks and jobs share, and the same in every place the
    file goes, so that a phase taken from the name is the same later."""
    phase = f".{options.phase}" if options.phase else ""
    return (f"{options.run}{phase}.rank{options.rank}.{socket.gethostname()}_{os.getpid()}."
            f"{time.time_ns()}{TRACE_SUFFIX}")


def _ingest_command(warehouse, path, options):
    words = ["tracewh", "--warehouse", _shown(warehouse), "ingest", _shown(path),
             "--run", options.run]
    if options.phase:
        words += ["--phase", options.phase]
    words += ["--rank", str(options.rank)]
    for key, value in options.tags.items():
        words += ["--tag", f"{key}={value}"]
    return shlex.join(words)


def _shown(path):
    """Absolute: the command may run from another directory than the job's."""
    return printable(Path(path).absolute())


def _reason(error):
    return str(error) or type(error).__name__


def _warn(message):
    LOG.warning("tracewh: %s", escaped(message))  # one line of the job's log
