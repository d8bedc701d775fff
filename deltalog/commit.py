"""Writing one commit file: the ``commitInfo`` layout, create-if-absent, and retry pacing.

:func:`try_write` is the single place a commit file is written; ``transaction`` decides what to
do when it reports that another writer got the version first.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deltalog import __version__
from deltalog.actions import CommitInfo
from deltalog.config import log_retention_ms
from deltalog.errors import InvalidInputError, SnapshotExpiredError, StorageError
from deltalog.logstores import FileAlreadyExistsError, LogFileNotFoundError
from deltalog.paths import checkpoint_name, commit_name
from deltalog.storage import TableStorage, storage_errors

ENGINE_INFO: str = f"deltalog/{__version__}"


def now_ms() -> int:
    """Wall-clock time in milliseconds since the epoch, as the log records it."""
    return int(time.time() * 1000)


def make_commit_info(
    *,
    operation: str,
    parameters: dict[str, Any],
    read_version: int | None,
    is_blind_append: bool,
    metrics: dict[str, str] | None = None,
    isolation_level: str = "Serializable",
    engine_info: str = ENGINE_INFO,
) -> CommitInfo:
    """A ``commitInfo`` laid out as delta-spark writes it."""
    body: dict[str, Any] = {
        "timestamp": now_ms(),
        "operation": operation,
        "operationParameters": parameters,
    }
    if read_version is not None:
        body["readVersion"] = read_version
    body["isolationLevel"] = isolation_level
    body["isBlindAppend"] = is_blind_append
    if metrics:
        body["operationMetrics"] = metrics
    body["engineInfo"] = engine_info
    body["txnId"] = str(uuid.uuid4())
    return CommitInfo(extra=body)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a transaction retries after losing the race for a version.

    Losing is not a conflict in itself: the winners are read and checked, and if none conflicts
    the same actions are tried at the next free version. Between attempts the writer sleeps a
    random time between 0 and ``min(max_delay, base_delay * 2**(attempt - 1))`` seconds
    (exponential backoff with full jitter), so that writers that collided spread out.

    Attributes:
        max_attempts: Versions to try before giving up with ``CommitAttemptsExhaustedError``.
        base_delay: Upper bound of the first sleep, in seconds.
        max_delay: Cap on any one sleep, in seconds.
    """

    max_attempts: int = 1000
    base_delay: float = 0.0005
    max_delay: float = 0.05

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InvalidInputError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise InvalidInputError("backoff delays cannot be negative")

    def delay(self, attempt: int) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based)."""
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** min(attempt - 1, 60)))


def cleanup_may_have_passed(snapshot_time_ms: int, configuration: Mapping[str, str | None]) -> bool:
    """Whether log cleanup may have deleted commits after a snapshot committed at this time.

    Cleanup deletes only commits older than ``delta.logRetentionDuration``, and every commit
    after the snapshot is younger than the snapshot's own. Until half the retention has passed
    (the other half absorbs clock skew between writers), nothing after it can be gone, and a
    commit can skip :func:`try_write`'s check of the previous version.
    """
    try:
        retention = log_retention_ms(configuration)
    except InvalidInputError:
        return True
    return now_ms() - snapshot_time_ms >= retention // 2


def try_write(
    storage: TableStorage, version: int, data: bytes, *, check_previous: bool = True
) -> bool:
    """Create ``_delta_log/<version>.json`` with ``data`` unless it exists.

    Args:
        storage: The table's storage.
        version: The version to create.
        data: The commit's bytes.
        check_previous: First make sure commit ``version - 1`` (or a checkpoint at it) still
            exists. Log cleanup never deletes the newest commit, so when it is gone the log has
            moved past a checkpoint, ``version`` may have existed and been cleaned up, and
            creating it again would put a commit below that checkpoint, where no reader looks.
            (delta-spark's S3DynamoDBLogStore makes the same check.) Callers skip it when
            cleanup cannot have reached the versions involved (:func:`cleanup_may_have_passed`).

    Returns:
        ``True`` if this call created the file, ``False`` if another writer had.

    Raises:
        SnapshotExpiredError: Commit ``version - 1`` no longer exists (log cleanup removed it).
        StorageError: The store failed otherwise.
    """
    if version > 0 and check_previous:
        with storage_errors(f"cannot check commit {version - 1}"):
            store, before = storage.store, version - 1
            previous = store.exists(storage.log_file(commit_name(before))) or store.exists(
                storage.log_file(checkpoint_name(before))  # a log kept from a checkpoint on
            )
        if not previous:
            raise SnapshotExpiredError(
                f"cannot commit version {version}: commit {version - 1} is gone, so the log "
                "was cleaned up past this writer's snapshot (older than "
                "delta.logRetentionDuration); nothing was written; re-run the operation on "
                "the latest version"
            )
    try:
        with storage_errors(f"cannot write commit {version}"):
            storage.store.write(storage.log_file(commit_name(version)), data, overwrite=False)
    except FileAlreadyExistsError:
        return False
    except LogFileNotFoundError as exc:  # e.g. the bucket or container does not exist
        raise StorageError(f"cannot write commit {version}: {exc}") from exc
    return True
