"""Checkpoints that cannot be used, and checkpoints written below a cleanup boundary.

A checkpoint with a foreign schema, without its protocol row, or with fewer rows than
``_last_checkpoint`` records is not used when the JSON commits it covers are still there:
replay falls back to an older checkpoint or to the commits. A checkpoint written late, below
the boundary log cleanup already moved past, is no version gap. Of several checkpoints of one
version, the one ``_last_checkpoint`` names is tried first, and any complete one is used.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import deltalake
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from tableutil import write_parquet

from deltalog import DeltaTable, VersionNotFoundError, check_table
from deltalog.checkpoints.checksum import json_checksum
from deltalog.checkpoints.last_checkpoint import LastCheckpoint
from deltalog.log.segment import Checkpoint, order_checkpoints
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileStatus
from deltalog.maintenance.retention import cleanup_log

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _appended(root: Path, n: int) -> DeltaTable:
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["p"])
    for i in range(n):
        table.append_files([write_parquet(root, f"p={i % 3}/f{i}.parquet", pa.table({"id": [i]}))])
    assert table.wait_for_checkpoints(timeout=60)
    return table


def _cp(root: Path, v: int) -> Path:
    return root / "_delta_log" / f"{v:020d}.checkpoint.parquet"


def _keep_rows(path: Path, keep: Callable[[pa.Table], pa.Array]) -> None:
    table = pq.read_table(path)
    pq.write_table(table.filter(keep(table)), path)


def _foreign(root: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2, 3]}), _cp(root, 20))


def _no_protocol(root: Path) -> None:
    _keep_rows(_cp(root, 20), lambda t: pc.is_null(t.column("protocol")))


def _two_adds(root: Path) -> None:
    def keep(t: pa.Table) -> pa.Array:
        adds = pc.is_valid(t.column("add"))
        first_two = pc.less(pc.cumulative_sum(pc.cast(adds, pa.int64())), 3)
        return pc.or_(pc.invert(adds), first_two)

    _keep_rows(_cp(root, 20), keep)


def _no_adds_at_all(root: Path) -> None:
    _keep_rows(_cp(root, 20), lambda t: pc.is_null(t.column("add")))


@pytest.mark.parametrize(
    "damage",
    [_foreign, _no_protocol, _two_adds, _no_adds_at_all],
    ids=["foreign-schema", "no-protocol-row", "two-of-twenty-adds", "no-add-rows"],
)
def test_unusable_checkpoint_falls_back(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    expected = sorted(_appended(tmp_path, 25).files(with_stats=False).column("path").to_pylist())
    damage(tmp_path)
    table = DeltaTable(str(tmp_path))
    assert table.version() == 25
    assert table.snapshot.checkpoint_version == 10
    assert sorted(table.files(with_stats=False).column("path").to_pylist()) == expected
    assert len(table.files().column("stats").drop_null()) == 25
    travelled = DeltaTable(str(tmp_path), version=20)
    assert travelled.snapshot.checkpoint_version == 10
    assert travelled.snapshot.num_files == 20
    assert not check_table(str(tmp_path)).ok  # the damaged checkpoint is still reported


def test_late_checkpoint_below_the_cleanup_boundary(tmp_path: Path) -> None:
    _appended(tmp_path, 25)
    late = DeltaTable(str(tmp_path), version=15)
    log = tmp_path / "_delta_log"
    for v in range(20):  # what cleanup leaves: checkpoint 20 and everything after it
        (log / f"{v:020d}.json").unlink()
    _cp(tmp_path, 10).unlink()
    late.checkpoint()  # a background checkpoint that finished after the cleanup
    assert _cp(tmp_path, 15).exists()

    report = check_table(str(tmp_path))
    assert report.ok, report.findings
    assert not [f for f in report.findings if f.code == "version-gap"]
    for version in (16, 19):
        with pytest.raises(VersionNotFoundError):
            DeltaTable(str(tmp_path), version=version)
    assert DeltaTable(str(tmp_path), version=15).snapshot.num_files == 15
    assert DeltaTable(str(tmp_path), version=20).snapshot.num_files == 20
    assert DeltaTable(str(tmp_path)).version() == 25


def _v2_table(root: Path) -> str:
    """Versions 0-4 with a V2 checkpoint at 4 and nothing before it: its name."""
    table = DeltaTable.create(
        str(root),
        pa.schema([("id", pa.int64())]),
        configuration={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "4"},
    )
    for i in range(4):
        table.append_files([write_parquet(root, f"f{i}.parquet", pa.table({"id": [i]}))])
    assert table.wait_for_checkpoints(timeout=60)
    log = root / "_delta_log"
    for v in range(4):
        (log / f"{v:020d}.json").unlink()
    for entry in log.iterdir():
        if entry.name.endswith(".crc"):
            entry.unlink()
    (name,) = [n.name for n in log.iterdir() if n.name.startswith(f"{4:020d}.checkpoint.")]
    return name


def _broken_copy(root: Path, good: str, first: bool) -> str:
    """Another checkpoint of version 4 whose sidecar is missing, named to sort first or last."""
    log = root / "_delta_log"
    lines = [orjson.loads(x) for x in (log / good).read_bytes().splitlines()]
    for line in lines:
        if "sidecar" in line:
            line["sidecar"]["path"] = f"{uuid.uuid4()}.parquet"
    unique = good.split(".")[2]
    name = f"{4:020d}.checkpoint.{('0' if first else 'f') * 8}{unique[8:]}.json"
    (log / name).write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return name


def _point_at(root: Path, name: str) -> None:
    """Make ``_last_checkpoint`` name the checkpoint ``name`` (of version 4)."""
    path = root / "_delta_log" / "_last_checkpoint"
    pointer = orjson.loads(path.read_bytes())
    pointer.pop("checksum", None)
    pointer["v2Checkpoint"]["path"] = name
    pointer["checksum"] = json_checksum(pointer)
    path.write_bytes(orjson.dumps(pointer))


@pytest.mark.parametrize("first", [True, False], ids=["broken-sorts-first", "broken-sorts-last"])
@pytest.mark.parametrize("hint", ["complete", "broken", "none"])
def test_two_v2_checkpoints_at_one_version_one_missing_its_sidecar(
    tmp_path: Path, first: bool, hint: str
) -> None:
    good = _v2_table(tmp_path)
    broken = _broken_copy(tmp_path, good, first)
    log = tmp_path / "_delta_log"
    if hint == "broken":
        _point_at(tmp_path, broken)
    elif hint == "none":
        (log / "_last_checkpoint").unlink()
    expected = [f"f{i}.parquet" for i in range(4)]
    table = DeltaTable(str(tmp_path))
    assert table.version() == 4 and table.snapshot.checkpoint_version == 4
    assert sorted(table.files().column("path").to_pylist()) == expected
    assert DeltaTable(str(tmp_path), version=4).snapshot.num_files == 4

    # delta-rs (like delta-spark) takes the greatest name and fails on it; log cleanup deletes
    # the checkpoint no reader can use, and leaves the complete one.
    deleted = cleanup_log(TableStorage.open(str(tmp_path)), {})
    assert deleted == [broken]
    assert (log / good).exists()
    theirs = deltalake.DeltaTable(str(tmp_path)).file_uris()
    assert sorted(uri.rsplit("/", 1)[-1] for uri in theirs) == expected
    assert sorted(DeltaTable(str(tmp_path)).files().column("path").to_pylist()) == expected


def test_checkpoints_of_one_version_in_reading_order() -> None:
    def cp(*names: str) -> Checkpoint:
        return Checkpoint(3, tuple(FileStatus(f"/log/{n}", 1, 1) for n in names))

    v3 = f"{3:020d}"
    classic = cp(f"{v3}.checkpoint.parquet")
    parts = cp(*(f"{v3}.checkpoint.{i:010d}.{2:010d}.parquet" for i in (1, 2)))
    low = cp(f"{v3}.checkpoint.{'0' * 8}-0000-0000-0000-{'0' * 12}.json")
    high = cp(f"{v3}.checkpoint.{'f' * 8}-0000-0000-0000-{'0' * 12}.parquet")
    every = [classic, low, parts, high]
    assert order_checkpoints(every) == [high, low, parts, classic]  # delta-spark's order
    named = {"v2Checkpoint": {"path": low.name}}
    assert order_checkpoints(every, LastCheckpoint(3, extra=named))[0] == low
    assert order_checkpoints(every, LastCheckpoint(3, parts=2))[0] == parts
    assert order_checkpoints(every, LastCheckpoint(3))[0] == classic
    assert order_checkpoints(every, LastCheckpoint(2))[0] == high  # names another version
