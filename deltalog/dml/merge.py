"""MERGE (upsert): ``DeltaTable.merge(source, predicate, ...)`` and its clause builder.

:class:`TableMerger` has delta-rs's ``TableMerger`` names (``when_matched_update``,
``when_matched_update_all``, ``when_matched_delete``, ``when_not_matched_insert``,
``when_not_matched_insert_all``, ``when_not_matched_by_source_update``,
``when_not_matched_by_source_delete``, ``execute``) and delta-spark's ``MERGE INTO`` semantics
(see :mod:`deltalog.dml.merge_exec` for how it runs, :mod:`deltalog.dml.merge_plan` for how
columns and the condition are resolved).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from deltalog.errors import (
    AppendOnlyError,
    InvalidInputError,
    InvalidOptionError,
    InvalidPredicateError,
)
from deltalog.protocol.column_mapping import map_new_columns
from deltalog.stats.sql_expression import parse_expression
from deltalog.write.input_data import as_reader, schema_of_data, within_table
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.write.schema_merge import merge_schemas, type_widening_enabled
from deltalog.write.table_changes import protocol_for_schema

from .handle import OperationSettings, TableHandle
from .merge_builder import MergeClauses, merge_aliases
from .merge_clauses import NOT_MATCHED, Clause, check_clauses, merge_parameters
from .merge_exec import MergeCounts, execute_merge
from .merge_plan import MergePlan
from .results import DmlResult
from .rewrite import RowRewrite, Timer, deletion_vectors_enabled

__all__ = ["TableMerger"]


class TableMerger(MergeClauses):
    """A MERGE being built: add ``when_...`` clauses, then :meth:`execute`.

    Clauses of each kind apply in the order they are added; the first whose condition holds
    for a row takes it. Conditions and values are Spark SQL expressions naming columns as
    ``<alias>.<column>`` (or unqualified when only one side has the column).
    """

    def __init__(
        self,
        table: TableHandle,
        source: Any,
        predicate: str,
        *,
        source_alias: str | None,
        target_alias: str | None,
        schema_mode: str | None,
        settings: OperationSettings,
    ) -> None:
        if not isinstance(predicate, str):
            raise InvalidPredicateError(
                f"the merge predicate is SQL text, not {type(predicate).__name__}"
            )
        self._condition = parse_expression(predicate, error=InvalidPredicateError)
        self._text = predicate
        self._source_alias, self._target_alias = merge_aliases(source_alias, target_alias)
        if schema_mode not in (None, "merge"):
            raise InvalidOptionError(
                f"schema_mode must be 'merge' or None, not {schema_mode!r}", option="schema_mode"
            )
        self._evolve = schema_mode == "merge"
        self._table = table
        self._source = as_reader(source)
        self._settings = settings
        self._clauses: list[Clause] = []

    # ------------------------------------------------------------------ run
    def execute(self) -> DmlResult:
        """Run the merge; one ``MERGE`` commit (none when no row changes).

        Returns:
            The version committed and delta-spark's ``operationMetrics``
            (``numTargetRowsInserted``, ``numTargetRowsUpdated``, ``numTargetRowsDeleted``,
            ``numSourceRows``, ...).

        Raises:
            InvalidMergeClausesError: No clause was added, or a clause without a condition
                comes before another of its kind (only the last may omit it).
            InvalidInputError: The source cannot be read.
            InvalidPredicateError: A condition does not parse, names an unknown or ambiguous
                column, or is not boolean.
            InvalidExpressionError: An assignment is refused (unknown column, a value of the
                wrong type, a ``*`` clause missing a source column without schema evolution).
            MultipleSourceRowMatchError: A target row matched several source rows.
            SchemaEvolutionError, UnsupportedParquetTypeError: ``schema_mode="merge"`` cannot
                add the source's columns.
            ConstraintViolationError: A written row breaks a NOT NULL or CHECK constraint.
            AppendOnlyError: The merge would update or delete rows of an append-only table.
            RowTrackingRewriteError: The merge updates or copies rows of a row-tracking table.
            ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
            StorageError: The store failed.

        Nothing is committed, and every file written is deleted, when any of these is raised
        (but for a store failure after which the commit may have landed).
        """
        check_clauses(self._clauses)
        timer = Timer()
        try:
            source = self._source.read_all()
        except pa.ArrowException as exc:
            raise InvalidInputError(f"cannot read the merge source: {exc}") from exc
        materialize_ms = timer.lap_ms()
        table = self._table
        table.refresh()
        snapshot = table.snapshot
        snapshot.check_writable()
        changes_rows = any(c.kind != NOT_MATCHED for c in self._clauses)
        if changes_rows and str(snapshot.configuration.get("delta.appendOnly")).lower() == "true":
            raise AppendOnlyError(
                "the table is append-only (delta.appendOnly=true): a MERGE may only insert"
            )
        schema = snapshot.schema
        configuration = {k: v for k, v in snapshot.configuration.items() if v is not None}
        if self._evolve and any(c.star for c in self._clauses):
            merged = merge_schemas(
                snapshot.schema,
                within_table(schema_of_data(source.schema), snapshot.schema),
                partition_columns=snapshot.partition_columns,
                type_widening=type_widening_enabled(snapshot.protocol, snapshot.metadata),
            )
            if merged != snapshot.schema:
                schema, mapped = map_new_columns(
                    merged, configuration, previous=snapshot.configuration
                )
                configuration = dict(mapped)
        plan = MergePlan(
            snapshot,
            source,
            self._condition,
            self._clauses,
            target_alias=self._target_alias,
            source_alias=self._source_alias,
            output_schema=schema,
            evolve=self._evolve,
        )
        use_dvs = deletion_vectors_enabled(snapshot.protocol, snapshot.metadata)
        updates = any(c.action == "update" for c in self._clauses)
        if updates or (not use_dvs and changes_rows):
            refuse_table_rewrite(snapshot.protocol, snapshot.metadata, operation="merging into")
        tx = self._settings.start(table, "MERGE", merge_parameters(self._text, self._clauses))
        if schema != snapshot.schema:
            upgrade = protocol_for_schema(snapshot, schema)
            if upgrade is not None:
                tx.update_protocol(upgrade)
            tx.update_metadata(schema=schema, configuration=configuration)
        rewrite = RowRewrite(
            table._storage,
            snapshot,
            use_deletion_vectors=use_dvs,
            schema=schema,
            configuration=configuration,
            options=self._settings.options,
            inline_max_bytes=self._settings.inline_deletion_vectors,
        )
        try:
            counts = execute_merge(table, tx, plan, rewrite, timer)
            if not rewrite.has_changes:
                rewrite.abort()
                metrics = _metrics(rewrite, counts, timer, materialize_ms)
                return DmlResult(snapshot.version, "MERGE", False, metrics)
            rewrite.stage(tx)
            metrics = _metrics(rewrite, counts, timer, materialize_ms)
        except BaseException:
            rewrite.abort()
            raise
        version = rewrite.commit(tx, metrics)
        return DmlResult(version, "MERGE", True, metrics)


def _metrics(
    rewrite: RowRewrite, counts: MergeCounts, timer: Timer, materialize_ms: int
) -> dict[str, int]:
    """``operationMetrics`` of the MERGE, as delta-spark's ``DeltaOperationMetrics.MERGE``."""
    updated = counts.matched_updated + counts.by_source_updated
    deleted = counts.matched_deleted + counts.by_source_deleted
    elapsed = timer.elapsed_ms()
    return {
        "numTargetRowsCopied": rewrite.copied_rows,
        "numTargetRowsDeleted": deleted,
        "numTargetFilesAdded": len(rewrite.new_files),
        "numTargetBytesAdded": rewrite.added_bytes,
        "numTargetBytesRemoved": rewrite.removed_bytes,
        **rewrite.dv_metrics("numTarget"),
        "numTargetRowsMatchedUpdated": counts.matched_updated,
        "executionTimeMs": elapsed,
        "materializeSourceTimeMs": materialize_ms,
        "numTargetRowsInserted": counts.inserted,
        "numTargetRowsMatchedDeleted": counts.matched_deleted,
        "scanTimeMs": counts.scan_ms,
        "numTargetRowsUpdated": updated,
        "numOutputRows": counts.inserted + updated + rewrite.copied_rows,
        "numTargetRowsNotMatchedBySourceUpdated": counts.by_source_updated,
        "numTargetChangeFilesAdded": 0,
        "numSourceRows": counts.source_rows,
        "numTargetFilesRemoved": rewrite.removed_files,
        "numTargetRowsNotMatchedBySourceDeleted": counts.by_source_deleted,
        "rewriteTimeMs": max(0, elapsed - counts.scan_ms - materialize_ms),
    }
