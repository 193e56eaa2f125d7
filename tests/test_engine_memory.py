"""DuckDB's freed memory handed back between a refresh's questions (query/engine_memory)."""

import sys

import duckdb
import pytest

from tracewh.query.engine_memory import give_back_engine_memory, give_back_freed_memory


def _anonymous_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no RssAnon")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="DuckDB's jemalloc: Linux")
def test_the_pages_a_question_freed_are_given_back():
    """A count of distinct strings builds a hash table of ~100 MB and frees it: DuckDB's
    allocator keeps the pages resident until they are purged."""
    connection = duckdb.connect()
    before = _anonymous_mb()
    assert connection.execute("SELECT count(DISTINCT range::VARCHAR) FROM range(1500000)"
                              ).fetchall() == [(1_500_000,)]
    asked = _anonymous_mb()
    assert asked - before > 40  # kept after the question, though nothing holds it
    assert give_back_freed_memory()
    assert _anonymous_mb() - before < (asked - before) / 3
    assert connection.execute("SELECT count(*) FROM range(1000)").fetchall() == [(1000,)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="DuckDB's jemalloc: Linux")
def test_freed_pages_are_kept_up_to_a_bound():
    """Between a refresh's questions, DuckDB's freed pages are given back only above a bound:
    the same question's ~100 MB are, and what is left after that is kept."""
    connection = duckdb.connect()
    give_back_freed_memory()
    before = _anonymous_mb()
    assert connection.execute("SELECT count(DISTINCT range::VARCHAR) FROM range(1500000)"
                              ).fetchall() == [(1_500_000,)]
    asked = _anonymous_mb()
    assert asked - before > 40
    assert not give_back_engine_memory(1 << 40)  # under the bound: kept
    assert _anonymous_mb() - before > 40
    assert give_back_engine_memory(32 << 20)
    assert _anonymous_mb() - before < (asked - before) / 3
    assert not give_back_engine_memory(32 << 20)  # given back already
