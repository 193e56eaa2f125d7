"""How tracewh writes Parquet: one compression and one choice of encodings and statistics for
every file, whoever writes it (the ingest's parts, the `traces` row at commit, optimize's
merged files)."""

import pyarrow as pa
import pyarrow.parquet as pq

PARQUET_OPTIONS = {"compression": "zstd", "compression_level": 1}
JSON_TEXT_COLUMNS = {"args", "extra", "metadata", "properties"}
PLAIN_TEXT_COLUMNS = JSON_TEXT_COLUMNS | {"id"}
# The text columns a file's rows are grouped by (a row group holds one trace, one run of a
# mart, one layer of the call tree, one step of the critical path): their min/max let a reader
# skip row groups and files. Other text (names, categories, pids) is mixed in every row
# group, where min/max skips nothing.
KEY_TEXT_COLUMNS = {"trace_id", "run", "phase", "layer", "step"}
# The integer columns whose deltas are as wide as their values: hashes.
HASHED_COLUMNS = {"name_id"}


def dictionary_columns(schema):
    """The columns worth dictionary encoding: text with few distinct values (names, categories,
    pids), held plain or as Arrow dictionaries. Timestamps, indexes, flow ids and args text are
    nearly all distinct; a dictionary of them overflows and falls back to plain anyway, after
    costing time and a wasted page: encoding them plain halved a chunk's Parquet size (0.71 ->
    0.41 MB) and cut its write time."""
    return [field.name for field in schema
            if _is_text(field.type) and field.name not in PLAIN_TEXT_COLUMNS]


def _is_text(type_):
    return pa.types.is_string(type_) or (pa.types.is_dictionary(type_)
                                         and pa.types.is_string(type_.value_type))


def statistics_columns(schema):
    """The columns worth min/max statistics: the numbers (event indexes and times are
    ordered within a row group, and cheap to compare) and the text keys rows are grouped by
    (KEY_TEXT_COLUMNS). Statistics of the other text cost a string comparison of every value
    and skip nothing: they were a fifth of the time writing the call tree of a 254 MB trace
    (1.56M rows); without them its ten largest tables were written in 0.85x the time."""
    return [field.name for field in schema
            if not _is_text(field.type) or field.name in KEY_TEXT_COLUMNS]


def delta_columns(schema):
    """The integer columns written DELTA_BINARY_PACKED rather than PLAIN: indexes, times,
    durations, depths and ids change little from row to row, so their deltas pack into a
    few bits where PLAIN spends 8 bytes a value for zstd to compress again (the call tree of
    a 254 MB trace: 92 MB before compression). That trace's ten largest tables were written
    in 0.87x the time and 0.8x the bytes, and DuckDB reads them as fast or faster. Hashes
    (HASHED_COLUMNS) stay PLAIN."""
    return [field.name for field in schema
            if pa.types.is_integer(field.type) and field.name not in HASHED_COLUMNS]


def write_options(schema):
    """Keyword arguments of pyarrow's Parquet writers for a file of `schema`."""
    return {"use_dictionary": dictionary_columns(schema),
            "write_statistics": statistics_columns(schema),
            "column_encoding": dict.fromkeys(delta_columns(schema), "DELTA_BINARY_PACKED"),
            **PARQUET_OPTIONS}


def write_table(table, path):
    """Write `table` to `path` with tracewh's options. A table with Arrow dictionaries is
    written without the Arrow schema, so that its text is read back as the plain text it is
    in Parquet (as parquet_writer's store_schema)."""
    pq.write_table(table, path, store_schema=not holds_dictionaries(table.schema),
                   **write_options(table.schema))


def holds_dictionaries(schema):
    """Whether a column of `schema` is an Arrow dictionary: such a file is written without
    the Arrow schema (see write_table)."""
    return any(pa.types.is_dictionary(field.type) for field in schema)


def parquet_writer(path, schema, store_schema=True):
    """A writer of a file of `schema` at `path` with tracewh's options, a row group for each
    table it is given. Without `store_schema` the file does not carry the Arrow schema: text
    written from Arrow dictionaries is then read back as the plain text it is in Parquet."""
    return pq.ParquetWriter(path, schema, store_schema=store_schema, **write_options(schema))
