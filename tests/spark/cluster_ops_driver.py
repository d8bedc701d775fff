"""One Spark application running deltalog's table operations, for ``test_cluster_ops.py``.

``python cluster_ops_driver.py JSON``; JSON has ``master``, ``table``, ``steps`` (names in
:data:`STEPS`, run in order on one table), ``conf`` (extra Spark settings) and
``driver_path``, which only this process puts on ``sys.path`` to import deltalog. Prints one
line ``RESULT {step: what it returned, or {"error": ...}}``. A step's result is plain JSON
(versions, ids, counts) read back with :class:`deltalog.DeltaTable`, independent of Spark.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

args = json.loads(sys.argv[1])
sys.path.insert(0, args["driver_path"])

import pyarrow as pa  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import deltalog.spark  # noqa: E402
from deltalog import DeltaTable, write_table  # noqa: E402

builder = (
    SparkSession.builder.master(args["master"])
    .appName("deltalog-cluster-ops")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.executor.memory", "512m")
    .config("spark.cores.max", "2")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.session.timeZone", "UTC")
)
for key, value in args.get("conf", {}).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
TABLE: str = args["table"]


def _ids(version: int | None = None) -> list[int]:
    return sorted(DeltaTable(TABLE, version=version).to_pyarrow_table()["id"].to_pylist())


def _frame(start: int, stop: int) -> Any:
    return spark.range(start, stop, numPartitions=2).selectExpr("id", "id % 3 AS p")


def write() -> dict[str, Any]:
    """Two appends, partitioned by ``p``: 0-59 then 60-99."""
    first = deltalog.spark.write(_frame(0, 60), TABLE, mode="append", partition_by=["p"])
    second = deltalog.spark.write(_frame(60, 100), TABLE, mode="append")
    table = DeltaTable(TABLE)
    return {
        "versions": [first.version, second.version],
        "ids": _ids(),
        "partition_columns": table.snapshot.partition_columns,
        "files": table.files().num_rows,
    }


def read() -> dict[str, Any]:
    """Read back on the executors: a filter with a column subset, and time travel."""
    filtered = deltalog.spark.read(spark, TABLE, filter="p = 1 AND id < 30", columns=["id"])
    return {
        "columns": filtered.columns,
        "filtered": sorted(r["id"] for r in filtered.collect()),
        "version_0": deltalog.spark.read(spark, TABLE, version=0).count(),
    }


def optimize() -> dict[str, Any]:
    """Compact each partition's files into one."""
    before = DeltaTable(TABLE).files().num_rows
    result = deltalog.spark.optimize(spark, TABLE)
    return {
        "files_before": before,
        "files_removed": result.files_removed,
        "files_added": result.files_added,
        "files_after": DeltaTable(TABLE).files().num_rows,
        "ids": _ids(),
        "read_after": deltalog.spark.read(spark, TABLE).count(),
    }


def merge() -> dict[str, Any]:
    """Ids 90-99 matched and deleted, 100-109 inserted: the join runs on the executors."""
    source = _frame(90, 110)
    result = (
        deltalog.spark.merge(spark, TABLE, source, "target.id = source.id")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    return {
        "deleted": result["numTargetRowsDeleted"],
        "inserted": result["numTargetRowsInserted"],
        "ids": _ids(),
        "read_after": deltalog.spark.read(spark, TABLE).count(),
    }


def delete_update() -> dict[str, Any]:
    """A delete and an update scanned on the executors."""
    deleted = deltalog.spark.delete(spark, TABLE, "id >= 105")
    updated = deltalog.spark.update(spark, TABLE, "id < 5", {"id": "id + 1000"})
    return {
        "deleted": deleted["numDeletedRows"],
        "updated": updated["numUpdatedRows"],
        "ids": _ids(),
    }


def executors_import() -> dict[str, Any]:
    """Where the executors' Python workers imported deltalog from."""
    where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("deltalog").__file__)
    return {"file": where.collect()[0]}


def seed_driver_side() -> dict[str, Any]:
    """A table written by the driver alone (no Spark job): ids 0-9, ``p = id % 3``."""
    ids = list(range(10))
    data = pa.table({"id": ids, "p": [i % 3 for i in ids]})
    return {"version": write_table(TABLE, data, partition_by=["p"]).version}


def write_without_deltalog() -> dict[str, Any]:
    deltalog.spark.write(_frame(0, 10), TABLE, mode="append")
    return {}


def replace_where_without_deltalog() -> dict[str, Any]:
    """A data-column overwrite: its first job checks the new rows on the executors."""
    deltalog.spark.write(_frame(0, 3), TABLE, mode="overwrite", predicate="id < 3")
    return {}


#: The steps a test may ask for.
STEPS: dict[str, Callable[[], dict[str, Any]]] = {
    "write": write,
    "read": read,
    "optimize": optimize,
    "merge": merge,
    "delete_update": delete_update,
    "executors_import": executors_import,
    "seed_driver_side": seed_driver_side,
    "write_without_deltalog": write_without_deltalog,
    "replace_where_without_deltalog": replace_where_without_deltalog,
}

results: dict[str, Any] = {}
for name in args["steps"]:
    try:
        results[name] = STEPS[name]()
    except Exception as exc:  # reported, and the next steps still run
        results[name] = {"error": f"{type(exc).__name__}: {exc}"}
print("RESULT " + json.dumps(results), flush=True)
spark.stop()
