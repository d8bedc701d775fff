"""VACUUM never deletes a live file, also one a commit registers while it runs.

One deterministic test per interleaving (a seam runs the other writer at the exact point), the
fence's lease, fractional retentions, and a race of real threads (see
``deltalog.maintenance.vacuum``).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from tableutil import dv_json, write_commit, write_parquet

import deltalog.maintenance.vacuum
import deltalog.maintenance.vacuum_lease
import deltalog.write.info_commit
import deltalog.write.transaction
from deltalog import (
    AddFile,
    ConcurrentVacuumError,
    DataFileNotFoundError,
    DeltaTable,
    InvalidInputError,
    RetentionTooShortError,
    SnapshotExpiredError,
)
from deltalog.log.storage import TableStorage
from deltalog.logstores import LocalLogStore
from deltalog.maintenance.vacuum import VacuumResult
from deltalog.maintenance.vacuum_lease import VacuumLease
from deltalog.protocol.deletion_vectors import dv_file_path
from deltalog.write import vacuum_fence as fence

SCHEMA = pa.schema([("id", pa.int64())])
DAY_S = 86_400


def _rows(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def _old(root: Path, name: str, i: int = 7, *, days: float = 30) -> str:
    """A Parquet file last modified ``days`` ago (existing data to register)."""
    write_parquet(root, name, _rows(i))
    stamp = time.time() - days * DAY_S
    os.utime(root / name, (stamp, stamp))
    return name


def _table(root: Path) -> DeltaTable:
    table = DeltaTable.create(str(root), SCHEMA)
    table.append_files([write_parquet(root, "live.parquet", _rows(1))])
    return table


def _missing_live(root: Path) -> list[str]:
    """Live files of the latest version that are not on disk."""
    paths = DeltaTable(str(root)).files().column("path").to_pylist()
    return [p for p in paths if not (root / p).exists()]


def _vacuum(root: Path, **options: Any) -> VacuumResult:
    options.setdefault("dry_run", False)
    return DeltaTable(str(root)).vacuum(**options)


def _history_ops(root: Path) -> list[str]:
    return [h["operation"] for h in reversed(DeltaTable(str(root)).history())]


@pytest.fixture
def on_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Callable[[], None]]]:
    """Hooks run right after ``VACUUM START`` lands (before the vacuum reads the log again).

    The seam is the table's ``on_commit`` callback, which the vacuum calls after each commit.
    """
    hooks: list[Callable[[], None]] = []
    real = DeltaTable._advanced

    def advanced(self: DeltaTable, snapshot: Any, committed: bool) -> None:
        real(self, snapshot, committed)
        log = Path(self.uri.removeprefix("file://")) / "_delta_log"
        first = (log / f"{snapshot.version:020d}.json").read_bytes().split(b"\n")[0]
        if orjson.loads(first).get("commitInfo", {}).get("operation") == "VACUUM START":
            while hooks:
                hooks.pop(0)()

    monkeypatch.setattr(DeltaTable, "_advanced", advanced)
    yield hooks


@pytest.fixture
def before_delete(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Callable[[], None]]]:
    """Hooks run inside the delete call of the first batch: after the vacuum's last read."""
    hooks: list[Callable[[], None]] = []
    real = LocalLogStore.delete_many

    def delete_many(self: LocalLogStore, paths: Any) -> None:
        while hooks:
            hooks.pop(0)()
        real(self, paths)

    monkeypatch.setattr(LocalLogStore, "delete_many", delete_many)
    yield hooks


# ---------------------------------------------------------------------------- (a) and (b)
def test_a_commit_between_snapshot_and_listing_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _table(root)
    name = _old(root, "old.parquet")
    table = DeltaTable(str(root))  # the vacuum's snapshot: version 1
    real = deltalog.maintenance.vacuum.full_candidates

    def listing(*args: Any) -> Any:
        assert DeltaTable(str(root)).append_files([name]) == 2  # registered at version 2
        return real(*args)

    monkeypatch.setattr(deltalog.maintenance.vacuum, "full_candidates", listing)
    result = table.vacuum(dry_run=False)
    assert result.version == 1 and result.start_version == 3
    assert result.files == [] and result.skipped == [str(root / name)]
    assert _missing_live(root) == []
    assert sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == [1, 7]


def test_a_commit_of_another_engine_after_start_is_not_deleted(
    tmp_path: Path, on_start: list[Callable[[], None]]
) -> None:
    """A writer that knows nothing of the fence: only the read before the deletes saves it."""
    root = tmp_path / "t"
    _table(root)
    name = _old(root, "old.parquet")
    dead = _old(root, "dead.parquet")  # never committed: goes

    def foreign_commit() -> None:
        add = {"path": name, "partitionValues": {}, "size": (root / name).stat().st_size,
               "modificationTime": 0, "dataChange": True}  # fmt: skip
        info = {"timestamp": int(time.time() * 1000), "operation": "WRITE"}
        write_commit(root, 3, [orjson.dumps({"commitInfo": info}), orjson.dumps({"add": add})])

    on_start.append(foreign_commit)
    result = _vacuum(root)
    assert result.start_version == 2 and result.end_version == 4
    assert result.files == [str(root / dead)] and result.skipped == [str(root / name)]
    assert _missing_live(root) == []


def test_a_commit_after_start_is_kept_as_delta_spark_reads_its_paths(
    tmp_path: Path, on_start: list[Callable[[], None]]
) -> None:
    """A raw ``?`` in ``add.path``: delta-spark reads the file without the suffix, so it stays."""
    root = tmp_path / "t"
    _table(root)
    name = _old(root, "old.parquet")

    def foreign_commit() -> None:
        add = {"path": f"{name}?v=1", "partitionValues": {}, "size": 1, "modificationTime": 0,
               "dataChange": True}  # fmt: skip
        info = {"timestamp": int(time.time() * 1000), "operation": "WRITE"}
        write_commit(root, 3, [orjson.dumps({"commitInfo": info}), orjson.dumps({"add": add})])

    on_start.append(foreign_commit)
    result = _vacuum(root)
    assert result.files == [] and result.skipped == [str(root / name)]
    assert (root / name).exists()


def test_a_lite_vacuum_keeps_a_removed_file_added_back_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = _table(root)
    name = _old(root, "old.parquet")
    table.append_files([name])
    with table.transaction("DELETE") as tx:
        tx.remove([name])
    later = int((time.time() + 8 * DAY_S) * 1000)  # the remove is past the week
    real = deltalog.maintenance.vacuum._lite_actions

    def lite_actions(*args: Any) -> Any:
        restore = DeltaTable(str(root)).transaction("RESTORE")
        restore.add(name)
        restore.commit()
        return real(*args)

    monkeypatch.setattr(deltalog.maintenance.vacuum, "_lite_actions", lite_actions)
    result = table.vacuum(mode="lite", dry_run=False, now_ms=later)
    assert result.files == [] and result.skipped == [str(root / name)]
    assert _missing_live(root) == []


def test_b_winners_start_lost_to_are_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _table(root)
    name = _old(root, "old.parquet")
    real = deltalog.write.info_commit.try_write
    raced: list[int] = []

    def try_write(storage: TableStorage, version: int, data: bytes, **kw: Any) -> bool:
        if b"VACUUM START" in data and not raced:  # a writer takes START's version first
            raced.append(DeltaTable(str(root)).append_files([name]))
        return real(storage, version, data, **kw)

    monkeypatch.setattr(deltalog.write.info_commit, "try_write", try_write)
    result = _vacuum(root)
    assert raced == [2] and result.start_version == 3
    assert result.files == [] and result.skipped == [str(root / name)]
    assert _missing_live(root) == []


# ---------------------------------------------------------------------------- (c)
def test_c_writer_with_an_older_snapshot_fails_after_start(
    tmp_path: Path, on_start: list[Callable[[], None]]
) -> None:
    root = tmp_path / "t"
    _table(root)
    old, young = _old(root, "old.parquet"), write_parquet(root, "young.parquet", _rows(2))
    writer = DeltaTable(str(root))  # snapshot: version 1, before the vacuum
    refused: list[ConcurrentVacuumError] = []
    versions: list[int] = []

    def commit_old() -> None:
        with pytest.raises(ConcurrentVacuumError) as info:
            writer.append_files([old])
        refused.append(info.value)
        versions.append(writer.append_files([young]))  # a young file is no candidate

    on_start.append(commit_old)
    result = _vacuum(root)
    assert result.files == [str(root / old)]  # never committed: an orphan, deleted
    error = refused[0]
    assert error.winning_version == result.start_version == 2
    assert error.cutoff_ms == result.delete_before_ms and error.retryable
    assert error.path == old and error.winning_operation == "VACUUM START"
    assert versions == [3]
    assert _missing_live(root) == []
    assert _history_ops(root)[-3:] == ["VACUUM START", "WRITE", "VACUUM END"]


def test_c_a_ready_add_action_is_judged_by_the_file_not_its_claim(
    tmp_path: Path, on_start: list[Callable[[], None]]
) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root, "old.parquet")
    add = AddFile(path=old, partition_values={}, size=(root / old).stat().st_size,
                  modification_time=int(time.time() * 1000), data_change=True)  # fmt: skip
    writer = DeltaTable(str(root))
    tx = writer.transaction()
    tx.add(add)

    def commit() -> None:
        with pytest.raises(ConcurrentVacuumError):
            tx.commit()

    on_start.append(commit)
    _vacuum(root)
    assert _missing_live(root) == []


def test_c_a_whole_vacuum_while_the_writer_was_in_flight(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root, "old.parquet")
    tx = DeltaTable(str(root)).transaction()
    tx.add(old)  # described: exists now
    result = _vacuum(root)  # START, deletes the orphan, END
    assert result.files == [str(root / old)]
    with pytest.raises(ConcurrentVacuumError) as info:
        tx.commit()
    assert info.value.winning_version == result.start_version
    assert _missing_live(root) == []


def test_c_delta_spark_vacuum_start_counts_with_its_retention(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    old, young = _old(root, "old.parquet"), _old(root, "young.parquet", days=1)
    first, second = table.transaction(), table.transaction()
    first.add(old)
    second.add(young)
    params = {"retentionCheckEnabled": "true", "defaultRetentionMillis": str(7 * DAY_S * 1000)}
    info = {"timestamp": int(time.time() * 1000), "operation": "VACUUM START",
            "operationParameters": params, "engineInfo": "Apache-Spark Delta-Lake"}  # fmt: skip
    write_commit(root, 2, [orjson.dumps({"commitInfo": info})])
    with pytest.raises(ConcurrentVacuumError):
        first.commit()
    assert second.commit() == 3  # a day old: younger than the week


# ---------------------------------------------------------------------------- (d)
@pytest.mark.parametrize("checkpoint", [False, True])
def test_d_writer_whose_snapshot_holds_start_fails_after_the_last_read(
    tmp_path: Path, before_delete: list[Callable[[], None]], checkpoint: bool
) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root, "old.parquet")
    _old(root, "dead.parquet")
    seen: list[Any] = []

    def writer() -> None:
        if checkpoint:  # hides START's commitInfo: the writer replays no JSON commit
            DeltaTable(str(root)).checkpoint()
        racer = DeltaTable(str(root))
        seen.append(racer.snapshot.checkpoint_version)
        with pytest.raises(ConcurrentVacuumError) as info:
            racer.append_files([old])
        seen.append(info.value)

    before_delete.append(writer)
    result = _vacuum(root)
    assert seen[0] == (2 if checkpoint else None)
    assert seen[1].winning_version == 2 and seen[1].cutoff_ms == result.delete_before_ms
    assert sorted(result.files) == sorted(str(root / n) for n in ("dead.parquet", old))
    assert _missing_live(root) == []
    final = DeltaTable(str(root)).snapshot.txns[fence.APP_ID]
    assert not fence.is_running(final) and fence.cutoff_of(final) == result.delete_before_ms


def test_d_an_add_through_an_alias_of_the_root_is_judged_as_vacuum_resolves_it(
    tmp_path: Path, before_delete: list[Callable[[], None]]
) -> None:
    """The writer's fence and VACUUM agree on what is inside the table: symlinks resolved."""
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    root = tmp_path / "real" / "t"
    _table(root)
    old = _old(root, "old.parquet")
    through_alias = f"file://{tmp_path}/alias/t/{old}"
    add = AddFile(path=through_alias, partition_values={}, size=(root / old).stat().st_size,
                  modification_time=int(time.time() * 1000), data_change=True)  # fmt: skip
    refused: list[ConcurrentVacuumError] = []

    def writer() -> None:  # its snapshot holds VACUUM START
        tx = DeltaTable(str(root)).transaction()
        tx.add(add)
        with pytest.raises(ConcurrentVacuumError) as info:
            tx.commit()
        refused.append(info.value)

    before_delete.append(writer)
    result = _vacuum(root)
    assert refused and refused[0].path == through_alias
    assert result.files == [str(root / old)]  # never committed: an orphan, deleted
    assert DeltaTable(str(root)).files().column("path").to_pylist() == ["live.parquet"]


def test_d_updates_that_add_back_a_file_they_remove_are_not_refused(tmp_path: Path) -> None:
    """A deletion-vector DELETE re-adds an old live file: it removes it too, so it is safe."""
    root = tmp_path / "t"
    config = {"delta.enableDeletionVectors": "true"}
    table = DeltaTable.create(str(root), SCHEMA, configuration=config)
    old = _old(root, "old.parquet")
    table.append_files([old])
    _start_fence(root, 2, last_updated=int(time.time() * 1000))  # a vacuum is running
    table.update()
    dv = dv_json(1)
    dv_file = root / str(dv_file_path(dv))  # written just now: young
    dv_file.parent.mkdir(parents=True, exist_ok=True)
    dv_file.write_bytes(b"dv")
    tx = table.transaction("DELETE")
    (live,) = tx.read_whole_table().to_pylist()
    tx.remove([old])
    tx.add(AddFile(path=old, partition_values={}, size=live["size"],
                   modification_time=live["modification_time"], data_change=True,
                   deletion_vector=dv))  # fmt: skip
    assert tx.commit() == 3
    again = table.transaction()  # a plain re-add of the old file: refused
    again.add(AddFile(path=old, partition_values={}, size=live["size"],
                      modification_time=live["modification_time"], data_change=True))  # fmt: skip
    with pytest.raises(ConcurrentVacuumError):
        again.commit()


# ---------------------------------------------------------------------------- the lease
def _start_fence(root: Path, version: int, *, last_updated: int, cutoff: int | None = None) -> None:
    """A deltalog VACUUM START as a vacuum that then died would leave it."""
    cut = int(time.time() * 1000) if cutoff is None else cutoff
    txn = fence.running_txn(cut, last_updated)
    info = {"timestamp": last_updated, "operation": "VACUUM START", "operationParameters": {}}
    txn_json = {"appId": txn.app_id, "version": txn.version, "lastUpdated": txn.last_updated}
    write_commit(
        root, version, [orjson.dumps({"commitInfo": info}), orjson.dumps({"txn": txn_json})]
    )


def test_a_dead_vacuums_lease_holds_writers_and_vacuums_until_it_runs_out(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    old = _old(root, "old.parquet")
    now = int(time.time() * 1000)
    _start_fence(root, 2, last_updated=now)
    with pytest.raises(ConcurrentVacuumError) as info:
        DeltaTable(str(root)).append_files([old])
    assert info.value.winning_version == 2
    with pytest.raises(ConcurrentVacuumError):
        _vacuum(root)
    assert _vacuum(root, dry_run=True).files == [str(root / old)]  # a dry run deletes nothing
    assert DeltaTable(str(root)).append_files([write_parquet(root, "y.parquet", _rows(3))]) == 3

    dead = now - fence.LEASE_MS - fence.CLOCK_SKEW_MS - 1  # past the lease and the margin
    _start_fence(root, 4, last_updated=dead)
    gone = AddFile(path="gone.parquet", partition_values={}, size=1, modification_time=0,
                   data_change=True)  # fmt: skip
    tx = DeltaTable(str(root)).transaction()
    tx.add(gone)
    with pytest.raises(DataFileNotFoundError):  # the dead vacuum may have deleted it
        tx.commit()
    assert DeltaTable(str(root)).append_files([old]) == 5
    result = _vacuum(root)
    assert result.files == [] and result.start_version == 6
    assert _missing_live(root) == []


def test_a_lease_holds_writers_for_the_clock_margin_after_it_ran_out(tmp_path: Path) -> None:
    """The writer's clock may be ahead of the vacuum's: the lease counts until it is surely out."""
    root = tmp_path / "t"
    _table(root)
    old = _old(root, "old.parquet")
    now = int(time.time() * 1000)
    _start_fence(root, 2, last_updated=now - fence.LEASE_MS - 60_000)  # out by a minute
    with pytest.raises(ConcurrentVacuumError):
        DeltaTable(str(root)).append_files([old])
    with pytest.raises(ConcurrentVacuumError):
        _vacuum(root)
    assert fence.lease_end(DeltaTable(str(root)).snapshot.txns[fence.APP_ID]) == (
        now - 60_000 + fence.CLOCK_SKEW_MS
    )


def test_a_vacuum_deletes_only_while_its_lease_has_time_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before_delete: list[Callable[[], None]]
) -> None:
    """Its read of the log took most of the lease: it renews before deleting, not after."""
    root = tmp_path / "t"
    _table(root)
    old = _old(root, "old.parquet")  # an orphan when the vacuum lists: a candidate
    ahead = [0]  # ms the clock moved on, beyond the real time

    def clock() -> int:
        return int(time.time() * 1000) + ahead[0]

    monkeypatch.setattr(deltalog.maintenance.vacuum_lease, "now_ms", clock)
    monkeypatch.setattr(fence, "now_ms", clock)
    real_sync, slow = VacuumLease.sync, [True]

    def sync(self: VacuumLease) -> None:
        real_sync(self)
        if slow:  # the first read took 14 minutes
            slow.clear()
            ahead[0] += fence.LEASE_MS - 60_000

    def writer() -> None:  # the batch runs on; the lease looks dead to a writer by now
        ahead[0] += 60_000 + fence.CLOCK_SKEW_MS + 1_000
        with pytest.raises(ConcurrentVacuumError):
            DeltaTable(str(root)).append_files([old])

    monkeypatch.setattr(VacuumLease, "sync", sync)
    before_delete.append(writer)
    result = _vacuum(root)
    assert result.files == [str(root / old)]
    assert _missing_live(root) == []
    assert _history_ops(root)[2:] == ["VACUUM START", "VACUUM LEASE", "VACUUM END"]


def test_a_dead_vacuums_fence_costs_no_lookup_of_files_described_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _table(root)
    now = int(time.time() * 1000)
    _start_fence(root, 2, last_updated=now - fence.LEASE_MS - fence.CLOCK_SKEW_MS - 1)
    names = [_old(root, f"old{i}.parquet") for i in range(3)]
    tx = DeltaTable(str(root)).transaction()
    tx.add(names)  # described after the dead vacuum's lease ran out: they existed then
    stats: list[str] = []
    real_stat = LocalLogStore.stat

    def stat(self: LocalLogStore, path: str) -> Any:
        stats.append(path)
        return real_stat(self, path)

    monkeypatch.setattr(LocalLogStore, "stat", stat)
    assert tx.commit() == 3
    assert stats == []
    early = DeltaTable(str(root)).transaction()  # described while that vacuum could still run
    with monkeypatch.context() as m:
        m.setattr(deltalog.write.transaction, "now_ms", lambda: now - fence.LEASE_MS)
        early.add(_old(root, "gone.parquet"))
    (root / "gone.parquet").unlink()  # the vacuum deleted it
    stats.clear()  # (describing it looked it up)
    with pytest.raises(DataFileNotFoundError):
        early.commit()
    assert stats == [str(root / "gone.parquet")]


def test_a_long_vacuum_renews_its_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before_delete: list[Callable[[], None]]
) -> None:
    root = tmp_path / "t"
    _table(root)
    dead = [_old(root, f"dead{i}.parquet") for i in range(3)]
    old = _old(root, "old.parquet")
    monkeypatch.setattr(fence, "RENEW_AFTER_MS", 0)
    monkeypatch.setattr(deltalog.maintenance.vacuum, "_BATCH", 2)
    seen: list[int] = []

    def writer() -> None:
        racer = DeltaTable(str(root))
        seen.append(racer.version())
        with pytest.raises(ConcurrentVacuumError):
            racer.append_files([old])

    before_delete.append(writer)
    result = _vacuum(root)
    assert sorted(result.files) == sorted(str(root / n) for n in [*dead, old])
    assert _history_ops(root)[2:] == ["VACUUM START", "VACUUM LEASE", "VACUUM LEASE", "VACUUM END"]
    assert result.end_version == 5 and seen == [3]  # the renewed lease held the writer
    assert _missing_live(root) == []


def test_a_vacuum_whose_fence_was_taken_over_stops(
    tmp_path: Path, on_start: list[Callable[[], None]]
) -> None:
    root = tmp_path / "t"
    _table(root)
    dead = _old(root, "dead.parquet")
    other = int(time.time() * 1000)
    on_start.append(lambda: _start_fence(root, 3, last_updated=other, cutoff=5))
    with pytest.raises(ConcurrentVacuumError):
        _vacuum(root)
    assert (root / dead).exists()
    snapshot = DeltaTable(str(root)).snapshot
    end = DeltaTable(str(root)).history(limit=1)[0]
    assert end["operation"] == "VACUUM END"
    assert end["operationParameters"] == {"status": "FAILED"}
    assert snapshot.txns[fence.APP_ID].last_updated == other  # not cleared by the loser


def test_the_fence_id_is_reserved(tmp_path: Path) -> None:
    tx = _table(tmp_path / "t").transaction()
    with pytest.raises(InvalidInputError):
        tx.set_transaction(fence.APP_ID, 1)


# ---------------------------------------------------------------------------- retention
def test_a_fractional_retention_is_honoured_to_the_millisecond(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    recent = _old(root, "recent.parquet", days=10 / DAY_S)  # 10 s old: in flight, say
    older = _old(root, "older.parquet", days=60 / DAY_S)
    with pytest.raises(RetentionTooShortError, match=r"\(0\.01 hours\)"):
        _vacuum(root, retention_hours=0.01)
    result = _vacuum(root, retention_hours=0.01, enforce_retention_duration=False)
    assert result.retention_ms == result.specified_retention_ms == 36_000
    assert result.files == [str(root / older)]
    assert (root / recent).exists()
    start = DeltaTable(str(root)).history(limit=2)[1]
    assert start["operationParameters"]["specifiedRetentionMillis"] == "36000"
    assert deltalog.maintenance.vacuum.retention_millis(24) == 24 * 3_600_000
    assert deltalog.maintenance.vacuum.retention_millis(1.5) == 5_400_000


# ---------------------------------------------------------------------------- the race
ROUNDS = int(os.environ.get("DELTALOG_VACUUM_RACE_ROUNDS", "40"))


MODES = ("old-snapshot", "fresh-snapshot", "staged")


def _register(
    root: Path, names: list[str], mode: str, barrier: threading.Barrier, pause: float
) -> str:
    """The racing writer: commits the old files; how that ended.

    ``old-snapshot``: ``append_files`` on a table object from before the vacuum;
    ``fresh-snapshot``: on one made after the pause (its snapshot may hold VACUUM START);
    ``staged``: the files are described before the vacuum starts and committed after the pause.
    """
    table = DeltaTable(str(root))
    tx = table.transaction()
    if mode == "staged":
        tx.add(names)
    barrier.wait(10)
    time.sleep(pause)
    try:
        if mode == "staged":
            tx.commit()
        else:
            (DeltaTable(str(root)) if mode == "fresh-snapshot" else table).append_files(names)
    except ConcurrentVacuumError:
        return "refused"
    except DataFileNotFoundError:  # the vacuum deleted an orphan before it was described
        return "not_found"
    except SnapshotExpiredError:  # log cleanup passed its snapshot, and it may not move on
        return "expired"
    return "committed"


def race_rounds(
    root: Path, rounds: int, configuration: dict[str, str] | None = None, **options: Any
) -> dict[str, int]:
    """VACUUM and a commit of 30-day-old files started together, ``rounds`` times.

    The writer takes one of :data:`MODES` at random, and a random pause of up to 20 ms that
    spreads where its commit lands (it synchronises nothing). Counts outcomes, and live files
    that are gone at the end (and the oldest commit left, which shows whether log cleanup ran).
    """
    DeltaTable.create(str(root), SCHEMA, configuration=configuration)
    counts = {"committed": 0, "refused": 0, "not_found": 0, "expired": 0, "deleted": 0}
    counts["skipped"] = 0
    rng = random.Random(29)
    for i in range(rounds):
        names = [_old(root, f"r{i}/f{j}.parquet", i) for j in range(3)]
        barrier = threading.Barrier(2)
        mode, pause = rng.choice(MODES), rng.uniform(0, 0.02)
        with ThreadPoolExecutor(1) as pool:
            writer = pool.submit(_register, root, names, mode, barrier, pause)
            barrier.wait(10)
            result = DeltaTable(str(root)).vacuum(dry_run=False, **options)
            outcome = writer.result(30)
        counts[outcome] += 1
        counts[f"{mode}:{outcome}"] = counts.get(f"{mode}:{outcome}", 0) + 1
        counts["deleted"] += len(result.files)
        counts["skipped"] += len(result.to_json().get("skippedFiles", []))
    counts["missing_live"] = len(_missing_live(root))  # nothing is ever removed: all rounds
    commits = [
        n for n in os.listdir(root / "_delta_log") if n.endswith(".json") and "." not in n[:20]
    ]
    counts["oldest_commit"] = min(int(n[:20]) for n in commits)
    return counts


#: Log cleanup after every other commit: it runs during the race.
SHORT_LOG = {"delta.logRetentionDuration": "interval 0 seconds", "delta.checkpointInterval": "2"}


@pytest.mark.parametrize(
    "log", [None, SHORT_LOG], ids=["default-log-retention", "short-log-retention"]
)
@pytest.mark.parametrize(
    "options",
    [{}, {"retention_hours": 0, "enforce_retention_duration": False}],
    ids=["default-retention", "retention-0-unchecked"],
)
def test_race_vacuum_against_registering_old_files(
    tmp_path: Path, options: dict[str, Any], log: dict[str, str] | None
) -> None:
    counts = race_rounds(tmp_path / "t", ROUNDS, log, **options)
    print(counts)
    assert counts["missing_live"] == 0, counts
    outcomes = ("committed", "refused", "not_found", "expired")
    assert sum(counts[o] for o in outcomes) == ROUNDS
    assert log is not None or counts["expired"] == 0
    assert log is None or counts["oldest_commit"] > 0  # cleanup ran
