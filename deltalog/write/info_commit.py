"""Commits that hold only a ``commitInfo``: delta-spark's ``VACUUM START`` / ``VACUUM END``.

delta-spark records maintenance that changes no table state with an empty transaction, so
``DESCRIBE HISTORY`` shows it. Such a commit reads nothing and changes no data, so it cannot
conflict with a data change; losing the race for a version only moves it to the next one. A
winner that changed the protocol is checked: the commit is not placed on a table deltalog can
no longer write. The caller may add actions that change no data (the vacuum fence's ``txn``,
:mod:`deltalog.write.vacuum_fence`), chosen, or refused, against the latest state before each
attempt.

Log cleanup is handled as for any commit: when it may have run past the snapshot, each attempt
checks the previous version and confirms the created commit is in the history readers rebuild
(:func:`~deltalog.write.commit.try_write`). When it removed the commits in between (the version or
its
predecessor is gone, or the catch-up meets a gap: :mod:`deltalog.log.log_tail`), nothing depends on
them, so the commit is tried after the head as it is now. An attempt whose reply was lost but
that landed is recognised by its ``commitInfo.txnId`` during the catch-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from deltalog.errors import CommitAttemptsExhaustedError, SnapshotExpiredError
from deltalog.log import in_commit_timestamps as ict
from deltalog.log.checksum import write_checksum_after
from deltalog.log.clock import now_ms
from deltalog.log.log_tail import commits_from, read_head
from deltalog.log.replay import advance
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import Action, CommitInfo, serialize_actions
from deltalog.write.commit import (
    RetryPolicy,
    cleanup_may_have_passed,
    make_commit_info,
    try_write,
)
from deltalog.write.commit_outcome import confirm_in_history

SNAPSHOT_ISOLATION = "SnapshotIsolation"
_Commit = tuple[int, list[Action], int]


def commit_info_only(
    storage: TableStorage,
    snapshot: Snapshot,
    *,
    operation: str,
    parameters: Mapping[str, str],
    metrics: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    extra: Callable[[Snapshot], Sequence[Action]] | None = None,
) -> Snapshot:
    """Commit a ``commitInfo`` (and no data change) after ``snapshot``.

    Args:
        storage: The table's storage.
        snapshot: The version the commit follows (it reads nothing from it).
        operation: ``commitInfo.operation``.
        parameters: ``commitInfo.operationParameters`` (already JSON-encoded values, as
            delta-spark writes them).
        metrics: ``commitInfo.operationMetrics``.
        retry: How often to try the next version after losing a race.
        extra: Called before each attempt with the snapshot the commit would follow; returns
            actions to commit with the ``commitInfo`` (no file actions), or raises to give up
            with nothing written.

    Returns:
        The snapshot at the committed version (the state is ``snapshot``'s, or the last
        winner's when other commits landed first, or the head's when log cleanup removed
        them).

    Raises:
        UnsupportedFeatureError: A winning commit moved the table to a protocol deltalog cannot
            write.
        CommitAttemptsExhaustedError: Every attempt lost the race.
        SnapshotExpiredError: Log cleanup kept deleting the head while it was read.
        CommitStatusUnknownError: The store failed so that whether the commit landed cannot
            be told.
        StorageError: The log store failed.
        Exception: Whatever ``extra`` raises.
    """
    policy = retry or RetryPolicy()
    info = make_commit_info(
        operation=operation,
        parameters=dict(parameters),
        read_version=snapshot.version,
        is_blind_append=True,
        metrics=dict(metrics or {}),
        isolation_level=SNAPSHOT_ISOLATION,
    )
    txn_id = info.extra.get("txnId")
    started = now_ms()

    def cleaned_up() -> bool:  # the oldest snapshot followed: every later commit is younger
        return cleanup_may_have_passed(snapshot.timestamp, snapshot.configuration)

    current = snapshot
    for attempt in range(1, policy.max_attempts + 1):
        version = current.version + 1
        if ict.enabled(current.metadata):  # after the latest winner's, on every attempt
            info = ict.stamp(info, ict.next_timestamp(current.timestamp))
        more = list(extra(current)) if extra is not None else []
        data = serialize_actions([info, *more])
        # Each attempt: a "not found" in the catch-up is no proof that a version is free.
        check_previous = cleaned_up()
        try:
            if try_write(storage, version, data, check_previous=check_previous):
                write_checksum_after(storage, version, more, info, current, [])
                return advance(current, [(version, [info, *more], now_ms())])
            time.sleep(policy.delay(attempt))
            current, landed = _catch_up(storage, current, txn_id, gaps_possible=cleaned_up())
            if landed is not None:  # an attempt whose reply was lost landed after all
                if check_previous:
                    ours = serialize_actions(landed[1])
                    confirm_in_history(storage, landed[0], ours, started)
                return _landed(storage, current, landed)
        except SnapshotExpiredError as expired:  # cleanup passed: nothing of it was written
            current = read_head(storage, expired)
            current.check_writable()
    raise CommitAttemptsExhaustedError(
        f"gave up after {policy.max_attempts} attempts to record {operation}: the table is busy",
        attempts=policy.max_attempts,
        last_version=current.version + 1,
    )


def _catch_up(
    storage: TableStorage, snapshot: Snapshot, txn_id: object, *, gaps_possible: bool
) -> tuple[Snapshot, _Commit | None]:
    """``snapshot`` advanced over the commits after it; and this commit's own, if among them.

    Raises:
        SnapshotExpiredError: Log cleanup removed some of them.
        UnsupportedFeatureError: A winner moved the table to a protocol deltalog cannot write.
    """
    winners: list[_Commit] = []
    mine: _Commit | None = None
    for commit in commits_from(storage, snapshot.version + 1, gaps_possible=gaps_possible):
        info = next((a for a in commit[1] if isinstance(a, CommitInfo)), None)
        if txn_id is not None and info is not None and info.extra.get("txnId") == txn_id:
            mine = commit
            break
        winners.append(commit)
    current = advance(snapshot, winners)
    if winners:
        current.check_writable()
    return current, mine


def _landed(storage: TableStorage, before: Snapshot, commit: _Commit) -> Snapshot:
    version, actions, seen = commit
    info = next(a for a in actions if isinstance(a, CommitInfo))
    more = [a for a in actions if not isinstance(a, CommitInfo)]
    write_checksum_after(storage, version, more, info, before, [])
    return advance(before, [(version, actions, seen)])
