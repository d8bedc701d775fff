"""A write whose data files are written and whose commit is staged, not yet published.

:class:`StagedWrite` is what :func:`deltalog.spark.write.stage` returns and what
``deltalog.write_table`` and ``deltalog.spark.write`` commit at once; holding one lets tests and
careful callers control exactly how two writers interleave. :class:`WriteResult` is what a
committed (or skipped) write did.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import pyarrow as pa

from deltalog.errors import (
    CommitStatusUnknownError,
    ProtocolChangedError,
    StorageError,
    TransactionClosedError,
)
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile
from deltalog.protocol.paths import decode_path
from deltalog.table import DeltaTable
from deltalog.write.commit import num_records, try_write
from deltalog.write.transaction import Transaction


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did.

    Attributes:
        version: The version committed; for a skipped or empty write, the version that already
            held it (``None`` when nothing was read, e.g. a skipped write to a new table).
        files_added: Data files committed.
        files_removed: Data files the write replaced.
        rows: Rows committed.
        bytes: Bytes of data files committed.
        skipped: Whether the write was skipped because ``app_id`` had already committed
            ``app_version`` (a retried micro-batch); then nothing was written at all.
        ignored: Whether ``mode="ignore"`` found the table already there; then nothing was
            written at all (``version`` is the table's current version).
    """

    version: int | None
    files_added: int
    files_removed: int
    rows: int
    bytes: int
    skipped: bool = False
    ignored: bool = False


class StagedWrite:
    """Data files written and a commit staged, not yet published.

    Call :meth:`commit` to publish or :meth:`abort` to give up (which deletes the files). The
    commit is a transaction on an existing table, or, for a new table, its version 0 (metadata,
    protocol and files in one commit, as delta-spark creates a table with its first write).
    """

    def __init__(
        self,
        storage: TableStorage,
        adds: list[AddFile],
        *,
        table: DeltaTable | None = None,
        tx: Transaction | None = None,
        first_commit: bytes | None = None,
        removed: int = 0,
        app: bool = False,
        ignored: bool = False,
    ) -> None:
        self._storage = storage
        self._table = table
        self._tx = tx
        self._first_commit = first_commit
        self.adds = adds
        self._removed = removed
        self._app = app
        self._ignored = ignored
        self._finished = False

    def stage(self, replaced: pa.Table | None = None) -> None:
        """Put the written files, and the removes of ``replaced``, into the transaction.

        Args:
            replaced: Live files the write replaces (``None`` or empty: none).

        Raises:
            BaseException: Whatever staging raised, after :meth:`abort` deleted the files.
        """
        tx = self._tx
        assert tx is not None, "only a write into an existing table stages into a transaction"
        try:
            tx.add(self.adds)
            if replaced is not None and replaced.num_rows:
                tx.remove(replaced)
                self._removed = replaced.num_rows
        except BaseException:
            self.abort()
            raise

    @property
    def read_version(self) -> int:
        """The table version the write read (-1 for a new table)."""
        if self._tx is not None:
            return self._tx.read_version
        return -1 if self._table is None else self._table.version()

    @property
    def skipped(self) -> bool:
        """Whether the write is a no-op: its ``app_version`` was already committed."""
        return self._tx is None and self._first_commit is None and not self._ignored

    @property
    def ignored(self) -> bool:
        """Whether the write is a no-op because of ``mode="ignore"`` on an existing table."""
        return self._ignored

    def commit(self) -> WriteResult:
        """Commit the staged write; returns what it did.

        Raises:
            ConcurrentModificationError: A concurrent commit conflicts with this write (the
                six named subclasses; ``ProtocolChangedError`` when another writer created the
                table first). The written files are deleted, as for every error but a storage
                failure.
            CommitFailedError: Every attempt lost the race.
            TransactionClosedError: Already committed or aborted.
            CommitStatusUnknownError: The store failed mid-commit and the commit may have
                landed; the files are kept.
            StorageError: The log store failed; the files are kept.
        """
        if self._finished:
            raise TransactionClosedError("this staged write was already committed or aborted")
        if self.skipped or self._ignored:
            self._finished = True
            return WriteResult(
                self.read_version, 0, 0, 0, 0, skipped=not self._ignored, ignored=self._ignored
            )
        no_op = False
        try:
            if self._first_commit is not None:
                version = self._create()
            else:
                assert self._tx is not None
                version = self._tx.commit()
                no_op = self._tx.no_op
        except (StorageError, CommitStatusUnknownError):
            raise  # the commit may have landed: its files must stay
        except Exception:
            self._delete_files()  # refused or lost: nothing refers to the files
            raise
        finally:
            self._finished = True
        if no_op:  # nothing to commit, or the same app_id/app_version landed
            self._delete_files()
            return WriteResult(version, 0, 0, 0, 0, skipped=self._app)
        if self._table is not None:
            self._table.wait_for_checkpoints()
        return WriteResult(
            version=version,
            files_added=len(self.adds),
            files_removed=self._removed,
            rows=sum(num_records(a) for a in self.adds),
            bytes=sum(a.size for a in self.adds),
        )

    def _create(self) -> int:
        assert self._first_commit is not None
        if try_write(self._storage, 0, self._first_commit):
            return 0
        raise ProtocolChangedError(
            f"another writer created the table at {self._storage.uri} first (several writers "
            "writing to an empty location, as delta-spark reports it); write again, or create "
            "the table before starting concurrent writers",
            winning_version=0,
        )

    def abort(self) -> None:
        """Give up the write: nothing is committed and the written files are deleted."""
        if not self._finished:
            self._finished = True
            self._delete_files()

    def _delete_files(self) -> None:
        storage = self._storage
        for add in self.adds:
            with contextlib.suppress(Exception):  # best effort: an orphan file is harmless
                storage.store.delete(storage.data_file(decode_path(add.path)))
