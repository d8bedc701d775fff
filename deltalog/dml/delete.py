"""DELETE: remove the rows a predicate selects, as delta-spark's ``DeleteCommand`` does.

Three cases, each one transaction with operation ``DELETE``:

1. **No predicate**: every live file is removed (the whole table is read).
2. **A predicate on partition columns only**: the files of the matching partitions are removed
   whole; the transaction records the predicate and the files as read.
3. **A predicate on data columns**: the candidate files (pruned by partition values and
   statistics) are recorded as read, with the predicate's partition conjuncts as read
   predicate (a concurrent commit adding a file that may match conflicts; one removing a
   candidate too). Each candidate is scanned: with deletion vectors only the predicate's
   columns are read and the matching rows' positions join the file's DV; without, the file is
   read whole and rewritten without them (see :mod:`deltalog.dml.rewrite`).

A row is deleted when the predicate is true for it (not when it is null, as in SQL). The commit
carries delta-spark's ``operationParameters`` (``predicate``: a JSON list of SQL text) and
``operationMetrics`` (``numDeletedRows``, ``numRemovedFiles``, ``numAddedFiles``,
``numCopiedRows``, ``numDeletionVectorsAdded``/``Removed``/``Updated``, ``executionTimeMs``,
...). When no row matches nothing is committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pyarrow as pa

from deltalog.stats.expression_predicate import row_predicate
from deltalog.stats.predicate_input import PredicateLike
from deltalog.stats.predicates import Predicate, matches, validate
from deltalog.write.rewrite_plan import candidate_files, check_predicate_columns, partition_part
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.write.transaction import Transaction

from .handle import OperationSettings, TableHandle, predicate_parameter, refuse_append_only
from .results import DmlResult
from .rewrite import RowRewrite, Timer, deletion_vectors_enabled
from .scan import scan_files

__all__ = ["delete_rows"]


def delete_rows(
    table: TableHandle, predicate: PredicateLike | None, settings: OperationSettings
) -> DmlResult:
    """Delete the rows ``predicate`` selects (every row when ``None``); see the module docstring.

    Raises:
        InvalidPredicateError: The predicate does not parse, names a column the table lacks,
            or holds a value that does not fit its column.
        AppendOnlyError: The table is append-only.
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
        RowTrackingRewriteError: Rows would be copied (no deletion vectors) on a row-tracking
            table.
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
        StorageError: The store failed.
    """
    timer = Timer()
    parsed = None if predicate is None else row_predicate(predicate)
    table.refresh()
    snapshot = table.snapshot
    snapshot.check_writable()
    refuse_append_only(snapshot, "DELETE")
    partition_columns = list(snapshot.partition_columns)
    on_partitions = parsed is not None and parsed.columns() <= set(partition_columns)
    if parsed is not None:
        if on_partitions:
            validate(parsed, snapshot.schema, partition_columns)
        else:
            check_predicate_columns(parsed, snapshot.schema)
    use_dvs = deletion_vectors_enabled(snapshot.protocol, snapshot.metadata)
    tx = settings.start(table, "DELETE", {"predicate": predicate_parameter(predicate, parsed)})
    rewrite = RowRewrite(
        table._storage,
        snapshot,
        use_deletion_vectors=use_dvs,
        options=settings.options,
        inline_max_bytes=settings.inline_deletion_vectors,
    )
    try:
        if parsed is None or on_partitions:
            files = tx.read_whole_table() if parsed is None else tx.read_files(parsed)
            deleted = _remove_whole(rewrite, files)
        else:
            deleted = _delete_rows(table, tx, rewrite, parsed, use_dvs)
        scan_ms = timer.lap_ms()
        if not rewrite.has_changes:
            rewrite.abort()
            return DmlResult(snapshot.version, "DELETE", False, _metrics(rewrite, 0, timer, 0))
        rewrite.stage(tx)
        metrics = _metrics(rewrite, deleted, timer, scan_ms)
    except BaseException:
        rewrite.abort()
        raise
    version = rewrite.commit(tx, metrics)
    return DmlResult(version, "DELETE", True, metrics)


def _remove_whole(rewrite: RowRewrite, files: pa.Table) -> int | None:
    """Remove every file of ``files``; the rows they held (``None`` without statistics)."""
    total: int | None = 0
    for file in files.to_pylist():
        rewrite.remove_whole(file)
        rows = _live_records(file)
        total = None if total is None or rows is None else total + rows
    return total


def _delete_rows(
    table: TableHandle, tx: Transaction, rewrite: RowRewrite, predicate: Predicate, use_dvs: bool
) -> int:
    """Scan the candidate files and take out the matching rows; how many."""
    snapshot = tx.snapshot
    candidates = candidate_files(snapshot, predicate)
    tx.track_files_read(candidates, predicate=partition_part(predicate, snapshot.partition_columns))
    if not candidates.num_rows:
        return 0
    if not use_dvs:  # the rows a file keeps would be copied under new row ids
        refuse_table_rewrite(snapshot.protocol, snapshot.metadata, operation="deleting rows of")
    columns = None
    if use_dvs:
        needed = predicate.columns()
        columns = [f.name for f in snapshot.schema.fields if f.name in needed]
    deleted = 0
    for file, found in scan_files(table._storage, snapshot, candidates, columns=columns):
        deleted += rewrite.change(file, found, matches(predicate, found.rows))
    return deleted


def _live_records(file: Mapping[str, Any]) -> int | None:
    """``numRecords`` less the rows the file's DV deletes (``None`` without statistics)."""
    try:
        stats = orjson.loads(file.get("stats") or "null")
    except orjson.JSONDecodeError:
        return None
    records = stats.get("numRecords") if isinstance(stats, dict) else None
    if not isinstance(records, int) or isinstance(records, bool):
        return None
    dv = file.get("deletion_vector")
    return records - int((dv or {}).get("cardinality") or 0)


def _metrics(
    rewrite: RowRewrite, deleted: int | None, timer: Timer, scan_ms: int
) -> dict[str, int]:
    """``operationMetrics`` of the DELETE, as delta-spark's ``DeltaOperationMetrics.DELETE``."""
    metrics: dict[str, int] = {
        "numRemovedFiles": rewrite.removed_files,
        "numRemovedBytes": rewrite.removed_bytes,
        "numCopiedRows": rewrite.copied_rows,
        **rewrite.dv_metrics(),
        "numAddedChangeFiles": 0,
        "executionTimeMs": timer.elapsed_ms(),
        "numDeletedRows": deleted or 0,
        "scanTimeMs": scan_ms,
        "numAddedFiles": len(rewrite.new_files),
        "numAddedBytes": rewrite.added_bytes,
        "rewriteTimeMs": max(0, timer.elapsed_ms() - scan_ms) if rewrite.new_files else 0,
    }
    if (deleted is None or deleted == 0) and rewrite.removed_files:
        # row counts unknown (a file without statistics): delta-spark leaves them out
        for name in ("numDeletedRows", "numCopiedRows", "numAddedFiles"):
            metrics.pop(name)
    return metrics
