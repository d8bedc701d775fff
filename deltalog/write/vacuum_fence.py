"""The vacuum fence in the log, and the writer's side of it.

The design is in :mod:`deltalog.maintenance.vacuum`.

A deltalog ``VACUUM START`` commits a ``txn`` action for the reserved application id
``deltalog.vacuum``; lease renewals (``VACUUM LEASE``) and ``VACUUM END`` commit it again. Its
``version`` is ``2 * cutoff + 1`` while the vacuum runs and ``2 * cutoff + 2`` once it ended
(``cutoff``: files last modified before it, in ms since the epoch, are the vacuum's candidates);
its ``lastUpdated`` starts a lease of :data:`LEASE_MS`, which the vacuum renews while it runs,
so a vacuum that died stops holding writers back when the lease runs out. ``txn`` actions are
kept by checkpoints and need no table feature; other engines read this one as any application's.

:class:`WriterFence` is what :meth:`Transaction.commit
<deltalog.write.transaction.Transaction.commit>`
checks. A file the transaction adds is *at risk* when a vacuum could delete it: it is inside the
table root, not hidden, and last modified before the cutoff (or already gone). The transaction
fails with :class:`ConcurrentVacuumError`, nothing written, when it adds a file at risk and

* a commit that landed after its snapshot carries the fence (a vacuum started, renewed its
  lease or ended meanwhile, and may have deleted the file already), or is delta-spark's
  ``VACUUM START`` (cutoff: its timestamp minus its retention); or
* its snapshot holds a running fence whose lease is live.

A running fence whose lease ran out belongs to a vacuum that died: the transaction goes ahead,
but only if the files at risk still exist (:class:`DataFileNotFoundError` otherwise). Writers
give the lease :data:`CLOCK_SKEW_MS` more than it says, as their clock may be ahead of the
vacuum's; the vacuum itself deletes only while its lease has at least :data:`MIN_LEFT_MS` to
run. A file the transaction also removes (an update that adds it back with a new deletion
vector) is live in its snapshot, so no vacuum can delete it unseen: a winner that removed it
conflicts anyway. A file is vacuumable as a vacuum decides it
(:meth:`~deltalog.log.table_paths.TablePaths.deletable`: symlinks and aliases of the root resolved).

A blind append moved past commits log cleanup removed (:mod:`deltalog.write.rebase`) cannot check
them as winners: :meth:`WriterFence.check_moved` refuses the move when they may have held a
vacuum that can delete a file it adds.

Cost: a dict lookup per commit. File modification times come from the statuses ``add`` read
for described files; the store is asked (one ``stat`` per file) for ready ``AddFile`` actions
and deletion-vector files, and only when a fence is involved; a described file only when its
existence is in question (a dead vacuum's lease ran out after it was described, or the
transaction moved past removed commits).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from deltalog.errors import ConcurrentVacuumError, DataFileNotFoundError, SnapshotExpiredError
from deltalog.log.clock import now_ms
from deltalog.log.file_actions import canonical_path
from deltalog.log.orphans import CLOCK_SKEW_MS
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.log.table_paths import TablePaths
from deltalog.logstores.thread_pool import shared_pool
from deltalog.protocol.actions import AddFile, Txn
from deltalog.protocol.config import tombstone_retention_ms
from deltalog.write.conflicts import WinningCommit

#: The reserved ``txn`` application id of the fence (refused by ``set_transaction``).
APP_ID = "deltalog.vacuum"
#: How long a fence holds writers back after its ``lastUpdated`` (15 minutes).
LEASE_MS = 15 * 60_000
#: A running vacuum renews its lease before a batch of deletes once this much has passed.
RENEW_AFTER_MS = LEASE_MS // 3
#: A running vacuum starts a batch of deletes only while its lease has this much left to run.
MIN_LEFT_MS = LEASE_MS // 2
_START = "VACUUM START"
_EVERY_FILE = 2**63 - 1  # a cutoff every file was last modified before


def running_txn(cutoff_ms: int, now: int) -> Txn:
    """The fence of a vacuum that runs, with its lease starting ``now``."""
    return Txn(app_id=APP_ID, version=2 * max(cutoff_ms, 0) + 1, last_updated=now)


def ended_txn(cutoff_ms: int, now: int) -> Txn:
    """The fence of a vacuum that ended."""
    return Txn(app_id=APP_ID, version=2 * max(cutoff_ms, 0) + 2, last_updated=now)


def cutoff_of(txn: Txn) -> int:
    """The cutoff a fence records (running or ended)."""
    return (txn.version - 1) // 2


def is_running(txn: Txn | None) -> bool:
    """Whether ``txn`` is the fence of a vacuum that has not ended."""
    return txn is not None and txn.version % 2 == 1


def lease_end(txn: Txn) -> int:
    """When a fence stops holding others back, on their clock (:data:`CLOCK_SKEW_MS` added)."""
    return (txn.last_updated or 0) + LEASE_MS + CLOCK_SKEW_MS


def lease_live(txn: Txn, now: int) -> bool:
    """Whether a running fence still holds writers (and other vacuums) back at ``now``."""
    return is_running(txn) and now < lease_end(txn)


def running_vacuum(snapshot: Snapshot, now: int) -> Txn | None:
    """The fence of a vacuum running at ``snapshot`` whose lease is live, if any."""
    txn = snapshot.txns.get(APP_ID)
    return txn if txn is not None and lease_live(txn, now) else None


def winner_cutoff(winner: WinningCommit) -> int | None:
    """The cutoff of the vacuum a winning commit shows, or ``None`` when it shows none."""
    for txn in winner.txns:
        if txn.app_id == APP_ID:
            return cutoff_of(txn)
    if winner.commit_info.get("operation") != _START:
        return None
    info = winner.commit_info  # delta-spark's VACUUM START: no fence, but the same parameters
    stamp = info.get("inCommitTimestamp", info.get("timestamp"))
    params = info.get("operationParameters")
    params = params if isinstance(params, dict) else {}
    retention = _millis(params.get("specifiedRetentionMillis"))
    if retention is None:
        retention = _millis(params.get("defaultRetentionMillis"))
    start = stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else now_ms()
    return start - (retention or 0)


def _millis(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


class WriterFence:
    """The checks a transaction that adds files makes against vacuums (see the module doc).

    Args:
        storage: The table's storage.
        snapshot: The snapshot the transaction read.
        adds: Its staged adds, by file key.
        described: Keys of the adds built from files it read (their times are the store's).
        removes: Its staged removes, by canonical path.
        prefix: The table's scheme prefix (``file_actions.canonical_path``).
        described_at: A time (ms since the epoch) before the described files were first looked
            up: each existed at some moment after it.
    """

    def __init__(
        self,
        storage: TableStorage,
        snapshot: Snapshot,
        adds: Mapping[str, AddFile],
        described: Set[str],
        removes: Mapping[str, object],
        prefix: str,
        described_at: int | None = None,
    ) -> None:
        self._storage = storage
        self._snapshot = snapshot
        self._adds = adds
        self._described = described
        self._removes = removes
        self._prefix = prefix
        self._described_at = described_at
        self._times: dict[str, int | None] = {}  # location -> modification time, None: gone

    @cached_property
    def _paths(self) -> TablePaths:  # only when a fence is involved
        return TablePaths(self._storage, self._snapshot)

    def check_snapshot(self) -> None:
        """Refuse while the snapshot shows a vacuum running (before the first attempt).

        Raises:
            ConcurrentVacuumError: A live fence and a file at risk.
            DataFileNotFoundError: A dead vacuum's fence and a file at risk that is gone.
        """
        txn = self._snapshot.txns.get(APP_ID)
        if not self._adds or txn is None or not is_running(txn):
            return
        cutoff, version = cutoff_of(txn), self._snapshot.version
        if lease_live(txn, now_ms()):
            what = f"a VACUUM is running on this table (seen at version {version})"
            self._refuse(cutoff, version, None, what)
            return
        # A file described after the lease ran out existed once the vacuum was dead.
        verify = self._described_at is None or self._described_at < lease_end(txn)
        gone = [path for path, missing in self._at_risk(cutoff, verify=verify) if missing]
        if gone:
            raise DataFileNotFoundError(
                f"{gone[0]!r} is gone: a VACUUM seen running at version {version} that never "
                "ended (its lease ran out) may have deleted it; nothing was committed",
                path=gone[0],
            )

    def check_winner(self, winner: WinningCommit) -> None:
        """Refuse after a winner that shows a vacuum.

        Raises:
            ConcurrentVacuumError: The winner shows a vacuum and a file is at risk.
        """
        if not self._adds:
            return
        cutoff = winner_cutoff(winner)
        if cutoff is not None:
            what = (
                f"version {winner.version} ({winner.operation}) shows a VACUUM that ran while "
                "this transaction was in flight"
            )
            self._refuse(cutoff, winner.version, winner.commit_info, what)

    def check_moved(self, before: Snapshot, expired: SnapshotExpiredError) -> None:
        """Refuse to move a blind append from ``before`` to this fence's snapshot (the head).

        The commits between were removed by log cleanup, so none can be checked as a winner;
        they may have held a vacuum. Refused when the transaction adds a file at risk and the
        head's fence differs from ``before``'s (a deltalog vacuum started, renewed its lease or
        ended among them), or when a file it adds is gone or was last modified before the
        table's ``delta.deletedFileRetentionDuration`` (the cutoff of a delta-spark ``VACUUM
        START``, which has no fence, among them). Then :meth:`check_snapshot` on the head.

        Raises:
            ConcurrentVacuumError: A deltalog vacuum ran among the removed commits and a file
                is at risk.
            SnapshotExpiredError: A file is gone or old enough for any vacuum among them.
            DataFileNotFoundError: See :meth:`check_snapshot`.
        """
        if not self._adds:
            return
        head, txn = self._snapshot, self._snapshot.txns.get(APP_ID)
        old = before.txns.get(APP_ID)
        if txn is not None and (old is None or _stamp(old) != _stamp(txn)):
            what = (
                f"a VACUUM ran among the commits after version {before.version} that log "
                f"cleanup removed (its fence changed by version {head.version})"
            )
            self._refuse(cutoff_of(txn), head.version, None, what)
        gone = [path for path, missing in self._at_risk(_EVERY_FILE, verify=True) if missing]
        cutoff = now_ms() - tombstone_retention_ms(head.configuration)
        old_enough = gone or [path for path, _ in self._at_risk(cutoff, verify=True)]
        if old_enough:
            state = "is gone" if gone else f"was last modified before {iso_time(cutoff)}"
            raise SnapshotExpiredError(
                f"{expired} The transaction is a blind append, but it cannot move past the "
                f"removed commits: they may hold a VACUUM, and {old_enough[0]} {state}, so "
                "that vacuum may delete it (or already did)."
            ) from expired
        self.check_snapshot()

    def _refuse(self, cutoff: int, version: int, info: dict[str, Any] | None, what: str) -> None:
        at_risk = self._at_risk(cutoff, verify=False)
        if not at_risk:
            return
        path, missing = at_risk[0]
        when = iso_time(cutoff)
        state = "is gone" if missing else f"was last modified before its cutoff ({when})"
        raise ConcurrentVacuumError(
            f"{what}; {path} {state}, so that vacuum may delete it (or already did). Nothing "
            f"was committed ({len(at_risk)} file(s) at risk). Re-run the operation once the "
            "vacuum has ended, after checking that the files still exist.",
            winning_version=version,
            winning_commit_info=info,
            path=path,
            cutoff_ms=cutoff,
        )

    def _at_risk(self, cutoff: int, *, verify: bool) -> list[tuple[str, bool]]:
        """``(path, gone)`` of the files a vacuum with ``cutoff`` could delete.

        With ``verify``, described files are looked up too (only those that are gone matter).
        """
        paths = self._paths
        wanted: list[tuple[str, str, int | None]] = []  # (path, location, known time)
        for key, add in self._adds.items():
            if canonical_path(add.path, self._prefix) not in self._removes:
                location = paths.safe_location(add.path)
                if location is not None and _vacuumable(paths, location):
                    known = add.modification_time if key in self._described else None
                    if known is None or known < cutoff:
                        wanted.append((add.path, location, None if verify else known))
            dv = paths.dv_location(add.deletion_vector)
            if dv is not None and _vacuumable(paths, dv):
                wanted.append((dv, dv, None))
        self._stat([location for _, location, known in wanted if known is None])
        out = []
        for path, location, known in wanted:
            time = known if known is not None else self._times[location]
            if time is None or time < cutoff:
                out.append((path, time is None))
        return out

    def _stat(self, locations: list[str]) -> None:
        todo = [location for location in dict.fromkeys(locations) if location not in self._times]
        if len(todo) > 1:
            pool = shared_pool("deltalog-fence", 8)
            self._times.update(zip(todo, pool.map(self._time, todo), strict=True))
        elif todo:
            self._times[todo[0]] = self._time(todo[0])

    def _time(self, location: str) -> int | None:
        try:
            with storage_errors(f"cannot look up {location}"):
                return self._storage.store.stat(location).modification_time
        except FileNotFoundError:
            return None


def iso_time(ms: int) -> str:
    """A time in ms since the epoch as UTC ISO 8601, for messages."""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def _vacuumable(paths: TablePaths, location: str) -> bool:
    """Whether a vacuum may delete the file: as VACUUM decides it, symlinks resolved."""
    return paths.deletable(location) is not None


def _stamp(txn: Txn) -> tuple[int, int | None]:
    return txn.version, txn.last_updated
