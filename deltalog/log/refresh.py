"""Moving a snapshot to the newest version: one listing from the version after it.

A table object that already holds version ``v`` needs only what came after it. One listing of
``_delta_log`` from ``v`` shows the new commits (none: one request in all), and those are
read and applied to the snapshot in memory (:func:`~deltalog.log.replay.advance`), without
reading ``_last_checkpoint``, a checkpoint or any commit the snapshot already holds.

A full replay (:func:`~deltalog.log.replay.replay` from the newest checkpoint) is used instead
when the listing shows anything else: a new checkpoint (the snapshot then starts from it, as
every reader's does, and says so in ``checkpoint_version``; the listing already made serves that
replay), a version missing among the new commits (log cleanup deleted commits behind a newer
checkpoint, or the listing raced a writer), more than :data:`MAX_NEW_COMMITS` new commits, or
a new commit that changes the protocol or the metadata (whose checks a replay makes).
"""

from __future__ import annotations

from deltalog.log.replay import advance, read_commit, replay
from deltalog.log.segment import LogListing, classify, list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import Action, Metadata, Protocol
from deltalog.protocol.paths import commit_name

#: New commits applied one by one; past this many, replaying from a checkpoint is cheaper.
MAX_NEW_COMMITS = 50


def newest_snapshot(storage: TableStorage, snapshot: Snapshot) -> Snapshot:
    """The table's newest snapshot, built on ``snapshot`` where the log allows it.

    Raises:
        TableNotFoundError: The log is gone.
        CorruptLogError: A commit does not parse.
        StorageError: The store failed.
    """
    after = snapshot.version + 1
    # From the version held, not the next: an object store tells an empty listing from a
    # missing directory with a second request, and ``v.json`` keeps this one non-empty.
    listing = classify(storage.list_log(commit_name(snapshot.version)[:20]))
    versions = sorted(v for v in listing.commits if v >= after)
    # Any checkpoint newer than the one the snapshot started from, its own version's included
    # (a checkpoint this table object wrote after its commit, or another writer's).
    held = snapshot.checkpoint_version if snapshot.checkpoint_version is not None else -1
    checkpoints = [v for v in listing.checkpoints if v > held]
    if not versions and not checkpoints:
        return snapshot
    contiguous = versions == list(range(after, after + len(versions)))
    if checkpoints and contiguous:
        # The listing holds the new checkpoint and every commit after it: a replay needs no
        # second listing (nor ``_last_checkpoint``), as when it starts from the hint.
        return replay(storage, LogListing(listing.commits, listing.checkpoints, complete=False))
    if not contiguous or len(versions) > MAX_NEW_COMMITS:
        return replay(storage, list_log(storage))
    commits: list[tuple[int, list[Action], int]] = []
    for version in versions:
        actions = read_commit(storage, commit_name(version), version)
        if any(isinstance(action, Protocol | Metadata) for action in actions):
            return replay(storage, list_log(storage))
        commits.append((version, actions, listing.commits[version].modification_time))
    return advance(snapshot, commits)
