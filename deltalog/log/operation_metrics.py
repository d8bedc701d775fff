"""What a commit's ``operationMetrics`` say, under the names each engine gives them.

delta-spark, delta-rs and deltalog record an operation's counts in ``commitInfo`` under
names that differ by engine and operation (``numFiles`` for a WRITE, ``numAddedFiles`` for a
DELETE, ``numTargetFilesAdded`` for a MERGE, ``numFilesAdded`` for delta-rs's OPTIMIZE, ...),
mostly as strings. :func:`summarize` reads the few that describe every commit alike: files
and bytes added to and removed from the table, rows written. (VACUUM's ``numDeletedFiles``
counts files deleted from storage, which the table had already removed: it is not one.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Summary field -> metric names that carry it, the first present wins.
NAMES: dict[str, tuple[str, ...]] = {
    "files_added": (
        "numAddedFiles",
        "numFiles",
        "numTargetFilesAdded",
        "numFilesAdded",
    ),
    "files_removed": (
        "numRemovedFiles",
        "numTargetFilesRemoved",
        "numFilesRemoved",
    ),
    "rows": ("numOutputRows", "numAddedRows", "numTargetRowsInserted"),
    "bytes_added": ("numAddedBytes", "numOutputBytes", "numTargetBytesAdded"),
    "bytes_removed": ("numRemovedBytes", "numTargetBytesRemoved"),
}


@dataclass(frozen=True)
class MetricsSummary:
    """The counts a commit recorded (``None``: it recorded none under a known name)."""

    files_added: int | None = None
    files_removed: int | None = None
    rows: int | None = None
    bytes_added: int | None = None
    bytes_removed: int | None = None


def _count(value: Any) -> int | None:
    """A metric as an integer: delta-spark logs them as strings, delta-rs as numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def summarize(metrics: Mapping[str, Any] | None) -> MetricsSummary:
    """The known counts among a commit's ``operationMetrics``."""
    if not isinstance(metrics, Mapping):
        return MetricsSummary()
    found: dict[str, int | None] = {}
    for name, keys in NAMES.items():
        found[name] = next(
            (n for n in (_count(metrics.get(k)) for k in keys if k in metrics) if n is not None),
            None,
        )
    return MetricsSummary(**found)
