"""deltalog importable on the Spark driver only (not by the executors' Python workers).

Run by tests/test_packaging.py: ``python driver_only.py DIR TABLE`` with deltalog unpacked in
DIR, which only this (driver) process puts on ``sys.path``. The write must fail with
SparkWriteError saying that the executors cannot import deltalog, and commit nothing.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, sys.argv[1])
# Spark's workers run this venv's python (not whatever python3 is on PATH).
os.environ["PYSPARK_PYTHON"] = sys.executable

import pyarrow as pa
from pyspark.sql import SparkSession

import deltalog.spark
from deltalog import DeltaTable, SparkWriteError

root = sys.argv[2]
DeltaTable.create(root, pa.schema([("id", pa.int64())]))
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
try:
    deltalog.spark.write(spark.createDataFrame([(1,)], "id long"), root, mode="append")
except SparkWriteError as exc:
    assert "workers cannot import deltalog" in str(exc), exc
    assert DeltaTable(root).version() == 0
    print("ok executors without deltalog: SparkWriteError names the cause")
else:
    raise AssertionError("the write succeeded without deltalog on the executors")
finally:
    spark.stop()
