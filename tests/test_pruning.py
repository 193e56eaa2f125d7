"""A read-only query is asked of a connection that lists only the tables and defines only the
library views it reads (see `Warehouse._connect_for`): its answer is the one over the whole
warehouse, also where a CTE or an alias takes the name of a table or a view."""

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracewh
from tracewh.cli import cli

from .conftest import EXAMPLES

DLRM = sorted(EXAMPLES.glob("*.json.gz"))
# names the queries read: tables, library views (kernel_stats has a mart), and one name that is
# only ever a CTE's
REAL = ["kernels", "traces", "cpu_ops", "kernel_stats", "overlap"]
NAMES = [*REAL, "x"]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """Two ranks of DLRM's step, for the module, whose tests only read it."""
    root = tmp_path_factory.mktemp("pruning") / "wh"
    result = CliRunner().invoke(cli, ["--warehouse", str(root), "ingest", *map(str, DLRM[:2]),
                                      "--run", "d", "--phase", "train"])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture(scope="module")
def wh(warehouse):
    with tracewh.open(warehouse) as opened:
        yield opened


def both_answers(wh, sql):
    """(rows of the pruned read-only query, rows over the whole warehouse with full access)."""
    [(_, pruned)] = wh.query(sql)
    return pruned, wh.sql(sql).fetchall()


def test_a_cte_named_like_a_table_does_not_empty_that_table_elsewhere(wh):
    """Issue 42: the CTE `kernels` hid the table `kernels` from the pruning, which listed no
    kernels file: the real count read 0."""
    sql = ("select (select count(*) from kernels) as real_count, "
           "(with kernels as (select 1 as x) select count(*) from kernels) as shadow")
    pruned, whole = both_answers(wh, sql)
    assert whole[0][0] > 0 and whole[0][1] == 1
    assert pruned == whole


@st.composite
def counts(draw, depth=2):
    """A query of one count: of a table or view, or of a CTE of any name (a table's too),
    defined over one row or over another such query, read by its name or by another."""
    if depth == 0 or draw(st.booleans()):
        where = draw(st.sampled_from(["", " WHERE run = 'd'", " WHERE rank = 1"]))
        source = draw(st.sampled_from(REAL))
        return f"SELECT count(*) FROM {source}" + (where if source != "overlap" else "")
    name = draw(st.sampled_from(NAMES))
    body = draw(st.one_of(st.just("SELECT 1 AS x"), counts(depth - 1)))
    read = draw(st.sampled_from([name, *REAL]))
    alias = draw(st.sampled_from(["", f" AS {draw(st.sampled_from(NAMES))}"]))
    return f"WITH {name} AS ({body}) SELECT count(*) FROM {read}{alias}"


@settings(max_examples=25, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(queries=st.lists(counts(), min_size=1, max_size=3))
def test_pruned_answers_equal_the_whole_warehouses(wh, queries):
    sql = "SELECT " + ", ".join(f"({query}) AS c{i}" for i, query in enumerate(queries))
    pruned, whole = both_answers(wh, sql)
    assert pruned == whole, sql
