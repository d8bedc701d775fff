"""Commit history: the ``commitInfo`` of each commit, without decoding its file actions.

A commit file is mostly ``add``/``remove`` lines. History needs one line of it, so the file's
bytes are searched for the ``"commitInfo"`` key and only the line that starts with it (after
any JSON whitespace) is parsed. delta-spark writes commitInfo first, delta-rs may write it
elsewhere; neither position is assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.log.notebook import History
from deltalog.log.segment import LogListing, commit_times, list_log
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import FileStatus, LogFileNotFoundError
from deltalog.protocol.actions import CommitInfo, parse_actions
from deltalog.protocol.user_input import check_version_number

_KEY = b'"commitInfo"'
_WHITESPACE = b" \t\r"
_HEAD = b'{"commitInfo":'
#: ``ict_from`` of :func:`read_history`: detect in-commit timestamps from the commits.
AUTO = -1


def find_commit_info(data: bytes, version: int = 0, path: str = "") -> CommitInfo | None:
    """The commitInfo action of a commit file's content (the first one), if it has one.

    Only the line holding it is parsed. ``"commitInfo"`` can also occur as a key nested in
    another action (a tag, a configuration key): a hit counts only where its line starts with
    it, whitespace aside.

    Args:
        data: The commit file's content.
        version: Its version (for errors).
        path: Its location (for errors).

    Raises:
        MalformedCommitError: The commitInfo line does not parse.
    """
    at = data.find(_KEY)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        head = data[start : at + len(_KEY) + 8].translate(None, _WHITESPACE)
        if head.startswith(_HEAD):
            end = data.find(b"\n", at)
            line = data[start : end if end >= 0 else len(data)]
            for action in parse_actions(line, version=version, path=path):
                if isinstance(action, CommitInfo):
                    return action
        at = data.find(_KEY, at + len(_KEY))
    return None


#: Commit files bigger than this have their first bytes read first: delta-spark writes the
#: commitInfo line first, so the rest (the file actions) is usually never read.
HEAD_BYTES = 64 << 10


def _commit_info(storage: TableStorage, status: FileStatus, version: int) -> CommitInfo | None:
    """The commitInfo of one commit, from its first complete lines when they hold it."""
    path = storage.log_file(status.name)
    if status.size > HEAD_BYTES:
        with storage_errors(f"cannot read {status.name}"), storage.store.open_input(path) as fh:
            head = fh.read(HEAD_BYTES)
        complete = head[: head.rfind(b"\n") + 1]  # a cut line is never parsed
        info = find_commit_info(complete, version, path)
        if info is not None:
            return info
    return find_commit_info(storage.read_log_file(status.name), version, path)


def read_history(
    storage: TableStorage,
    listing: LogListing,
    up_to: int,
    limit: int | None,
    ict_from: int | None = None,
) -> list[dict[str, Any]]:
    """History entries, newest first, of the commits ``<= up_to`` (at most ``limit``).

    Only the commit files of the returned entries are read. See
    :meth:`deltalog.DeltaTable.history` for the entries' fields. From version ``ict_from`` on
    (``None``: never), an entry's ``timestamp`` is its commit's in-commit timestamp;
    :data:`AUTO` takes them wherever commits carry one, provided the newest one read does.
    """
    times = commit_times(listing)
    versions = sorted((v for v in listing.commits if v <= up_to), reverse=True)
    if limit is not None:
        versions = versions[: max(limit, 0)]
    out = History()
    for v in versions:
        status = listing.commits[v]
        entry: dict[str, Any] = {}
        try:
            info = _commit_info(storage, status, v)
        except LogFileNotFoundError:
            break  # cleaned up while we listed
        if info is not None:
            entry.update(info.to_json_dict())
            if "timestamp" in entry:
                entry["commitTimestamp"] = entry["timestamp"]
        entry["version"] = v
        entry["timestamp"] = times[v]
        if ict_from == AUTO:  # the newest commit decides
            ict_from = 0 if info is not None and info.in_commit_timestamp is not None else None
        if ict_from is not None and v >= ict_from and info is not None:
            entry["timestamp"] = info.in_commit_timestamp or times[v]
        out.append({"version": v, **entry})
    return out


def table_history(
    uri: str, storage_options: Mapping[str, str] | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """History of the latest version of the table at ``uri``, without rebuilding its state.

    Equal to ``DeltaTable(uri).history(limit)``, but neither checkpoints nor file actions are
    read: the log is listed and the commitInfo of at most ``limit`` commits parsed.

    Raises:
        TableNotFoundError: No Delta log at ``uri``.
        InvalidInputError: ``limit`` is not a valid count.
    """
    if limit is not None:
        check_version_number(limit, "limit")
    storage = TableStorage.open(uri, storage_options)
    listing = list_log(storage, use_hint=False)
    latest = max(listing.commits, default=-1)
    # Without replaying the metadata: in-commit timestamps where commits carry them, if the
    # latest one does (else the table does not use them now).
    return read_history(storage, listing, latest, limit, AUTO)


def commit_ict(storage: TableStorage, listing: LogListing, version: int) -> int | None:
    """The in-commit timestamp of commit ``version`` (``None``: it has none, or it is gone)."""
    status = listing.commits.get(version)
    if status is None:
        return None
    try:
        data = storage.read_log_file(status.name)
    except LogFileNotFoundError:
        return None
    info = find_commit_info(data, version, storage.log_file(status.name))
    return None if info is None else info.in_commit_timestamp
