"""A running vacuum's side of the fence: its lease in the log, and its look at new commits.

:class:`VacuumLease` commits ``VACUUM START`` with the running fence (refusing while another
vacuum holds a live one), renews the lease with ``VACUUM LEASE`` commits while it deletes, and
ends it with ``VACUUM END``. Before each batch of deletes (:meth:`VacuumLease.prepare_batch`),
:meth:`VacuumLease.sync` reads every commit made since the vacuum's snapshot and remembers the
files they added (and their deletion-vector files): the vacuum never deletes those. When log
cleanup removed some of those commits, the head is read instead and every file it needs is
remembered. A batch starts only while the lease has :data:`~deltalog.write.vacuum_fence.MIN_LEFT_MS`
to run. The design: :mod:`deltalog.maintenance.vacuum`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from deltalog.errors import ConcurrentVacuumError, SnapshotExpiredError
from deltalog.log.clock import now_ms
from deltalog.log.log_tail import commits_from, read_head
from deltalog.log.replay import advance
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.log.table_paths import TablePaths
from deltalog.maintenance.vacuum_files import file_locations, needed_locations
from deltalog.protocol.actions import Action, AddFile, Txn
from deltalog.write import vacuum_fence
from deltalog.write.commit import RetryPolicy
from deltalog.write.info_commit import commit_info_only
from deltalog.write.vacuum_fence import (
    APP_ID,
    cutoff_of,
    ended_txn,
    iso_time,
    lease_end,
    running_txn,
    running_vacuum,
)

RENEW = "VACUUM LEASE"
_LEASE_TRIES = 3


def refuse_running(snapshot: Snapshot) -> None:
    """Refuse to start while another vacuum's fence at ``snapshot`` has a live lease.

    Raises:
        ConcurrentVacuumError: Another vacuum is running.
    """
    other = running_vacuum(snapshot, now_ms())
    if other is None:
        return
    until = lease_end(other)
    raise ConcurrentVacuumError(
        f"another VACUUM is running on this table (seen at version {snapshot.version}; its "
        f"lease runs until {iso_time(until)} unless it renews it); nothing was deleted. Run "
        "the vacuum again once that one has ended.",
        winning_version=snapshot.version,
        cutoff_ms=cutoff_of(other),
    )


class VacuumLease:
    """A vacuum's fence from ``VACUUM START`` to ``VACUUM END``, and the files added meanwhile.

    Args:
        storage: The table's storage.
        snapshot: The snapshot the vacuum read.
        cutoff_ms: Its cutoff (files last modified before it are candidates).
        retry: Retry policy of its commits.
        on_commit: Called with the snapshot after each of its commits.

    Attributes:
        snapshot: The latest snapshot the vacuum knows.
        added: Locations of files (and deletion-vector files) added by commits after the
            vacuum's snapshot, as far as :meth:`sync` has read.
    """

    def __init__(
        self,
        storage: TableStorage,
        snapshot: Snapshot,
        cutoff_ms: int,
        *,
        retry: RetryPolicy | None,
        on_commit: Callable[[Snapshot], None] | None,
    ) -> None:
        self._storage = storage
        self._paths = TablePaths(storage, snapshot)
        self._cutoff = cutoff_ms
        self._retry = retry
        self._on_commit = on_commit
        self._seen = snapshot.version
        self._held: Txn | None = None
        self._mine: set[int] = set()
        self.snapshot = snapshot
        self.added: set[str] = set()

    def start(self, parameters: Mapping[str, str], metrics: Mapping[str, str]) -> Snapshot:
        """Commit ``VACUUM START`` with the running fence.

        Raises:
            ConcurrentVacuumError: Another vacuum holds a live fence (nothing committed).
        """

        def fence(current: Snapshot) -> list[Action]:
            refuse_running(current)
            return [running_txn(self._cutoff, now_ms())]

        self._commit("VACUUM START", parameters, metrics, fence)
        self._held = self.snapshot.txns.get(APP_ID)  # as it landed
        return self.snapshot

    def prepare_batch(self) -> None:
        """Before a batch of deletes: renew the lease when due and read the log to its head.

        The batch then has at least :data:`~deltalog.write.vacuum_fence.MIN_LEFT_MS` before writers
        may take this vacuum for dead; when reading the log took longer, the lease is renewed
        and the log read again.

        Raises:
            ConcurrentVacuumError: Another vacuum took the fence over, or the lease cannot be
                kept (reading the log takes longer than the lease leaves).
            UnsupportedFeatureError: A commit moved the table to a protocol deltalog cannot
                write.
            StorageError: The store failed.
        """
        for _ in range(_LEASE_TRIES):
            self.renew_if_due()
            self.sync()
            if self._held is None or self._left() >= vacuum_fence.MIN_LEFT_MS:
                return
        raise ConcurrentVacuumError(
            f"this vacuum cannot keep its lease: reading the log took longer than the "
            f"{vacuum_fence.MIN_LEFT_MS / 60_000:g} minutes a batch of deletes needs left of "
            f"it, {_LEASE_TRIES} times; stopped deleting",
            winning_version=self.snapshot.version,
            cutoff_ms=self._cutoff,
        )

    @property
    def cutoff_ms(self) -> int:
        """The vacuum's cutoff: files last modified before it are its candidates."""
        return self._cutoff

    @property
    def lease_until_ms(self) -> int:
        """When the fence this vacuum holds stops holding others back (their clock)."""
        return lease_end(self._held) if self._held is not None else now_ms()

    def _left(self) -> int:
        """How long the lease held has to run, on this vacuum's clock."""
        held = self._held
        return 0 if held is None else (held.last_updated or 0) + vacuum_fence.LEASE_MS - now_ms()

    def renew_if_due(self) -> None:
        """Renew the lease with a ``VACUUM LEASE`` commit once a third of it has passed.

        Raises:
            ConcurrentVacuumError: Another vacuum took the fence over (the lease ran out).
        """
        if self._held is None:
            return
        if now_ms() - (self._held.last_updated or 0) < vacuum_fence.RENEW_AFTER_MS:
            return

        def fence(current: Snapshot) -> list[Action]:
            if not self._holds(current):
                raise self._taken_over(current.version)
            return [running_txn(self._cutoff, now_ms())]

        self._commit(RENEW, {"cutoff": str(self._cutoff)}, {}, fence)
        self._held = self.snapshot.txns.get(APP_ID)  # as it landed

    def end(self, parameters: Mapping[str, str], metrics: Mapping[str, str]) -> Snapshot:
        """Commit ``VACUUM END``, ending the fence unless another vacuum holds it now."""

        def fence(current: Snapshot) -> list[Action]:
            return [ended_txn(self._cutoff, now_ms())] if self._holds(current) else []

        return self._commit("VACUUM END", parameters, metrics, fence)

    def sync(self) -> None:
        """Read the commits made since the last look and remember the files they added.

        When log cleanup removed some of them, the head is read instead, and every file it
        needs is remembered.

        Raises:
            ConcurrentVacuumError: A commit after ``VACUUM START`` set another vacuum's fence.
            UnsupportedFeatureError: A commit moved the table to a protocol deltalog cannot
                write.
            StorageError: The store failed.
        """
        while True:
            try:
                commits = self._read_new()
                break
            except SnapshotExpiredError as expired:  # cleanup removed commits not read yet
                self._to_head(expired)
        if commits:
            self.snapshot = advance(self.snapshot, commits)
            self.snapshot.check_writable()

    def _read_new(self) -> list[tuple[int, Sequence[Action], int]]:
        """Read from the last look to the head; the commits after :attr:`snapshot`.

        Every missing version is checked for a cleanup gap (one listing a look): this runs
        once per batch of deletes, and a commit missed here is a live file deleted.
        """
        commits: list[tuple[int, Sequence[Action], int]] = []
        for version, actions, seen in commits_from(
            self._storage, self._seen + 1, gaps_possible=True
        ):
            self._remember([a for a in actions if isinstance(a, AddFile)])
            if any(isinstance(a, Txn) and a.app_id == APP_ID for a in actions):
                self._check_own(version)
            if version > self.snapshot.version:
                commits.append((version, actions, seen))
            self._seen = version
        return commits

    def _to_head(self, expired: SnapshotExpiredError) -> None:
        """Move to the head past removed commits: keep every file it needs."""
        head = read_head(self._storage, expired)
        self.added |= needed_locations(self._paths, head, self._cutoff)
        if self._held is not None and not self._holds(head):
            raise self._taken_over(head.version)
        head.check_writable()
        if head.version > self.snapshot.version:
            self.snapshot = head
        self._seen = max(self._seen, head.version)

    def _remember(self, adds: list[AddFile]) -> None:
        """Keep the files of ``adds``, located as ``needed_locations`` locates live files."""
        if adds:
            paths = pa.array([a.path for a in adds], pa.string())
            self.added |= file_locations(self._paths, [(paths, [a.deletion_vector for a in adds])])

    def _taken_over(self, version: int) -> ConcurrentVacuumError:
        return ConcurrentVacuumError(
            f"this vacuum's lease ran out and another vacuum took it over by version {version}; "
            "stopped deleting",
            winning_version=version,
            cutoff_ms=self._cutoff,
        )

    def _check_own(self, version: int) -> None:
        start = min(self._mine, default=None)
        if start is not None and version > start and version not in self._mine:
            raise ConcurrentVacuumError(
                f"version {version} set another vacuum's fence while this one ran (its lease "
                "ran out); stopped deleting",
                winning_version=version,
                cutoff_ms=self._cutoff,
            )

    def _holds(self, current: Snapshot) -> bool:
        held, mine = current.txns.get(APP_ID), self._held
        return (
            held is not None
            and mine is not None
            and (held.version, held.last_updated) == (mine.version, mine.last_updated)
        )

    def _commit(
        self,
        operation: str,
        parameters: Mapping[str, str],
        metrics: Mapping[str, str],
        fence: Callable[[Snapshot], Sequence[Action]],
    ) -> Snapshot:
        self.snapshot = commit_info_only(
            self._storage,
            self.snapshot,
            operation=operation,
            parameters=parameters,
            metrics=metrics,
            retry=self._retry,
            extra=fence,
        )
        self._mine.add(self.snapshot.version)
        if self._on_commit is not None:
            self._on_commit(self.snapshot)
        return self.snapshot
