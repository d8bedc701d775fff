"""Group commit: concurrent transactions of one process on one table share one Delta commit.

With group commit on (``DeltaTable(uri, group_commit=True)``), :meth:`Transaction.commit
<deltalog.write.transaction.Transaction.commit>` goes through the table's
:class:`GroupCommitter`. A commit that finds no other commit of the table in flight commits on
its own, exactly as without group commit. Commits that arrive while one is in flight queue; when
it finishes, one of them (the leader) takes the queue and commits its members as ONE Delta
commit:

* Each member is checked for conflicts against the commits since its own read version, and
  against the members before it in the group, as if the members had committed one after another
  in group (arrival) order. A member that conflicts fails alone, with the named
  :class:`~deltalog.errors.ConcurrentModificationError` it would have raised committing after the
  earlier member; the others commit.
* Members that must not share a commit go to a later one: a member that changes the protocol,
  the metadata or a metadata domain commits alone; members setting a ``txn`` for the same
  application id, touching the same file, or with different ``engine_info``/``userMetadata``
  go to different commits.
* The commit has one ``commitInfo``: the members' operation when they all share it (else
  ``WRITE``), ``operationParameters`` describing the members (``groupCommit``, ``members``: a JSON
  list with each member's operation, parameters, read version and blind-append flag), the
  earliest read version, ``isBlindAppend`` only if every member is one, the strictest isolation
  level, and the summed write metrics.
* When a group has landed, the first of its members to commit again finds nothing in flight;
  it waits (briefly: :meth:`GroupCommitter._linger`) for the others to queue, so that it does
  not write a commit of its own while they queue for the next one.
* The commit is written through the same create-if-absent write, lost races and conflict checks
  against other processes' commits as a single transaction's, read back, and only then are the
  members woken with their version.

Members wait in their own threads; from ``asyncio``, run the commit in a thread
(``await asyncio.to_thread(tx.commit)``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.errors import (
    CommitAttemptsExhaustedError,
    ConcurrentModificationError,
    DeltaLogError,
    InvalidInputError,
    SnapshotExpiredError,
)
from deltalog.log.clock import now_ms
from deltalog.log.log_tail import commits_from
from deltalog.log.replay import advance
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CommitInfo,
    RemoveFile,
    Txn,
)
from deltalog.protocol.paths import commit_name
from deltalog.write.commit import (
    cleanup_may_have_passed,
    make_commit_info,
    try_write,
    txn_covers,
    write_metrics,
)
from deltalog.write.commit_layout import CommitLayout
from deltalog.write.commit_outcome import unknown_status
from deltalog.write.conflicts import (
    SERIALIZABLE,
    SNAPSHOT_ISOLATION,
    WRITE_SERIALIZABLE,
    TransactionReads,
    WinningCommit,
    check_winner,
)
from deltalog.write.staging import find_txn_commit, isolation_level

if TYPE_CHECKING:
    from deltalog.write.transaction import Transaction

#: Most members in one commit.
MAX_MEMBERS = 512
#: Commits the committer remembers (to check members without reading the log again).
_REMEMBERED = 4096
#: Longest a lone leader waits for the members of the group that just landed to come back.
MAX_LINGER_S = 0.005
_ORDER = {Txn: 0, RemoveFile: 1, AddFile: 2, AddCDCFile: 3}


@dataclass
class _Commit:
    """A commit in the log: its actions, when it was read, and its conflict summary."""

    version: int
    actions: list[Action]
    seen_ms: int
    winner: WinningCommit


class _Member:
    """One transaction waiting in the queue, and its outcome."""

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx
        self.done = False
        self.version: int | None = None
        self.error: BaseException | None = None
        self.actions: list[Action] = []
        self.reads: TransactionReads | None = None
        self.level = WRITE_SERIALIZABLE
        self.blind = False
        self.peer: _Member | None = None  # the earlier member it conflicts with
        self.wake = threading.Event()  # set when resolved, or when handed the lead

    # what decides which commit a member may share
    def solo(self) -> bool:
        tx = self.tx
        return tx._metadata is not None or tx._protocol is not None or bool(tx._domains)

    def group_key(self) -> tuple[str | None, str]:
        return self.tx._user_metadata, self.tx._engine_info

    def file_keys(self) -> set[str]:
        tx = self.tx
        return {*tx._adds, *tx._removes, *(c.path for c in tx._cdc)}

    def as_winner(self, version: int, info: dict[str, Any]) -> WinningCommit:
        """The member as a commit that landed before the later members of its group."""
        return WinningCommit.from_actions(version, [CommitInfo(extra=info), *self.actions])

    def resolve(self, version: int | None = None, error: BaseException | None = None) -> None:
        self.version, self.error, self.done = version, error, True
        self.wake.set()


class GroupCommitter:
    """Batches the concurrent commits of one process on one table (see the module docstring).

    Get the table's committer with :func:`committer_for`; a transaction created with it as
    ``group`` commits through :meth:`commit`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified when a commit queues
        self._queue: list[_Member] = []
        self._leading = False
        # members of the last group that landed that have not committed again yet, and how
        # long that group's write took: see _linger
        self._expected = 0
        self._write_s = 0.0
        self._landed_at = 0.0  # time.monotonic() when that group's commit was verified
        self._log: dict[int, _Commit] = {}
        self._head = -1
        #: Test seams (must not raise): called with the queue length after a commit queued,
        #: and by the leader with a group's members before it writes their commit.
        self.on_queued: Callable[[int], None] | None = None
        self.before_write: Callable[[list[_Member]], None] | None = None
        #: Test seam (must not raise): called (locked) when a lone leader starts to wait for
        #: the last group's members (see :meth:`_linger`).
        self.on_linger: Callable[[], None] | None = None

    def commit(self, tx: Transaction) -> int:
        """Commit ``tx``, alone or in a group; returns its version (see ``Transaction.commit``).

        The first transaction to arrive with no commit in flight leads: it commits the queue
        (itself first), then hands the lead to the oldest transaction still queued, if any. The
        others sleep on their own event until they are resolved or handed the lead.
        """
        member = _Member(tx)
        with self._lock:
            self._queue.append(member)
            queued = len(self._queue)
            lead, self._leading = not self._leading, True
            self._expected = max(0, self._expected - 1)
            self._arrived.notify_all()
        if self.on_queued is not None:
            self.on_queued(queued)
        lone = lead
        while True:
            if not lead:
                member.wake.wait()
                if member.done:
                    break
                member.wake.clear()  # handed the lead: nobody else sets it until it hands on
            with self._lock:
                if lone:
                    self._linger()
                    lone = False
                batch = self._take()
            try:
                self._run(batch)
            except BaseException as exc:  # a bug or an interrupt: no member waits forever
                for m in batch:
                    if not m.done:
                        m.resolve(error=exc)
            with self._lock:
                following = self._queue[0] if self._queue else None
                if following is None:
                    self._leading = False
                elif following is not member:
                    following.wake.set()
            if member.done:
                break
            lead = following is member
        if member.error is not None:
            raise member.error
        assert member.version is not None
        return member.version

    def _linger(self) -> None:
        """Give the members of the group that just landed a moment to commit again (locked).

        Woken together, they come back together: without this, the first one back would
        commit alone (a whole write for one transaction) while the others queue behind it, and
        groups would alternate between one member and all the others. A leader that found no
        commit in flight waits until every other member of the last group has queued, at most
        half that group's write time and never more than :data:`MAX_LINGER_S`; it does not
        wait when the last commit was not a group's, nor when that group landed longer ago
        than its write took or :data:`MAX_LINGER_S` (its members are not coming back
        together). Waiting only delays
        the write: the members, their order and their checks are the same.
        """
        now = time.monotonic()
        if self._expected <= 0 or now - self._landed_at > max(self._write_s, MAX_LINGER_S):
            self._expected = 0
            return
        deadline = now + min(self._write_s / 2, MAX_LINGER_S)
        if self.on_linger is not None:
            self.on_linger()
        while self._expected > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._arrived.wait(left)
        self._expected = 0

    def _take(self) -> list[_Member]:
        """The next group, in arrival order; members that may not join it stay queued."""
        batch: list[_Member] = []
        rest: list[_Member] = []
        files: set[str] = set()
        apps: set[str] = set()
        for m in self._queue:
            keys = m.file_keys()
            if batch and (
                len(batch) >= MAX_MEMBERS
                or m.solo()
                or batch[0].solo()
                or m.group_key() != batch[0].group_key()
                or not apps.isdisjoint(m.tx._txns)
                or not files.isdisjoint(keys)
            ):
                rest.append(m)
                continue
            batch.append(m)
            files |= keys
            apps.update(m.tx._txns)
        self._queue = rest
        return batch

    # ------------------------------------------------------------------ the leader's work
    def _run(self, batch: list[_Member]) -> None:
        if len(batch) == 1:  # nothing to share with: the transaction's own commit
            self._alone(batch[0])
            return
        members = [m for m in batch if self._prepare(m)]
        if len(members) == 1:
            self._alone(members[0])
            return
        if members:
            self._commit_group(members)

    def _alone(self, member: _Member) -> None:
        try:
            version = member.tx._commit()
        except BaseException as exc:
            member.resolve(error=exc)
            return
        self._head = max(self._head, version)
        member.resolve(version)

    def _prepare(self, member: _Member) -> bool:
        """Validate one member as its own commit would; ``False`` when it is resolved already."""
        tx = member.tx
        try:
            snap = tx._snapshot
            covered = [t for t in tx._txns.values() if txn_covers(snap.txns.get(t.app_id), t)]
            if covered and len(covered) == len(tx._txns):
                tx.no_op = True
                member.resolve(find_txn_commit(tx._storage, snap.version, covered[0]))
                return False
            if covered:
                raise InvalidInputError(
                    f"the table already holds txn {covered[0].app_id!r} at version "
                    f"{snap.txns[covered[0].app_id].version} but not the other application ids "
                    "this transaction sets: its txn actions disagree with the table"
                )
            actions = tx._prepare()
            if not actions:
                tx.no_op = True
                member.resolve(snap.version)
                return False
            tx._fence = tx._writer_fence(snap)
            tx._fence.check_snapshot()
            member.actions = sorted(actions, key=lambda a: _ORDER.get(type(a), 0))
            member.level = isolation_level(actions, tx._isolation, snap)
            member.reads = tx._reads(member.level)
            member.blind = tx._is_blind_append()
        except BaseException as exc:
            member.resolve(error=exc)
            return False
        return True

    def _commit_group(self, members: list[_Member]) -> None:
        storage = members[0].tx._storage
        base = max((m.tx._snapshot for m in members), key=lambda s: s.version)
        self._head = max(self._head, base.version)
        accepted = self._admit(members, storage)
        if not accepted:
            return
        retry = accepted[0].tx._retry
        oldest = min(m.tx._snapshot.timestamp for m in members)
        after_base = self._known(base.version + 1, storage)
        try:
            info, layout = self._layout(base, accepted, after_base)
        except DeltaLogError:  # e.g. an add without numRecords on a row-tracking table
            for m in accepted:  # each member's own commit raises its own error, or lands
                self._alone(m)
            self._requeue([m for m in members if m.peer is not None and not m.done])
            return
        version, attempts = self._head + 1, 0
        if self.before_write is not None:
            self.before_write(accepted)
        started = time.monotonic()
        try:
            while True:
                attempts += 1
                info, actions, data = layout.build(version)
                check_previous = cleanup_may_have_passed(oldest, base.configuration)
                if try_write(storage, version, data, check_previous=check_previous):
                    self._verify(storage, version, data)
                    break
                if attempts >= retry.max_attempts:
                    raise CommitAttemptsExhaustedError(
                        f"gave up after {attempts} attempts: version {version} was taken by "
                        "another writer each time (no conflict; the table is busy). Retry "
                        "later or raise RetryPolicy.max_attempts.",
                        attempts=attempts,
                        last_version=version,
                    )
                time.sleep(retry.delay(attempts))
                winners = self._known(version, storage, probe=True)
                mine = next(
                    (
                        w
                        for w in winners
                        if w.winner.commit_info.get("txnId") == info.extra["txnId"]
                    ),
                    None,
                )
                if mine is not None:  # an attempt whose reply was lost landed after all
                    version, info = mine.version, CommitInfo(extra=mine.winner.commit_info)
                    actions = [a for a in mine.actions if not isinstance(a, CommitInfo)]
                    break
                before = len(accepted)
                accepted = [m for m in accepted if self._survives(m, winners)]
                if not accepted:
                    self._requeue([m for m in members if m.peer is not None and not m.done])
                    return
                after_base += winners
                if len(accepted) != before:
                    info, layout = self._layout(base, accepted, after_base)
                else:
                    layout.after([(w.version, w.actions, w.seen_ms) for w in winners])
                version = winners[-1].version + 1 if winners else version
        except SnapshotExpiredError:  # nothing written: each member's own commit moves on
            for m in accepted:
                self._alone(m)
            self._requeue([m for m in members if m.peer is not None and not m.done])
            return
        except BaseException as exc:
            for m in accepted:
                m.resolve(error=exc)
            self._requeue([m for m in members if m.peer is not None and not m.done])
            return
        with self._lock:
            self._landed_at = time.monotonic()
            self._write_s = self._landed_at - started
            self._expected = len(accepted)
        self._landed(base, after_base, accepted, members, version, info, actions, attempts)

    def _admit(self, members: list[_Member], storage: TableStorage) -> list[_Member]:
        """The members that commit, in group order; the others are resolved or marked."""
        accepted: list[_Member] = []
        placeholder = {"operation": "GROUP COMMIT"}
        # earlier members as winners, built only once a member that read something needs them
        # (a group of blind appends builds none)
        peers: list[tuple[_Member, WinningCommit]] = []
        for m in members:
            if not self._survives(m, self._known(m.tx.read_version + 1, storage)):
                continue
            assert m.reads is not None
            if not _depends_on_nothing(m.reads):  # check it against the earlier members
                for earlier in accepted[len(peers) :]:
                    peers.append(
                        (earlier, earlier.as_winner(-1, {**placeholder, **_flags(earlier)}))
                    )
                for earlier, as_winner in peers:
                    try:
                        check_winner(m.reads, as_winner)
                    except ConcurrentModificationError:
                        m.peer = earlier
                        break
            if m.peer is None:
                accepted.append(m)
        return accepted

    @staticmethod
    def _survives(member: _Member, winners: Sequence[_Commit]) -> bool:
        """Check ``member`` against commits that landed before it; resolve it if it is done."""
        tx = member.tx
        assert member.reads is not None
        for w in winners:
            if w.version <= tx.read_version:
                continue
            theirs = {t.app_id: t for t in w.winner.txns}
            if tx._txns and all(txn_covers(theirs.get(a), t) for a, t in tx._txns.items()):
                tx.no_op = True
                member.resolve(w.version)
                return False
            try:
                check_winner(member.reads, w.winner)
                tx._fence.check_winner(w.winner)
            except BaseException as exc:
                member.resolve(error=exc)
                return False
        return True

    def _known(self, first: int, storage: TableStorage, *, probe: bool = False) -> list[_Commit]:
        """The commits from ``first`` to the last version known (remembered ones not re-read).

        With ``probe``, to the head of the log: also the versions others committed since.
        """
        found: list[_Commit] = []
        version = first
        while version in self._log:
            found.append(self._log[version])
            version += 1
        if not probe and version > self._head:
            return found
        for v, actions, seen in commits_from(storage, version, gaps_possible=False):
            found.append(self._remember(v, actions, seen))
        return found

    def _remember(self, version: int, actions: list[Action], seen_ms: int) -> _Commit:
        commit = _Commit(version, actions, seen_ms, WinningCommit.from_actions(version, actions))
        self._log[version] = commit
        self._head = max(self._head, version)
        if len(self._log) > _REMEMBERED:
            for old in sorted(self._log)[: len(self._log) - _REMEMBERED]:
                del self._log[old]
        return commit

    @staticmethod
    def _layout(
        base: Snapshot, accepted: list[_Member], after_base: list[_Commit]
    ) -> tuple[CommitInfo, CommitLayout]:
        actions = sorted(
            (a for m in accepted for a in m.actions), key=lambda a: _ORDER.get(type(a), 0)
        )
        info = group_commit_info(accepted)
        layout = CommitLayout(base, info, actions)
        layout.after([(w.version, w.actions, w.seen_ms) for w in after_base])
        return info, layout

    @staticmethod
    def _verify(storage: TableStorage, version: int, data: bytes) -> None:
        """Read the commit back: members are acknowledged only once it is in the log."""
        found = storage.read_log_file(commit_name(version))
        if found != data:
            raise unknown_status(version, data, "the commit read back differs from the one written")

    def _landed(
        self,
        base: Snapshot,
        after_base: list[_Commit],
        accepted: list[_Member],
        members: list[_Member],
        version: int,
        info: CommitInfo,
        actions: list[Action],
        attempts: int,
    ) -> None:
        mine = self._remember(version, [info, *actions], now_ms())
        commits = [(c.version, c.actions, c.seen_ms) for c in [*after_base, mine]]
        snapshot: Snapshot | None = None
        if [c[0] for c in commits] == list(range(base.version + 1, version + 1)):
            with contextlib.suppress(Exception):  # the commit stands; the tables replay instead
                snapshot = advance(base, commits)
        for i, m in enumerate(accepted):
            m.tx.attempts = attempts
            if snapshot is not None and m.tx._on_advance is not None:
                with contextlib.suppress(Exception):  # the commit stands; the table replays
                    m.tx._on_advance(snapshot, i == 0)  # one table schedules the checkpoint
            m.resolve(version)
        for m in members:
            if m.peer is None or m.done:
                continue
            if m.peer.version != version:  # its peer did not commit after all: try again
                self._requeue([m])
                continue
            assert m.reads is not None
            try:
                check_winner(m.reads, m.peer.as_winner(version, info.extra))
            except BaseException as exc:
                m.resolve(error=exc)
            else:  # cannot happen (the check failed before): commit it on its own instead
                self._requeue([m])

    def _requeue(self, members: list[_Member]) -> None:
        """Put members whose group did not land back at the front of the queue."""
        for m in members:
            m.peer, m.reads, m.actions = None, None, []
        with self._lock:
            self._queue[:0] = members


def _depends_on_nothing(reads: TransactionReads) -> bool:
    """Whether no commit without protocol or metadata changes can conflict with ``reads``."""
    return not (
        reads.predicates
        or reads.read_whole_table
        or reads.read_files
        or reads.app_ids
        or reads.removed
        or reads.domains
    )


def _flags(member: _Member) -> dict[str, Any]:
    return {"operation": member.tx._operation, "isBlindAppend": member.blind}


def group_commit_info(members: Sequence[_Member]) -> CommitInfo:
    """The one ``commitInfo`` of a group: its members described in ``operationParameters``."""
    first = members[0].tx
    operations = {m.tx._operation for m in members}
    levels = {m.level for m in members}
    level = next(
        (lv for lv in (SERIALIZABLE, WRITE_SERIALIZABLE, SNAPSHOT_ISOLATION) if lv in levels),
        WRITE_SERIALIZABLE,
    )
    described = [
        {
            "operation": m.tx._operation,
            "operationParameters": m.tx._parameters,
            "readVersion": m.tx.read_version,
            "isBlindAppend": m.blind,
        }
        for m in members
    ]
    adds = [a for m in members for a in m.actions if isinstance(a, AddFile)]
    removed = sum(isinstance(a, RemoveFile) for m in members for a in m.actions)
    return make_commit_info(
        operation=operations.pop() if len(operations) == 1 else "WRITE",
        parameters={
            "groupCommit": "true",
            "numMembers": str(len(members)),
            "members": orjson.dumps(described).decode(),
        },
        read_version=min(m.tx.read_version for m in members),
        is_blind_append=all(m.blind for m in members),
        metrics=write_metrics(adds, removed=removed),
        isolation_level=level,
        engine_info=first._engine_info,
        user_metadata=first._user_metadata,
    )


_COMMITTERS: dict[str, GroupCommitter] = {}
_REGISTRY_LOCK = threading.Lock()


def committer_for(storage: TableStorage) -> GroupCommitter:
    """The process's group committer for the table at ``storage.root``."""
    with _REGISTRY_LOCK:
        committer = _COMMITTERS.get(storage.root)
        if committer is None:
            committer = _COMMITTERS[storage.root] = GroupCommitter()
        return committer


def _forget_after_fork() -> None:  # a child starts with no commit in flight
    global _REGISTRY_LOCK
    _REGISTRY_LOCK = threading.Lock()
    _COMMITTERS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
