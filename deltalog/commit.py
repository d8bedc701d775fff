"""Publishing one commit: serialise once, create-if-absent ``N.json``, retry blind appends.

This is the single place a commit file is written. Issue 4's transactions build on it: the
conflict check hook decides whether a losing attempt may be rebased onto the winners.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog import __version__
from deltalog.actions import Action, CommitInfo, serialize_actions
from deltalog.errors import CommitFailedError
from deltalog.paths import commit_name
from deltalog.storage import TableStorage, storage_errors
from logstores import FileAlreadyExistsError

ENGINE_INFO = f"deltalog/{__version__}"


@dataclass(frozen=True, slots=True)
class CommitResult:
    """A landed commit: its version, the actions written, and how many attempts it took."""

    version: int
    actions: tuple[Action, ...]
    attempts: int
    modification_time: int


def make_commit_info(
    *,
    operation: str,
    parameters: dict[str, Any],
    read_version: int | None,
    is_blind_append: bool,
    metrics: dict[str, str] | None = None,
    isolation_level: str = "Serializable",
) -> CommitInfo:
    """A ``commitInfo`` laid out as delta-spark writes it."""
    body: dict[str, Any] = {
        "timestamp": int(time.time() * 1000),
        "operation": operation,
        "operationParameters": parameters,
    }
    if read_version is not None:
        body["readVersion"] = read_version
    body["isolationLevel"] = isolation_level
    body["isBlindAppend"] = is_blind_append
    if metrics:
        body["operationMetrics"] = metrics
    body["engineInfo"] = ENGINE_INFO
    body["txnId"] = str(uuid.uuid4())
    return CommitInfo(extra=body)


#: Called after losing the race for ``version``; returns the next version to try, or raises.
RebaseHook = Callable[[int], int]


def publish(
    storage: TableStorage,
    version: int,
    commit_info: CommitInfo,
    actions: Sequence[Action],
    *,
    rebase: RebaseHook | None,
    max_attempts: int = 100,
    backoff_base: float = 0.001,
    backoff_cap: float = 0.5,
) -> CommitResult:
    """Write ``commitInfo`` + ``actions`` as the next commit.

    On losing the race for a version, ``rebase`` (when given) checks the winners and returns the
    next version to try; without it the commit fails as a conflict. Attempts are bounded and
    spaced by exponential backoff with full jitter.

    Raises:
        CommitFailedError: ``rebase`` is ``None`` and another writer won, or attempts ran out.
    """
    attempt = 0
    while True:
        attempt += 1
        info = commit_info
        if attempt > 1 and version > 0:
            info = CommitInfo(extra={**commit_info.extra, "readVersion": version - 1})
        data = serialize_actions([info, *actions])
        name = commit_name(version)
        try:
            with storage_errors(f"cannot write commit {version}"):
                storage.store.write(storage.log_file(name), data, overwrite=False)
        except FileAlreadyExistsError as exc:
            if rebase is None:
                raise CommitFailedError(
                    f"version {version} was committed by another writer",
                    retryable=True,
                    conflict=True,
                ) from exc
            if attempt >= max_attempts:
                raise CommitFailedError(
                    f"gave up after {attempt} attempts; last tried version {version}",
                    retryable=True,
                    conflict=True,
                ) from exc
            version = rebase(version)
            time.sleep(random.uniform(0, min(backoff_cap, backoff_base * 2**attempt)))
            continue
        return CommitResult(version, (info, *actions), attempt, int(time.time() * 1000))
