"""VACUUM on every object store: dry run, full, lite, refusal, racing writers, ``.tmp`` cleanup.

Object stores set modification times themselves, so these tests move vacuum's clock
(``now_ms``) instead of the files' ages. delta-rs reads each table afterwards.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import CloudTable, cloud_location
from test_cloud_delta_rs import rs_options

import deltalog.maintenance.vacuum
from deltalog import ConcurrentVacuumError, DeltaTable, RetentionTooShortError
from deltalog.logstores import LogFileNotFoundError, LogStore, open_store

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
DAY_MS = 86_400_000


def _put(store: LogStore, root: str, relative: str, ids: list[int]) -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), buf)
    store.write(store.join(root, relative), buf.getvalue(), overwrite=True)


def _exists(store: LogStore, root: str, relative: str) -> bool:
    return store.exists(store.join(root, relative))


def _tree(store: LogStore, root: str, under: str) -> list[str]:
    try:
        return [s.path for s in store.list_tree(store.join(root, under))]
    except LogFileNotFoundError:
        return []


def _later(days: float) -> int:
    return int(time.time() * 1000 + days * DAY_MS)


def _build(location: CloudTable) -> tuple[DeltaTable, LogStore, str]:
    """Four files in p=a and p=b, then the two of p=a removed; an uncommitted file in p=c."""
    store, root = open_store(location.uri, location.options)
    table = DeltaTable.create(
        location.uri, SCHEMA, partition_by=["p"], storage_options=location.options
    )
    files = [f"p={p}/f{i}.parquet" for p in "ab" for i in (0, 1)]
    for n, relative in enumerate(files):
        _put(store, root, relative, [n])
    table.append_files(files)
    with table.transaction("DELETE") as tx:
        tx.remove(tx.read_files({"p": "a"}))
    _put(store, root, "p=c/dead-task.parquet", [99])
    _put(store, root, "_SUCCESS", [0])
    return table, store, root


def _rs_ids(location: CloudTable, tmp_path: Path) -> list[int]:
    rs = deltalake.DeltaTable(location.uri, storage_options=rs_options(location, tmp_path))
    return sorted(rs.to_pyarrow_table().column("id").to_pylist())


def test_vacuum_full_and_lite_on_every_store(cloud_table: CloudTable, tmp_path: Path) -> None:
    table, store, root = _build(cloud_table)
    with pytest.raises(RetentionTooShortError):
        table.vacuum(0, dry_run=False)
    dry = table.vacuum(now_ms=_later(8))
    removed = [store.join(root, f"p=a/f{i}.parquet") for i in (0, 1)]
    dead = store.join(root, "p=c/dead-task.parquet")
    assert sorted(dry.files) == sorted([*removed, dead])
    assert all(store.exists(p) for p in dry.files)

    lite = table.vacuum(mode="lite", dry_run=False, now_ms=_later(8))
    assert sorted(lite.files) == sorted(removed)
    assert not any(store.exists(p) for p in removed)
    assert store.exists(dead)

    full = table.vacuum(dry_run=False, now_ms=_later(8))
    assert full.files == [dead]
    assert not store.exists(dead)
    assert _exists(store, root, "_SUCCESS")
    assert sorted(_tree(store, root, "p=b")) == [
        store.join(root, f"p=b/f{i}.parquet") for i in (0, 1)
    ]

    ops = [h["operation"] for h in table.history(limit=4)]
    assert ops == ["VACUUM END", "VACUUM START", "VACUUM END", "VACUUM START"]
    report = table.check()
    assert report.summary()["error"] == report.summary()["warning"] == 0, report.findings
    assert not [f for f in report.findings if f.code == "orphan-file"]
    assert _rs_ids(cloud_table, tmp_path) == [2, 3]


def test_racing_writers_file_survives_on_every_store(
    cloud_table: CloudTable, tmp_path: Path
) -> None:
    table, store, root = _build(cloud_table)
    racer = DeltaTable(cloud_table.uri, storage_options=cloud_table.options)
    tx = racer.transaction("WRITE")
    _put(store, root, "p=a/racer.parquet", [42])  # written, not committed yet
    # Everything older than an hour before now goes; the racer's file was written just now.
    result = table.vacuum(1, dry_run=False, enforce_retention_duration=False, now_ms=_later(0))
    assert result.files == []  # every file, the racer's too, is younger than the hour
    assert _exists(store, root, "p=a/racer.parquet")
    tx.add(["p=a/racer.parquet"])
    assert tx.commit() == table.version() + 1
    assert _rs_ids(cloud_table, tmp_path) == [2, 3, 42]


def test_dynamodb_temp_files_go_after_the_entry_ttl(request: pytest.FixtureRequest) -> None:
    location = cloud_location(request, "s3_dynamodb")
    table, store, root = _build(location)
    temps = _tree(store, root, "_delta_log/.tmp")
    assert len(temps) == 3  # one per commit (create, append, delete)
    # Within the TTL they stay, and check reports them.
    assert table.vacuum(now_ms=_later(0)).log_temp_files == []
    leftovers = [f for f in table.check().findings if f.code == "orphan-log-file"]
    assert sorted(f.path for f in leftovers) == sorted(temps)
    # A day and more later the commits are complete and the temp files go, with the vacuum.
    result = table.vacuum(dry_run=False, now_ms=_later(1.5))
    # On that clock the vacuum's own two commits (complete) are past the TTL as well.
    assert len(result.log_temp_files) == 5 and set(temps) <= set(result.log_temp_files)
    assert _tree(store, root, "_delta_log/.tmp") == []
    assert not [f for f in table.check().findings if f.code == "orphan-log-file"]
    assert DeltaTable(location.uri, storage_options=location.options).version() == 4


def test_files_registered_while_the_vacuum_runs_survive_on_every_store(
    cloud_table: CloudTable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit between the vacuum's snapshot and its deletes, and one after its START."""
    table, store, root = _build(cloud_table)
    _put(store, root, "p=d/kept.parquet", [7])
    _put(store, root, "p=d/late.parquet", [8])
    late = DeltaTable(cloud_table.uri, storage_options=cloud_table.options).transaction()
    late.add(["p=d/late.parquet"])  # staged before the vacuum, committed after it
    real = deltalog.maintenance.vacuum.full_candidates

    def listing(*args: Any) -> Any:
        racer = DeltaTable(cloud_table.uri, storage_options=cloud_table.options)
        racer.append_files(["p=d/kept.parquet"])
        return real(*args)

    monkeypatch.setattr(deltalog.maintenance.vacuum, "full_candidates", listing)
    # On the clock a week on, every file is older than the cutoff: the registered ones too.
    result = table.vacuum(dry_run=False, now_ms=_later(8))
    assert result.skipped == [store.join(root, "p=d/kept.parquet")]
    assert _exists(store, root, "p=d/kept.parquet")
    assert not _exists(store, root, "p=d/late.parquet")  # an orphan when it was deleted
    with pytest.raises(ConcurrentVacuumError):
        late.commit()
    assert _rs_ids(cloud_table, tmp_path) == [2, 3, 7]
    assert not [f for f in table.check().findings if f.code == "missing-file"]
