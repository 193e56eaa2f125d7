"""The query layer: the SQL library of `sql/` (`library`), defined on DuckDB connections over
a snapshot's files (`define`, `table_sql`, `connection`) or answered from the warehouse's
tracewh.duckdb (`prepared`); what a query reads and may do (`query_analysis`, `statements`,
`scope`); and the library in other engines' dialects (`dialects`).

Nothing is imported here: a query answered from tracewh.duckdb imports neither pyarrow nor
delta-rs, which `define` and `connection` need.
"""
