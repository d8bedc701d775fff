"""Spark integration: write DataFrames into Delta tables, committed by deltalog, and read them.

``deltalog.spark.write(df, uri, ...)`` is the drop-in for ``df.write.format("delta")``: Spark's
executors write the Parquet files and their statistics, the driver commits one transaction
through deltalog's log stores. ``deltalog.spark.read(spark, uri, ...)`` is the drop-in for
``spark.read.format("delta").load(uri)``: the executors read the live files with deltalog;
``deltalog.spark.count(spark, uri)`` answers its ``count()`` from the log's statistics, as
delta-spark does.
``deltalog.spark.optimize(spark, uri, ...)`` compacts small files the same way (delta-spark's
``OPTIMIZE``); ``deltalog.spark.delete(spark, uri, predicate)`` and
``deltalog.spark.update(spark, uri, predicate, set)`` are delta-spark's ``DELETE`` and ``UPDATE``,
scanned and rewritten by the executors, and ``deltalog.spark.merge(spark, uri, source,
predicate)`` runs delta-spark's ``MERGE`` (a builder of ``when_...`` clauses, then
``execute()``). None needs delta-spark's jars. Every function takes what Spark runs on first
(the session, or the DataFrame to write, which carries its session), then the table URI, as
delta-spark's ``DeltaTable.forPath(spark, path)`` and ``df.write.save(path)`` do; a write's mode
and partition columns may follow positionally, as in ``DataFrameWriter.save``. Runs on PySpark
3.5.x and 4.x; needs ``pip install 'deltalog[spark]'`` (a
:class:`~deltalog.errors.MissingExtraError` says so when
PySpark or pandas is missing). Spark's Python workers import deltalog too: install it where
the executors run, or ship it with ``addPyFile(package_zip())`` (``deltalog.spark.shipping``;
from a Spark Connect client, ``spark.addArtifacts(str(package_zip()), pyfile=True)``).

The top floor beside the CLI: may import the table facade and everything below it.
"""

from importlib.util import find_spec

from deltalog.errors import MissingExtraError


def _require_extra() -> None:
    """Raise :class:`MissingExtraError` when a package of the ``spark`` extra is missing."""
    for package in ("pyspark", "pandas", "numpy"):
        if find_spec(package) is None:
            raise MissingExtraError(
                f"deltalog.spark needs the package {package!r}, which is not installed: "
                "pip install 'deltalog[spark]' (PySpark 3.5.x or 4.x)",
                extra="spark",
                package=package,
            )


_require_extra()

from deltalog.dml.results import DmlResult  # noqa: E402
from deltalog.spark.count import count  # noqa: E402
from deltalog.spark.delete import delete  # noqa: E402
from deltalog.spark.merge import SparkMerger, merge  # noqa: E402
from deltalog.spark.optimize import (  # noqa: E402
    OptimizeResult,
    SkippedFile,
    StagedOptimize,
    optimize,
    stage_optimize,
)
from deltalog.spark.read import read  # noqa: E402
from deltalog.spark.shipping import package_zip  # noqa: E402
from deltalog.spark.update import update  # noqa: E402
from deltalog.spark.write import stage, write  # noqa: E402
from deltalog.writer.staged import StagedWrite, WriteResult  # noqa: E402

__all__ = [
    "DmlResult",
    "OptimizeResult",
    "SkippedFile",
    "SparkMerger",
    "StagedOptimize",
    "StagedWrite",
    "WriteResult",
    "count",
    "delete",
    "merge",
    "optimize",
    "package_zip",
    "read",
    "stage",
    "stage_optimize",
    "update",
    "write",
]
