"""``<version>.crc`` files: written after commits, derived incrementally, checked by ``check``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import one_row_add

import deltalog.log.checksum as checksum
from deltalog import DeltaTable
from deltalog.log.checksum import VersionChecksum, checksum_name, next_checksum
from deltalog.protocol.actions import AddFile, CommitInfo

SCHEMA = pa.schema([("x", pa.int64())])


def _crc(root: Path, version: int) -> dict[str, object]:
    data = (root / "_delta_log" / checksum_name(version)).read_bytes()
    parsed: dict[str, object] = json.loads(data)
    return parsed


def _sized(path: str, size: int) -> AddFile:
    return dataclasses.replace(one_row_add(path), size=size)


def test_commits_write_checksums_derived_from_the_previous_one(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA)
    assert _crc(root, 0)["numFiles"] == 0
    for i, size in enumerate((10, 20, 30)):
        tx = table.transaction()
        tx.add(_sized(f"f{i}.parquet", size))
        tx.commit()
    crc = _crc(root, 3)
    assert (crc["numFiles"], crc["tableSizeBytes"]) == (3, 60)
    assert crc["numMetadata"] == crc["numProtocol"] == 1
    assert crc["metadata"]["id"] == table.metadata().id  # type: ignore[index]
    assert (
        crc["txnId"]
        == json.loads((root / "_delta_log" / f"{3:020d}.json").read_text().splitlines()[0])[
            "commitInfo"
        ]["txnId"]
    )
    tx = table.transaction("DELETE")
    tx.remove("f1.parquet")
    tx.commit()
    crc = _crc(root, 4)
    assert (crc["numFiles"], crc["tableSizeBytes"]) == (2, 40)
    assert table.check(data_files=False).ok


def test_an_existing_checksum_is_never_overwritten_and_failures_do_not_fail_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA)
    planted = b'{"planted": true}'
    (root / "_delta_log" / checksum_name(1)).write_bytes(planted)
    tx = table.transaction()
    tx.add(one_row_add("a.parquet"))
    assert tx.commit() == 1
    assert (root / "_delta_log" / checksum_name(1)).read_bytes() == planted

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(checksum, "write_checksum", broken)
    tx = table.transaction()
    tx.add(one_row_add("b.parquet"))
    assert tx.commit() == 2
    assert not (root / "_delta_log" / checksum_name(2)).exists()
    monkeypatch.undo()
    # no checksum of version 2 and this object's files not merged: none (never O(table))
    tx = table.transaction()
    tx.add(one_row_add("c.parquet"))
    assert tx.commit() == 3
    assert not (root / "_delta_log" / checksum_name(3)).exists()
    # a freshly replayed snapshot has its files in memory: derived from it
    tx = DeltaTable(str(root)).transaction()
    tx.add(one_row_add("d.parquet"))
    assert tx.commit() == 4
    assert (_crc(root, 4)["numFiles"], _crc(root, 4)["tableSizeBytes"]) == (4, 4)


def test_check_flags_a_corrupted_checksum(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA)
    tx = table.transaction()
    tx.add(one_row_add("a.parquet"))
    tx.commit()
    path = root / "_delta_log" / checksum_name(1)
    crc = json.loads(path.read_bytes())
    crc["numFiles"] = 7
    crc["tableSizeBytes"] = 12345
    path.write_text(json.dumps(crc))
    report = DeltaTable(str(root)).check(data_files=False)
    found = [f for f in report.findings if f.code == "checksum-mismatch"]
    assert len(found) == 1 and found[0].version == 1
    assert "numFiles 7" in found[0].message and "tableSizeBytes 12345" in found[0].message
    assert not report.ok
    (root / "_delta_log" / checksum_name(0)).write_text("{not json")
    codes = {f.code for f in DeltaTable(str(root)).check(data_files=False).findings}
    assert "bad-checksum" in codes


def test_histogram_read_under_either_name_and_kept_up_to_date(tmp_path: Path) -> None:
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    histogram = {"sortedBinBoundaries": [0, 100], "fileCounts": [1, 1], "totalBytes": [5, 150]}
    for key in ("histogramOpt", "fileSizeHistogram"):
        body = {
            "tableSizeBytes": 155,
            "numFiles": 2,
            "numMetadata": 1,
            "numProtocol": 1,
            "metadata": table.metadata().to_json_dict(),
            "protocol": table.protocol().to_json_dict(),
            key: histogram,
        }
        base = VersionChecksum.parse(json.dumps(body).encode())
        assert base.histogram == histogram
        added = [_sized("x.parquet", 7)]
        out = next_checksum(base, None, added, CommitInfo(extra={}))
        assert out is not None
        assert out["histogramOpt"] == {
            "sortedBinBoundaries": [0, 100],
            "fileCounts": [2, 1],
            "totalBytes": [12, 150],
        }
        assert (out["numFiles"], out["tableSizeBytes"]) == (3, 162)


def test_re_adding_a_live_file_replaces_it_in_the_totals(tmp_path: Path) -> None:
    """An add that replaces a live file is not one more file: the checksum counts the new
    size instead of the old one, and the totals stay exact after it."""
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA)
    for i, size in enumerate((10, 20)):
        tx = table.transaction()
        tx.add(_sized(f"f{i}.parquet", size))
        tx.commit()
    tx = table.transaction()
    tx.add(_sized("f1.parquet", 25))  # replaces f1 (20 bytes)
    tx.commit()
    crc = _crc(root, 3)
    assert (crc["numFiles"], crc["tableSizeBytes"]) == (2, 35)
    tx = table.transaction()
    tx.add([_sized("f2.parquet", 5), _sized("f0.parquet", 12)])  # one new, one replaced
    tx.commit()
    crc = _crc(root, 4)
    assert (crc["numFiles"], crc["tableSizeBytes"]) == (3, 42)
    assert table.check(data_files=False).findings == []
