"""UPDATE on Spark: set columns of the rows a predicate selects, as delta-spark's ``UpdateCommand``.

``update(spark, uri, predicate, set)`` is ``UPDATE delta.`uri` SET ... WHERE predicate`` for a
session without delta-spark's jars. The driver checks the predicate and the assignments
(:mod:`deltalog.write.assignments`: SQL expressions over the row, or Python values, stored with
Spark's store-assignment rules) and chooses the candidate files; the executors read them, give
the matching rows their new values and write them to new files (:mod:`deltalog.spark.dml_scan`).
With deletion vectors the old rows are marked deleted in their files; without, each touched
file is rewritten with its other rows. One transaction commits it as operation ``UPDATE`` with
delta-spark's ``operationMetrics``; when no row matches nothing is committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.dml.results import DmlResult
from deltalog.dml.rewrite import Timer
from deltalog.spark.dml_rewrite import Changes, prepare, run_job

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.stats.predicate_input import PredicateLike

__all__ = ["update"]


def update(
    spark: SparkSession,
    uri: str,
    predicate: PredicateLike | None,
    set: Mapping[str, Any],
    *,
    storage_options: Mapping[str, str] | None = None,
    commit_properties: Any = None,
) -> DmlResult:
    """Set columns of the rows of a Delta table that ``predicate`` selects (all without one).

    The scan and the rewrite run on the session's executors, through the DataFrame API only
    (``mapInArrow``), so a Spark Connect session works too; no delta-spark jars are needed.

    Args:
        spark: The session whose executors read and rewrite the files.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        predicate: The rows to update (``None``: every row), as for
            :func:`deltalog.spark.delete`.
        set: Column -> new value: SQL expression text over the row (``"price * 2"``,
            ``"'done'"``) or a Python value.
        storage_options: Log store options, used on the driver and the executors.
        commit_properties: As for :meth:`deltalog.DeltaTable.update`.

    Returns:
        What was done: ``result.version``, ``result["numUpdatedRows"]`` (or
        ``result["num_updated_rows"]``) and delta-spark's other ``operationMetrics``.

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        InvalidPredicateError: The predicate does not parse or names a missing column.
        InvalidExpressionError: An assignment names a missing column, does not parse, or gives
            values that do not fit their column (checked before any file is written where the
            types tell; a value that overflows is found by the executors, and nothing is
            committed).
        ConstraintViolationError: An updated row breaks a NOT NULL or CHECK constraint.
        AppendOnlyError: The table is append-only.
        RowTrackingRewriteError: The table tracks row ids (updated rows would get new ones).
        SparkWriteError: The Spark job failed (nothing committed, its files deleted).
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
        StorageError: The store failed.
    """
    timer = Timer()
    statement = prepare(
        spark,
        uri,
        "UPDATE",
        predicate,
        assignments=set,
        storage_options=storage_options,
        commit_properties=commit_properties,
    )
    table, candidates = statement.table, statement.candidates
    if candidates.num_rows:
        changes = run_job(spark, table._storage, statement.plan, candidates, table.uri)
    else:
        changes = Changes(table._storage)
    scan_ms = timer.lap_ms()
    if not changes.has_changes:
        return DmlResult(table.snapshot.version, "UPDATE", False, _metrics(changes, timer, 0))
    metrics = _metrics(changes, timer, scan_ms)
    version = changes.commit(statement.tx, metrics)
    return DmlResult(version, "UPDATE", True, metrics)


def _metrics(changes: Changes, timer: Timer, scan_ms: int) -> dict[str, int]:
    """``operationMetrics`` of the UPDATE, as delta-spark's ``DeltaOperationMetrics.UPDATE``."""
    elapsed = timer.elapsed_ms()
    return {
        "numRemovedFiles": changes.removed_files,
        "numRemovedBytes": changes.removed_bytes,
        "numCopiedRows": changes.copied,
        **changes.dv_metrics(),
        "numAddedChangeFiles": 0,
        "executionTimeMs": elapsed,
        "scanTimeMs": scan_ms,
        "numAddedFiles": len(changes.new_files),
        "numUpdatedRows": changes.taken,
        "numAddedBytes": changes.added_bytes,
        "rewriteTimeMs": max(0, elapsed - scan_ms),
    }
