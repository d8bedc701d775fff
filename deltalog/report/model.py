"""Everything the report shows about a table, gathered once: :func:`build_report`.

The numbers come from the same calls a user makes: ``DeltaTable.history()`` for the commits
(their actions read from the commit files), ``DeltaTable.files(flatten_stats=True)`` for the
live files, ``check_table`` for the findings. The page renders this model and nothing else,
and ``--json`` prints it, so what a test reads back from the page can be compared with those
calls directly.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import deltalog
from deltalog.check import CheckReport, check_table
from deltalog.errors import InvalidInputError
from deltalog.log.segment import list_log
from deltalog.log.storage import TableStorage
from deltalog.logstores.options import redact_uri
from deltalog.protocol.config import property_value
from deltalog.report.commits import CommitSummary, summarize_commits
from deltalog.report.files import DEFAULT_SMALL_FILE_SIZE, FileSummary, summarize_files
from deltalog.report.health import (
    CheckpointHealth,
    RetentionHealth,
    checkpoint_health,
    retention_health,
)
from deltalog.table import DeltaTable

#: Commits the timeline shows unless asked otherwise.
DEFAULT_COMMITS = 100
#: Findings listed on the page (the counts cover them all).
MAX_FINDINGS = 200


@dataclass(frozen=True)
class Writer:
    """An engine that wrote commits of the timeline (``engineInfo``) and how many."""

    engine: str
    commits: int
    first_version: int
    last_version: int


@dataclass
class TableReport:
    """What the report shows about one table (see :func:`build_report`).

    Attributes:
        table: The table's location (credentials in it redacted).
        version: The version reported.
        timestamp: Its commit time (ms).
        generated_at: When the report was made (ms).
        deltalog_version: The deltalog that made it.
        name: The table's name, if it has one.
        protocol: Reader and writer versions and features.
        partition_columns: The partition columns.
        configuration: The table properties.
        commits: The timeline, oldest first.
        commits_total: Commits in the log (the timeline may show fewer).
        writers: Engines that wrote the timeline's commits.
        files: The live files.
        checkpoints: The checkpoint panel.
        retention: The retention panel.
        check: ``check``'s findings (``None``: not run).
    """

    table: str
    version: int
    timestamp: int
    generated_at: int
    deltalog_version: str
    name: str | None
    protocol: dict[str, Any]
    partition_columns: list[str]
    configuration: dict[str, str | None]
    commits: list[CommitSummary]
    commits_total: int
    writers: list[Writer]
    files: FileSummary
    checkpoints: CheckpointHealth
    retention: RetentionHealth
    check: CheckReport | None = None

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object (``deltalog report --json``)."""
        return {
            "table": self.table,
            "version": self.version,
            "timestamp": self.timestamp,
            "generated_at": self.generated_at,
            "deltalog_version": self.deltalog_version,
            "name": self.name,
            "protocol": self.protocol,
            "partition_columns": self.partition_columns,
            "configuration": self.configuration,
            "commits_total": self.commits_total,
            "commits": [c.to_json() for c in self.commits],
            "writers": [w.__dict__ for w in self.writers],
            "files": self.files.to_json(),
            "checkpoints": self.checkpoints.to_json(),
            "retention": self.retention.to_json(),
            "check": None if self.check is None else self.check.to_json(),
        }


def _writers(commits: list[CommitSummary]) -> list[Writer]:
    counts = Counter(c.engine for c in commits)
    out = []
    for engine, n in counts.most_common():
        versions = [c.version for c in commits if c.engine == engine]
        out.append(Writer(engine, n, min(versions), max(versions)))
    return out


def small_file_size(configuration: Mapping[str, str | None]) -> int:
    """Files below this count as small: a quarter of ``delta.targetFileSize`` if set."""
    target = property_value(configuration, "delta.targetFileSize")
    try:
        return max(int(target) // 4, 1) if target else DEFAULT_SMALL_FILE_SIZE
    except ValueError:
        return DEFAULT_SMALL_FILE_SIZE


def build_report(
    uri: str,
    storage_options: Mapping[str, str] | None = None,
    *,
    commits: int = DEFAULT_COMMITS,
    small_file_size_bytes: int | None = None,
    check: bool = True,
    data_files: bool = True,
    now_ms: int | None = None,
) -> TableReport:
    """Gather the report of the latest version of the table at ``uri``.

    Args:
        uri: The table location.
        storage_options: Options for the log store.
        commits: How many of the newest commits the timeline reads.
        small_file_size_bytes: Files below this size count as small (default: a quarter of
            ``delta.targetFileSize``, else 32 MiB).
        check: Run ``check`` for the findings panel.
        data_files: Let ``check`` look at the data files (existence, sizes, orphans).
        now_ms: The time retention is measured from (default: now).

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        InvalidInputError: ``commits`` or ``small_file_size_bytes`` is not positive.
    """
    if isinstance(commits, bool) or not isinstance(commits, int) or commits < 1:
        raise InvalidInputError(f"commits must be a positive integer, not {commits!r}")
    if small_file_size_bytes is not None and (
        isinstance(small_file_size_bytes, bool)
        or not isinstance(small_file_size_bytes, int)
        or small_file_size_bytes < 1
    ):
        raise InvalidInputError(
            f"the small-file size must be a positive integer, not {small_file_size_bytes!r}"
        )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    table = DeltaTable(uri, storage_options=storage_options)
    storage = TableStorage.open(uri, storage_options)
    snapshot = table.snapshot
    listing = list_log(storage, use_hint=False)
    history = table.history(commits)
    config = dict(snapshot.configuration)
    threshold = small_file_size_bytes or small_file_size(config)
    timeline = summarize_commits(storage, listing, history, snapshot.partition_columns)
    files = summarize_files(
        table.files(with_stats=False, flatten_stats=True), snapshot.partition_columns, threshold
    )
    p = snapshot.protocol
    return TableReport(
        table=redact_uri(table.uri),
        version=snapshot.version,
        timestamp=snapshot.timestamp,
        generated_at=now,
        deltalog_version=deltalog.__version__,
        name=snapshot.metadata.name,
        protocol={
            "minReaderVersion": p.min_reader_version,
            "minWriterVersion": p.min_writer_version,
            "readerFeatures": p.reader_features,
            "writerFeatures": p.writer_features,
        },
        partition_columns=list(snapshot.partition_columns),
        configuration=config,
        commits=timeline,
        commits_total=len([v for v in listing.commits if v <= snapshot.version]),
        writers=_writers(timeline),
        files=files,
        checkpoints=checkpoint_health(listing, snapshot),
        retention=retention_health(storage, listing, snapshot, now),
        check=check_table(uri, storage_options, data_files=data_files) if check else None,
    )
