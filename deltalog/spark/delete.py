"""DELETE on Spark: remove the rows a predicate selects, as delta-spark's ``DeleteCommand``.

``delete(spark, uri, predicate)`` is ``DELETE FROM delta.`uri` WHERE predicate`` for a session
without delta-spark's jars. The driver reads the log, checks the predicate and chooses the
candidate files (pruned by partition values and statistics); a predicate on partition columns
only removes the matching files whole without reading them (no Spark job). Otherwise the
executors read the candidates and take the matching rows out
(:mod:`deltalog.spark.dml_scan`): with deletion vectors (``delta.enableDeletionVectors``) they
are marked in the files' DVs, else the files are rewritten without them. One transaction
commits it all as operation ``DELETE`` with delta-spark's ``operationParameters`` and
``operationMetrics`` (:mod:`deltalog.spark.dml_rewrite`); when no row matches nothing is
committed. Conflicts are the Python DML's (:func:`deltalog.dml.delete.delete_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.dml.delete import _live_records
from deltalog.dml.results import DmlResult
from deltalog.dml.rewrite import Timer
from deltalog.spark.dml_rewrite import Changes, prepare, run_job

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.stats.predicate_input import PredicateLike

__all__ = ["delete"]


def delete(
    spark: SparkSession,
    uri: str,
    predicate: PredicateLike | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
    commit_properties: Any = None,
) -> DmlResult:
    """Delete the rows of a Delta table that ``predicate`` selects (every row without one).

    The scan and the rewrite run on the session's executors, through the DataFrame API only
    (``mapInArrow``), so a Spark Connect session works too; no delta-spark jars are needed.

    Args:
        spark: The session whose executors read and rewrite the files.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        predicate: The rows to delete: SQL text (``"id < 10 AND day = '2024-01-01'"``,
            the grammar of :mod:`deltalog.stats.sql_expression`) or any form
            :func:`deltalog.stats.predicate_input.as_predicate` accepts. A row is deleted when
            it is true (not null). Timestamps without an offset are in the session's time zone.
        storage_options: Log store options, used on the driver and the executors.
        commit_properties: As for :meth:`deltalog.DeltaTable.delete` (user metadata, app
            transactions, retries).

    Returns:
        What was done: ``result.version``, ``result["numDeletedRows"]`` (or
        ``result["num_deleted_rows"]``) and delta-spark's other ``operationMetrics``.

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        InvalidPredicateError: The predicate does not parse, names a column the table lacks,
            or holds a value that does not fit its column (nothing is written).
        AppendOnlyError: The table is append-only.
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
        RowTrackingRewriteError: Rows would be copied (no deletion vectors) on a row-tracking
            table.
        SparkWriteError: The Spark job failed (nothing committed, its files deleted).
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass, e.g.
            ``ConcurrentDeleteReadError``, as delta-spark's).
        StorageError: The store failed.
    """
    timer = Timer()
    statement = prepare(
        spark,
        uri,
        "DELETE",
        predicate,
        assignments=None,
        storage_options=storage_options,
        commit_properties=commit_properties,
    )
    table, tx, candidates = statement.table, statement.tx, statement.candidates
    storage = table._storage
    deleted: int | None
    if statement.whole:
        changes = Changes(storage)
        deleted = 0
        for file in candidates.to_pylist():
            changes.remove_whole(file)
            rows = _live_records(file)
            deleted = None if deleted is None or rows is None else deleted + rows
    elif candidates.num_rows:
        changes = run_job(spark, storage, statement.plan, candidates, table.uri)
        deleted = changes.taken
    else:
        changes, deleted = Changes(storage), 0
    scan_ms = timer.lap_ms()
    if not changes.has_changes:
        return DmlResult(table.snapshot.version, "DELETE", False, _metrics(changes, 0, timer, 0))
    metrics = _metrics(changes, deleted, timer, scan_ms)
    version = changes.commit(tx, metrics)
    return DmlResult(version, "DELETE", True, metrics)


def _metrics(changes: Changes, deleted: int | None, timer: Timer, scan_ms: int) -> dict[str, int]:
    """``operationMetrics`` of the DELETE, as delta-spark's ``DeltaOperationMetrics.DELETE``."""
    elapsed = timer.elapsed_ms()
    metrics: dict[str, int] = {
        "numRemovedFiles": changes.removed_files,
        "numRemovedBytes": changes.removed_bytes,
        "numCopiedRows": changes.copied,
        **changes.dv_metrics(),
        "numAddedChangeFiles": 0,
        "executionTimeMs": elapsed,
        "numDeletedRows": deleted or 0,
        "scanTimeMs": scan_ms,
        "numAddedFiles": len(changes.new_files),
        "numAddedBytes": changes.added_bytes,
        "rewriteTimeMs": max(0, elapsed - scan_ms) if changes.new_files else 0,
    }
    if (deleted is None or deleted == 0) and changes.removed_files:
        # row counts unknown (a file without statistics): delta-spark leaves them out
        for name in ("numDeletedRows", "numCopiedRows", "numAddedFiles"):
            metrics.pop(name)
    return metrics
