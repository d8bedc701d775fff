"""VACUUM on the local store: what goes, what stays, refusals, lite mode, a racing writer."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import deltalake
import orjson
import pyarrow as pa
import pytest
from tableutil import log_names, write_commit, write_parquet, z85

from deltalog import (
    CannotVacuumLiteError,
    DeltaTable,
    InvalidRetentionError,
    RetentionTooShortError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.cli import main as cli_main
from deltalog.log.storage import TableStorage
from deltalog.maintenance.retention import cleanup_log
from deltalog.protocol.deletion_vectors import dv_file_path

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
DAY_S = 86_400
DAY_MS = DAY_S * 1000


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _age(path: Path, days: float) -> None:
    stamp = time.time() - days * DAY_S
    os.utime(path, (stamp, stamp))


def _age_tree(root: Path, days: float) -> None:
    for directory, _, names in os.walk(root):
        if "_delta_log" in directory:
            continue
        for name in names:
            _age(Path(directory, name), days)


def _now_plus(days: float) -> int:
    return int((time.time() + days * DAY_S) * 1000)


def _table(root: Path) -> DeltaTable:
    """Version 0 create, 1 append of 4 files in p=a and p=b, 2 removes p=a/f0 and p=a/f1."""
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["p"])
    files = [write_parquet(root, f"p={p}/f{i}.parquet", _rows([i])) for p in "ab" for i in (0, 1)]
    table.append_files(files)
    with table.transaction("DELETE") as tx:
        tx.remove(tx.read_files({"p": "a"}))
    return table


def _rs_ids(root: Path) -> list[int]:
    return sorted(deltalake.DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist())


def test_dry_run_then_full_vacuum_deletes_only_unneeded_old_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    write_parquet(root, "p=c/dead-task.parquet", _rows([9]))  # no commit ever named it
    write_parquet(root, "p=b/young-orphan.parquet", _rows([8]))
    for hidden in ("_SUCCESS", ".part.crc", "_tmp/x.parquet", "p=b/.hidden.parquet"):
        write_parquet(root, hidden, _rows([7]))
    outside = write_parquet(tmp_path, "outside.parquet", _rows([6]))
    _age_tree(root, 10)
    _age(tmp_path / outside, 10)
    _age(root / "p=b/young-orphan.parquet", -8)  # young even on the clock moved 8 days on
    before = sorted(str(p) for p in root.rglob("*") if p.is_file())

    # The tombstones are younger than the week: only the never-committed file is old enough.
    dead = str(root / "p=c/dead-task.parquet")
    dry = table.vacuum()
    assert dry.dry_run and dry.files == [dead]
    assert dry.size_in_bytes == os.path.getsize(dead)
    assert sorted(str(p) for p in root.rglob("*") if p.is_file()) == before
    assert table.version() == 2  # a dry run commits nothing
    expected = [str(root / f"p=a/f{i}.parquet") for i in (0, 1)]
    assert sorted(table.vacuum(now_ms=_now_plus(8)).files) == sorted([*expected, dead])

    done = table.vacuum(dry_run=False)
    assert done.files == [dead]
    assert not (root / "p=c").exists()  # its directory went with it
    assert (root / "p=a/f0.parquet").exists()

    done = table.vacuum(dry_run=False, now_ms=_now_plus(8))
    assert sorted(done.files) == expected
    assert (done.start_version, done.end_version) == (5, 6)
    for name in ("_SUCCESS", ".part.crc", "_tmp/x.parquet", "p=b/.hidden.parquet"):
        assert (root / name).exists(), name
    assert (tmp_path / outside).exists()
    assert (root / "p=b/young-orphan.parquet").exists()

    history = table.history(limit=2)
    assert [h["operation"] for h in history] == ["VACUUM END", "VACUUM START"]
    assert history[0]["operationParameters"] == {"status": "COMPLETED"}
    assert history[0]["operationMetrics"] == {"numDeletedFiles": "2", "numVacuumedDirectories": "3"}
    assert history[1]["operationParameters"] == {
        "retentionCheckEnabled": "true",
        "defaultRetentionMillis": str(7 * DAY_MS),
    }
    assert history[1]["operationMetrics"]["numFilesToDelete"] == "2"
    info = orjson.loads((root / "_delta_log/_last_vacuum_info").read_bytes())
    assert info == {"latestCommitVersionOutsideOfRetentionWindow": 4}

    report = table.check()
    assert report.summary()["error"] == report.summary()["warning"] == 0
    orphans = sorted(f.path for f in report.findings if f.code == "orphan-file")
    assert orphans == [str(root / "p=b/young-orphan.parquet")]
    assert _rs_ids(root) == [0, 1]


def test_retention_override_and_refusals_delete_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    _age_tree(root, 2)
    with pytest.raises(RetentionTooShortError) as info:
        table.vacuum(1, dry_run=False)
    assert info.value.configured_hours == 168
    with pytest.raises(InvalidRetentionError):
        table.vacuum(-1, dry_run=False, enforce_retention_duration=False)
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "nothing")).vacuum(dry_run=False)
    assert table.update() == 2 and (root / "p=a/f0.parquet").exists()

    # Tombstones are removes made just now: a one-hour retention keeps them too.
    kept = table.vacuum(1, dry_run=False, enforce_retention_duration=False)
    assert kept.files == [] and kept.retention_ms == 3_600_000
    start = table.history(limit=2)[1]
    assert start["operationParameters"]["retentionCheckEnabled"] == "false"
    assert start["operationParameters"]["specifiedRetentionMillis"] == "3600000"
    # A shorter table retention allows the same hour.
    with table.transaction("SET TBLPROPERTIES") as tx:
        tx.update_metadata(configuration={"delta.deletedFileRetentionDuration": "interval 1 hour"})
    gone = table.vacuum(1, dry_run=False, now_ms=_now_plus(1 / 12))
    assert len(gone.files) == 2
    assert _rs_ids(root) == [0, 1]


def test_unknown_writer_feature_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    )
    meta = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema,
        "partitionColumns": [],
        "configuration": {},
    }
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["someFutureFeature"],
    }
    write_commit(
        root,
        0,
        [orjson.dumps({"protocol": protocol}), orjson.dumps({"metaData": meta})],
    )
    write_parquet(root, "orphan.parquet", _rows([1]))
    _age(root / "orphan.parquet", 30)
    with pytest.raises(UnsupportedFeatureError) as info:
        DeltaTable(str(root)).vacuum(dry_run=False)
    assert info.value.feature == "someFutureFeature"
    assert (root / "orphan.parquet").exists()
    assert log_names(root) == [f"{0:020d}.json"]


def test_referenced_deletion_vector_files_stay(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(
        str(root), SCHEMA, configuration={"delta.enableDeletionVectors": "true"}
    )
    write_parquet(root, "f.parquet", _rows([1, 2]))
    live_dv, dead_dv = uuid.uuid4(), uuid.uuid4()
    encoded = {"storageType": "u", "pathOrInlineDv": "ab" + z85(live_dv.bytes)}
    assert dv_file_path(encoded) == f"ab/deletion_vector_{live_dv}.bin"
    (root / "ab").mkdir()
    (root / f"ab/deletion_vector_{live_dv}.bin").write_bytes(b"dv")
    (root / f"deletion_vector_{dead_dv}.bin").write_bytes(b"old")
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab" + z85(live_dv.bytes),
        "offset": 1,
        "sizeInBytes": 2,
        "cardinality": 1,
    }
    add = {
        "path": "f.parquet",
        "partitionValues": {},
        "size": os.path.getsize(root / "f.parquet"),
        "modificationTime": 0,
        "dataChange": True,
        "deletionVector": dv,
    }
    write_commit(root, 1, [orjson.dumps({"add": add})])
    _age_tree(root, 30)
    result = DeltaTable(str(root)).vacuum(dry_run=False)
    assert result.files == [str(root / f"deletion_vector_{dead_dv}.bin")]
    assert (root / f"ab/deletion_vector_{live_dv}.bin").exists()
    assert table.update() == 3


def test_lite_vacuum_reads_removes_and_needs_the_log(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    write_parquet(root, "p=c/dead-task.parquet", _rows([9]))
    _age_tree(root, 10)
    later = _now_plus(8)
    lite = table.vacuum(mode="lite", dry_run=False, now_ms=later)
    assert sorted(lite.files) == sorted(str(root / f"p=a/f{i}.parquet") for i in (0, 1))
    assert (root / "p=c/dead-task.parquet").exists()  # never in the log: only full finds it
    info = orjson.loads((root / "_delta_log/_last_vacuum_info").read_bytes())
    assert info["latestCommitVersionOutsideOfRetentionWindow"] == 2

    # Log cleanup past version 0 without a vacuum record: lite cannot see every remove.
    (root / "_delta_log/_last_vacuum_info").unlink()
    table.checkpoint()
    (root / "_delta_log" / f"{0:020d}.json").unlink()
    with pytest.raises(CannotVacuumLiteError):
        DeltaTable(str(root)).vacuum(mode="lite", dry_run=False, now_ms=later)
    assert (root / "p=c/dead-task.parquet").exists()
    full = DeltaTable(str(root)).vacuum(dry_run=False, now_ms=later)
    assert full.files == [str(root / "p=c/dead-task.parquet")]
    assert DeltaTable(str(root)).vacuum(mode="lite", now_ms=later).files == []
    assert _rs_ids(root) == [0, 1]


def test_racing_writers_uncommitted_file_survives(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    write_parquet(root, "p=a/dead-task.parquet", _rows([9]))
    _age_tree(root, 2)
    staged, vacuumed = threading.Event(), threading.Event()
    outcome: dict[str, int] = {}

    def writer() -> None:
        racer = DeltaTable(str(root))
        tx = racer.transaction("WRITE")
        # Written, not committed: in flight while the vacuum runs.
        write_parquet(root, "p=a/racer.parquet", _rows([42]))
        staged.set()
        assert vacuumed.wait(60)
        tx.add(["p=a/racer.parquet"])
        outcome["version"] = tx.commit()

    thread = threading.Thread(target=writer)
    thread.start()
    assert staged.wait(60)
    try:
        result = table.vacuum(1, dry_run=False, enforce_retention_duration=False)
    finally:
        vacuumed.set()
        thread.join(60)
    # The tombstones were made just now, the racer's file too: only the dead task's file goes.
    assert result.files == [str(root / "p=a/dead-task.parquet")]
    assert (root / "p=a/racer.parquet").exists()
    assert outcome["version"] == 5  # after VACUUM START (3) and END (4)
    fresh = DeltaTable(str(root))
    assert "p=a/racer.parquet" in fresh.files().column("path").to_pylist()
    report = fresh.check()
    assert not [f for f in report.findings if f.code == "missing-file"]
    assert _rs_ids(root) == [0, 1, 42]


def test_stale_local_temp_files_are_cleaned_up_and_young_ones_reported(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    log = root / "_delta_log"
    dead = log / f".{3:020d}.json.{uuid.uuid4().hex}.tmp"
    live = log / f".{4:020d}.json.{uuid.uuid4().hex}.tmp"
    dead.write_bytes(b"{}")
    live.write_bytes(b"{}")
    _age(dead, 1 / 12)  # two hours: its writer is gone
    storage = TableStorage.open(str(root))
    deleted = cleanup_log(storage, dict(table.snapshot.configuration))
    assert deleted == [dead.name]
    assert live.exists() and not dead.exists()
    leftovers = [f for f in table.check().findings if f.code == "orphan-log-file"]
    assert [f.path for f in leftovers] == [str(live)]


def test_cli_is_a_dry_run_unless_yes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    _table(root)
    write_parquet(root, "p=c/dead-task.parquet", _rows([9]))
    _age_tree(root, 10)
    assert cli_main(["vacuum", str(root)]) == 0
    out = capsys.readouterr().out
    assert str(root / "p=c/dead-task.parquet") in out and "dry run" in out
    assert (root / "p=c/dead-task.parquet").exists()
    assert cli_main(["vacuum", str(root), "--retain", "0"]) == 2
    assert "RetentionTooShortError" in capsys.readouterr().err
    assert cli_main(["vacuum", str(root), "--yes", "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["dryRun"] is False and doc["numFiles"] == 1 and doc["endVersion"] == 4
    assert not (root / "p=c/dead-task.parquet").exists()
