"""Count a Delta table's rows from its log, as delta-spark's ``count()`` does.

delta-spark answers ``spark.read.format("delta").load(uri).count()`` from the ``numRecords``
statistic of every live file (less the rows its deletion vector deletes), opening no data file.
``deltalog.spark.read(spark, uri).count()`` does the same (:mod:`deltalog.spark.snapshot_frame`);
:func:`count` is the one-call form, which builds no DataFrame: it answers from the log when
every live file's statistics hold ``numRecords``, and counts with Spark otherwise or when given
a ``filter``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltalog.spark.read import open_snapshot, read
from deltalog.spark.snapshot_frame import logged_count
from deltalog.stats.predicate_input import PredicateLike
from deltalog.table import TimestampLike

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def count(
    spark: SparkSession,
    uri: str,
    *,
    version: int | None = None,
    timestamp: TimestampLike | None = None,
    filter: PredicateLike | None = None,
    storage_options: Mapping[str, str] | None = None,
    **spark_options: str | int,
) -> int:
    """How many rows the table has (that match ``filter``), from the log when it can tell.

    Without a ``filter``, when the statistics of every live file hold ``numRecords``, the
    answer is their sum less the rows deletion vectors delete, and no data file is opened (as
    delta-spark's ``count()``). Otherwise it is ``read(spark, uri, ..., filter=filter).count()``
    at the same version: a Spark job.

    Args:
        spark: The session that counts when the log cannot tell.
        uri: The table URI.
        version: Count this version (delta-spark's ``versionAsOf``).
        timestamp: Count the latest version committed at or before this time.
        filter: Only rows matching this predicate (as :func:`deltalog.spark.read` takes it);
            always counted by Spark.
        storage_options: Log store options.
        **spark_options: ``versionAsOf`` and ``timestampAsOf``, as :func:`read` takes them.

    Returns:
        The number of live rows.

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        VersionNotFoundError: ``version`` does not exist.
        TimestampOutOfRangeError: ``timestamp`` is before the first commit or after the latest.
        InvalidPredicateError: ``filter`` does not parse or names a column the table lacks.
        InvalidOptionError: An unknown read option.
        StorageError: The log store failed.
    """
    table, options = open_snapshot(uri, version, timestamp, storage_options, spark_options)
    if filter is None:
        known = logged_count(table)
        if known is not None:
            return known
    at = table.version()  # the version the log was read at, whatever commits meanwhile
    return int(read(spark, uri, version=at, filter=filter, storage_options=options).count())
