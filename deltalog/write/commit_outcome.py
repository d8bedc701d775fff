"""What became of a commit whose write raised: landed, lost to another writer, or unknown.

A store can fail a write that the server applied: every reply to the upload was lost or
throttled until the store's retries ran out, or the read-back that tells a landed attempt of
our own from a rival's commit failed. The commit may then be in the log although the write
raised. So before a commit reports a storage failure, :func:`resolve_failed_write` reads the
version back: our own bytes (they hold our unique ``commitInfo.txnId``) mean it landed, another
commit means the race was lost as usual. When that cannot be told, the commit fails with
:class:`~deltalog.errors.CommitStatusUnknownError`, which never reads as "nothing written".

A commit that was created is not yet acknowledged either when log cleanup may have run past the
version it read: :func:`confirm_in_history` makes sure it is not an orphan below a newer
checkpoint (see :mod:`deltalog.log.orphans`), and withdraws it if it is.
"""

from __future__ import annotations

import time

import orjson

from deltalog.errors import (
    CommitStatusUnknownError,
    CorruptLogError,
    SnapshotExpiredError,
    StorageError,
)
from deltalog.log.file_actions import scheme_prefix
from deltalog.log.orphans import (
    LaterCommits,
    Verdict,
    identifiable,
    judge,
    readable_view,
    touched_paths,
)
from deltalog.log.segment import LogListing, classify
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.actions import Action, parse_actions
from deltalog.protocol.paths import commit_name


def resolve_failed_write(
    storage: TableStorage, version: int, data: bytes, error: StorageError
) -> bool:
    """Whether the commit ``data`` is at ``version`` after its write raised ``error``.

    Returns:
        ``True`` if the file holds this commit (it landed), ``False`` if it holds another
        writer's (the caller goes on as after "already exists").

    Raises:
        CommitStatusUnknownError: The file cannot be read, or it is absent on a store where a
            request still in flight could create it later.
        StorageError: ``error`` itself when the file is absent on a local filesystem, whose
            writes are done when they return: nothing was written.
    """
    name = commit_name(version)
    found: bytes | None = None
    try:
        found = storage.read_log_file(name)
    except LogFileNotFoundError:
        pass
    except StorageError as again:
        raise unknown_status(
            version, data, f"{error}; reading {name} back failed too ({again})"
        ) from error
    if found is None:
        if storage.store.local_path(storage.log_file(name)) is not None:
            raise error
        raise unknown_status(
            version, data, f"{error}; {name} is not there, but the request may still land"
        ) from error
    if found == data:
        return True
    ours = txn_id_of(data)
    return ours is not None and txn_id_of(found) == ours


def unknown_status(
    version: int, data: bytes, reason: str, how: str | None = None
) -> CommitStatusUnknownError:
    """The error for a commit at ``version`` that may or may not have landed.

    Args:
        version: The version.
        data: The commit's bytes.
        reason: What happened.
        how: How to find out (default: look for its ``txnId`` in the history).
    """
    txn_id = txn_id_of(data)
    where = f"commitInfo.txnId {txn_id}" if txn_id else "this commit"
    how = how or (f"look for {where} in the history (DeltaTable.history(), version {version} on)")
    return CommitStatusUnknownError(
        f"cannot tell whether commit {version} landed: {reason}. The commit MAY be in the "
        f"table: {how} before running the operation again",
        version=version,
        txn_id=txn_id,
    )


def txn_id_of(data: bytes) -> str | None:
    """``commitInfo.txnId`` of a serialised commit (``None`` when it has none)."""
    for line in data.split(b"\n"):
        if b'"commitInfo"' not in line:
            continue
        try:
            body = orjson.loads(line).get("commitInfo")
        except (orjson.JSONDecodeError, AttributeError):
            return None
        txn = body.get("txnId") if isinstance(body, dict) else None
        return txn if isinstance(txn, str) else None
    return None


def confirm_in_history(storage: TableStorage, version: int, data: bytes, since_ms: int) -> None:
    """Make sure the commit ``data``, just created at ``version``, is in the readers' history.

    Costs one listing from ``version`` when no checkpoint above it exists (the usual case).

    Args:
        storage: The table's storage.
        version: The version created.
        data: The commit's bytes.
        since_ms: A time (ms since the epoch) before the commit was created.

    Raises:
        SnapshotExpiredError: It was created below a checkpoint that does not hold it (log
            cleanup had removed the commits before it); its file was deleted again, nothing
            was written.
        CommitStatusUnknownError: Whether it is in the history cannot be told.
    """
    try:
        verdict, witness = created_verdict(storage, version, data, since_ms)
    except StorageError as exc:
        raise unknown_status(
            version,
            data,
            f"it was created, but checking it against newer checkpoints failed ({exc})",
        ) from exc
    if verdict is Verdict.LANDED:
        return
    if verdict is Verdict.UNKNOWN:
        raise unknown_status(
            version,
            data,
            f"{commit_name(version)} was created, but log cleanup may have removed the commits "
            f"before it behind checkpoint {witness}, and that checkpoint does not show whether "
            "it holds it",
            "its file was left in place, as a commit is only withdrawn when it is certain "
            "that no reader sees it; compare DeltaTable.files() with the files it adds and "
            "removes",
        )
    leftover = _withdraw(storage, version, data)
    raise SnapshotExpiredError(
        f"commit {version} was created after log cleanup had removed the commits before it "
        f"behind checkpoint {witness}, which does not hold it: no reader would have seen it, "
        f"so it was withdrawn{leftover}; nothing was written; re-run the operation on the "
        "latest version"
    )


def _withdraw(storage: TableStorage, version: int, data: bytes) -> str:
    """Delete the orphan ``data`` at ``version`` if the file still holds it; what is left over.

    Log cleanup may have deleted it already (it lies below a checkpoint), and then the name is
    not ours any more: only our own bytes are deleted.
    """
    name = commit_name(version)
    try:
        with storage_errors(f"cannot withdraw commit {version}"):
            try:
                found = storage.read_log_file(name)
            except LogFileNotFoundError:
                return ""
            ours = txn_id_of(data)
            if found != data and (ours is None or txn_id_of(found) != ours):
                return f" ({name} now holds another writer's commit, which was left alone)"
            storage.store.delete(storage.log_file(name))
    except StorageError as exc:
        return f" (deleting it failed: {exc}; log cleanup removes it later)"
    return ""


def created_verdict(
    storage: TableStorage, version: int, data: bytes, since_ms: int
) -> tuple[Verdict, int | None]:
    """Whether a commit just created at ``version`` is an orphan; and the deciding checkpoint.

    Raises:
        StorageError: The store failed.
    """
    listing = classify(storage.list_log(commit_name(version)[:20]))
    above = sorted(v for v in listing.checkpoints if v > version)
    if not above:
        return Verdict.LANDED, None
    actions = parse_actions(data, version=version)
    if not identifiable(actions):
        return Verdict.LANDED, above[0]
    prefix = scheme_prefix(storage.root)
    view = readable_view(
        storage.store,
        (checkpoint for v in above for checkpoint in listing.checkpoints[v]),
        touched_paths(actions, prefix),
        prefix,
    )
    if view is None:
        return Verdict.UNKNOWN, above[0]
    elapsed = int(time.time() * 1000) - since_ms
    verdict = judge(actions, view, prefix, elapsed_ms=elapsed)
    if verdict is not Verdict.LANDED:
        # The commits up to the checkpoint tell more: one that removes a file of this commit
        # was made on top of it; when all are there, what the checkpoint lacks is decisive.
        later = commits_between(storage, listing, version, view.version, prefix)
        verdict = judge(actions, view, prefix, elapsed_ms=elapsed, later=later)
    return verdict, view.version


def commits_between(
    storage: TableStorage, listing: LogListing, after: int, upto: int, prefix: str
) -> LaterCommits:
    """What the listed commits after ``after`` up to ``upto`` did (``complete``: all read)."""
    out = LaterCommits(complete=True)
    for v in range(after + 1, upto + 1):
        status = listing.commits.get(v)
        if status is None:
            out.complete = False
            continue
        try:
            actions: list[Action] = parse_actions(
                storage.read_log_file(status.name), version=v, path=status.path
            )
        except (LogFileNotFoundError, CorruptLogError):
            out.complete = False
            continue
        out.note(actions, prefix)
    return out
