"""The Python API, as a notebook uses it: tracewh.open, sql, ingest, diff, trend."""

import duckdb
import pytest

import tracewh
from tracewh.errors import UsageError, WarehouseError

from .conftest import EXAMPLES

DLRM = sorted(EXAMPLES.glob("*.json.gz"))


@pytest.fixture
def wh(tmp_path):
    with tracewh.open(tmp_path / "wh") as warehouse:
        yield warehouse


def test_a_notebook_session(wh, tracewh):
    """Ingest two runs, query as pandas, polars and Arrow, diff them: the same figures as the
    CLI's."""
    outcomes = wh.ingest(EXAMPLES, run="base", phase="train", tags={"git": "3f2a"})
    assert [o.status for o in outcomes] == ["ingested"] * 8
    wh.ingest(*DLRM[:4], run="new", phase="Train")
    overlap = wh.sql("SELECT run, rank, overlap_ns FROM overlap ORDER BY run, rank")
    frame = overlap.df()
    assert list(frame.columns) == ["run", "rank", "overlap_ns"] and len(frame) == 12
    assert overlap.pl()["overlap_ns"].to_list() == frame["overlap_ns"].tolist()
    assert overlap.to_arrow_table().num_rows == 12
    cli = tracewh("query", "--format", "csv", "SELECT run, rank, overlap_ns FROM overlap "
                  "ORDER BY run, rank").stdout.splitlines()[1:]
    assert cli == [f"{r},{k},{n}" for r, k, n in frame.itertuples(index=False)]
    assert [row[0] for row in wh.runs().fetchall()] == ["base", "new"]
    report = wh.diff("base", "new")
    assert set(report) >= {"kernels", "metrics", "summary"}
    assert report["summary"]["regression"] in (True, False)
    assert {m["metric"] for m in report["metrics"]} == {
        "overlap_ratio", "exposed_comm_ns", "step_time_ns", "gpu_idle_ns", "busbw_gbps",
        "collective_wait_ns"}
    trend = wh.trend("overlap_ratio", tag="git=3f2a")
    assert [row["run"] for row in trend] == ["base"] and trend[0]["ranks"] == 8


def test_mistakes_are_exceptions_with_one_line(wh, tmp_path):
    with pytest.raises(WarehouseError, match="does not exist"):
        tracewh.open(tmp_path / "nothing").sql("SELECT 1")
    wh.ingest(DLRM[0], run="a", phase="train")
    with pytest.raises(UsageError, match=r"^unknown run 'b' \(Warehouse.runs\(\) lists the 1 "
                       r"run\)$"):  # the library's words, not the CLI's `tracewh runs`
        wh.diff("a", "b")
    with pytest.raises(UsageError, match="invalid run"):
        wh.ingest(DLRM[1], run="../escape")
    with pytest.raises(duckdb.Error):
        wh.sql("SELECT nope FROM overlap")


def test_the_snapshot_holds_until_reload(wh, tmp_path):
    wh.ingest(DLRM[0], run="a", phase="train")
    assert wh.sql("SELECT count(*) FROM traces").fetchall() == [(1,)]
    other = tracewh.open(wh.path)
    other.ingest(DLRM[1], run="b", phase="train")
    assert wh.sql("SELECT count(*) FROM traces").fetchall() == [(1,)]  # its snapshot
    assert wh.reload().sql("SELECT count(*) FROM traces").fetchall() == [(2,)]
    other.close()


def test_ingesting_in_parallel_beside_an_open_duckdb_connection(wh):
    """A notebook that queried with DuckDB before ingesting: forked workers would inherit its
    threads' locks (they crashed); the API's come from a forkserver."""
    with duckdb.connect() as notebook:
        notebook.execute("SELECT sum(range) FROM range(50000000)").fetchall()
        outcomes = wh.ingest(*DLRM[:4], run="p", phase="train", jobs=2)
    assert [o.status for o in outcomes] == ["ingested"] * 4
    assert wh.sql("SELECT count(DISTINCT rank) FROM overlap").fetchall() == [(4,)]
