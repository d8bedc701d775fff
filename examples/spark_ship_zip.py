"""Ship deltalog to Spark's executors as a zip, then write (docs/cluster.md shows this script).

Runs here on ``local[1]``; on a cluster, give its master URL instead: the executors then get
deltalog from the zip, and need only pyarrow, orjson and pandas in their own Python.
``python examples/spark_ship_zip.py [TABLE_DIR]``.
"""

import os
import sys
import tempfile

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # local mode: workers use this Python

from pyspark.sql import SparkSession

import deltalog.spark
from deltalog import DeltaTable

table = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/events"
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()

# deltalog's package as a zip (deterministic bytes; `deltalog package-zip -o FILE` does the
# same from the shell, for spark-submit --py-files FILE).
spark.sparkContext.addPyFile(str(deltalog.spark.package_zip()))

df = spark.range(0, 1000).selectExpr("id", "id % 7 AS bucket")
result = deltalog.spark.write(df, table, partition_by=["bucket"])
print(f"version {result.version}: {result.rows} rows in {DeltaTable(table).files().num_rows} files")
spark.stop()
