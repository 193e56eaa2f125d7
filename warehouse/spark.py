"""The warehouse in a SparkSession: `tracewh.spark.register(spark, "my-warehouse")`.

Every table is a temporary view over the Parquet files of one snapshot (the newest when
called), the kernel rules a temporary view, every library view a temporary view and every
table macro a SQL table function (Spark 4), all as `tracewh views --dialect spark --script`
prints them. Then `spark.sql("SELECT * FROM overlap")` answers as `tracewh query` does.
Needs pyspark (`pip install 'tracewh[spark]'`) and Java 17 or newer.
"""

from .catalog import Catalog
from .dialects import script
from .rules import effective_rules


def register(spark, warehouse, rules=None):
    """Define the warehouse's tables, rules table, views and macros in `spark`, a
    SparkSession; `rules`: a kernel rules TOML file. Returns the snapshot registered."""
    catalog = Catalog(warehouse)
    catalog.check_readable()
    snapshot = catalog.snapshot()
    root = catalog.root.resolve()
    for statement in script("spark", snapshot, root, effective_rules(root, rules)):
        spark.sql(statement)
    return snapshot
