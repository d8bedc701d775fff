"""One Spark application on the test cluster: ship deltalog one way, write, say what happened.

``python cluster_driver.py JSON``; JSON has ``master``, ``table``, ``how``, ``conf`` (extra
Spark settings) and ``driver_path``, which only this process puts on ``sys.path`` to import
deltalog (``PYTHONPATH`` would reach the workers in local mode); the executors get deltalog
only as ``how`` says. Prints one JSON line: the write's version and rows, or its error, and
where the executors imported deltalog from.
"""

from __future__ import annotations

import json
import sys

args = json.loads(sys.argv[1])
sys.path.insert(0, args["driver_path"])

from pyspark.sql import SparkSession  # noqa: E402

import deltalog.spark  # noqa: E402
from deltalog import DeltaTable, SparkWriteError  # noqa: E402

builder = (
    SparkSession.builder.master(args["master"])
    .appName(f"deltalog-shipping-{args['how']}")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.executor.memory", "512m")
    .config("spark.cores.max", "2")
    .config("spark.sql.shuffle.partitions", "2")
)
for key, value in args.get("conf", {}).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
df = spark.range(0, 100, numPartitions=2).selectExpr("id", "id % 3 AS p")
result: dict[str, object] = {}


def attempt() -> None:
    try:
        written = deltalog.spark.write(df, args["table"], mode="append", partition_by=["p"])
    except SparkWriteError as exc:
        result["error"] = str(exc)
        return
    result.pop("error", None)
    result["version"] = written.version
    result["rows"] = DeltaTable(args["table"]).to_pyarrow_table().num_rows
    where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("deltalog").__file__)
    result["executors_import"] = where.collect()[0]


attempt()
if args["how"] == "addPyFile":  # the first attempt had nothing shipped
    result["before"] = result.pop("error", "no error")
    spark.sparkContext.addPyFile(str(deltalog.spark.package_zip()))
    attempt()
print("RESULT " + json.dumps(result), flush=True)
spark.stop()
