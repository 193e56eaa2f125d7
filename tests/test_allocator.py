"""The command's heap: one arena for every thread, and the measures' heap kept between them."""

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


@pytest.mark.skipif(not _glibc(), reason="glibc's mallopt")
def test_the_command_allocates_from_one_heap():
    script = ("from tracewh.entry import prepare_process; prepare_process(); "
              "from tracewh import allocator; print(allocator._one_heap)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "True"


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
