"""A new warehouse's tracewh.duckdb is a copy of the library's template in the user's cache,
made once per library shape; its first refresh's marts attach the template. A damaged,
foreign or unwritable cache costs the definition only: the file is right in every case."""

import duckdb
import pytest

from tracewh.derived import duckdb_file, marts
from tracewh.derived.duckdb_file import FILE_NAME
from tracewh.query import prepared

from .conftest import EXAMPLES, cli_on, connect

DLRM = sorted(EXAMPLES.glob("*.json.gz"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tracewh"


def templates(cache):
    return sorted(cache.glob("library-*.duckdb"))


def new_warehouse(tmp_path, name):
    """A new warehouse `name` with two DLRM ranks ingested (its first refresh done)."""
    warehouse = tmp_path / name
    cli_on(warehouse)("ingest", *DLRM[:2], "--run", "a", "--phase", "train")
    return warehouse


def assert_file_answers(warehouse):
    """tracewh.duckdb, opened as BI tools open it, answers as a connection does."""
    with duckdb.connect(str(warehouse / FILE_NAME), read_only=True) as bi:
        for query in ("SELECT count(*) FROM kernels", "SELECT count(*) FROM cpu_ops",
                      "SELECT run, rank, overlap_ratio FROM overlap ORDER BY ALL",
                      "SELECT count(*) FROM kernel_class_rules", "SELECT count(*) FROM device_peaks"):
            expected = connect(warehouse).execute(query).fetchall()
            assert bi.execute(query).fetchall() == expected, query
            assert expected not in ([], [(0,)]), query


def refuse_definition(monkeypatch):
    def define(*_):
        raise AssertionError("the library was defined again")

    monkeypatch.setattr(duckdb_file, "_define", define)


def test_a_new_warehouse_copies_the_template_made_by_the_first(tmp_path, cache, monkeypatch):
    first = new_warehouse(tmp_path, "first")
    (template,) = templates(cache)
    assert_file_answers(first)
    attached = []

    def attach_spy(database, shape):
        attached.append(database)
        return prepared.attach_library(database, shape)

    refuse_definition(monkeypatch)
    monkeypatch.setattr(marts, "attach_library", attach_spy)
    second = new_warehouse(tmp_path, "second")
    assert_file_answers(second)
    # the marts of its first refresh: the template, its own file being written beside
    assert template in attached
    assert templates(cache) == [template]
    assert not list(cache.glob(".library-*"))  # no temporary left


@pytest.mark.parametrize("damage", ["garbage", "another shape", "empty"])
def test_a_damaged_or_foreign_template_is_made_again(tmp_path, cache, damage):
    new_warehouse(tmp_path, "first")
    (template,) = templates(cache)
    if damage == "another shape":
        with duckdb.connect(str(template)) as changed:
            changed.execute("UPDATE tracewh_snapshot SET shape = '{}'")
    else:
        template.write_bytes(b"" if damage == "empty" else b"not a DuckDB file" * 4096)
    second = new_warehouse(tmp_path, "second")
    assert_file_answers(second)
    assert templates(cache) == [template]
    with duckdb.connect(str(template), read_only=True) as remade:
        assert remade.execute("SELECT shape FROM tracewh_snapshot").fetchone()[0] != "{}"


def test_an_unwritable_cache_costs_the_definition_only(tmp_path, monkeypatch):
    not_a_directory = tmp_path / "cache"
    not_a_directory.write_text("a file where the cache would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_directory))
    warehouse = new_warehouse(tmp_path, "wh")
    assert_file_answers(warehouse)


def test_templates_of_other_shapes_are_kept_up_to_a_bound(tmp_path, cache, monkeypatch):
    from tracewh.derived import library_template

    monkeypatch.setattr(library_template, "KEPT", 2)
    made = []
    for index in range(3):
        monkeypatch.setattr(library_template, "FORMAT", 100 + index)  # another shape each
        before = set(templates(cache))
        new_warehouse(tmp_path, f"wh{index}")
        (new,) = set(templates(cache)) - before
        made.append(new)
    assert templates(cache) == sorted(made[1:])


def test_a_killed_maker_s_temporary_is_removed_once_stale(tmp_path, cache, monkeypatch):
    import os

    from tracewh.derived import library_template

    cache.mkdir(parents=True)
    stale, recent = (cache / f".library-{name}.duckdb.123.tmp" for name in ("a", "b"))
    for path in (stale, recent, stale.with_name(stale.name + ".wal")):
        path.write_bytes(b"left by a killed process")
    os.utime(stale, (0, 0))
    os.utime(stale.with_name(stale.name + ".wal"), (0, 0))
    monkeypatch.setattr(library_template, "FORMAT", 200)  # a template to make
    new_warehouse(tmp_path, "wh")
    assert not stale.exists() and not stale.with_name(stale.name + ".wal").exists()
    assert recent.exists()
