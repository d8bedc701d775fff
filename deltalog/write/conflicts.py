"""Whether a transaction may still commit after another writer's commit landed first.

The checks, and their order, follow delta-spark's ``ConflictChecker``: protocol, metadata,
domain metadata, application ids, then the data files — files the winner added that this
transaction should have read, files the winner removed that this transaction read, and files
both removed. The first failing check raises its named :class:`ConcurrentModificationError`.

Which added files count depends on the isolation level:

* ``Serializable``: every file the winner added.
* ``WriteSerializable``: only files added by a winner that was not a blind append (its
  ``commitInfo.isBlindAppend`` is not ``true``), unless this transaction changes the metadata,
  in which case every file counts. A blind append can then be ordered after this transaction.
* ``SnapshotIsolation`` (transactions whose file actions all have ``dataChange=false``): none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    DeltaLogError,
    MetadataChangedError,
    ProtocolChangedError,
)
from deltalog.log.file_actions import canonical_path
from deltalog.protocol.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from deltalog.protocol.features import check_writable
from deltalog.protocol.schema import StructType
from deltalog.stats.predicates import TRUE, Predicate, matches, partition_table

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
#: Levels a table (``delta.isolationLevel``) or a transaction may ask for.
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)


@dataclass(frozen=True)
class WinningCommit:
    """What a commit that landed first did, as far as conflict checking cares."""

    version: int
    commit_info: dict[str, Any]
    protocol: Protocol | None
    metadata: Metadata | None
    adds: tuple[AddFile, ...]
    removes: tuple[RemoveFile, ...]
    txns: tuple[Txn, ...]
    domains: tuple[DomainMetadata, ...]

    @classmethod
    def from_actions(cls, version: int, actions: Sequence[Action]) -> WinningCommit:
        """Summarise one commit's actions."""
        info: dict[str, Any] = {}
        protocol = metadata = None
        adds, removes, txns, domains = [], [], [], []
        for a in actions:
            if isinstance(a, AddFile):
                adds.append(a)
            elif isinstance(a, RemoveFile):
                removes.append(a)
            elif isinstance(a, CommitInfo):
                info = dict(a.extra)
            elif isinstance(a, Protocol):
                protocol = a
            elif isinstance(a, Metadata):
                metadata = a
            elif isinstance(a, Txn):
                txns.append(a)
            elif isinstance(a, DomainMetadata):
                domains.append(a)
        return cls(
            version, info, protocol, metadata, tuple(adds), tuple(removes), tuple(txns),
            tuple(domains),
        )  # fmt: skip

    @property
    def is_blind_append(self) -> bool:
        """Whether the winner declared itself a blind append (absent means no)."""
        return self.commit_info.get("isBlindAppend") is True

    @property
    def operation(self) -> str:
        """The winner's operation name, for messages."""
        op = self.commit_info.get("operation")
        return op if isinstance(op, str) else "an unknown operation"


@dataclass
class TransactionReads:
    """What a transaction read and what it is about to write, for conflict checks.

    Attributes:
        schema: The table schema the transaction read (types of partition columns).
        partition_columns: Partition column names.
        prefix: Qualifies absolute paths (see ``file_actions.canonical_path``).
        isolation_level: ``Serializable``, ``WriteSerializable`` or ``SnapshotIsolation``.
        predicates: Read predicates on partition columns (``TRUE`` for a whole-table read).
        read_whole_table: The transaction read every file.
        read_files: Canonical path → partition values of every file read.
        app_ids: Application ids whose ``txn`` version the transaction read or sets.
        removed: Canonical path → partition values of every file the transaction removes.
        domains: Metadata domains the transaction writes.
        changes_protocol: The transaction commits a protocol action.
        changes_metadata: The transaction commits a metaData action.
        metadata: The metadata the transaction will commit with (for feature checks).
    """

    schema: StructType
    partition_columns: Sequence[str]
    prefix: str
    isolation_level: str
    metadata: Metadata
    read_protocol: Protocol
    predicates: list[Predicate] = field(default_factory=list)
    read_whole_table: bool = False
    read_files: dict[str, dict[str, str | None]] = field(default_factory=dict)
    app_ids: set[str] = field(default_factory=set)
    removed: dict[str, dict[str, str | None]] = field(default_factory=dict)
    domains: set[str] = field(default_factory=set)
    changes_protocol: bool = False
    changes_metadata: bool = False


def check_winner(reads: TransactionReads, winner: WinningCommit) -> None:
    """Raise the first conflict between the transaction and one winning commit.

    Raises:
        ProtocolChangedError: The winner changed the protocol and this transaction did too, or
            downgraded it, or the new protocol needs a feature deltalog cannot write.
        MetadataChangedError: The winner changed the metadata.
        ConcurrentTransactionError: The winner wrote a domain or app id this transaction uses.
        ConcurrentAppendError: The winner added a file matching a read predicate.
        ConcurrentDeleteReadError: The winner removed a file this transaction read.
        ConcurrentDeleteDeleteError: The winner removed a file this transaction removes.
    """
    _check_protocol(reads, winner)
    if winner.metadata is not None:
        raise MetadataChangedError(
            f"version {winner.version} ({winner.operation}) changed the table metadata (schema, "
            "partitioning or properties) after this transaction read it. Re-run the operation "
            "against the new metadata.",
            winning_version=winner.version,
            winning_commit_info=winner.commit_info,
        )
    for domain in winner.domains:
        if domain.domain in reads.domains:
            raise ConcurrentTransactionError(
                f"version {winner.version} ({winner.operation}) also wrote metadata domain "
                f"{domain.domain!r}. Re-read the domain and re-run the operation.",
                winning_version=winner.version,
                winning_commit_info=winner.commit_info,
                domain=domain.domain,
            )
    for txn in winner.txns:
        if txn.app_id in reads.app_ids:
            raise ConcurrentTransactionError(
                f"version {winner.version} ({winner.operation}) committed txn version "
                f"{txn.version} for application {txn.app_id!r}, which this transaction depends "
                "on: two instances of the same application are writing. Stop the duplicate, "
                "then re-run.",
                winning_version=winner.version,
                winning_commit_info=winner.commit_info,
                app_id=txn.app_id,
            )
    _check_appends(reads, winner)
    _check_deletes(reads, winner)


def _check_protocol(reads: TransactionReads, winner: WinningCommit) -> None:
    new = winner.protocol
    if new is None:
        return
    try:
        check_writable(new, reads.metadata)
    except DeltaLogError as exc:
        raise ProtocolChangedError(
            f"version {winner.version} ({winner.operation}) upgraded the protocol to one "
            f"deltalog cannot write: {exc}. deltalog can no longer write this table; write it "
            "with an engine that supports the feature (e.g. delta-spark), or drop the feature.",
            winning_version=winner.version,
            winning_commit_info=winner.commit_info,
            retryable=False,
        ) from exc
    if reads.changes_protocol:
        raise ProtocolChangedError(
            f"version {winner.version} ({winner.operation}) changed the protocol while this "
            "transaction changes it too. Re-run the operation on the new protocol.",
            winning_version=winner.version,
            winning_commit_info=winner.commit_info,
        )
    old = reads.read_protocol
    dropped = set(old.reader_features or ()) - set(new.reader_features or ()) or set(
        old.writer_features or ()
    ) - set(new.writer_features or ())
    if (
        dropped
        or new.min_reader_version < old.min_reader_version
        or new.min_writer_version < old.min_writer_version
    ):
        raise ProtocolChangedError(
            f"version {winner.version} ({winner.operation}) downgraded the protocol"
            + (f" (dropped {sorted(dropped)})" if dropped else "")
            + ". Re-run the operation on the new protocol.",
            winning_version=winner.version,
            winning_commit_info=winner.commit_info,
        )


def _counted_adds(reads: TransactionReads, winner: WinningCommit) -> tuple[AddFile, ...]:
    level = reads.isolation_level
    if level == SNAPSHOT_ISOLATION:
        return ()
    if level == WRITE_SERIALIZABLE and not reads.changes_metadata and winner.is_blind_append:
        return ()
    return winner.adds


def _check_appends(reads: TransactionReads, winner: WinningCommit) -> None:
    if not reads.predicates:
        return
    adds = _counted_adds(reads, winner)
    if not adds:
        return
    if reads.read_whole_table or any(p is TRUE for p in reads.predicates):
        _raise_append(reads, winner, adds[0], TRUE)
    table = partition_table(
        [a.partition_values for a in adds], reads.schema, reads.partition_columns
    )
    for predicate in reads.predicates:
        mask = matches(predicate, table)
        if mask.true_count:
            first = next(i for i, hit in enumerate(mask.to_pylist()) if hit)
            _raise_append(reads, winner, adds[first], predicate)


def _raise_append(
    reads: TransactionReads, winner: WinningCommit, add: AddFile, predicate: Predicate
) -> None:
    where = _partition_text(add.partition_values, reads.partition_columns)
    level = reads.isolation_level
    hint = (
        "Narrow the read predicate (e.g. to the partitions this operation changes), or partition "
        "the table so concurrent writers touch disjoint partitions, then re-run."
    )
    if level == SERIALIZABLE and winner.is_blind_append:
        hint += " Under WriteSerializable isolation this blind append would not conflict."
    raise ConcurrentAppendError(
        f"version {winner.version} ({winner.operation}) added {add.path}{where}, which this "
        f"transaction's read ({predicate}) should have seen under {level} isolation. {hint}",
        winning_version=winner.version,
        winning_commit_info=winner.commit_info,
        path=add.path,
        partition=dict(add.partition_values),
        predicate=str(predicate),
    )


def _check_deletes(reads: TransactionReads, winner: WinningCommit) -> None:
    if not winner.removes:
        return
    for remove in winner.removes:
        key = canonical_path(remove.path, reads.prefix)
        if key in reads.read_files:
            _raise_delete_read(reads, winner, remove, reads.read_files[key])
    if reads.read_whole_table:
        first = winner.removes[0]
        raise ConcurrentDeleteReadError(
            f"version {winner.version} ({winner.operation}) removed {first.path}"
            f"{_partition_text(first.partition_values, reads.partition_columns)} while this "
            "transaction depends on the whole table. Re-run the operation on the latest version, "
            "or read only the partitions it needs.",
            winning_version=winner.version,
            winning_commit_info=winner.commit_info,
            path=first.path,
            partition=dict(first.partition_values) if first.partition_values else None,
        )
    for remove in winner.removes:
        key = canonical_path(remove.path, reads.prefix)
        if key in reads.removed:
            partition = reads.removed[key]
            raise ConcurrentDeleteDeleteError(
                f"version {winner.version} ({winner.operation}) already removed {remove.path}"
                f"{_partition_text(partition, reads.partition_columns)}, which this transaction "
                "removes too. Re-run the operation on the latest version.",
                winning_version=winner.version,
                winning_commit_info=winner.commit_info,
                path=remove.path,
                partition=dict(partition) if partition is not None else None,
            )


def _raise_delete_read(
    reads: TransactionReads,
    winner: WinningCommit,
    remove: RemoveFile,
    partition: Mapping[str, str | None] | None,
) -> None:
    raise ConcurrentDeleteReadError(
        f"version {winner.version} ({winner.operation}) removed {remove.path}"
        f"{_partition_text(partition, reads.partition_columns)}, which this transaction read. "
        "Re-run the operation on the latest version; if the writers work on different "
        "partitions, make each one read only its own partitions.",
        winning_version=winner.version,
        winning_commit_info=winner.commit_info,
        path=remove.path,
        partition=dict(partition) if partition is not None else None,
    )


def _partition_text(values: Mapping[str, str | None] | None, columns: Sequence[str]) -> str:
    if not values or not columns:
        return ""
    inner = ", ".join(f"{c}={values.get(c)!r}" if values.get(c) is not None else f"{c}=NULL"
                      for c in columns)  # fmt: skip
    return f" in partition ({inner})"
