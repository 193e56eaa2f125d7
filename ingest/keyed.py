"""Rows grouped and matched by their values in a few key columns, with Arrow's compute kernels
and numpy: what pyarrow's `Table.group_by` and `Table.join` would do for the ingest.

Those two run through pyarrow.acero, which imports pyarrow.dataset and with it the CSV, JSON,
ORC and Substrait readers and dateutil: ~30 modules that every chunk's worker and the command
loaded for a distinct list of kernel names and two lookups of small tables. Here each key
column is dictionary-encoded (a hash table, as the join's) and the columns' codes are
combined into one int64 code per row, so grouping and matching are numpy indexing. Rows
keep their order: a group is listed where its first row is, a joined row where it was.
"""

import numpy as np
# pyarrow imports numpy.ma at its first array made of a numpy array (to test for a masked
# one): imported with this module, before an ingest's workers are forked, it is theirs too.
import numpy.ma  # noqa: F401
import pyarrow as pa
import pyarrow.compute as pc


def contiguous(column):
    """One contiguous array of a (possibly chunked, possibly empty) column."""
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks else pa.array([], column.type)
    return column


def distinct_rows(table):
    """The distinct rows of `table` (NULL a value like any other, as group_by's keys), each
    where it first occurs."""
    if not len(table):
        return table
    _, first = np.unique(_codes(table.columns, nulls_match=True), return_index=True)
    return table.take(pa.array(first))


def left_join(table, other, keys):
    """`table` with the columns of `other` but its `keys` appended: on each row, those of the
    row of `other` with the same values in `keys` (NULL where none; a NULL key matches
    nothing), as a left outer join. `other`'s keys are distinct (the callers': a kernel
    name's category and 64-bit hash, a correlation id's launch)."""
    size = len(table)
    codes = _codes([pa.concat_arrays([contiguous(table[key]),
                                      contiguous(other[key]).cast(table.schema.field(key).type)])
                    for key in keys], nulls_match=False)
    mine, theirs = codes[:size], codes[size:]
    row_of = np.full(len(codes), -1, np.int64)  # by code: codes are below the row count
    keyed = np.flatnonzero(theirs >= 0)
    row_of[theirs[keyed]] = keyed
    found = np.where(mine >= 0, row_of[np.maximum(mine, 0)], -1)
    rows = pa.array(found, mask=found < 0)
    for name in other.column_names:
        if name not in keys:
            table = table.append_column(other.schema.field(name),
                                        contiguous(other[name]).take(rows))
    return table


def _codes(columns, nulls_match):
    """One int64 code per row of the equally long `columns`: two rows have the same code if
    and only if they hold the same values. A row with a NULL key has -1 unless
    `nulls_match`. The codes stay below the row count: each column's dictionary codes are
    folded into the codes so far, and the pairs numbered again (in order of first
    occurrence)."""
    codes = missing = None
    for column in columns:
        column = contiguous(column)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        if codes is None:
            codes = indices
        else:
            folded = codes * len(encoded.dictionary) + indices
            codes = pc.dictionary_encode(pa.array(folded)).indices.to_numpy(
                zero_copy_only=False).astype(np.int64)
        if not nulls_match and column.null_count:
            invalid = column.is_null().to_numpy(zero_copy_only=False)
            missing = invalid if missing is None else missing | invalid
    if missing is not None:
        codes[missing] = -1
    return codes
