"""Log retention: delete commits and checkpoints that no retained version needs.

A version stays reconstructable as long as a complete checkpoint at or before it and every
commit after that checkpoint remain. Cleanup therefore picks the newest checkpoint written at or
before the cutoff (``now - delta.logRetentionDuration``), checks that its files are readable
Parquet, and deletes only files for versions strictly older than it whose own modification time
is also before the cutoff. That checkpoint and everything after it are never touched. With
``checkpointProtection``, the files of versions before
``delta.requireCheckpointProtectionBeforeVersion`` go only all together (so no checkpoint
outlives the commits it was made from). Temp files of dead or finished log writes go too
(:mod:`deltalog.maintenance.log_temp`), and so do V2 checkpoint sidecars that no remaining
checkpoint
references, and checkpoints that reference a sidecar which is gone
(:mod:`deltalog.maintenance.sidecars`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.log.segment import Checkpoint, classify
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import FileStatus
from deltalog.maintenance.log_temp import cleanup_log_temp_files
from deltalog.maintenance.sidecars import broken_checkpoints, cleanup_sidecars, sidecars_present
from deltalog.protocol.config import log_retention_ms
from deltalog.protocol.paths import parse_log_name

PROTECTION_KEY = "delta.requireCheckpointProtectionBeforeVersion"
_CRC = re.compile(r"^(\d{20})\.crc$")
_COMPACTED = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")


def _readable(storage: TableStorage, checkpoint: Checkpoint) -> bool:
    for status in checkpoint.files:
        if status.name.endswith(".json"):
            continue
        try:
            with storage.store.open_input(status.path) as fh:
                pq.ParquetFile(fh).metadata  # noqa: B018 - reading the footer is the check
        except (pa.ArrowException, OSError, ValueError):
            return False
    return sidecars_present(storage, checkpoint)


def _version_of(status: FileStatus) -> int | None:
    parsed = parse_log_name(status.name)
    if parsed is not None:
        return parsed.version
    m = _CRC.match(status.name) or _COMPACTED.match(status.name)
    if m:
        return int(m.groups()[-1])
    return None


@dataclass(frozen=True)
class CleanupPlan:
    """What a cleanup would delete now, and when deleting anything more can next be possible.

    Attributes:
        doomed: Log files to delete, oldest first.
        next_due_ms: No cleanup before this time (ms since the epoch) can delete anything beyond
            ``doomed``: it is when the oldest checkpoint that could become the next boundary
            passes the retention cutoff.
        kept: The checkpoints listed that ``doomed`` leaves, by version.
    """

    doomed: list[FileStatus]
    next_due_ms: int
    kept: dict[int, list[Checkpoint]] = field(default_factory=dict)


def plan_cleanup(
    storage: TableStorage,
    *,
    retention_ms: int,
    now_ms: int | None = None,
    protect_before: int = 0,
) -> CleanupPlan:
    """Work out which log files have expired (see the module docstring).

    Args:
        storage: The table's storage.
        retention_ms: ``delta.logRetentionDuration`` in ms.
        now_ms: The current time (default: the clock).
        protect_before: ``delta.requireCheckpointProtectionBeforeVersion`` (checkpointProtection):
            log files of versions before it are deleted only if all of them can be.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - retention_ms
    entries = storage.list_log()
    listing = classify(entries)
    boundary = None
    for version in sorted(listing.checkpoints, reverse=True):
        candidates = [
            cp
            for cp in listing.checkpoints[version]
            if max(f.modification_time for f in cp.files) <= cutoff and _readable(storage, cp)
        ]
        if candidates:
            boundary = version
            break
    out = []
    remaining: list[int] = []
    for status in entries:
        file_version = _version_of(status)
        if file_version is None:
            continue
        if boundary is not None and file_version < boundary and status.modification_time <= cutoff:
            out.append(status)
        else:
            remaining.append(file_version)
    if protect_before > 0 and any(v < protect_before for v in remaining):
        # checkpointProtection: the versions before it are deleted all together or not at all
        remaining += [v for s in out if (v := _version_of(s)) is not None]
        out = []
    lowest = min(remaining, default=0)
    later = [
        max(f.modification_time for f in cp.files)
        for version, cps in listing.checkpoints.items()
        if version > lowest
        for cp in cps
    ]
    next_due = min(later, default=now) + retention_ms
    gone = {s.path for s in out}
    kept = {
        version: left
        for version, cps in listing.checkpoints.items()
        if (left := [cp for cp in cps if not any(f.path in gone for f in cp.files)])
    }
    return CleanupPlan(out, max(next_due, now), kept)


def checkpoint_protection_version(configuration: Mapping[str, str | None]) -> int:
    """``delta.requireCheckpointProtectionBeforeVersion`` (0 when unset or invalid)."""
    value = configuration.get(PROTECTION_KEY)
    try:
        return max(int(value), 0) if value is not None else 0
    except ValueError:
        return 0


def expired_log_files(
    storage: TableStorage, *, retention_ms: int, now_ms: int | None = None
) -> list[FileStatus]:
    """The log files :func:`cleanup_log` would delete, oldest first."""
    return plan_cleanup(storage, retention_ms=retention_ms, now_ms=now_ms).doomed


def cleanup_log(
    storage: TableStorage, configuration: dict[str, str | None], *, now_ms: int | None = None
) -> list[str]:
    """Delete expired log files; returns the names deleted.

    Raises:
        StorageError: The store refused a deletion (files deleted before it stay deleted; the
            log remains valid because deletion goes oldest first).
    """
    return run_cleanup(storage, configuration, now_ms=now_ms)[0]


def run_cleanup(
    storage: TableStorage, configuration: dict[str, str | None], *, now_ms: int | None = None
) -> tuple[list[str], int]:
    """Like :func:`cleanup_log`, also returning :attr:`CleanupPlan.next_due_ms`."""
    plan = plan_cleanup(
        storage,
        retention_ms=log_retention_ms(configuration),
        now_ms=now_ms,
        protect_before=checkpoint_protection_version(configuration),
    )
    deleted = []
    for status in plan.doomed:
        with storage_errors(f"cannot delete {status.name}"):
            storage.store.delete(status.path)
        deleted.append(status.name)
    for checkpoint in broken_checkpoints(storage, plan.kept):
        with storage_errors(f"cannot delete {checkpoint.name}"):
            storage.store.delete(checkpoint.files[0].path)
        deleted.append(checkpoint.name)
    deleted += cleanup_sidecars(
        storage, now_ms=int(time.time() * 1000) if now_ms is None else now_ms
    )
    prefix = storage.log_path + "/"
    for location in cleanup_log_temp_files(storage, now_ms=now_ms):
        deleted.append(location[len(prefix) :] if location.startswith(prefix) else location)
    return deleted, plan.next_due_ms
