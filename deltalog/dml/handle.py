"""What a row-level operation needs of the table it runs on, and the settings it commits with.

The operations take the :class:`~deltalog.table.DeltaTable` they are called on as a
:class:`TableHandle` (this floor sits below the facade, so it names only what it uses): its
storage, its snapshot (moved to the latest version first), and transactions started on it, so
that the table advances to the version committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from deltalog.errors import AppendOnlyError, InvalidInputError
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.write.commit import RetryPolicy
from deltalog.write.commit_properties import CommitSettings, commit_settings
from deltalog.write.parquet_options import ParquetOptions
from deltalog.write.transaction import Transaction

__all__ = ["OperationSettings", "TableHandle", "predicate_parameter", "refuse_append_only"]


class TableHandle(Protocol):
    """The table an operation changes (a ``DeltaTable``)."""

    _storage: TableStorage

    @property
    def snapshot(self) -> Snapshot:
        """The version the table object reads."""
        ...

    def refresh(self) -> int:
        """Move to the latest version; returns it."""
        ...

    def transaction(
        self,
        operation: str = "WRITE",
        *,
        parameters: Mapping[str, Any] | None = None,
        isolation_level: str | None = None,
        retry: RetryPolicy | None = None,
        engine_info: str = ...,
        user_metadata: str | None = None,
    ) -> Transaction:
        """A transaction on the table's snapshot (the table advances when it commits)."""
        ...


@dataclass(frozen=True)
class OperationSettings:
    """How an operation writes and commits.

    Attributes:
        commit: Checked commit properties (user metadata, app transactions, retries).
        options: File layout of new data files.
        inline_deletion_vectors: DVs of at most this many bytes go into the log inline.
    """

    commit: CommitSettings
    options: ParquetOptions
    inline_deletion_vectors: int = 0

    @classmethod
    def build(
        cls,
        commit_properties: Any = None,
        *,
        target_file_size: int | None = None,
        inline_deletion_vectors: int = 0,
    ) -> OperationSettings:
        """Check the caller's settings.

        Raises:
            InvalidInputError: Bad commit properties or sizes.
        """
        settings = commit_settings(commit_properties)
        options = (
            ParquetOptions()
            if target_file_size is None
            else ParquetOptions(target_file_size=target_file_size)
        )
        inline = inline_deletion_vectors
        if isinstance(inline, bool) or not isinstance(inline, int) or inline < 0:
            raise InvalidInputError(
                f"inline_deletion_vectors is a number of bytes (0: never), not {inline!r}"
            )
        return cls(settings, options, inline)

    def start(self, table: TableHandle, operation: str, parameters: dict[str, Any]) -> Transaction:
        """A transaction for ``operation`` with these settings' metadata and ``txn`` actions."""
        tx = table.transaction(
            operation,
            parameters=parameters,
            user_metadata=self.commit.user_metadata,
            retry=self.commit.retry,
        )
        for app_id, version in (self.commit.txns or {}).items():
            tx.set_transaction(app_id, version)
        return tx


def predicate_parameter(given: object, parsed: object | None) -> str:
    """``operationParameters.predicate`` as delta-spark records it: a JSON list of SQL texts."""
    if parsed is None:
        return "[]"
    text = given if isinstance(given, str) else str(parsed)
    return orjson.dumps([text]).decode()


def refuse_append_only(snapshot: Snapshot, what: str) -> None:
    """Refuse changing rows of a ``delta.appendOnly`` table.

    Raises:
        AppendOnlyError: The table is append-only.
    """
    if str(snapshot.configuration.get("delta.appendOnly")).lower() == "true":
        raise AppendOnlyError(
            f"the table is append-only (delta.appendOnly=true): {what} is not allowed"
        )
