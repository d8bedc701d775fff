"""Log retention: delete commits and checkpoints that no retained version needs.

A version stays reconstructable as long as a complete checkpoint at or before it and every
commit after that checkpoint remain. Cleanup therefore picks the newest checkpoint written at or
before the cutoff (``now - delta.logRetentionDuration``), checks that its files are readable
Parquet, and deletes only files for versions strictly older than it whose own modification time
is also before the cutoff. That checkpoint and everything after it are never touched.
"""

from __future__ import annotations

import re
import time

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.config import log_retention_ms
from deltalog.paths import parse_log_name
from deltalog.segment import Checkpoint, classify
from deltalog.storage import TableStorage, storage_errors
from logstores import FileStatus

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
    return True


def _version_of(status: FileStatus) -> int | None:
    parsed = parse_log_name(status.name)
    if parsed is not None:
        return parsed.version
    m = _CRC.match(status.name) or _COMPACTED.match(status.name)
    if m:
        return int(m.groups()[-1])
    return None


def expired_log_files(
    storage: TableStorage, *, retention_ms: int, now_ms: int | None = None
) -> list[FileStatus]:
    """The log files :func:`cleanup_log` would delete, oldest first."""
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
    if boundary is None:
        return []
    out = []
    for status in entries:
        file_version = _version_of(status)
        if (
            file_version is not None
            and file_version < boundary
            and status.modification_time <= cutoff
        ):
            out.append(status)
    return out


def cleanup_log(
    storage: TableStorage, configuration: dict[str, str | None], *, now_ms: int | None = None
) -> list[str]:
    """Delete expired log files; returns the names deleted.

    Raises:
        StorageError: The store refused a deletion (files deleted before it stay deleted; the
            log remains valid because deletion goes oldest first).
    """
    doomed = expired_log_files(storage, retention_ms=log_retention_ms(configuration), now_ms=now_ms)
    deleted = []
    for status in doomed:
        with storage_errors(f"cannot delete {status.name}"):
            storage.store.delete(status.path)
        deleted.append(status.name)
    return deleted
