"""``DeltaTable.delete``, ``update``, ``merge`` and ``optimize``: the row-level operations.

:class:`RowChanges` is mixed into :class:`~deltalog.table.DeltaTable`; each method moves the
table to its latest version, runs the operation (:mod:`deltalog.dml.delete`, ...) and leaves
the table at the version it committed. ``update()`` without arguments keeps its older meaning:
move to the latest version (also :meth:`RowChanges.refresh`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from deltalog.errors import InvalidExpressionError
from deltalog.log.refresh import newest_snapshot
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage

# The operations are imported when called: opening a table needs none of them (nor pyarrow).
if TYPE_CHECKING:
    from deltalog.stats.predicate_input import PredicateLike
    from deltalog.write.commit import RetryPolicy
    from deltalog.write.transaction import Transaction

    from .merge import TableMerger
    from .optimize import TableOptimizer
    from .results import DmlResult

__all__ = ["RowChanges"]


class RowChanges:
    """DELETE, UPDATE, MERGE and OPTIMIZE without Spark (methods of ``DeltaTable``)."""

    _storage: TableStorage
    _snapshot: Snapshot

    if TYPE_CHECKING:

        @property
        def snapshot(self) -> Snapshot:  # noqa: D102 - DeltaTable's
            ...

        def transaction(  # noqa: D102 - DeltaTable's
            self,
            operation: str = "WRITE",
            *,
            parameters: Mapping[str, Any] | None = None,
            isolation_level: str | None = None,
            retry: RetryPolicy | None = None,
            engine_info: str = ...,
            user_metadata: str | None = None,
        ) -> Transaction: ...

    def refresh(self) -> int:
        """Move to the latest version; returns it (also spelled ``update()``).

        Only what came after the version held is read: one listing when nothing did (see
        :mod:`deltalog.log.refresh`).
        """
        self._snapshot = newest_snapshot(self._storage, self._snapshot)
        return self._snapshot.version

    @overload
    def update(self) -> int: ...

    @overload
    def update(
        self,
        predicate: PredicateLike | None = None,
        set: Mapping[str, Any] | None = None,
        *,
        updates: Mapping[str, str] | None = None,
        new_values: Mapping[str, Any] | None = None,
        commit_properties: Any = None,
        target_file_size: int | None = None,
        inline_deletion_vectors: int = 0,
    ) -> DmlResult: ...

    def update(
        self,
        predicate: PredicateLike | None = None,
        set: Mapping[str, Any] | None = None,
        *,
        updates: Mapping[str, str] | None = None,
        new_values: Mapping[str, Any] | None = None,
        commit_properties: Any = None,
        target_file_size: int | None = None,
        inline_deletion_vectors: int = 0,
    ) -> int | DmlResult:
        """UPDATE rows: set columns of the rows ``predicate`` selects (every row without one).

        Called without arguments, ``update()`` moves to the latest version instead and returns
        it (as :meth:`refresh`).

        With ``delta.enableDeletionVectors`` on, the old rows are marked in deletion vectors
        and only the updated rows are written; otherwise the files holding them are rewritten.
        As delta-spark's ``UPDATE``: same commit, parameters, metrics and conflict rules (see
        :mod:`deltalog.dml.update`). Nothing is committed when no row matches.

        Args:
            predicate: Which rows (SQL text such as ``"id > 100"``, which may compare columns
                or compute, ``"price * qty > 1000"``, or the forms :meth:`delete` takes); a row
                is updated when it is true.
            set: Column -> new value: SQL expression text over the row (``"n + 1"``,
                ``"upper(name)"``, ``"'2024-01-01'"`` for a string literal), or a Python value
                (a literal of the column's type).
            updates: delta-rs's spelling of ``set`` with SQL expressions only.
            new_values: delta-rs's spelling of ``set`` with Python values only.
            commit_properties: :class:`~deltalog.CommitProperties` (or delta-rs's).
            target_file_size: Size of the files written.
            inline_deletion_vectors: Store deletion vectors of at most this many bytes in the
                log (0, the default: in DV files).

        Returns:
            The version committed and delta-spark's ``operationMetrics`` (``numUpdatedRows``,
            ``numCopiedRows``, ``numAddedFiles``, ...).

        Raises:
            InvalidPredicateError: The predicate does not parse or names a missing column.
            InvalidExpressionError: A column to set is missing or given twice, a value does not
                parse, names a missing column, or does not fit its column's type (e.g. a string
                column assigned to an int column).
            ConstraintViolationError: An updated row breaks a NOT NULL or CHECK constraint.
            AppendOnlyError: The table is append-only.
            RowTrackingRewriteError: The table tracks row ids, which updated rows would lose.
            ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
            StorageError: The store failed.

        Nothing is committed, and every file written is deleted, when any of these is raised
        (but for a store failure after which the commit may have landed).
        """
        given = [m for m in (set, updates, new_values) if m is not None]
        if not given:
            if predicate is not None:
                raise InvalidExpressionError(
                    "update() with a predicate needs the columns to set: "
                    "update(predicate, set={'column': 'expression'})"
                )
            return self.refresh()
        merged: dict[str, Any] = {}
        for mapping in given:
            if not isinstance(mapping, Mapping):
                raise InvalidExpressionError(
                    f"the columns to set are a mapping, not {type(mapping).__name__}"
                )
            for key, value in mapping.items():
                if key in merged:
                    raise InvalidExpressionError(f"column {key!r} is set twice")
                merged[key] = _literal_text(value) if mapping is new_values else value
        from .handle import OperationSettings
        from .update import update_rows

        settings = OperationSettings.build(
            commit_properties,
            target_file_size=target_file_size,
            inline_deletion_vectors=inline_deletion_vectors,
        )
        return update_rows(self, predicate, merged, settings)

    def delete(
        self,
        predicate: PredicateLike | None = None,
        *,
        commit_properties: Any = None,
        target_file_size: int | None = None,
        inline_deletion_vectors: int = 0,
    ) -> DmlResult:
        """Delete the rows ``predicate`` selects; every row when it is ``None``.

        With ``delta.enableDeletionVectors`` on, the deleted rows are marked in deletion
        vectors (only the predicate's columns are read); otherwise the files holding them are
        rewritten without them. A predicate on partition columns only removes whole files. As
        delta-spark's ``DELETE FROM``: same commit, parameters, metrics and conflict rules (see
        :mod:`deltalog.dml.delete`). Nothing is committed when no row matches.

        Args:
            predicate: SQL text (``"id > 100 AND day = '2024-01-01'"``), a
                :class:`~deltalog.stats.predicates.Predicate`, a pyarrow expression, or DNF
                tuples; a row is deleted when it is true (not null).
            commit_properties: :class:`~deltalog.CommitProperties` (or delta-rs's):
                ``userMetadata``, application transactions, commit retries.
            target_file_size: Size of the files rewritten without deletion vectors.
            inline_deletion_vectors: Store deletion vectors of at most this many bytes in the
                log instead of in a DV file (0, the default, as delta-spark: never).

        Returns:
            The version committed and delta-spark's ``operationMetrics`` (``numDeletedRows``,
            ``numRemovedFiles``, ``numDeletionVectorsAdded``, ...).

        Raises:
            InvalidPredicateError: The predicate does not parse, names a column the table
                lacks, or holds a value that does not fit its column.
            AppendOnlyError: The table is append-only.
            RowTrackingRewriteError: Rows would be copied (no deletion vectors) on a
                row-tracking table.
            ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
            UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
            StorageError: The store failed.

        Nothing is committed, and every file written is deleted, when any of these is raised
        (but for a store failure after which the commit may have landed).
        """
        from .delete import delete_rows
        from .handle import OperationSettings

        settings = OperationSettings.build(
            commit_properties,
            target_file_size=target_file_size,
            inline_deletion_vectors=inline_deletion_vectors,
        )
        return delete_rows(self, predicate, settings)

    def merge(
        self,
        source: Any,
        predicate: str,
        source_alias: str | None = None,
        target_alias: str | None = None,
        *,
        schema_mode: Literal["merge"] | None = None,
        merge_schema: bool = False,
        commit_properties: Any = None,
        target_file_size: int | None = None,
        inline_deletion_vectors: int = 0,
    ) -> TableMerger:
        """MERGE (upsert) ``source`` into this table: add ``when_...`` clauses, then ``execute()``.

        ::

            (
                table.merge(new_rows, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )

        As delta-spark's ``MERGE INTO`` (delta-rs's ``TableMerger`` names): the source is
        joined with the target's candidate files on the predicate's equalities, a target row
        matched by two source rows is refused, clauses apply in order; updated and deleted
        rows leave their files through deletion vectors where the table enables them, else by
        rewriting the files (see :mod:`deltalog.dml.merge_exec`).

        Args:
            source: The source rows: anything ``write_table`` takes (pyarrow, pandas, polars,
                DuckDB, a record batch reader); read whole.
            predicate: The merge condition, SQL naming ``<alias>.<column>``.
            source_alias: The source's name in expressions (default ``source``).
            target_alias: The target's name in expressions (default ``target``).
            schema_mode: ``"merge"`` adds the source's new columns to the table (with
                ``UPDATE SET *``/``INSERT *``), as delta-spark's ``autoMerge``.
            merge_schema: delta-rs's spelling of ``schema_mode="merge"``.
            commit_properties: :class:`~deltalog.CommitProperties` (or delta-rs's).
            target_file_size: Size of the files written.
            inline_deletion_vectors: Store deletion vectors of at most this many bytes in the
                log (0, the default: in DV files).

        Raises:
            InvalidPredicateError: ``predicate`` does not parse.
            InvalidOptionError: Bad aliases or ``schema_mode``.
            InvalidInputError: ``source`` is not data deltalog can read.
        """
        from .handle import OperationSettings
        from .merge import TableMerger

        if merge_schema:
            schema_mode = "merge"
        settings = OperationSettings.build(
            commit_properties,
            target_file_size=target_file_size,
            inline_deletion_vectors=inline_deletion_vectors,
        )
        return TableMerger(
            self,
            source,
            predicate,
            source_alias=source_alias,
            target_alias=target_alias,
            schema_mode=schema_mode,
            settings=settings,
        )

    @property
    def optimize(self) -> TableOptimizer:
        """OPTIMIZE: ``table.optimize()`` or ``table.optimize.compact(...)`` compacts small files.

        Bin-packing as delta-spark's ``OPTIMIZE`` (see :mod:`deltalog.dml.optimize`), named as
        delta-rs's ``DeltaTable.optimize.compact(partition_filters, target_size)``.
        """
        from .optimize import TableOptimizer

        return TableOptimizer(self)


def _literal_text(value: Any) -> Any:
    """``new_values`` hold values, not SQL: a string becomes an SQL string literal."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return value
