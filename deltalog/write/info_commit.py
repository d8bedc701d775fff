"""Commits that hold only a ``commitInfo``: delta-spark's ``VACUUM START`` / ``VACUUM END``.

delta-spark records maintenance that changes no table state with an empty transaction, so
``DESCRIBE HISTORY`` shows it. Such a commit reads nothing and changes no data, so it cannot
conflict with a data change; losing the race for a version only moves it to the next one. A
winner that changed the protocol is checked: the commit is not placed on a table deltalog can
no longer write. The caller may add actions that change no data (the vacuum fence's ``txn``,
:mod:`deltalog.write.vacuum_fence`), chosen, or refused, against the latest state before each
attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from deltalog.errors import CommitAttemptsExhaustedError
from deltalog.log import in_commit_timestamps as ict
from deltalog.log.checksum import write_checksum_after
from deltalog.log.clock import now_ms
from deltalog.log.replay import advance, read_commit
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import Action, serialize_actions
from deltalog.protocol.paths import commit_name
from deltalog.write.commit import (
    RetryPolicy,
    cleanup_may_have_passed,
    make_commit_info,
    try_write,
)

SNAPSHOT_ISOLATION = "SnapshotIsolation"


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
        winner's when other commits landed first).

    Raises:
        UnsupportedFeatureError: A winning commit moved the table to a protocol deltalog cannot
            write.
        CommitAttemptsExhaustedError: Every attempt lost the race.
        SnapshotExpiredError: Log cleanup removed the commits after ``snapshot``.
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
    current = snapshot
    check_previous = cleanup_may_have_passed(snapshot.timestamp, snapshot.configuration)
    for attempt in range(1, policy.max_attempts + 1):
        version = current.version + 1
        if ict.enabled(current.metadata):  # after the latest winner's, on every attempt
            info = ict.stamp(info, ict.next_timestamp(current.timestamp))
        more = list(extra(current)) if extra is not None else []
        data = serialize_actions([info, *more])
        if try_write(storage, version, data, check_previous=check_previous):
            write_checksum_after(storage, version, more, info, current, [])
            return advance(current, [(version, [info, *more], now_ms())])
        check_previous = False
        time.sleep(policy.delay(attempt))
        current = _catch_up(storage, current)
    raise CommitAttemptsExhaustedError(
        f"gave up after {policy.max_attempts} attempts to record {operation}: the table is busy",
        attempts=policy.max_attempts,
        last_version=current.version + 1,
    )


def _catch_up(storage: TableStorage, snapshot: Snapshot) -> Snapshot:
    """``snapshot`` advanced over every commit that exists after it."""
    winners = []
    version = snapshot.version + 1
    while True:
        status_time = now_ms()
        try:
            actions = read_commit(storage, commit_name(version), version)
        except FileNotFoundError:
            break
        winners.append((version, actions, status_time))
        version += 1
    if not winners:
        return snapshot
    current = advance(snapshot, winners)
    current.check_writable()
    return current
