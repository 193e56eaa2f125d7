"""The warehouse in a SparkSession: `tracewh.spark.register(spark, "my-warehouse")`.

Every table is a temporary view over the Parquet files of one snapshot (the newest when
called), the kernel rules a temporary view, the library's views as temporary views and its
table macros as SQL table functions (Spark 4), all as `tracewh views --dialect spark
--script` prints them: all but those `dialects.spark_omitted` names (see docs/readers.md). Then `spark.sql("SELECT * FROM overlap")` answers as `tracewh query` does.
Needs pyspark (`pip install 'tracewh[spark]'`) and Java 17 or newer.
"""

from .api import Warehouse
from .query.dialects import script


def register(spark, warehouse, rules=None, peaks=None):
    """Define the warehouse's tables, rules and device peaks tables, views and macros in
    `spark`, a SparkSession; `rules`: a kernel rules TOML file, `peaks`: a device peaks TOML
    file. Returns the snapshot registered."""
    source = Warehouse(warehouse, rules, peaks)
    for statement in script("spark", source.snapshot, source.path.resolve(),
                            source.kernel_rules, source.device_peaks):
        spark.sql(statement)
    return source.snapshot
