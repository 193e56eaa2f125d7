"""ingest.keyed's grouping and matching against pyarrow's own (Table.group_by, Table.join,
through pyarrow.acero, which the ingest no longer imports): the same rows, nulls, repeated
keys and empty tables included."""

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.ingest.keyed import distinct_rows, left_join

TEXT = st.one_of(st.none(), st.sampled_from(["kernel", "gpu_memcpy", "", "é"]))
NUMBER = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([-2**63, 2**63 - 1]))
ROWS = st.lists(st.tuples(TEXT, NUMBER, TEXT), max_size=40)


def _table(rows):
    return pa.table([pa.array([row[i] for row in rows], type_) for i, type_ in
                     enumerate((pa.string(), pa.int64(), pa.string()))], names=["c", "n", "s"])


def _sorted(table):
    return sorted(table.to_pylist(), key=repr)


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_distinct_rows_are_group_by_s_groups_in_order_of_first_row(rows):
    table = _table(rows)
    found = distinct_rows(table)
    assert _sorted(found) == _sorted(table.group_by(["c", "n", "s"]).aggregate([]))
    assert found.to_pylist() == list({repr(row): row for row in table.to_pylist()}.values())


@settings(max_examples=300, deadline=None)
@given(ROWS, ROWS, st.sampled_from([["c"], ["n"], ["c", "n"], ["c", "n", "s"]]))
def test_left_join_is_a_left_outer_join_keeping_the_rows_order(rows, other_rows, keys):
    table = _table(rows)
    other = distinct_rows(_table(other_rows).select(keys))
    other = other.append_column("value", pa.array(range(len(other)), pa.int64()))
    joined = left_join(table, other, keys)
    assert joined.column_names == [*table.column_names, "value"]
    assert joined.select(table.column_names) == table
    assert _sorted(joined) == _sorted(table.join(other, keys, join_type="left outer"))
