"""The delta-spark probe process: ``python -m deltalog.compat.spark_probe REQUEST OUTPUT``.

One local Spark session (with delta-spark, :func:`deltalog.compat.spark_engine.spark_jar_conf`)
observes every table version of the request, in the format of
:mod:`deltalog.compat.probe_main`. The snapshot comes from delta-spark's ``DeltaLog`` (through
py4j): version, protocol and metadata as delta-spark serialises them, the live add actions;
rows are read with ``versionAsOf`` and collected as Arrow, and checksummed with
:func:`deltalog.compat.canon.column_checksums`; the history is ``DESCRIBE HISTORY``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from deltalog.compat.canon import column_checksums
from deltalog.compat.observe import history_view, protocol_view
from deltalog.compat.probe_main import error_of
from deltalog.compat.spark_engine import spark_jar_conf

_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def session(options: Mapping[str, str]) -> Any:
    """A local session with delta-spark; storage options become Hadoop settings."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("deltalog-compat")
    for key, value in {**_CONF, **spark_jar_conf()}.items():
        builder = builder.config(key, value)
    for key, value in options.items():
        builder = builder.config(f"spark.hadoop.{key}", value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _path(uri: str) -> str:
    return uri if "://" in uri else str(Path(uri).resolve())


def _snapshot(spark: Any, path: str, version: int | None) -> Any:
    """delta-spark's snapshot: the latest, or ``getSnapshotAt`` with its defaults filled in."""
    jvm = spark.sparkContext._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    if version is None:
        return log.unsafeVolatileSnapshot()
    for method in log.getClass().getMethods():
        if method.getName() != "getSnapshotAt":
            continue
        types = [t.getName() for t in method.getParameterTypes()]
        if types[0] != "long":
            continue
        args: list[Any] = [version]
        for t in types[1:]:
            if t == "scala.Option":
                args.append(jvm.scala.Option.empty())
            elif t == "boolean":
                args.append(False)
            else:
                break
        else:
            return log.getSnapshotAt(*args)
    raise RuntimeError("no DeltaLog.getSnapshotAt(long, ...) in this delta-spark")


def _dataframe(spark: Any, jdf: Any) -> Any:
    import importlib

    try:
        module = importlib.import_module("pyspark.sql.classic.dataframe")
    except ImportError:  # PySpark 3.5
        module = importlib.import_module("pyspark.sql.dataframe")
    return module.DataFrame(jdf, spark)


def _arrow(df: Any) -> pa.Table:
    """The rows as Arrow (``toArrow`` on 4.x, the batches ``toPandas`` uses on 3.5)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()
    schema = to_arrow_schema(df.schema)
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def _history(spark: Any, path: str, configuration: Mapping[str, str]) -> list[dict[str, Any]]:
    quoted = path.replace("`", "``")
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{quoted}`").select(
        "version", "operation", "timestamp"
    )
    ict = configuration.get("delta.enableInCommitTimestamps", "false").lower() == "true"
    since = int(configuration.get("delta.inCommitTimestampEnablementVersion") or 0)
    out = []
    for row in rows.collect():
        stamp = None
        if ict and row["version"] >= since:
            stamp = int(row["timestamp"].replace(tzinfo=UTC).timestamp() * 1000)
        out.append(
            {"version": row["version"], "operation": row["operation"], "inCommitTimestamp": stamp}
        )
    return out


def observe(spark: Any, uri: str, version: int | None) -> dict[str, Any]:
    """delta-spark's observation of ``uri`` at ``version``."""
    path = _path(uri)
    snap = _snapshot(spark, path, version)
    protocol = orjson.loads(snap.protocol().json())["protocol"]
    metadata = orjson.loads(snap.metadata().json())["metaData"]
    adds = _dataframe(spark, snap.allFiles().toDF()).select("path", "size", "partitionValues")
    files = [
        {"path": r["path"], "size": r["size"], "partitionValues": dict(r["partitionValues"] or {})}
        for r in adds.collect()
    ]
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    data = _arrow(reader.load(path))
    configuration = dict(metadata.get("configuration") or {})
    out: dict[str, Any] = {
        "version": int(snap.version()),
        "protocol": protocol_view(
            protocol["minReaderVersion"],
            protocol["minWriterVersion"],
            protocol.get("readerFeatures"),
            protocol.get("writerFeatures"),
        ),
        "schema": orjson.loads(metadata["schemaString"]),
        "partitionColumns": list(metadata.get("partitionColumns") or []),
        "configuration": configuration,
        "files": files,
        "rows": data.num_rows,
        "columns": column_checksums(data),
    }
    if version is None:
        out["history"] = history_view(_history(spark, path, configuration), out["version"])
    return out


def _error(exc: BaseException) -> dict[str, str]:
    java = getattr(exc, "java_exception", None)
    if java is not None:
        first = str(java.toString()).splitlines()[0]
        name, _, message = first.partition(": ")
        return {"type": name.rsplit(".", 1)[-1], "message": " ".join(message.split())[:600]}
    err = error_of(exc)
    err["message"] = err["message"].split(" JVM stacktrace:")[0]
    return err


def append(spark: Any, uri: str) -> dict[str, Any]:
    """Append the table's first row through delta-spark (the write probe's step)."""
    path = _path(uri)
    entry: dict[str, Any] = {"table": uri, "append": True}
    try:
        df = spark.read.format("delta").load(path).limit(1)
        df.write.format("delta").mode("append").save(path)
        entry["version"] = int(_snapshot(spark, path, None).version())
    except Exception as exc:
        entry["error"] = _error(exc)
    return entry


def observe_all(spark: Any, tables: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every table version of a request (or its append) through ``spark``, as results."""
    results: list[dict[str, Any]] = []
    for table in tables:
        if table.get("append"):
            results.append(append(spark, table["uri"]))
            continue
        for version in table.get("versions") or [None]:
            entry: dict[str, Any] = {"table": table["uri"], "version": version}
            try:
                entry["observation"] = observe(spark, table["uri"], version)
            except Exception as exc:
                entry["error"] = _error(exc)
            results.append(entry)
    return results


def main(argv: list[str]) -> int:
    """Read the request, observe everything in one session, write the results."""
    request = orjson.loads(Path(argv[0]).read_bytes())
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session(request.get("storage_options") or {})
    results = observe_all(spark, request["tables"])
    Path(argv[1]).write_bytes(orjson.dumps({"results": results}, default=str))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
