"""A delta-spark driver on an ``s3a://`` table of the moto server, run in its own process.

``python spark_s3_turn.py ENDPOINT URI OUT PACKAGES``: starts a local session with delta-spark
and hadoop-aws (``PACKAGES``, resolved by Spark's Ivy from Maven Central), reads the table
(version, live rows, the snapshot's file paths), appends one row with ``INSERT``, reads it again,
and writes what it saw to ``OUT`` as JSON. Spark's S3 log store for ``s3a://`` is delta-spark's
default (one writer at a time): the caller takes turns with deltalog, it never races it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pyspark.sql import SparkSession

endpoint, uri, out, packages = sys.argv[1:5]
os.environ["PYSPARK_PYTHON"] = sys.executable
builder = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.databricks.delta.snapshotPartitions", "2")
    .config("spark.jars.packages", packages)
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
)
s3a = {
    "fs.s3a.endpoint": endpoint,
    "fs.s3a.endpoint.region": "us-east-1",
    "fs.s3a.path.style.access": "true",
    "fs.s3a.connection.ssl.enabled": "false",
    "fs.s3a.access.key": "testing",
    "fs.s3a.secret.key": "testing",
    "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "fs.s3a.change.detection.mode": "none",
}
for key, value in s3a.items():
    builder = builder.config(f"spark.hadoop.{key}", value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")


def seen() -> dict[str, Any]:
    jvm = spark._jvm
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
    delta_log.clearCache()
    snapshot = delta_log.forTable(spark._jsparkSession, uri).unsafeVolatileSnapshot()
    files = sorted(str(r.getAs("path")) for r in snapshot.allFiles().toDF().collectAsList())
    frame = spark.read.format("delta").load(uri)
    return {
        "version": int(snapshot.version()),
        "files": files,
        "rows": sorted(int(r["x"]) for r in frame.select("x").collect()),
    }


report = {"before": seen()}
spark.sql(f"INSERT INTO delta.`{uri}` (x, p) VALUES (999999, 'spark')")
report["after"] = seen()
spark.stop()
with open(out, "w") as f:
    json.dump(report, f)
