"""In-commit timestamps (the ``inCommitTimestamp`` writer feature): writing and reading them.

When ``delta.enableInCommitTimestamps`` is ``true``, every commit's ``commitInfo`` is its first
action and carries ``inCommitTimestamp``: the larger of the writer's clock and one millisecond
after the previous commit's timestamp (for the commit that enables the feature, the previous
commit file's modification time). A commit that enables the feature on a table with older
commits records where the in-commit timestamps start in ``delta.inCommitTimestampEnablementVersion``
and ``delta.inCommitTimestampEnablementTimestamp``.

Readers take a version's commit time from its ``inCommitTimestamp`` from the enablement version
on, and from the commit file's modification time before it (:func:`commit_time_source`,
:func:`version_at`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from deltalog.log.clock import now_ms
from deltalog.protocol.actions import Action, CommitInfo, Metadata

ENABLE = "delta.enableInCommitTimestamps"
ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"


def enabled(metadata: Metadata) -> bool:
    """Whether the metadata turns in-commit timestamps on."""
    return str(metadata.configuration.get(ENABLE, "false")).lower() == "true"


def enablement_version(metadata: Metadata) -> int:
    """The first version with in-commit timestamps (0 when enabled at creation).

    Only meaningful while :func:`enabled`; an unparsable property counts as 0.
    """
    value = metadata.configuration.get(ENABLEMENT_VERSION)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def next_timestamp(previous: int) -> int:
    """The in-commit timestamp of a commit after one committed at ``previous`` (ms)."""
    return max(now_ms(), previous + 1)


def stamp(info: CommitInfo, timestamp: int) -> CommitInfo:
    """``info`` with ``inCommitTimestamp`` (and, as delta-spark writes, that ``timestamp``)."""
    body = {k: v for k, v in info.extra.items() if k != "inCommitTimestamp"}
    body["timestamp"] = timestamp
    return dataclasses.replace(info, extra={"inCommitTimestamp": timestamp, **body})


def with_enablement(previous: Metadata, new: Metadata, version: int, timestamp: int) -> Metadata:
    """``new`` with the enablement properties, when it turns the feature on at ``version`` > 0.

    A commit that enables in-commit timestamps on a table with older commits records its
    version and in-commit timestamp; one that disables them drops both properties.
    """
    if not enabled(new):
        if ENABLEMENT_VERSION in new.configuration or ENABLEMENT_TIMESTAMP in new.configuration:
            config = {
                k: v
                for k, v in new.configuration.items()
                if k not in (ENABLEMENT_VERSION, ENABLEMENT_TIMESTAMP)
            }
            return dataclasses.replace(new, configuration=config)
        return new
    if enabled(previous) or version == 0:
        return new
    config = dict(new.configuration)
    config[ENABLEMENT_VERSION] = str(version)
    config[ENABLEMENT_TIMESTAMP] = str(timestamp)
    return dataclasses.replace(new, configuration=config)


def latest_timestamp(actions: Sequence[Action], fallback: int) -> int:
    """A commit's in-commit timestamp, or ``fallback`` (its file time) when it has none."""
    for action in actions:
        if isinstance(action, CommitInfo) and action.in_commit_timestamp is not None:
            return action.in_commit_timestamp
    return fallback


def commit_time_source(metadata: Metadata | None) -> int | None:
    """From which version on commit times are in-commit timestamps (``None``: never)."""
    if metadata is None or not enabled(metadata):
        return None
    return enablement_version(metadata)


def version_at(
    timestamp: int,
    file_times: Mapping[int, int],
    ict_from: int | None,
    ict_of: Callable[[int], int | None],
) -> int | None:
    """The latest version committed at or before ``timestamp``, or ``None`` if none.

    Args:
        timestamp: The time to travel to (ms).
        file_times: Each listed commit's monotonic file modification time.
        ict_from: First version whose commit time is its in-commit timestamp (``None``: none).
        ict_of: Reads one version's in-commit timestamp (binary search reads O(log n) commits).
    """
    versions = sorted(file_times)
    ict_versions = [v for v in versions if ict_from is not None and v >= ict_from]
    if ict_versions:
        first = ict_of(ict_versions[0])
        if first is not None and timestamp >= first:
            lo, hi = 0, len(ict_versions) - 1  # ICTs increase strictly with the version
            while lo < hi:
                mid = (lo + hi + 1) // 2
                ts = ict_of(ict_versions[mid])
                if ts is not None and ts <= timestamp:
                    lo = mid
                else:
                    hi = mid - 1
            return ict_versions[lo]
    before = [
        v for v in versions if (ict_from is None or v < ict_from) and file_times[v] <= timestamp
    ]
    return max(before) if before else None
