"""UPDATE: set columns of the rows a predicate selects, as delta-spark's ``UpdateCommand`` does.

One transaction with operation ``UPDATE``. The candidate files (every file without a predicate;
else those that may hold a matching row, by partition values and statistics) are recorded as
read, with the predicate's partition conjuncts as read predicate, as for DELETE. Each candidate
is read whole; the rows the predicate is true for get their new values
(:mod:`deltalog.write.assignments`: SQL expressions over the row, or literals, stored with
Spark's store-assignment rules) and are written to new files. With deletion vectors the old
rows are marked deleted in their files; without, each touched file is rewritten with its other
rows (see :mod:`deltalog.dml.rewrite`).

The commit carries ``operationParameters.predicate`` (a JSON list of SQL text, ``[]`` without
one) and delta-spark's ``operationMetrics`` (``numUpdatedRows``, ``numCopiedRows``,
``numAddedFiles``, ``numRemovedFiles``, ``numDeletionVectorsAdded``/``Removed``/``Updated``,
``executionTimeMs``, ...). When no row matches nothing is committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from deltalog.arrow import values as av
from deltalog.errors import InvalidExpressionError
from deltalog.log.snapshot import Snapshot
from deltalog.stats.expression_eval import Scope
from deltalog.stats.expression_predicate import row_predicate
from deltalog.stats.predicate_input import PredicateLike
from deltalog.stats.predicates import Predicate, matches, validate
from deltalog.write.assignments import Assignment, parse_assignments
from deltalog.write.rewrite_plan import candidate_files, check_predicate_columns, partition_part
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.write.transaction import Transaction

from .handle import OperationSettings, TableHandle, predicate_parameter, refuse_append_only
from .results import DmlResult
from .rewrite import RowRewrite, Timer, deletion_vectors_enabled
from .scan import scan_files

__all__ = ["apply_assignments", "update_rows"]


def update_rows(
    table: TableHandle,
    predicate: PredicateLike | None,
    assignments: Mapping[str, Any],
    settings: OperationSettings,
) -> DmlResult:
    """Set ``assignments`` on the rows ``predicate`` selects; see the module docstring.

    Raises:
        InvalidPredicateError: The predicate does not parse or names a missing column.
        InvalidExpressionError: An assignment names a missing column, does not parse, or gives
            values that do not fit their column.
        ConstraintViolationError: An updated row breaks a NOT NULL or CHECK constraint.
        AppendOnlyError: The table is append-only.
        RowTrackingRewriteError: The table tracks row ids (updated rows would get new ones).
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
        StorageError: The store failed.
    """
    timer = Timer()
    parsed = None if predicate is None else row_predicate(predicate)
    table.refresh()
    snapshot = table.snapshot
    snapshot.check_writable()
    refuse_append_only(snapshot, "UPDATE")
    sets = parse_assignments(assignments, snapshot.schema)
    if not sets:
        raise InvalidExpressionError("UPDATE needs at least one column to set")
    partition_columns = list(snapshot.partition_columns)
    on_partitions = parsed is not None and parsed.columns() <= set(partition_columns)
    if parsed is not None:
        if on_partitions:
            validate(parsed, snapshot.schema, partition_columns)
        else:
            check_predicate_columns(parsed, snapshot.schema)
    empty = _empty(snapshot)
    apply_assignments(sets, empty, snapshot)  # names and types checked before any read
    use_dvs = deletion_vectors_enabled(snapshot.protocol, snapshot.metadata)
    tx = settings.start(table, "UPDATE", {"predicate": predicate_parameter(predicate, parsed)})
    rewrite = RowRewrite(
        table._storage,
        snapshot,
        use_deletion_vectors=use_dvs,
        options=settings.options,
        inline_max_bytes=settings.inline_deletion_vectors,
    )
    try:
        updated = _update(table, tx, rewrite, parsed, on_partitions, sets)
        scan_ms = timer.lap_ms()
        if not rewrite.has_changes:
            rewrite.abort()
            return DmlResult(snapshot.version, "UPDATE", False, _metrics(rewrite, 0, timer, 0))
        rewrite.stage(tx)
        metrics = _metrics(rewrite, updated, timer, scan_ms)
    except BaseException:
        rewrite.abort()
        raise
    version = rewrite.commit(tx, metrics)
    return DmlResult(version, "UPDATE", True, metrics)


def _update(
    table: TableHandle,
    tx: Transaction,
    rewrite: RowRewrite,
    predicate: Predicate | None,
    on_partitions: bool,
    sets: list[Assignment],
) -> int:
    """Scan the candidates, write the updated rows; how many rows were updated."""
    snapshot = tx.snapshot
    if predicate is None:
        candidates = tx.read_whole_table()
    elif on_partitions:
        candidates = tx.read_files(predicate)
    else:
        candidates = candidate_files(snapshot, predicate)
        read = partition_part(predicate, snapshot.partition_columns)
        tx.track_files_read(candidates, predicate=read)
    if not candidates.num_rows:
        return 0
    refuse_table_rewrite(snapshot.protocol, snapshot.metadata, operation="updating rows of")
    updated = 0
    for file, found in scan_files(table._storage, snapshot, candidates):
        rows = found.rows
        if predicate is None or on_partitions:
            mask = av.bools(True, rows.num_rows)
        else:
            mask = matches(predicate, rows)
        chosen = rows.filter(mask)
        if not chosen.num_rows:
            continue
        updated += rewrite.change(file, found, mask, apply_assignments(sets, chosen, snapshot))
    return updated


def apply_assignments(sets: list[Assignment], rows: pa.Table, snapshot: Snapshot) -> pa.Table:
    """``rows`` with the assigned columns replaced by their new values.

    Raises:
        InvalidExpressionError: An assignment fails or does not fit its column.
    """
    scope = Scope.of(rows)
    arrow = rows.schema
    by_column = {s.column: s for s in sets}
    columns = []
    for name in rows.column_names:
        assignment = by_column.get(name)
        if assignment is None:
            columns.append(rows.column(name))
        else:
            columns.append(assignment.values(scope, arrow.field(name).type))
    return pa.Table.from_arrays(columns, schema=arrow)


def _empty(snapshot: Snapshot) -> pa.Table:
    arrow = pa.schema([f.remove_metadata() for f in snapshot.schema.to_arrow()])
    return pa.Table.from_batches([], schema=arrow)  # (Schema.empty_table imports pandas)


def _metrics(rewrite: RowRewrite, updated: int, timer: Timer, scan_ms: int) -> dict[str, int]:
    """``operationMetrics`` of the UPDATE, as delta-spark's ``DeltaOperationMetrics.UPDATE``."""
    elapsed = timer.elapsed_ms()
    return {
        "numRemovedFiles": rewrite.removed_files,
        "numRemovedBytes": rewrite.removed_bytes,
        "numCopiedRows": rewrite.copied_rows,
        **rewrite.dv_metrics(),
        "numAddedChangeFiles": 0,
        "executionTimeMs": elapsed,
        "scanTimeMs": scan_ms,
        "numAddedFiles": len(rewrite.new_files),
        "numUpdatedRows": updated,
        "numAddedBytes": rewrite.added_bytes,
        "rewriteTimeMs": max(0, elapsed - scan_ms),
    }
