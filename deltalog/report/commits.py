"""The report's timeline: what each of the newest commits did, from its own actions.

``operationMetrics`` are whatever a writer chose to record (some record none); the file
actions are the truth. Each commit file of the timeline is read once: its ``add`` and
``remove`` actions counted and summed (through the columnar commit parser, falling back to the
exact one), and joined with its history entry (operation, timestamp, engine, metrics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.log.commit_parser import parse_commits
from deltalog.log.operation_metrics import summarize
from deltalog.log.segment import LogListing
from deltalog.log.storage import TableStorage
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.actions import AddFile, RemoveFile, parse_actions


@dataclass(frozen=True)
class CommitSummary:
    """One commit of the timeline.

    Attributes:
        version: The commit's version.
        timestamp: Its time in ms, as ``DeltaTable.history()`` gives it.
        operation: The operation its ``commitInfo`` names (``-`` without one).
        engine: The writer's ``engineInfo`` (``-`` when not recorded).
        files_added: ``add`` actions in the commit.
        bytes_added: Their total size.
        files_removed: ``remove`` actions in the commit.
        bytes_removed: The total size of those that record one.
        removes_without_size: ``remove`` actions without a size.
        deletion_vectors_added: ``add`` actions carrying a deletion vector.
        data_change: Whether any file action changed data (``False`` for a compaction).
        rows: Rows written, from ``operationMetrics`` (``None``: not recorded).
        read_version: The version the writer read (``readVersion``), when recorded.
        rebased_over: Commits that landed between the writer's read and its commit (a
            transaction that lost races retried on top of them), when ``readVersion`` says.
        parameters: ``operationParameters``.
        metrics: ``operationMetrics`` as recorded.
    """

    version: int
    timestamp: int | None
    operation: str
    engine: str
    files_added: int = 0
    bytes_added: int = 0
    files_removed: int = 0
    bytes_removed: int = 0
    removes_without_size: int = 0
    deletion_vectors_added: int = 0
    data_change: bool = False
    rows: int | None = None
    read_version: int | None = None
    rebased_over: int | None = None
    parameters: Mapping[str, Any] | None = None
    metrics: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The summary as a JSON object."""
        return asdict(self)


@dataclass
class _Counts:
    files_added: int = 0
    bytes_added: int = 0
    files_removed: int = 0
    bytes_removed: int = 0
    removes_without_size: int = 0
    deletion_vectors_added: int = 0
    data_change: bool = False


def _sum(column: pa.ChunkedArray) -> int:
    total = pc.sum(column).as_py() if len(column) else 0
    return int(total or 0)


def _counts(version: int, data: bytes, partition_columns: Sequence[str]) -> _Counts:
    parsed = parse_commits([(version, data)], partition_columns)
    if parsed is not None:
        adds, removes = parsed.adds, parsed.removes
        changes = pc.any(adds.column("data_change")).as_py() if adds.num_rows else False
        if removes.num_rows:
            changes = changes or bool(pc.any(removes.column("data_change")).as_py())
        return _Counts(
            files_added=adds.num_rows,
            bytes_added=_sum(adds.column("size")),
            files_removed=removes.num_rows,
            bytes_removed=_sum(removes.column("size")),
            removes_without_size=removes.column("size").null_count,
            deletion_vectors_added=adds.num_rows - adds.column("deletion_vector").null_count,
            data_change=bool(changes),
        )
    counts = _Counts()
    for action in parse_actions(data, version=version):
        if isinstance(action, AddFile):
            counts.files_added += 1
            counts.bytes_added += action.size
            counts.deletion_vectors_added += action.deletion_vector is not None
            counts.data_change |= action.data_change
        elif isinstance(action, RemoveFile):
            counts.files_removed += 1
            if action.size is None:
                counts.removes_without_size += 1
            else:
                counts.bytes_removed += action.size
            counts.data_change |= action.data_change
    return counts


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def summarize_commits(
    storage: TableStorage,
    listing: LogListing,
    history: Sequence[Mapping[str, Any]],
    partition_columns: Sequence[str],
) -> list[CommitSummary]:
    """The commits of ``history`` (entries of ``DeltaTable.history()``), oldest first.

    A commit whose file was cleaned up meanwhile is left out.
    """
    out = []
    for entry in sorted(history, key=lambda e: int(e["version"])):
        version = int(entry["version"])
        status = listing.commits.get(version)
        if status is None:
            continue
        try:
            data = storage.read_log_file(status.name)
        except LogFileNotFoundError:
            continue
        counts = _counts(version, data, partition_columns)
        read_version = _int(entry.get("readVersion"))
        metrics = entry.get("operationMetrics")
        out.append(
            CommitSummary(
                version=version,
                timestamp=_int(entry.get("timestamp")),
                operation=str(entry.get("operation") or "-"),
                engine=str(entry.get("engineInfo") or "-"),
                rows=summarize(metrics).rows,
                read_version=read_version,
                rebased_over=None if read_version is None else max(version - read_version - 1, 0),
                parameters=entry.get("operationParameters"),
                metrics=metrics if isinstance(metrics, Mapping) else None,
                **asdict(counts),
            )
        )
    return out
