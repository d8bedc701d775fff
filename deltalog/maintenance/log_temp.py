"""Temp files of log writes that outlived their writer: find them, delete them.

Two kinds exist:

* S3 + DynamoDB commits write ``_delta_log/.tmp/<N>.json.<uuid>`` before the DynamoDB entry
  and never delete them once the commit is complete (delta-spark does the same). The store
  decides which are safe to delete (:meth:`ExternalCoordinatedLogStore.expired_temp_files`):
  older than the entry TTL, and their commit complete or never made.
* The local store writes ``_delta_log/.<name>.<uuid>.tmp`` and links it into place; a writer
  killed in between leaves it behind. A live writer holds one for well under a second, so one
  older than :data:`LOCAL_TEMP_TTL_MS` belongs to a dead writer.

Log cleanup (:func:`deltalog.maintenance.retention.run_cleanup`) and vacuum delete both kinds;
``deltalog check`` reports the ones still there (``orphan-log-file``).
"""

from __future__ import annotations

import re
import time

from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import FileStatus, LogFileNotFoundError
from deltalog.logstores.external import ExternalCoordinatedLogStore

#: Age after which a local ``.<name>.<uuid>.tmp`` file in ``_delta_log`` is a dead writer's.
LOCAL_TEMP_TTL_MS = 3_600_000
_LOCAL_TEMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")


def is_local_temp_name(name: str) -> bool:
    """Whether a ``_delta_log`` file name is a local store's temp file."""
    return bool(_LOCAL_TEMP.match(name))


def stale_log_temp_files(storage: TableStorage, *, now_ms: int | None = None) -> list[FileStatus]:
    """Temp files in ``_delta_log`` that no writer or repair can still need.

    Args:
        storage: The table's storage.
        now_ms: The current time (default: the clock), for tests and tools.

    Raises:
        StorageError: The store failed.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    out: list[FileStatus] = []
    store = storage.store
    with storage_errors(f"cannot list temp files of {storage.log_path}"):
        if isinstance(store, ExternalCoordinatedLogStore):
            out += store.expired_temp_files(storage.log_path, now=now / 1000)
        try:
            entries = list(store.list_from(storage.log_file("")))
        except LogFileNotFoundError:
            entries = []
    cutoff = now - LOCAL_TEMP_TTL_MS
    out += [s for s in entries if is_local_temp_name(s.name) and s.modification_time <= cutoff]
    return out


def cleanup_log_temp_files(storage: TableStorage, *, now_ms: int | None = None) -> list[str]:
    """Delete :func:`stale_log_temp_files`; returns their locations.

    Raises:
        StorageError: The store failed.
    """
    doomed = [s.path for s in stale_log_temp_files(storage, now_ms=now_ms)]
    if doomed:
        with storage_errors(f"cannot delete temp files of {storage.log_path}"):
            storage.store.delete_many(doomed)
    return doomed
