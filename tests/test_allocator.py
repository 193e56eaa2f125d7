"""`tracewh ingest`'s heap: one arena for every thread, and the measures' heap kept between
them."""

import ctypes
import subprocess
import sys

import pytest

from tracewh import allocator


def _glibc():
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt)
    except (OSError, AttributeError):
        return False


# The command's entry with `arguments`, then whether its process allocates from one heap.
PROBE = """
import sys
from tracewh import allocator
from tracewh.entry import main
sys.argv = ["tracewh", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("one heap:", allocator._one_heap)
"""


@pytest.mark.skipif(not _glibc(), reason="glibc's mallopt")
@pytest.mark.parametrize("arguments, one_heap", [
    (["ingest", "--help"], True),
    (["--warehouse", "ingest", "ingest", "--help"], True),
    (["--warehouse", "ingest", "query", "--help"], False),
    (["--help"], False)])
def test_the_ingest_command_allocates_from_one_heap(arguments, one_heap):
    result = subprocess.run([sys.executable, "-c", PROBE, *arguments], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == f"one heap: {one_heap}"


@pytest.mark.skipif(not _glibc(), reason="glibc's mallopt")
def test_no_one_heap_once_a_thread_runs():
    # pyarrow's import starts its allocator's thread: the threads after it would share the
    # arenas in turn, so the process keeps its arenas and the trims between measures
    script = ("import pyarrow\nfrom tracewh import allocator\n"
              "print(allocator.use_one_heap(), allocator._one_heap)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split() == ["False", "False"]


def test_a_library_process_keeps_its_arenas():
    # this test process did not start as the command: its allocator is its own business
    assert allocator._one_heap is False


@pytest.mark.parametrize("one_heap, trims", [(True, 0), (False, 1)])
def test_between_phases_the_heap_is_given_back_only_on_several(monkeypatch, one_heap, trims):
    calls = []
    monkeypatch.setattr(allocator, "_one_heap", one_heap)
    monkeypatch.setattr(allocator, "release_freed_memory", lambda: calls.append(1))
    allocator.release_between_phases()
    assert len(calls) == trims
