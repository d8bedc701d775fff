"""Reading the log forward to its head, and telling the head from commits log cleanup removed.

Three readers follow the log past a snapshot: a transaction checking the winners of the versions
it lost, a ``commitInfo``-only commit catching up (:mod:`deltalog.write.info_commit`), and a running
vacuum looking for files committed meanwhile (:mod:`deltalog.maintenance.vacuum_lease`). Each reads
commit
``v``, ``v + 1``, ... until one is not there. "Not there" is the head, unless log cleanup deleted
it: cleanup deletes the oldest commits first, only behind a newer checkpoint, and never that
checkpoint nor a commit after it. So a missing version with a later log file present was removed
(or was being read while cleanup removed it), and the commits from it on up to some checkpoint
cannot be read any more: :func:`commits_from` raises :class:`SnapshotExpiredError` for that gap,
and the caller either moves to the head (:func:`read_head`) or gives up. (A transaction asks for
no such check: its next attempt checks the version it found missing anyway, with the same
listing, in :func:`~deltalog.write.commit.try_write`.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from deltalog.errors import SnapshotExpiredError, VersionNotFoundError
from deltalog.log.replay import read_commit, replay
from deltalog.log.segment import list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.actions import Action
from deltalog.protocol.paths import commit_name, parse_log_name

#: Reads of the head tried while log cleanup deletes files under them.
READ_ATTEMPTS = 3


def commits_from(
    storage: TableStorage, version: int, *, gaps_possible: bool
) -> Iterator[tuple[int, list[Action], int]]:
    """The commits from ``version`` to the head, in order: ``(version, actions, seen_ms)``.

    ``seen_ms`` is the time (ms since the epoch) just before the commit was read.

    Args:
        storage: The table's storage.
        version: The first version to read.
        gaps_possible: Whether log cleanup may have removed commits from ``version`` on
            (:func:`~deltalog.write.commit.cleanup_may_have_passed`). Without it a missing version
            is
            the head; with it, a missing version costs one listing to tell.

    Raises:
        SnapshotExpiredError: Log cleanup removed a commit of the range (the log holds later
            versions).
        CorruptLogError: A commit does not parse.
        StorageError: The store failed.
    """
    rereads = 0
    while True:
        seen = int(time.time() * 1000)
        try:
            actions = read_commit(storage, commit_name(version), version)
        except LogFileNotFoundError:
            if not gaps_possible:
                return
            state = _missing(storage, version)
            if state == "head":
                return
            if state == "written" and rereads < READ_ATTEMPTS:  # created since: read it
                rereads += 1
                continue
            raise SnapshotExpiredError(
                f"cannot read commit {version}: the log holds versions after it but not "
                f"{version} itself, so log cleanup removed it behind a newer checkpoint (the log "
                "moved on by more than delta.logRetentionDuration), and the commits after this "
                "snapshot cannot be checked any more; nothing was written; re-run the operation "
                "on the latest version"
            ) from None
        yield version, actions, seen
        version, rereads = version + 1, 0


def _missing(storage: TableStorage, version: int) -> str:
    """Why commit ``version`` was not found: ``head``, ``written`` (since) or ``removed``.

    Raises:
        StorageError: The store failed.
    """
    later = [
        parsed
        for status in storage.list_log(commit_name(version)[:20])
        if (parsed := parse_log_name(status.name)) is not None and parsed.version >= version
    ]
    if not later:
        return "head"
    if any(p.version == version and p.kind == "commit" for p in later):
        return "written"
    with storage_errors(f"cannot check commit {version}"):
        if storage.store.exists(storage.log_file(commit_name(version))):
            return "written"  # after the listing passed its name
    return "removed"


def read_head(storage: TableStorage, expired: SnapshotExpiredError) -> Snapshot:
    """The latest snapshot, read while log cleanup may delete files under the reader.

    Raises:
        SnapshotExpiredError: ``expired``, when every attempt met a file cleanup had deleted.
        StorageError: The store failed.
    """
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return replay(storage, list_log(storage))
        except VersionNotFoundError as exc:  # cleanup deleted what was being read
            if attempt == READ_ATTEMPTS:
                raise expired from exc
    raise expired  # unreachable: READ_ATTEMPTS >= 1
