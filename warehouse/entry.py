"""The `tracewh` command's process (the console script's entry, and `python -m tracewh`):
settings of the process that must come before pyarrow and numpy are imported, then the click
CLI.

- Arrow allocates through glibc (ARROW_DEFAULT_MEMORY_POOL=system, unless the user set it),
  not mimalloc, pyarrow's default: the setting is read once, when pyarrow is imported, and
  `pa.set_memory_pool` later reaches only what pyarrow's Python layer allocates, not Arrow's
  C++ (compute kernels, the Parquet reader's buffers). mimalloc keeps the pages it frees to
  itself: the ingest's numpy arrays could not reuse what its Arrow columns freed, and it held
  ~2.5x the bytes Arrow had allocated when the staged parts were read back. With one heap,
  whose freed memory the ingest keeps for reuse (`tracewh.allocator`), the peak RSS of
  ingesting the 254 MB trace went from ~450 to ~340 MiB (worker) and ~350 to ~280 MiB
  (parent), at no cost in time (`make bench`).
- pandas cannot be imported. pyarrow looks for it at its first conversion of Python values
  (any `pa.array`), importing it where it is installed: 0.25-0.33 s in the command's process
  and again in each ingest worker, a third of a small run's ingest, for a library no command
  uses. pyarrow then does without it, and the forked workers inherit the finder.
- numpy's OpenBLAS runs on one thread (OPENBLAS_NUM_THREADS=1, unless the user set it): no
  command multiplies matrices, yet at numpy's import OpenBLAS starts a thread per core that
  spins for a while (0.05 s of CPU of each command's ~0.1 s import of numpy, 2% of the 254 MB
  ingest's CPU in its profile), taking the core the native decode's threads work on.
- `tracewh ingest`'s threads allocate from one heap of glibc's (`tracewh.allocator.
  use_one_heap`): its measures reuse the memory the one before freed, whichever thread freed
  it. Only the ingest: other commands gain nothing, and DuckDB's threads on a machine of many
  cores would wait for its lock.

None is done in `tracewh.cli`: the Python API and CliRunner run in processes that may use
pandas, and whose allocator is their own business.
"""

import importlib.abc
import os
import sys

from .allocator import use_one_heap


def main():
    prepare_process(sys.argv[1:])
    from .cli import cli

    cli(prog_name="tracewh")


def _command_name(group, arguments):
    """The command `arguments` name after the click `group`'s own options (None: none)."""
    valued = {name for option in group.params if not getattr(option, "is_flag", True)
              for name in option.opts}
    remaining = iter(arguments)
    for argument in remaining:
        if argument in valued:
            next(remaining, None)
        elif not argument.startswith("-"):
            return argument
    return None


def prepare_process(arguments=()):
    """The settings above, for this process and those it forks (again: no change);
    `arguments`: the command line's (without the program's name), for the settings of its
    command (`ingest`: one heap, before pyarrow's import starts a thread)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not any(isinstance(finder, _WithoutPandas) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WithoutPandas())
    if arguments:
        from .cli import cli  # imports neither pyarrow nor numpy

        if _command_name(cli, arguments) == "ingest":
            use_one_heap()


class _WithoutPandas(importlib.abc.MetaPathFinder):
    """An import finder for which pandas is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r} (tracewh's commands do not "
                                      "use pandas)", name=name)
        return None
