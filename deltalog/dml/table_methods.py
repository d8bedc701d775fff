"""``DeltaTable.delete``, ``update``, ``merge`` and ``optimize``: the row-level operations.

:class:`RowChanges` is mixed into :class:`~deltalog.table.DeltaTable`; each method moves the
table to its latest version, runs the operation (:mod:`deltalog.dml.delete`, ...) and leaves
the table at the version it committed. ``update()`` without arguments keeps its older meaning:
move to the latest version (also :meth:`RowChanges.refresh`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltalog.log.replay import replay
from deltalog.log.segment import list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.stats.predicate_input import PredicateLike

from .delete import delete_rows
from .handle import OperationSettings
from .results import DmlResult

if TYPE_CHECKING:
    from collections.abc import Mapping

    from deltalog.write.commit import RetryPolicy
    from deltalog.write.transaction import Transaction

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
        """Move to the latest version; returns it (also spelled ``update()``)."""
        self._snapshot = replay(self._storage, list_log(self._storage))
        return self._snapshot.version

    def update(self) -> int:
        """Move to the latest version; returns it."""
        return self.refresh()

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
        settings = OperationSettings.build(
            commit_properties,
            target_file_size=target_file_size,
            inline_deletion_vectors=inline_deletion_vectors,
        )
        return delete_rows(self, predicate, settings)
