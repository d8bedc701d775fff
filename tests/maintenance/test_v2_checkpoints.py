"""V2 checkpoints: written when delta.checkpointPolicy=v2, read back, sidecars kept or cleaned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from tableutil import write_parquet

from deltalog import DeltaTable
from deltalog.checkpoints.checksum import json_checksum
from deltalog.log.storage import TableStorage
from deltalog.maintenance.retention import cleanup_log

SCHEMA = pa.schema([("id", pa.int64())])
DAY = 24 * 3600


def _table(root: Path, policy: str = "v2") -> DeltaTable:
    return DeltaTable.create(
        str(root),
        SCHEMA,
        configuration={"delta.checkpointPolicy": policy, "delta.checkpointInterval": "2"},
    )


def _append(table: DeltaTable, root: Path, i: int) -> int:
    write_parquet(root, f"f{i}.parquet", pa.table({"id": [i]}, schema=SCHEMA))
    version = table.append_files([f"f{i}.parquet"])
    table.wait_for_checkpoints()
    return version


def _log(root: Path) -> Path:
    return root / "_delta_log"


def _v2_checkpoints(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(_log(root)) if ".checkpoint." in n)


def test_v2_policy_writes_uuid_checkpoint_with_sidecar(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert "v2Checkpoint" in (table.protocol().writer_features or [])
    assert "v2Checkpoint" in (table.protocol().reader_features or [])
    for i in range(2):
        _append(table, tmp_path, i)
    (name,) = _v2_checkpoints(tmp_path)
    assert name.startswith("00000000000000000002.checkpoint.") and name.endswith(".json")
    lines = [orjson.loads(x) for x in (_log(tmp_path) / name).read_bytes().splitlines()]
    assert [next(iter(a)) for a in lines] == [
        "checkpointMetadata",
        "sidecar",
        "protocol",
        "metaData",
    ]
    meta = lines[0]["checkpointMetadata"]
    assert meta["version"] == 2 and meta["tags"]["numOfAddFiles"] == "2"
    sidecar = lines[1]["sidecar"]
    on_disk = _log(tmp_path) / "_sidecars" / sidecar["path"]
    assert sidecar["sizeInBytes"] == on_disk.stat().st_size
    parquet = pq.read_table(on_disk)
    assert parquet.column_names == ["add", "remove"]
    assert sorted(r["path"] for r in parquet.column("add").to_pylist() if r) == [
        "f0.parquet",
        "f1.parquet",
    ]
    pointer = orjson.loads((_log(tmp_path) / "_last_checkpoint").read_bytes())
    assert pointer["version"] == 2 and pointer["numOfAddFiles"] == 2
    assert pointer["size"] == len(lines) + 2
    assert pointer["v2Checkpoint"]["path"] == name
    assert pointer["v2Checkpoint"]["sidecarFiles"] == [sidecar]
    assert pointer["checksum"] == json_checksum(pointer)


def test_reads_through_the_v2_checkpoint_alone(tmp_path: Path) -> None:
    table = _table(tmp_path)
    for i in range(3):
        _append(table, tmp_path, i)
    with table.transaction("DELETE") as tx:
        tx.remove(["f0.parquet"])
    table.wait_for_checkpoints()  # version 4: a V2 checkpoint with a tombstone
    for v in range(4):
        os.remove(_log(tmp_path) / f"{v:020d}.json")
    reread = DeltaTable(str(tmp_path))
    assert reread.version() == 4 and reread.snapshot.checkpoint_version == 4
    assert sorted(reread.to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert reread.snapshot.tombstones.column("path").to_pylist() == ["f0.parquet"]
    assert all(s for s in reread.files().column("stats").to_pylist())


def test_classic_policy_keeps_classic_checkpoints(tmp_path: Path) -> None:
    table = DeltaTable.create(
        str(tmp_path), SCHEMA, configuration={"delta.checkpointInterval": "2"}
    )
    for i in range(2):
        _append(table, tmp_path, i)
    assert _v2_checkpoints(tmp_path) == ["00000000000000000002.checkpoint.parquet"]
    assert not (_log(tmp_path) / "_sidecars").exists()


def _age(path: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def test_cleanup_keeps_referenced_and_young_sidecars(tmp_path: Path) -> None:
    table = _table(tmp_path)
    for i in range(4):  # V2 checkpoints at versions 2 and 4
        _append(table, tmp_path, i)
    sidecars = _log(tmp_path) / "_sidecars"
    first, second = sorted(sidecars.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    orphan_old = sidecars / "orphan-old.parquet"
    orphan_young = sidecars / "orphan-young.parquet"
    orphan_old.write_bytes(first.read_bytes())
    orphan_young.write_bytes(first.read_bytes())
    for entry in [*_log(tmp_path).iterdir(), first, second, orphan_old]:
        if entry.is_file():
            _age(entry, 40)
    storage = TableStorage.open(str(tmp_path))
    deleted = cleanup_log(storage, dict(table.snapshot.configuration))
    # Versions before the checkpoint at 4 go, and so does the checkpoint at 2 with its sidecar.
    assert f"_sidecars/{first.name}" in deleted
    assert "_sidecars/orphan-old.parquet" in deleted
    assert not first.exists() and not orphan_old.exists()
    assert second.exists() and orphan_young.exists()
    assert _v2_checkpoints(tmp_path)[0].startswith("00000000000000000004.checkpoint.")
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table().column("id").to_pylist()) == [
        0,
        1,
        2,
        3,
    ]


def test_cleanup_does_not_stop_at_a_checkpoint_missing_its_sidecar(tmp_path: Path) -> None:
    table = _table(tmp_path)
    for i in range(4):
        _append(table, tmp_path, i)
    sidecars = _log(tmp_path) / "_sidecars"
    newest = max(sidecars.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    newest.unlink()  # the checkpoint at 4 is unusable now
    for entry in _log(tmp_path).iterdir():
        if entry.is_file():
            _age(entry, 40)
    storage = TableStorage.open(str(tmp_path))
    deleted = cleanup_log(storage, dict(table.snapshot.configuration))
    # The boundary is the checkpoint at 2: commits 2 and 3 stay, so version 4 is rebuilt.
    assert "00000000000000000002.json" not in deleted
    assert "00000000000000000001.json" in deleted
    assert DeltaTable(str(tmp_path)).version() == 4
