"""VACUUM and its fence when log cleanup removes the commits they would read (issue 29 review).

With a short ``delta.logRetentionDuration`` the commits a reader follows past its snapshot can
be gone by the time it reads them. Each test runs one interleaving exactly, through a seam:

* a blind append moved to the head past a whole vacuum, or a delta-spark ``VACUUM START``;
* the vacuum's read before its deletes meeting a gap (it used to stop there, seeing nothing);
* ``VACUUM START`` losing a race while cleanup runs (it used to land below a checkpoint, where
  no writer sees the fence), or landing although its store answered "taken";
* ``VACUUM END`` after cleanup passed the vacuum's snapshot, or failing for good.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from tableutil import write_commit, write_parquet

import deltalog.write.info_commit
from deltalog import (
    ConcurrentVacuumError,
    DeltaTable,
    RetryPolicy,
    SnapshotExpiredError,
    StorageError,
    VacuumEndError,
)
from deltalog.log.log_tail import commits_from
from deltalog.log.storage import TableStorage
from deltalog.logstores import LocalLogStore
from deltalog.maintenance.vacuum_lease import VacuumLease
from deltalog.write import vacuum_fence as fence

SCHEMA = pa.schema([("id", pa.int64())])
NO_LOG_RETENTION = {"delta.logRetentionDuration": "interval 0 seconds"}
DAY_S = 86_400
_names = itertools.count()


def _rows(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def _table(root: Path) -> None:
    table = DeltaTable.create(str(root), SCHEMA, configuration=NO_LOG_RETENTION)
    table.append_files([write_parquet(root, "live.parquet", _rows(1))])


def _old(root: Path, name: str = "old.parquet") -> str:
    """A Parquet file last modified 30 days ago (existing data to register)."""
    write_parquet(root, name, _rows(7))
    stamp = time.time() - 30 * DAY_S
    os.utime(root / name, (stamp, stamp))
    return name


def _others_move_on(root: Path, commits: int = 1) -> list[str]:
    """Other writers append, checkpoint and clean the log up; the commit files deleted."""
    other = DeltaTable(str(root), background_checkpoints=False)
    for _ in range(commits):
        other.append_files([write_parquet(root, f"other{next(_names)}.parquet", _rows(2))])
    other = DeltaTable(str(root), background_checkpoints=False)
    other.checkpoint()
    return [n for n in other.cleanup_log() if n.endswith(".json")]


def _missing_live(root: Path) -> list[str]:
    paths = DeltaTable(str(root)).files().column("path").to_pylist()
    return [p for p in paths if not (root / p).exists()]


def _history_ops(root: Path) -> list[str]:
    return [h["operation"] for h in reversed(DeltaTable(str(root)).history())]


def _fence(root: Path) -> Any:
    return DeltaTable(str(root)).snapshot.txns.get(fence.APP_ID)


@dataclass
class Hooks:
    """Callbacks run once each at a seam, in order."""

    pending: list[Callable[[], None]] = field(default_factory=list)

    def run(self) -> None:
        while self.pending:
            self.pending.pop(0)()


@pytest.fixture
def before_sync(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hooks]:
    """Hooks run before the vacuum reads the log ahead of its deletes (after START landed)."""
    hooks, real = Hooks(), VacuumLease.sync

    def sync(self: VacuumLease) -> None:
        hooks.run()
        real(self)

    monkeypatch.setattr(VacuumLease, "sync", sync)
    yield hooks


@pytest.fixture
def before_delete(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hooks]:
    """Hooks run inside the delete call of the first batch: after the vacuum's last read."""
    hooks, real = Hooks(), LocalLogStore.delete_many

    def delete_many(self: LocalLogStore, paths: Any) -> None:
        hooks.run()
        real(self, paths)

    monkeypatch.setattr(LocalLogStore, "delete_many", delete_many)
    yield hooks


def _start_loses_to(monkeypatch: pytest.MonkeyPatch, writer: Callable[[], None]) -> None:
    """``writer`` commits right before VACUUM START's first attempt, taking its version."""
    real, done = deltalog.write.info_commit.try_write, []

    def try_write(storage: TableStorage, version: int, data: bytes, **kw: Any) -> bool:
        if b"VACUUM START" in data and not done:
            done.append(writer())
        return real(storage, version, data, **kw)

    monkeypatch.setattr(deltalog.write.info_commit, "try_write", try_write)


class _DuringBackoff(RetryPolicy):
    """A retry policy whose first back-off runs ``during`` (the seam between two attempts)."""

    def __init__(self, during: Callable[[], None]) -> None:
        super().__init__()
        object.__setattr__(self, "_during", [during])

    def delay(self, attempt: int) -> float:
        pending = self._during  # type: ignore[attr-defined]
        if pending:
            pending.pop()()
        return 0.0


# ---------------------------------------------------------------------------- the read
def test_reading_to_the_head_tells_the_head_from_a_cleanup_gap(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)  # versions 0 and 1
    storage = TableStorage.open(str(root))

    def versions(start: int, gaps_possible: bool = True) -> list[int]:
        return [v for v, _, _ in commits_from(storage, start, gaps_possible=gaps_possible)]

    assert versions(0) == [0, 1] and versions(2) == []  # 2 is missing: the head
    assert _others_move_on(root) == [f"{v:020d}.json" for v in (0, 1)]  # checkpoint 2
    with pytest.raises(SnapshotExpiredError, match="log cleanup removed it"):
        versions(1)
    assert versions(1, gaps_possible=False) == []  # unchecked, the gap looks like the head
    assert versions(2) == [2]


# ---------------------------------------------------------------------------- finding 1
def test_a_blind_append_does_not_move_past_a_vacuum_cleanup_removed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root)
    tx = DeltaTable(str(root)).transaction()
    tx.add(old)  # in flight on version 1
    result = DeltaTable(str(root)).vacuum(dry_run=False)  # START 2, deletes the orphan, END 3
    assert result.files == [str(root / old)]
    assert "00000000000000000003.json" in _others_move_on(root)  # 4, checkpoint, cleanup
    with pytest.raises(ConcurrentVacuumError) as info:
        tx.commit()
    assert info.value.winning_version == 4 and info.value.path == old
    assert info.value.cutoff_ms == result.delete_before_ms
    assert _missing_live(root) == []
    assert DeltaTable(str(root)).version() == 4


def test_a_blind_append_does_not_move_past_removed_commits_with_old_files(
    tmp_path: Path,
) -> None:
    """The removed commits may hold delta-spark's VACUUM START, which sets no fence."""
    root = tmp_path / "t"
    _table(root)
    old, young = _old(root), write_parquet(root, "young.parquet", _rows(3))
    with_old, with_young = DeltaTable(str(root)).transaction(), DeltaTable(str(root)).transaction()
    with_old.add(old)
    with_young.add(young)
    params = {"retentionCheckEnabled": "true", "defaultRetentionMillis": str(7 * DAY_S * 1000)}
    info = {"timestamp": int(time.time() * 1000), "operation": "VACUUM START",
            "operationParameters": params, "engineInfo": "Apache-Spark Delta-Lake"}  # fmt: skip
    write_commit(root, 2, [orjson.dumps({"commitInfo": info})])
    assert "00000000000000000002.json" in _others_move_on(root)
    with pytest.raises(SnapshotExpiredError, match=r"old\.parquet was last modified before"):
        with_old.commit()
    assert with_young.commit() == 4  # a young file is safe from such a vacuum: it moves on
    assert sorted(DeltaTable(str(root)).files().column("path").to_pylist()) == sorted(
        ["live.parquet", young, *(p for p in os.listdir(root) if p.startswith("other"))]
    )


# ---------------------------------------------------------------------------- finding 2
def test_the_vacuums_read_over_a_cleanup_gap_keeps_what_the_head_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before_sync: Hooks
) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root)
    registered: list[int] = []
    _start_loses_to(
        monkeypatch, lambda: registered.append(DeltaTable(str(root)).append_files([old]))
    )
    removed: list[list[str]] = []
    before_sync.pending.append(lambda: removed.append(_others_move_on(root)))
    result = DeltaTable(str(root)).vacuum(dry_run=False)
    assert registered == [2] and result.start_version == 3
    assert "00000000000000000002.json" in removed[0]  # the commit that registered old.parquet
    assert result.files == [] and result.skipped == [str(root / old)]
    assert _missing_live(root) == []
    assert not fence.is_running(_fence(root))


# ---------------------------------------------------------------------------- finding 3
def test_vacuum_start_losing_a_race_during_cleanup_is_not_orphaned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before_delete: Hooks
) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root)
    young = write_parquet(root, "young.parquet", _rows(2))
    _start_loses_to(monkeypatch, lambda: DeltaTable(str(root)).append_files([young]))  # 2
    removed: list[list[str]] = []
    vacuum = DeltaTable(
        str(root), retry=_DuringBackoff(lambda: removed.append(_others_move_on(root)))
    )
    refused: list[ConcurrentVacuumError] = []

    def writer() -> None:  # after the vacuum's last read: only the fence in its snapshot helps
        with pytest.raises(ConcurrentVacuumError) as info:
            DeltaTable(str(root)).append_files([old])
        refused.append(info.value)

    before_delete.pending.append(writer)
    result = vacuum.vacuum(dry_run=False)
    assert "00000000000000000002.json" in removed[0]  # START's version was cleaned up
    assert result.start_version == 4  # after the head (checkpoint 3), not at 2 below it
    assert refused[0].winning_version == 4
    assert result.files == [str(root / old)]  # never committed: an orphan, deleted
    assert _missing_live(root) == []
    assert _history_ops(root)[-2:] == ["VACUUM START", "VACUUM END"]
    assert not fence.is_running(_fence(root))


def test_vacuum_start_that_landed_although_the_store_said_taken_is_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _table(root)
    dead = _old(root, "dead.parquet")
    real, lied = deltalog.write.info_commit.try_write, []

    def try_write(storage: TableStorage, version: int, data: bytes, **kw: Any) -> bool:
        landed = real(storage, version, data, **kw)
        if b"VACUUM START" in data and not lied:  # a retried conditional PUT: "taken"
            lied.append(version)
            return False
        return landed

    monkeypatch.setattr(deltalog.write.info_commit, "try_write", try_write)
    result = DeltaTable(str(root)).vacuum(dry_run=False)
    assert lied == [2] and result.start_version == 2 and result.end_version == 3
    assert result.files == [str(root / dead)]
    assert _history_ops(root)[-2:] == ["VACUUM START", "VACUUM END"]
    assert not fence.is_running(_fence(root))  # its own fence, ended


# ---------------------------------------------------------------------------- finding 4
def test_vacuum_end_after_cleanup_passed_the_vacuums_snapshot(
    tmp_path: Path, before_delete: Hooks
) -> None:
    root = tmp_path / "t"
    _table(root)
    dead = _old(root, "dead.parquet")
    removed: list[list[str]] = []
    before_delete.pending.append(lambda: removed.append(_others_move_on(root, commits=2)))
    result = DeltaTable(str(root)).vacuum(dry_run=False)  # START 2; others 3, 4, checkpoint 4
    assert "00000000000000000003.json" in removed[0]
    assert result.files == [str(root / dead)]
    assert (result.start_version, result.end_version) == (2, 5)
    assert _history_ops(root)[-1] == "VACUUM END"
    assert not fence.is_running(_fence(root))


def test_vacuum_end_that_fails_says_what_was_deleted_and_that_the_fence_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _table(root)
    dead = _old(root, "dead.parquet")
    real = deltalog.write.info_commit.try_write

    def try_write(storage: TableStorage, version: int, data: bytes, **kw: Any) -> bool:
        if b"VACUUM END" in data:
            raise StorageError(f"cannot write commit {version}: throttled")
        return real(storage, version, data, **kw)

    monkeypatch.setattr(deltalog.write.info_commit, "try_write", try_write)
    with pytest.raises(VacuumEndError) as info:
        DeltaTable(str(root)).vacuum(dry_run=False)
    error = info.value
    assert error.files == [str(root / dead)] and not (root / dead).exists()
    assert error.start_version == 2 and isinstance(error.__cause__, StorageError)
    message = str(error)
    assert "deleted 1 file(s)" in message and "throttled" in message
    assert "still shows this vacuum running" in message and "nothing was written" not in message
    running = _fence(root)
    assert fence.is_running(running)
    assert error.lease_until_ms == fence.lease_end(running)
