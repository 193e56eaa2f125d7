"""tracewh: a columnar trace warehouse with SQL for PyTorch Profiler (Kineto) traces.

    import tracewh
    wh = tracewh.open("my-warehouse")
    wh.sql("SELECT * FROM overlap").df()

`tracewh` (this folder, `warehouse/` in the repository) holds the catalog (which files are
committed), the query layer (DuckDB views over the Parquet files and the SQL library,
`tracewh.sql`), the derived marts and DuckDB file, the Python API (`api`), Spark
registration (`tracewh.spark`) and the click CLI; `tracewh.ingest` turns traces into Parquet.
"""


def open(path, rules=None, peaks=None):  # noqa: A001 - the API's entry point is tracewh.open
    """The warehouse at `path` (see `tracewh.api.Warehouse`); `rules`: a kernel rules file
    for its queries, `peaks`: a device peaks file for op_perf. Imported on use: the CLI
    imports this package and must start fast."""
    from .api import Warehouse

    return Warehouse(path, rules, peaks)
