"""The report's health panels: checkpoints, and what retention keeps and could free.

**Checkpoints.** Readers start from the newest checkpoint and replay the commits after it,
so the panel shows the newest checkpoint (kind, size), whether ``_last_checkpoint`` points at
it, and how many commits a reader replays, against ``delta.checkpointInterval``.

**Retention.** ``delta.logRetentionDuration`` bounds how far back time travel can go (log
files older than it are deleted by a cleanup once a newer checkpoint covers them);
``delta.deletedFileRetentionDuration`` bounds how long removed data files stay for readers of
older versions (VACUUM deletes them after it). The panel shows the oldest version kept, the
log files a cleanup would delete now, and the removed files (tombstones) VACUUM could delete.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.log.segment import LogListing
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.maintenance.retention import expired_log_files
from deltalog.protocol.config import (
    checkpoint_interval,
    expired_log_cleanup,
    log_retention_ms,
    tombstone_retention_ms,
)

_V2_NAME = re.compile(r"\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")


@dataclass
class CheckpointHealth:
    """Checkpoints as a reader meets them.

    Attributes:
        interval: ``delta.checkpointInterval``.
        latest_version: The table's latest version.
        checkpoint_version: The newest complete checkpoint's version (``None``: none).
        kind: ``classic``, ``multi-part (n parts)`` or ``V2``.
        size_bytes: Its files' total size.
        checkpoints: Complete checkpoints in the log.
        last_checkpoint: The version ``_last_checkpoint`` names (``None``: no usable file).
        commits_to_replay: Commits a reader of the latest version replays after it.
        warnings: What looks wrong, for people.
    """

    interval: int
    latest_version: int
    checkpoint_version: int | None = None
    kind: str | None = None
    size_bytes: int = 0
    checkpoints: int = 0
    last_checkpoint: int | None = None
    commits_to_replay: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No warnings."""
        return not self.warnings

    def to_json(self) -> dict[str, Any]:
        """The panel as a JSON object."""
        return {**asdict(self), "ok": self.ok}


@dataclass
class RetentionHealth:
    """What the retention settings keep, and what cleanup and VACUUM could delete now.

    Attributes:
        log_retention_ms: ``delta.logRetentionDuration``.
        deleted_file_retention_ms: ``delta.deletedFileRetentionDuration``.
        expired_log_cleanup: ``delta.enableExpiredLogCleanup``.
        oldest_version: The oldest commit still in the log; ``oldest_time`` its time (ms).
        commit_files: Commit files in the log.
        expired_log_files: Log files a cleanup would delete now.
        tombstones: Removed files still tracked; ``tombstone_bytes`` their size where known.
        vacuumable_files: Tombstones older than the deleted-file retention (VACUUM deletes
            them, if still on storage); ``vacuumable_bytes`` their size.
        oldest_tombstone: Deletion time (ms) of the oldest tombstone.
        warnings: What looks wrong, for people.
    """

    log_retention_ms: int
    deleted_file_retention_ms: int
    expired_log_cleanup: bool
    oldest_version: int | None = None
    oldest_time: int | None = None
    commit_files: int = 0
    expired_log_files: int = 0
    tombstones: int = 0
    tombstone_bytes: int = 0
    vacuumable_files: int = 0
    vacuumable_bytes: int = 0
    oldest_tombstone: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No warnings."""
        return not self.warnings

    def to_json(self) -> dict[str, Any]:
        """The panel as a JSON object."""
        return {**asdict(self), "ok": self.ok}


def checkpoint_health(listing: LogListing, snapshot: Snapshot) -> CheckpointHealth:
    """The checkpoint panel of the latest version."""
    latest = snapshot.version
    health = CheckpointHealth(
        interval=checkpoint_interval(snapshot.configuration),
        latest_version=latest,
        checkpoints=sum(len(cps) for cps in listing.checkpoints.values()),
        last_checkpoint=None if listing.hint is None else listing.hint.version,
    )
    usable = sorted(v for v in listing.checkpoints if v <= latest)
    if usable:
        version = usable[-1]
        newest = listing.checkpoints[version][0]
        health.checkpoint_version = version
        health.size_bytes = sum(f.size for f in newest.files)
        if len(newest.files) > 1:
            health.kind = f"multi-part ({len(newest.files)} parts)"
        elif _V2_NAME.search(newest.name):
            health.kind = "V2"
        else:
            health.kind = "classic"
        health.commits_to_replay = latest - version
    else:
        health.commits_to_replay = latest + 1
    if health.checkpoint_version is None and latest + 1 > health.interval:
        health.warnings.append(
            f"no checkpoint: a reader replays all {latest + 1} commits "
            f"(delta.checkpointInterval is {health.interval})"
        )
    elif health.commits_to_replay >= 2 * health.interval:
        health.warnings.append(
            f"{health.commits_to_replay} commits since the last checkpoint, twice "
            f"delta.checkpointInterval ({health.interval}) or more: are writers checkpointing?"
        )
    if health.checkpoint_version is not None and health.last_checkpoint is None:
        health.warnings.append("_last_checkpoint is missing or unreadable: readers list the log")
    elif (
        health.checkpoint_version is not None
        and health.last_checkpoint is not None
        and health.last_checkpoint < health.checkpoint_version
    ):
        health.warnings.append(
            f"_last_checkpoint names version {health.last_checkpoint}, the newest checkpoint "
            f"is {health.checkpoint_version}"
        )
    return health


def _sum(values: pa.ChunkedArray | pa.Array) -> int:
    return int(pc.sum(values).as_py() or 0) if len(values) else 0


def retention_health(
    storage: TableStorage, listing: LogListing, snapshot: Snapshot, now_ms: int
) -> RetentionHealth:
    """The retention panel of the latest version, as of ``now_ms``."""
    config = snapshot.configuration
    health = RetentionHealth(
        log_retention_ms=log_retention_ms(config),
        deleted_file_retention_ms=tombstone_retention_ms(config),
        expired_log_cleanup=expired_log_cleanup(config),
        commit_files=len(listing.commits),
    )
    if listing.commits:
        oldest = min(listing.commits)
        health.oldest_version = oldest
        health.oldest_time = listing.commits[oldest].modification_time
    health.expired_log_files = len(
        expired_log_files(storage, retention_ms=health.log_retention_ms, now_ms=now_ms)
    )
    tombstones = snapshot.tombstones
    health.tombstones = tombstones.num_rows
    if tombstones.num_rows:
        sizes = pc.fill_null(tombstones.column("size"), av.int64(0))
        deleted = tombstones.column("deletion_timestamp")
        health.tombstone_bytes = _sum(sizes)
        oldest_deletion = pc.min(deleted).as_py()
        health.oldest_tombstone = None if oldest_deletion is None else int(oldest_deletion)
        expired = pc.fill_null(
            pc.less(deleted, av.int64(now_ms - health.deleted_file_retention_ms)), av.false()
        )
        health.vacuumable_files = _sum(expired.cast(pa.int64()))
        health.vacuumable_bytes = _sum(pc.if_else(expired, sizes, av.int64(0)))
    if health.expired_log_files and health.expired_log_cleanup:
        health.warnings.append(
            f"{health.expired_log_files} log files are past delta.logRetentionDuration and "
            "a newer checkpoint covers them: the next checkpoint's cleanup deletes them"
        )
    elif health.expired_log_files:
        health.warnings.append(
            f"{health.expired_log_files} log files are past delta.logRetentionDuration, but "
            "delta.enableExpiredLogCleanup is false: DeltaTable.cleanup_log() deletes them"
        )
    if health.vacuumable_files:
        health.warnings.append(
            f"{health.vacuumable_files} removed files are older than "
            "delta.deletedFileRetentionDuration: deltalog vacuum would delete them"
        )
    return health
