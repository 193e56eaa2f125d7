"""tracewh: a columnar trace warehouse with SQL for PyTorch Profiler (Kineto) traces.

`warehouse` holds the catalog (which files are committed), the query layer (DuckDB views over
the Parquet files and the SQL library in `sql/`) and the click CLI; `ingest` turns traces into
Parquet.
"""
