"""Black-box check that log cleanup never eats an acknowledged commit (issue 29, item 1).

Writer processes append to one table whose log cleanup runs after every checkpoint with no
retention (``delta.logRetentionDuration=interval 0 seconds``, ``delta.checkpointInterval=2``),
the setting in which a commit used to be created below a fresh checkpoint that did not hold it:
acknowledged, and lost. Each writer uploads one real one-row Parquet file per append, commits it
as a blind append through a transaction, and records the version it was told. Afterwards:

* no version was acknowledged twice;
* every acknowledged append's file is live in a freshly opened table;
* ``check_table`` (what ``deltalog check`` runs) finds neither error nor warning.

Used by ``tests/write/test_cleanup_race.py`` (small runs) and ``scripts/cleanup_race.py`` (the
acceptance runs: 4 x 300 on local disk, 2 x 100 on S3).
"""

from __future__ import annotations

import io
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from spawned import run_writers

from deltalog import (
    AddFile,
    CommitFailedError,
    CommitStatusUnknownError,
    DeltaTable,
    VersionNotFoundError,
    check_table,
)

SCHEMA = pa.schema([("x", pa.int64())])
CONFIGURATION = {
    "delta.logRetentionDuration": "interval 0 seconds",
    "delta.checkpointInterval": "2",
}
BARRIER_TIMEOUT = 120.0
#: Times one append is re-run after a commit error that says nothing was written.
RERUNS = 5


class Ack(NamedTuple):
    """One append a writer was told landed."""

    writer: int
    seq: int
    path: str
    version: int


class Report(NamedTuple):
    """What one writer process sends back."""

    writer: int
    acks: list[Ack]
    errors: list[str]
    unknown: list[str]
    crashed: str | None


@dataclass
class Outcome:
    """The verdict on one run."""

    acknowledged: int = 0
    missing: list[str] = field(default_factory=list)
    twice: dict[int, int] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    unknown: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    version: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Nothing acknowledged is missing or doubled, and ``check`` is clean."""
        return not (self.missing or self.twice or self.findings)

    def line(self) -> str:
        """One line for people."""
        return (
            f"acknowledged={self.acknowledged} missing={len(self.missing)} "
            f"acknowledged-twice={len(self.twice)} check-findings={len(self.findings)} "
            f"commit-errors={dict(self.errors)} status-unknown={len(self.unknown)} "
            f"final-version={self.version} seconds={self.seconds:.1f}"
        )


def _parquet(writer: int, seq: int) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array([writer * 100_000 + seq], pa.int64())}), buf)
    return buf.getvalue()


def _append(table: DeltaTable, writer: int, seq: int) -> tuple[str, int]:
    """Upload one file and commit it as a blind append; (path, version)."""
    path = f"w{writer}-{seq:05d}.parquet"
    data = _parquet(writer, seq)
    storage = table._storage
    storage.store.write(storage.data_file(path), data, overwrite=True)
    add = AddFile(path, {}, len(data), int(time.time() * 1000), True, '{"numRecords":1}')
    for attempt in range(RERUNS + 1):
        tx = table.transaction("WRITE", parameters={"mode": "Append"})
        tx.add(add)
        try:
            return path, tx.commit()
        except CommitStatusUnknownError:
            raise
        except CommitFailedError as exc:
            if not exc.retryable or attempt == RERUNS:
                raise
            _update(table)
    raise AssertionError("unreachable")


def _update(table: DeltaTable) -> None:
    """``table.update()``, again while log cleanup deletes the files it reads."""
    for attempt in range(RERUNS + 1):
        try:
            table.update()
            return
        except VersionNotFoundError:
            if attempt == RERUNS:
                raise


def _child(
    uri: str,
    options: dict[str, str],
    writer: int,
    barrier: Any,
    results: Any,
    appends: int,
) -> None:
    """Writer process entry (module level, so that ``spawn`` can import it)."""
    acks: list[Ack] = []
    errors: list[str] = []
    unknown: list[str] = []
    crashed = None
    try:
        table = DeltaTable(uri, storage_options=options)
        barrier.wait(timeout=BARRIER_TIMEOUT)
        for seq in range(appends):
            try:
                path, version = _append(table, writer, seq)
            except CommitStatusUnknownError as exc:
                unknown.append(f"w{writer}-{seq:05d}: {exc}"[:300])
                continue
            except CommitFailedError as exc:
                errors.append(type(exc).__name__)
                continue
            acks.append(Ack(writer, seq, path, version))
        table.wait_for_checkpoints(timeout=120)
    except BaseException:  # reported to the parent; aborting releases writers at the barrier
        barrier.abort()
        crashed = traceback.format_exc()
    results.put(Report(writer, acks, errors, unknown, crashed))


def run(
    uri: str,
    options: dict[str, str] | None = None,
    *,
    writers: int = 4,
    appends: int = 300,
    timeout: float = 600.0,
) -> Outcome:
    """Create the table at ``uri``, run the writers, and judge the result."""
    options = dict(options or {})
    started = time.perf_counter()
    DeltaTable.create(uri, SCHEMA, configuration=CONFIGURATION, storage_options=options)
    reports = run_writers(
        _child,
        lambda w, barrier, results: (uri, options, w, barrier, results, appends),
        writers,
        timeout,
    )
    out = Outcome()
    acks = [a for r in reports for a in r.acks]
    out.acknowledged = len(acks)
    for r in reports:
        out.errors.update(r.errors)
        out.unknown += r.unknown
    per_version = Counter(a.version for a in acks)
    out.twice = {v: n for v, n in per_version.items() if n > 1}
    table = DeltaTable(uri, storage_options=options)
    out.version = table.version()
    live = set(table.files(with_stats=False).column("path").to_pylist())
    out.missing = sorted(a.path for a in acks if a.path not in live)
    report = check_table(uri, storage_options=options)
    out.findings = [
        f"{f.severity} {f.code} v{f.version}: {f.message}"
        for f in report.findings
        if f.severity != "info"
    ]
    out.seconds = time.perf_counter() - started
    return out
