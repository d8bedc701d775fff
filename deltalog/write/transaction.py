"""Optimistic transactions: record reads, stage actions, commit exactly once or name the conflict.

A :class:`Transaction` reads one pinned snapshot. What it reads (partition predicates, files,
application ids) is recorded; what it writes is staged. :meth:`Transaction.commit` serialises
the commit once and creates ``_delta_log/<read version + 1>.json`` through the log store. When
another writer created that version first, the winners are read one by one and checked against
this transaction (:mod:`deltalog.write.conflicts`, and against vacuums:
:mod:`deltalog.write.vacuum_fence`);
if none conflicts, the same bytes are tried at the next free version, after a backoff
(:class:`~deltalog.write.commit.RetryPolicy`). When log cleanup removed the winners, only a blind
append goes on, after the head (:mod:`deltalog.write.rebase`). A commit therefore either lands
exactly once, in the history readers rebuild, or raises, and a raise writes nothing (except
``CommitStatusUnknownError``: the commit may have landed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeAlias

import orjson
import pyarrow as pa

from deltalog.errors import (
    CommitAttemptsExhaustedError,
    ConcurrentModificationError,
    DuplicateFileError,
    InvalidInputError,
    SnapshotExpiredError,
    TransactionClosedError,
)
from deltalog.log.checksum import write_checksum_after
from deltalog.log.clock import now_ms
from deltalog.log.file_actions import (
    canonical_path,
    canonical_paths,
    file_key,
    scheme_prefix,
)
from deltalog.log.log_tail import commits_from
from deltalog.log.replay import advance
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileStatus
from deltalog.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    serialize_actions,
)
from deltalog.protocol.paths import check_action_path
from deltalog.protocol.schema import StructType
from deltalog.protocol.user_input import (
    as_items,
    check_file_action,
    check_json,
    check_mapping,
    check_version_number,
)
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import TRUE, matches, partition_table
from deltalog.stats.predicates import validate as validate_predicate
from deltalog.write.commit import (
    ENGINE_INFO,
    AlreadyCommitted,
    LandedEarlier,
    RetryPolicy,
    cleanup_may_have_passed,
    make_commit_info,
    try_write,
    txn_covers,
    write_metrics,
)
from deltalog.write.commit_layout import CommitLayout
from deltalog.write.commit_outcome import confirm_in_history
from deltalog.write.conflicts import ISOLATION_LEVELS, TransactionReads, WinningCommit, check_winner
from deltalog.write.data_files import describe, expand
from deltalog.write.rebase import head_for_blind_append
from deltalog.write.staging import (
    check_not_live,
    check_partition_values,
    check_staged,
    drop_readds,
    find_txn_commit,
    isolation_level,
    removes_for,
    replaced_sizes,
)
from deltalog.write.table_changes import metadata_change, protocol_upgrade
from deltalog.write.vacuum_fence import APP_ID, WriterFence

_log = logging.getLogger(__name__)

#: Files given to :meth:`Transaction.add`: actions, or Parquet files to describe.
FilesToAdd: TypeAlias = AddFile | AddCDCFile | str | Iterable[AddFile | AddCDCFile | str]
#: Files given to :meth:`Transaction.remove`: paths, actions, or rows of a files table.
FilesToRemove: TypeAlias = (
    str | AddFile | RemoveFile | pa.Table | Iterable[str | AddFile | RemoveFile]
)

_OPEN, _COMMITTED, _FAILED, _ABANDONED = "open", "committed", "failed", "abandoned"
_READ_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("path", pa.string()),
        ("partition_values", pa.map_(pa.string(), pa.string())),
    ]
)


class Transaction:
    """One atomic change to a table, on the snapshot the table object held when it started.

    Create it with :meth:`DeltaTable.transaction`. Use it as a context manager: leaving the
    block normally commits what was staged (like ``sqlite3``), leaving it with an exception
    abandons the transaction and writes nothing::

        with table.transaction("DELETE") as tx:
            old = tx.read_files(col("date") == "2024-01-01")
            tx.remove(old)
        print(tx.version)

    Attributes:
        read_version: The version the transaction reads.
        version: The committed version (or, for a no-op, the version that already holds this
            change), once committed; else ``None``.
        attempts: How many versions the commit tried.
        no_op: Whether the commit wrote nothing because an identical ``txn`` had landed.
        enforced: Writer features this transaction's writer enforces itself (see
            :func:`~deltalog.protocol.features.check_writable`).
    """

    def __init__(
        self,
        *,
        storage: TableStorage,
        snapshot: Snapshot,
        operation: str,
        parameters: Mapping[str, Any] | None,
        isolation_level: str | None,
        retry: RetryPolicy,
        engine_info: str = ENGINE_INFO,
        on_advance: Callable[[Snapshot, bool], None] | None = None,
        user_metadata: str | None = None,
        group: Callable[[Transaction], int] | None = None,
    ) -> None:
        if isolation_level is not None and isolation_level not in ISOLATION_LEVELS:
            raise InvalidInputError(
                f"isolation level must be one of {list(ISOLATION_LEVELS)}, not {isolation_level!r}"
            )
        if not operation or not isinstance(operation, str):
            raise InvalidInputError("a transaction needs an operation name")
        check_json(dict(check_mapping(parameters, "parameters")), "the transaction parameters")
        if user_metadata is not None and not isinstance(user_metadata, str):
            raise InvalidInputError(
                f"user_metadata must be a str, not {type(user_metadata).__name__}"
            )
        self._user_metadata = user_metadata
        self._storage = storage
        self._snapshot = snapshot
        self._prefix = scheme_prefix(storage.root)
        self._operation = operation
        self._parameters = dict(parameters or {})
        self._isolation = isolation_level
        self._retry = retry
        self._engine_info = engine_info
        self._on_advance = on_advance
        self._group = group  # commits through a group committer (deltalog.write.group_commit)
        self._state = _OPEN
        # what was read
        self._predicates: list[Any] = []
        self._read_whole_table = False
        self._read: list[pa.Table] = []
        self._app_ids: set[str] = set()
        # what will be written
        self._adds: dict[str, AddFile] = {}
        self._described: set[str] = set()
        self._described_at: int | None = None  # before the first file was described
        self._cdc: list[AddCDCFile] = []
        self._removes: dict[str, RemoveFile] = {}
        self._metadata: Metadata | None = None
        self._metadata_rewrites_data = False
        self._protocol: Protocol | None = None
        self._txns: dict[str, Txn] = {}
        self._domains: dict[str, DomainMetadata] = {}
        self._operation_metrics: dict[str, str] | None = None
        self._fence: WriterFence  # set by commit, before any winner is checked
        self.read_version = snapshot.version
        self.version: int | None = None
        self.attempts = 0
        self.no_op = False
        self.enforced: frozenset[str] = frozenset()  # e.g. checkConstraints: see _prepare

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state != _OPEN:
            return
        if exc_type is not None:
            self._state = _ABANDONED
            return
        self.commit()

    # ------------------------------------------------------------------ reads
    @property
    def snapshot(self) -> Snapshot:
        """The snapshot the transaction reads."""
        return self._snapshot

    def read_files(
        self, predicate: PredicateLike | None = None, *, with_stats: bool = True
    ) -> pa.Table:
        """Live files whose partition values satisfy ``predicate``; records the read.

        A file another writer adds that matches the predicate, or a removal of a file returned
        here, then conflicts with this transaction.

        Args:
            predicate: A :class:`~deltalog.stats.predicates.Predicate` on partition columns, a
                ``{column: value}`` mapping, or ``(column, op, value)`` filters. ``None`` reads
                the whole table.
            with_stats: Include the ``stats`` column.

        Raises:
            InvalidPredicateError: The predicate names a non-partition column or a bad value.
        """
        self._check_open()
        if predicate is None:
            return self.read_whole_table(with_stats=with_stats)
        pred = as_predicate(predicate)
        snap = self._snapshot
        validate_predicate(pred, snap.schema, snap.partition_columns)
        files = self._snapshot.files if with_stats else self._snapshot.files_without_stats()
        if pred is not TRUE:
            table = partition_table(
                snap.raw_files.column("partition_values"), snap.schema, snap.partition_columns
            )
            files = files.filter(matches(pred, table))
        self._predicates.append(pred)
        self._record_read(files)
        return files

    def read_whole_table(self, *, with_stats: bool = True) -> pa.Table:
        """Every live file; records that the transaction depends on the whole table."""
        self._check_open()
        files = self._snapshot.files if with_stats else self._snapshot.files_without_stats()
        self._predicates.append(TRUE)
        self._read_whole_table = True
        self._record_read(files)
        return files

    def txn_version(self, app_id: str) -> int | None:
        """The last version application ``app_id`` committed (``None`` if never); records it.

        A concurrent commit of a ``txn`` for the same application then conflicts.
        """
        self._check_open()
        self._app_ids.add(app_id)
        txn = self._snapshot.txns.get(app_id)
        return None if txn is None else txn.version

    def track_files_read(self, files: pa.Table, *, predicate: PredicateLike | None = None) -> None:
        """Record that the transaction read exactly these files (rows as :meth:`read_files`).

        For an operation that chose its files itself, e.g. compaction: a winner that removed
        one of them conflicts (``ConcurrentDeleteReadError``).

        Args:
            files: The files read.
            predicate: Also record this read predicate on partition columns (files another
                writer adds that match it then conflict, as with :meth:`read_files`); ``None``
                records none.

        Raises:
            InvalidPredicateError: The predicate names a non-partition column or a bad value.
        """
        self._check_open()
        if predicate is not None:
            pred = as_predicate(predicate)
            snap = self._snapshot
            validate_predicate(pred, snap.schema, snap.partition_columns)
            self._predicates.append(pred)
        self._record_read(files)

    def _record_read(self, files: pa.Table) -> None:
        if not files.num_rows:
            return
        self._read.append(
            pa.Table.from_arrays(
                [
                    canonical_paths(files.column("path"), self._prefix),
                    files.column("path").combine_chunks(),
                    files.column("partition_values").combine_chunks(),
                ],
                schema=_READ_SCHEMA,
            )
        )

    # ------------------------------------------------------------------ staged changes
    def add(self, files: FilesToAdd, *, data_change: bool = True) -> list[AddFile]:
        """Stage files to add.

        Args:
            files: ``AddFile`` actions (committed as given; re-adding a live path replaces
                that file's entry, as delta-spark allows), ``AddCDCFile`` actions, or paths of
                Parquet files (relative to the table root, or absolute on its store) that are
                read for their schema, statistics and Hive-style partition values, and must not
                be live already unless this transaction removes them.
            data_change: ``dataChange`` of the actions built from paths.

        Returns:
            The ``AddFile`` actions staged by this call.

        Raises:
            DuplicateFileError: A file is staged twice.
            PartitionValueError: Partition values do not match the table.
            SchemaMismatchError: A Parquet file's columns do not fit the table.
            InvalidPathError: A path escapes the table (``..``) or is on another store, bucket
                or account.
        """
        self._check_open()
        given = as_items(files, (str, AddFile, AddCDCFile), "files", data_change=data_change)
        items: list[tuple[str, FileStatus] | AddFile | AddCDCFile] = []
        for one in given:  # a directory stands for the data files under it
            items.extend(expand(self._storage, [one]) if isinstance(one, str) else [one])
        paths = [f for f in items if isinstance(f, tuple)]
        if paths and self._described_at is None:
            self._described_at = now_ms()  # expand() looked them up after this, too
        described = (
            describe(
                self._storage,
                self._snapshot,
                paths,
                data_change=data_change,
                metadata=self._metadata,
            )
            if paths
            else []
        )
        staged: list[AddFile] = []
        pending: dict[str, AddFile] = {}
        described_iter = iter(described)
        for item in items:
            if isinstance(item, AddFile | AddCDCFile):
                check_file_action(item)
                check_action_path(item.path, self._storage.root)
            if isinstance(item, AddCDCFile):
                self._cdc.append(item)
                continue
            if isinstance(item, tuple):
                add = next(described_iter)
            elif isinstance(item, AddFile):
                check_partition_values(
                    self._snapshot, self._metadata, item.partition_values, item.path
                )
                add = item
            else:
                raise InvalidInputError(f"cannot add {item!r}: expected an AddFile or a path")
            key = file_key(add.path, add.dv_id, self._prefix)
            if key in self._adds or key in pending:
                raise DuplicateFileError(f"{add.path!r} is added twice in this transaction")
            pending[key] = add
            staged.append(add)
        self._adds.update(pending)
        self._described.update(file_key(a.path, a.dv_id, self._prefix) for a in described)
        return staged

    def remove(self, files: FilesToRemove, *, data_change: bool = True) -> list[RemoveFile]:
        """Stage live files to remove.

        Removing is not reading: a transaction that removes files it found with
        :meth:`read_files` conflicts when a winner removed one of them
        (``ConcurrentDeleteReadError``); one that removes files it did not read conflicts only
        when a winner removed the same file (``ConcurrentDeleteDeleteError``).

        Args:
            files: Paths as logged, ``AddFile`` actions, a table of files (as returned by
                :meth:`read_files`), or ready ``RemoveFile`` actions (committed as given; their
                files must be live too).
            data_change: ``dataChange`` of the remove actions built here (``False`` for a
                rearrangement such as compaction).

        Returns:
            The ``RemoveFile`` actions staged by this call.

        Raises:
            FileNotInTableError: A file is not live in the snapshot.
            DuplicateFileError: A file is removed twice.
            InvalidPathError: A path has ``..`` segments or is on another store, bucket or
                account (never live in a sound table; refused before looking).
        """
        self._check_open()
        if isinstance(files, pa.Table):
            paths: list[str] = files.column("path").to_pylist()
            given: list[str | AddFile | RemoveFile] = list(paths)
        else:
            given = as_items(files, (str, AddFile, RemoveFile), "files", data_change=data_change)
        for one in given:
            if not isinstance(one, str):
                check_file_action(one)
            check_action_path(one if isinstance(one, str) else one.path, self._storage.root)
        ready = [f for f in given if isinstance(f, RemoveFile)]
        if ready:
            self._removes_for([r.path for r in ready], data_change)  # each must be live
        wanted = [
            f if isinstance(f, str) else f.path for f in given if not isinstance(f, RemoveFile)
        ]
        built = self._removes_for(wanted, data_change) if wanted else []
        out = [*ready, *built]
        keys = {}
        for remove in out:
            key = canonical_path(remove.path, self._prefix)
            if key in self._removes or key in keys:
                raise DuplicateFileError(f"{remove.path!r} is removed twice in this transaction")
            keys[key] = remove
        self._removes.update(keys)
        return out

    def _removes_for(self, paths: list[str], data_change: bool) -> list[RemoveFile]:
        return removes_for(self._snapshot, paths, data_change, self._prefix)

    def update_metadata(
        self,
        metadata: Metadata | None = None,
        *,
        schema: StructType | pa.Schema | Mapping[str, Any] | str | None = None,
        partition_by: Iterable[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> Metadata:
        """Stage new table metadata: a whole ``Metadata`` action, or changes to the current one.

        Adding nullable columns or properties is a plain metadata change. Dropping or retyping a
        column, or changing the partition columns, makes existing files unreadable under the new
        metadata, so it is accepted only when the transaction also removes every live file.

        Raises:
            InvalidSchemaError: The schema is invalid.
            InvalidInputError: The table id changes, or partition columns are invalid.
            UnsupportedFeatureError: The properties need a feature deltalog cannot write, or a
                protocol the table does not have (stage it with :meth:`update_protocol`).
        """
        self._check_open()
        if self._adds or self._cdc:
            raise InvalidInputError(
                "stage metadata changes before adding files: staged files were checked "
                "against the metadata in force when they were added"
            )
        metadata, self._metadata_rewrites_data = metadata_change(
            self._snapshot,
            self._metadata,
            self._protocol,
            metadata,
            schema=schema,
            partition_by=partition_by,
            configuration=configuration,
            name=name,
            description=description,
        )
        self._metadata = metadata
        return metadata

    def update_protocol(self, protocol: Protocol) -> None:
        """Stage a protocol upgrade (versions and features may only grow).

        Raises:
            InvalidInputError: The protocol would be downgraded, or is not a valid ``Protocol``.
            UnsupportedFeatureError: deltalog cannot write under the new protocol.
        """
        self._check_open()
        protocol_upgrade(self._snapshot, protocol, self._metadata or self._snapshot.metadata)
        self._protocol = protocol

    def set_transaction(self, app_id: str, version: int) -> None:
        """Stage ``txn(app_id, version)`` for an idempotent write.

        If the table already holds a ``txn`` for ``app_id`` at ``version`` or later, the commit
        writes nothing and reports the version that holds it (``no_op`` is set). A concurrent
        writer committing the same ``app_id`` first has the same effect.

        Raises:
            InvalidInputError: ``version`` is negative, ``app_id`` empty or reserved.
        """
        self._check_open()
        if not app_id or not isinstance(app_id, str) or app_id == APP_ID:
            raise InvalidInputError(f"app_id must be a non-empty string other than {APP_ID!r}")
        check_version_number(version, "txn version")
        self._app_ids.add(app_id)
        self._txns[app_id] = Txn(app_id=app_id, version=version, last_updated=now_ms())

    def domain_metadata(
        self, domain: str, configuration: str | Mapping[str, Any], *, removed: bool = False
    ) -> None:
        """Stage a ``domainMetadata`` action (the table needs the ``domainMetadata`` feature).

        Raises:
            InvalidInputError: The domain is reserved (``delta.*``) or the protocol lacks the
                feature.
        """
        self._check_open()
        if not isinstance(domain, str) or not isinstance(configuration, str | Mapping):
            raise InvalidInputError("a domain is a str, its configuration a str or a mapping")
        if not domain or domain.startswith("delta."):
            raise InvalidInputError(f"domain {domain!r} is reserved or empty")
        if not isinstance(configuration, str):
            check_json(configuration, f"the configuration of domain {domain!r}")
            configuration = orjson.dumps(configuration, option=orjson.OPT_SORT_KEYS).decode()
        self._domains[domain] = DomainMetadata(domain, configuration, removed)

    # ------------------------------------------------------------------ commit
    def commit(self) -> int:
        """Commit the staged changes; returns the committed version.

        Raises:
            ConcurrentModificationError: A winning commit conflicts (one of the subclasses), or
                a vacuum running in the snapshot may delete an added file (ConcurrentVacuumError).
            CommitAttemptsExhaustedError: Every attempt lost the race.
            SnapshotExpiredError: Log cleanup removed the commits after the snapshot, and the
                transaction is not a blind append (nothing was written).
            CommitStatusUnknownError: The store failed so that whether the commit landed
                cannot be told (it may have).
            InvalidInputError: The staged changes are refused (nothing was written).
            TransactionClosedError: The transaction already committed or failed.
            StorageError: The log store failed (nothing was written).
        """
        self._check_open()
        try:
            version = self._commit() if self._group is None else self._group(self)
        except BaseException:
            self._state = _FAILED
            raise
        self._state = _COMMITTED
        self.version = version
        return version

    def _commit(self) -> int:
        snap = self._snapshot
        covered = [t for t in self._txns.values() if txn_covers(snap.txns.get(t.app_id), t)]
        if covered and len(covered) == len(self._txns):
            self.no_op = True
            return find_txn_commit(self._storage, self._snapshot.version, covered[0])
        if covered:
            raise InvalidInputError(
                f"the table already holds txn {covered[0].app_id!r} at version "
                f"{snap.txns[covered[0].app_id].version} but not the other application ids this "
                "transaction sets: its txn actions disagree with the table"
            )
        actions = self._prepare()
        if not actions:
            self.no_op = True
            return snap.version
        self._fence = self._writer_fence(snap)
        self._fence.check_snapshot()  # a running vacuum may delete files this one adds
        replaced = replaced_sizes(
            self._snapshot, self._adds, self._described, self._removes, self._prefix
        )
        level = isolation_level(actions, self._isolation, self._snapshot)
        info = make_commit_info(
            operation=self._operation,
            parameters=self._parameters,
            read_version=snap.version,
            is_blind_append=self._is_blind_append(),
            metrics=self._metrics(),
            isolation_level=level,
            engine_info=self._engine_info,
            user_metadata=self._user_metadata,
        )
        staged = (info, actions)
        layout = CommitLayout(snap, info, actions)
        reads: TransactionReads | None = None
        winners: list[tuple[int, list[Action], int]] = []
        version, started = snap.version + 1, now_ms()
        while True:
            self.attempts += 1
            info, actions, data = layout.build(version)  # again after a lost race
            # Also after a lost race: the catch-up's "not found" for a version does not mean
            # it is free when cleanup may have deleted it during the back-off.
            check_previous = cleanup_may_have_passed(snap.timestamp, snap.configuration)
            try:
                if try_write(self._storage, version, data, check_previous=check_previous):
                    break
                if self.attempts >= self._retry.max_attempts:
                    raise CommitAttemptsExhaustedError(
                        f"gave up after {self.attempts} attempts: version {version} was taken "
                        "by another writer each time (no conflict; the table is busy). Retry "
                        "later or raise RetryPolicy.max_attempts.",
                        attempts=self.attempts,
                        last_version=version,
                    )
                time.sleep(self._retry.delay(self.attempts))
                if reads is None:
                    reads = self._reads(level)
                seen = len(winners)
                try:
                    version = self._catch_up(version, reads, winners, info.extra.get("txnId"))
                except LandedEarlier as landed:
                    # The store said "taken", but the commit there is this one (an attempt whose
                    # reply was lost landed after all): it is committed, once, as laid out there.
                    version, ours = landed.version, landed.actions
                    if check_previous:
                        confirm_in_history(self._storage, version, serialize_actions(ours), started)
                    info = next((a for a in ours if isinstance(a, CommitInfo)), info)
                    actions = [a for a in ours if not isinstance(a, CommitInfo)]
                    break
                layout.after(winners[seen:])
            except SnapshotExpiredError as expired:  # cleanup passed; nothing was written
                snap, layout = self._to_head(snap, expired, staged)
                version, reads, replaced = snap.version + 1, None, None
                winners.clear()
            except AlreadyCommitted as done:
                self.no_op = True
                self._advanced(winners, None)
                return done.version
            except ConcurrentModificationError:
                self._advanced(winners, None)
                raise
        self._advanced(winners, (version, [info, *actions], now_ms()))
        if replaced is not None:  # None: what the adds replace is unknown
            write_checksum_after(
                self._storage, version, actions, info, self._snapshot, winners, replaced
            )
        return version

    def _catch_up(
        self,
        version: int,
        reads: TransactionReads,
        winners: list[tuple[int, list[Action], int]],
        txn_id: object = None,
    ) -> int:
        """Check every commit from ``version`` to the head; returns the next free version.

        A version that is missing because log cleanup removed it is found by the next attempt's
        check of the previous version (:func:`~deltalog.write.commit.try_write`), which lists
        anyway:
        no listing here.

        Raises:
            LandedEarlier: The commit at a version is this transaction's own (same txnId).
        """
        tail = commits_from(self._storage, version, gaps_possible=False)
        for found, actions, seen_ms in tail:
            winner = WinningCommit.from_actions(found, actions)
            if txn_id is not None and winner.commit_info.get("txnId") == txn_id:
                raise LandedEarlier(found, actions)
            theirs = {t.app_id: t for t in winner.txns}
            if self._txns and all(txn_covers(theirs.get(a), t) for a, t in self._txns.items()):
                winners.append((found, actions, seen_ms))
                raise AlreadyCommitted(found)
            # Known before checking: after a conflict the table still moves past the winner,
            # so re-running the operation starts from a snapshot that includes it.
            winners.append((found, actions, seen_ms))
            check_winner(reads, winner)
            self._fence.check_winner(winner)
            version = found + 1
        return version

    def _advanced(
        self,
        winners: list[tuple[int, list[Action], int]],
        mine: tuple[int, list[Action], int] | None,
    ) -> None:
        """Tell the table about the versions this commit saw (and its own, when it landed)."""
        if self._on_advance is None:
            return
        commits = [*winners, mine] if mine is not None else winners
        if not commits:
            return
        try:
            snapshot = advance(self._snapshot, commits)
            self._on_advance(snapshot, mine is not None)
        except Exception:  # the commit outcome stands; the table can replay instead
            _log.warning("could not advance the snapshot in memory", exc_info=True)

    def _prepare(self) -> list[Action]:
        """Validate the staged changes and lay them out in commit order."""
        check_staged(
            self._snapshot,
            self._metadata,
            self._protocol,
            self._removes,
            domains=bool(self._domains),
            rewrites_data=self._metadata_rewrites_data,
            read_whole_table=self._read_whole_table,
            prefix=self._prefix,
            enforced=self.enforced,
        )
        if self._described:
            check_not_live(self._snapshot, self._adds, self._described, self._removes, self._prefix)
        drop_readds(self._adds, self._removes, self._described, self._prefix)
        actions: list[Action] = []
        if self._protocol is not None:
            actions.append(self._protocol)
        if self._metadata is not None:
            actions.append(self._metadata)
        actions += self._txns.values()
        actions += self._domains.values()
        actions += self._removes.values()
        actions += self._adds.values()
        actions += self._cdc
        return actions

    def _to_head(
        self, snap: Snapshot, expired: SnapshotExpiredError, staged: tuple[CommitInfo, list[Action]]
    ) -> tuple[Snapshot, CommitLayout]:
        """Move a blind append past commits log cleanup removed (see :mod:`deltalog.write.rebase`).

        The removed commits cannot be checked as winners, so the head is checked against
        vacuums instead (:meth:`~deltalog.write.vacuum_fence.WriterFence.check_moved`).

        Raises:
            SnapshotExpiredError: ``expired``, for anything but such a blind append; or a file
                it adds is at risk from a vacuum the removed commits may hold.
            ConcurrentVacuumError: A vacuum ran among them and a file it adds is at risk.
        """
        changes = self._txns or self._domains or self._metadata or self._protocol
        if self.attempts >= self._retry.max_attempts or changes or not self._is_blind_append():
            raise expired
        head = head_for_blind_append(self._storage, snap, expired)
        fence = self._writer_fence(head)
        fence.check_moved(snap, expired)
        self._fence = fence
        snap = self._snapshot = head
        return snap, CommitLayout(snap, *staged)

    def _writer_fence(self, snap: Snapshot) -> WriterFence:
        staged = (self._adds, self._described, self._removes, self._prefix, self._described_at)
        return WriterFence(self._storage, snap, *staged)

    def _is_blind_append(self) -> bool:
        reads = bool(self._predicates or self._read)
        only_adds = not self._removes and not self._cdc
        return only_adds and not reads

    def set_metrics(self, metrics: Mapping[str, str]) -> None:
        """Use ``metrics`` as ``commitInfo.operationMetrics`` instead of the write metrics."""
        self._check_open()
        self._operation_metrics = dict(metrics)

    def _metrics(self) -> dict[str, str]:
        if self._operation_metrics is not None:
            return self._operation_metrics
        return write_metrics(list(self._adds.values()), removed=len(self._removes))

    def _reads(self, level: str) -> TransactionReads:
        snap = self._snapshot
        reads = TransactionReads(
            schema=snap.schema,
            partition_columns=snap.partition_columns,
            prefix=self._prefix,
            isolation_level=level,
            metadata=self._metadata or snap.metadata,
            read_protocol=snap.protocol,
            predicates=list(self._predicates),
            read_whole_table=self._read_whole_table,
            app_ids=set(self._app_ids),
            domains=set(self._domains),
            changes_protocol=self._protocol is not None,
            changes_metadata=self._metadata is not None,
        )
        for table in self._read:
            for key, pv in zip(
                table.column("key").to_pylist(),
                table.column("partition_values").to_pylist(),
                strict=True,
            ):
                reads.read_files[key] = dict(pv or [])
        for key, remove in self._removes.items():
            reads.removed[key] = dict(remove.partition_values or {})
        return reads

    def _check_open(self) -> None:
        if self._state != _OPEN:
            raise TransactionClosedError(f"this transaction is {self._state}; start a new one")

    def __repr__(self) -> str:
        return (
            f"Transaction({self._operation!r}, read_version={self.read_version}, "
            f"state={self._state})"
        )
