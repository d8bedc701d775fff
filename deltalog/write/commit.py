"""Writing one commit file: the ``commitInfo`` layout, create-if-absent, and retry pacing.

:func:`try_write` is the single place a commit file is written; ``transaction`` decides what to
do when it reports that another writer got the version first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deltalog import __version__
from deltalog.errors import (
    InvalidInputError,
    SnapshotExpiredError,
    StorageConfigurationError,
    StorageError,
)
from deltalog.log.clock import now_ms
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    PreviousCommitMissingError,
    WriteNotSentError,
)
from deltalog.protocol.actions import Action, AddFile, CommitInfo, Txn
from deltalog.protocol.config import log_retention_ms
from deltalog.protocol.paths import commit_name, parse_log_name
from deltalog.stats.num_records import num_records as stats_num_records

ENGINE_INFO: str = f"deltalog/{__version__}"


def make_commit_info(
    *,
    operation: str,
    parameters: dict[str, Any],
    read_version: int | None,
    is_blind_append: bool,
    metrics: dict[str, str] | None = None,
    isolation_level: str = "Serializable",
    engine_info: str = ENGINE_INFO,
    user_metadata: str | None = None,
) -> CommitInfo:
    """A ``commitInfo`` laid out as delta-spark writes it (``userMetadata`` when given)."""
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
    if user_metadata is not None:
        body["userMetadata"] = user_metadata
    body["engineInfo"] = engine_info
    import uuid  # a few ms to import: only when a commit is made

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
        numbers = (self.max_attempts, self.base_delay, self.max_delay)
        if any(not isinstance(n, int | float) or isinstance(n, bool) for n in numbers):
            raise InvalidInputError("max_attempts, base_delay and max_delay must be numbers")
        if self.max_attempts < 1:
            raise InvalidInputError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise InvalidInputError("backoff delays cannot be negative")

    def delay(self, attempt: int) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based)."""
        import random

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
        check_previous: First make sure ``version`` is really the next version of the log
            (:func:`_version_is_free`): nothing at or after it exists, and commit
            ``version - 1`` (or a checkpoint at it) does. A "not found" for ``version`` alone
            does not mean it is free: log cleanup may have deleted it behind a newer
            checkpoint, and creating it again would put a commit below that checkpoint, where
            no reader looks. Callers skip the check only when cleanup cannot have reached the
            versions involved (:func:`cleanup_may_have_passed`) and they have not seen a
            "not found" that the log may have moved past. The check and the create are
            separate requests, so with the check the created commit is also confirmed to be
            in the history readers rebuild
            (:func:`~deltalog.write.commit_outcome.confirm_in_history`).

    Returns:
        ``True`` if this call created the file (and it is in the history), ``False`` if
        another writer had. A write that raised but landed counts as created
        (:func:`~deltalog.write.commit_outcome.resolve_failed_write`).

    Raises:
        SnapshotExpiredError: ``version`` or ``version - 1`` was removed by log cleanup (also
            when the store found ``version - 1`` gone: ``PreviousCommitMissingError``), or
            the commit was created below a checkpoint that does not hold it and withdrawn;
            nothing was written.
        CommitStatusUnknownError: The store failed in a way that leaves open whether the
            commit landed.
        StorageError: The store failed otherwise, or refused the write before sending it
            (``logstores.WriteNotSentError``); nothing was written.
    """
    from deltalog.write.commit_outcome import confirm_in_history, resolve_failed_write

    since = now_ms()
    if version > 0 and check_previous and not _version_is_free(storage, version):
        return False
    try:
        with storage_errors(f"cannot write commit {version}"):
            storage.store.write(storage.log_file(commit_name(version)), data, overwrite=False)
    except FileAlreadyExistsError:
        return False
    except LogFileNotFoundError as exc:  # e.g. the bucket or container does not exist
        raise StorageError(f"cannot write commit {version}: {exc}") from exc
    except StorageConfigurationError:  # refused before anything was sent
        raise
    except StorageError as exc:  # the write may have landed all the same
        if isinstance(exc.__cause__, PreviousCommitMissingError):
            # Cleanup removed version - 1 behind a checkpoint at or after ``version``: taken.
            with storage_errors(f"cannot check commit {version}"):
                if storage.store.exists(storage.log_file(commit_name(version))):
                    return False
            raise _previous_gone(version) from exc.__cause__
        if isinstance(exc.__cause__, WriteNotSentError):  # ... unless it was never sent
            raise
        if not resolve_failed_write(storage, version, data, exc):
            return False
    if version > 0 and check_previous:
        confirm_in_history(storage, version, data, since)
    return True


def _version_is_free(storage: TableStorage, version: int) -> bool:
    """Whether ``version`` (> 0) can be created: ``False`` when it exists already.

    One listing from ``version - 1`` tells both what :func:`try_write` needs to know before its
    create: that nothing at or after ``version`` exists, and that commit ``version - 1`` (or a
    checkpoint at it) does. Log cleanup deletes a commit only behind a newer checkpoint and
    never deletes the newest checkpoint, so once ``version`` has been written and cleaned up,
    some checkpoint after it exists for good, and the listing shows it. What happens after the
    listing is the create's own race, which the check after the create covers
    (:func:`~deltalog.write.commit_outcome.confirm_in_history`).

    Raises:
        SnapshotExpiredError: ``version`` existed and was cleaned up, or ``version - 1`` is gone.
        StorageError: The store failed.
    """
    listed = [
        parsed
        for status in storage.list_log(commit_name(version - 1)[:20])
        if (parsed := parse_log_name(status.name)) is not None and parsed.version >= version - 1
    ]
    later = [p for p in listed if p.version >= version]
    if later:
        if any(p.version == version and p.kind == "commit" for p in later):
            return False
        with storage_errors(f"cannot check commit {version}"):
            present = storage.store.exists(storage.log_file(commit_name(version)))
        if present:  # written after the listing passed its name
            return False
        raise SnapshotExpiredError(
            f"cannot commit version {version}: the log holds versions after it but not "
            f"{version} itself, so log cleanup removed it behind a newer checkpoint (the log "
            "moved past this writer's snapshot by more than delta.logRetentionDuration); "
            "nothing was written; re-run the operation on the latest version"
        )
    # A log kept from a checkpoint on may start with the checkpoint at version - 1.
    if not any(p.version == version - 1 and p.kind in ("commit", "checkpoint") for p in listed):
        raise _previous_gone(version)
    return True


def _previous_gone(version: int) -> SnapshotExpiredError:
    return SnapshotExpiredError(
        f"cannot commit version {version}: commit {version - 1} is gone, so the log "
        "was cleaned up past this writer's snapshot (older than "
        "delta.logRetentionDuration); nothing was written; re-run the operation on "
        "the latest version"
    )


class LandedEarlier(Exception):
    """The commit found at a version is this transaction's own: it landed there (``actions``)."""

    def __init__(self, version: int, actions: list[Action]) -> None:
        super().__init__(version)
        self.version = version
        self.actions = actions


class AlreadyCommitted(Exception):
    """A winner committed this transaction's (app id, version): nothing more to write."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


def num_records(add: AddFile) -> int:
    """``numRecords`` from an ``add``'s stats (0 when it has none)."""
    return stats_num_records(add.stats) or 0


def write_metrics(adds: list[AddFile], *, removed: int = 0) -> dict[str, str]:
    """``commitInfo.operationMetrics`` of a write, as delta-spark records them."""
    metrics = {
        "numFiles": str(len(adds)),
        "numOutputRows": str(sum(num_records(a) for a in adds)),
        "numOutputBytes": str(sum(a.size for a in adds)),
    }
    if removed:
        metrics["numRemovedFiles"] = str(removed)
    return metrics


def txn_covers(existing: Txn | None, staged: Txn) -> bool:
    """Whether ``existing`` (the table's txn for the app) already includes ``staged``."""
    return existing is not None and existing.version >= staged.version
