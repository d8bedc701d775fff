"""Delta Kernel (Java) 4.4 reads what deltalog writes, and deltalog reads what Kernel appends.

Each table is read by one JVM (``KernelProbe read`` with every snapshot asked for at once) and
compared with deltalog's view of the same snapshot: version, protocol, schema, partition
columns, live files (path, size, partition values, whether a deletion vector applies) and the
rows (count and per-column checksums, deletion vectors applied). See :mod:`kernelutil`.

Kernel appends to a partitioned table and to one with deletion vectors; Kernel 4.4 refuses to
write to a column-mapped table ("Writing into column mapping enabled table is not supported
yet"), so that is not tried.

The module is marked ``spark`` although it starts no Spark session: CI's second pass (the
PySpark 3.5 line, ``-m spark``) runs it too, so Kernel is checked against deltalog on both
lines' environments.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import kernelutil
import orjson
import pyarrow as pa
import pytest
from kernelutil import KernelProbe, OldKernelFiles, assert_same

import deltalog.checkpoints.v2 as v2
import deltalog.maintenance.checkpointing as checkpointing
from deltalog import DeltaTable, TimestampOutOfRangeError, write_table

pytestmark = pytest.mark.spark

#: delta-spark's sidecar names, which Kernel 3.2-4.1 parse a version out of.
SPARK_SIDECAR = re.compile(r"^\d{20}\.checkpoint\.\d{10}\.\d{10}\.[0-9a-f-]{36}\.parquet$")


def _typed(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "i": pa.array([i % 7 if i % 5 else None for i in ids], pa.int32()),
            "s": pa.array([f"row {i} é" if i % 4 else None for i in ids], pa.string()),
            "f": pa.array([i / 3 for i in ids], pa.float64()),
            "b": pa.array([i % 2 == 0 for i in ids], pa.bool_()),
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i) for i in ids],
                pa.timestamp("us", "UTC"),
            ),
            "dec": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
            "bin": pa.array([bytes([i % 256, 1]) for i in ids], pa.binary()),
            "st": pa.array(
                [{"x": i, "y": str(i)} for i in ids],
                pa.struct([("x", pa.int64()), ("y", pa.string())]),
            ),
            "arr": pa.array([[i, i + 1] for i in ids], pa.list_(pa.int64())),
        }
    )


def _agree(kernel: KernelProbe, root: Path, versions: list[int]) -> dict[str, Any]:
    """Kernel's latest snapshot and each of ``versions`` agree with deltalog's; the latest."""
    results = kernel.read(root, "latest", *(f"v:{v}" for v in versions))
    assert_same(results[0], DeltaTable(str(root)))
    for result, version in zip(results[1:], versions, strict=True):
        assert_same(result, DeltaTable(str(root), version=version))
    return results[0]


def _only_from_checkpoint(root: Path, copy: Path, version: int) -> None:
    """Copy the table, then delete every log file for versions before ``version``."""
    shutil.copytree(root, copy)
    for entry in (copy / "_delta_log").iterdir():
        digits = re.match(r"^\.?(\d{20})\.", entry.name)
        if digits and int(digits.group(1)) < version:
            entry.unlink()


def test_plain_table_of_many_types(kernel: KernelProbe, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_table(str(root), _typed(0, 40))
    write_table(str(root), _typed(40, 25), mode="append")
    _agree(kernel, root, [0, 1])


def test_partitions_with_values_that_need_escaping(kernel: KernelProbe, tmp_path: Path) -> None:
    root = tmp_path / "escaped"
    values = ["a/b", "c d", "é%", "x=y:z", "#?&", None, "plain"]
    data = pa.table(
        {
            "id": pa.array(range(len(values) * 2), pa.int64()),
            "p": pa.array(values * 2, pa.string()),
            "n": pa.array([i % 2 for i in range(len(values) * 2)], pa.int32()),
        }
    )
    write_table(str(root), data, partition_by=["p", "n"])
    write_table(str(root), data.slice(0, 3), mode="append")
    latest = _agree(kernel, root, [0])
    assert {f["partitionValues"]["p"] for f in latest["files"]} == set(values)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping(kernel: KernelProbe, tmp_path: Path, mode: str) -> None:
    root = tmp_path / f"mapped-{mode}"
    data = _typed(0, 20).append_column("p", pa.array(["a", "b"] * 10))
    write_table(
        str(root), data, partition_by=["p"], configuration={"delta.columnMapping.mode": mode}
    )
    write_table(str(root), data.slice(0, 5), mode="append")
    latest = _agree(kernel, root, [0])
    assert latest["protocol"]["minReaderVersion"] >= 2
    fields = latest["schema"]["fields"]
    assert all("delta.columnMapping.physicalName" in f["metadata"] for f in fields)
    physical = {f["metadata"]["delta.columnMapping.physicalName"] for f in fields}
    assert set(latest["files"][0]["partitionValues"]) <= physical  # keyed by physical name


def test_deletion_vectors_written_by_delete(kernel: KernelProbe, tmp_path: Path) -> None:
    root = tmp_path / "dv"
    write_table(
        str(root),
        _typed(0, 60).append_column("p", pa.array(["a", "b", "c"] * 20)),
        partition_by=["p"],
        configuration={"delta.enableDeletionVectors": "true"},
    )
    table = DeltaTable(str(root))
    table.delete("id % 7 = 3")
    DeltaTable(str(root)).delete("id < 10")  # a second deletion vector for some files
    [latest, at_1] = kernel.read(root, "latest", "v:1")
    assert any(f["deletionVector"] for f in latest["files"])
    assert latest["rows"] < 60
    assert_same(latest, DeltaTable(str(root)))
    assert_same(at_1, DeltaTable(str(root), version=1))
    # Kernel appends to the table with deletion vectors; deltalog reads its rows beside them.
    expected = _typed(1000, 1).append_column("p", pa.array(["b"])).to_pylist()[0]
    expected["bin"] = None
    row = dict(expected)
    for key in ("d", "ts"):  # Kernel's JSON parser takes ISO text for dates and timestamps
        row[key] = row[key].isoformat()
    row["dec"] = float(row["dec"])
    assert kernel.append(root, [{"partition": {"p": "b"}, "rows": [row]}], tmp_path) == 3
    after = DeltaTable(str(root))
    assert after.to_pyarrow_table().num_rows == latest["rows"] + 1
    assert after.to_pyarrow_table(filter="id = 1000").to_pylist() == [expected]
    assert after.check(data_files=True).findings == []


def _v2_table(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A V2-checkpoint table at version 7, its last checkpoint (6) reusing sidecars of the one
    before (3); the sidecars of checkpoint 6."""
    with monkeypatch.context() as patch:
        patch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 2)  # several sidecars, some reused
        config = {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "3"}
        write_table(str(root), _typed(0, 10), partition_by=["b"], configuration=config)
        for i in range(1, 8):  # two files a commit; version 4 rewrites version 0's
            if i == 4:
                DeltaTable(str(root)).delete("id < 3")
            else:
                write_table(str(root), _typed(10 * i, 10), mode="append")
            DeltaTable(str(root)).wait_for_checkpoints()
    table = DeltaTable(str(root))
    assert table.version() == 7 and table.snapshot.checkpoint_version == 6
    pointer = orjson.loads((root / "_delta_log" / "_last_checkpoint").read_bytes())
    return [s["path"] for s in pointer["v2Checkpoint"]["sidecarFiles"]]


def test_v2_checkpoint_with_reused_sidecars_and_a_json_tail(
    kernel: KernelProbe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "v2"
    sidecars = _v2_table(root, monkeypatch)
    assert len(sidecars) > 1 and all(SPARK_SIDECAR.match(s) for s in sidecars)
    assert len({s[:20] for s in sidecars}) > 1  # reused ones name the checkpoint before
    copy = tmp_path / "from-checkpoint"
    _only_from_checkpoint(root, copy, 6)
    [result] = kernel.read(copy, "latest")
    assert_same(result, DeltaTable(str(copy)))
    _agree(kernel, root, [3, 5])


def test_kernel_4_0_reads_sidecars_named_as_delta_spark_names_them(
    old_kernel: OldKernelFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernel 3.2-4.1 take a sidecar's version from its name (delta-io/delta#4807)."""
    root = tmp_path / "v2"
    sidecars = _v2_table(root, monkeypatch)
    assert all(SPARK_SIDECAR.match(s) for s in sidecars)
    copy = tmp_path / "from-checkpoint"
    _only_from_checkpoint(root, copy, 6)
    for table in (root, copy):
        listed = old_kernel.files(table)
        assert listed.get("version") == 7, listed
        assert sorted(listed["files"]) == sorted(DeltaTable(str(table)).files()["path"].to_pylist())
    # deltalog 0.1's <uuid>.parquet sidecars: deltalog reads them, Kernel 4.0 cannot.
    old = tmp_path / "old-names"
    with monkeypatch.context() as patch:
        patch.setattr(v2, "sidecar_name", lambda version, part, parts, unique: f"{unique}.parquet")
        old_sidecars = _v2_table(old, monkeypatch)
    assert not any(SPARK_SIDECAR.match(s) for s in old_sidecars)
    assert "NumberFormatException" in old_kernel.files(old)["error"]


def test_classic_checkpoint_and_a_json_tail(kernel: KernelProbe, tmp_path: Path) -> None:
    root = tmp_path / "classic"
    config = {"delta.checkpointInterval": "3"}
    write_table(str(root), _typed(0, 10), partition_by=["b"], configuration=config)
    for i in range(1, 5):
        write_table(str(root), _typed(10 * i, 10), mode="append")
        DeltaTable(str(root)).wait_for_checkpoints()
    assert DeltaTable(str(root)).snapshot.checkpoint_version == 3
    copy = tmp_path / "from-checkpoint"
    _only_from_checkpoint(root, copy, 3)
    [result] = kernel.read(copy, "latest")
    assert result["version"] == 4
    assert_same(result, DeltaTable(str(copy)))


def test_time_travel_by_version_and_timestamp(kernel: KernelProbe, tmp_path: Path) -> None:
    root = tmp_path / "travel"
    for i in range(4):
        write_table(str(root), _typed(10 * i, 10), mode="append" if i else "error")
    base = 1_700_000_000  # commit times one hour apart, as file modification times
    for v in range(4):
        os.utime(root / "_delta_log" / f"{v:020d}.json", (base + 3600 * v, base + 3600 * v))
    # Between commits, then exactly at the last commit, then after it (refused by both).
    times = [(base + 3600 * v + 1800) * 1000 for v in range(3)] + [(base + 3 * 3600) * 1000]
    late = (base + 4 * 3600) * 1000
    results = kernel.read(root, "v:0", "v:2", *(f"ts:{ms}" for ms in [*times, late]))
    assert_same(results[0], DeltaTable(str(root), version=0))
    assert_same(results[1], DeltaTable(str(root), version=2))
    for v, (ms, result) in enumerate(zip(times, results[2:6], strict=True)):
        assert result.get("version") == v, result
        assert_same(result, DeltaTable(str(root), timestamp=ms))
    assert "after the latest" in results[6]["error"]
    with pytest.raises(TimestampOutOfRangeError):
        DeltaTable(str(root), timestamp=late)


def test_kernel_appends_after_deltalog_and_deltalog_reads_them(
    kernel: KernelProbe, tmp_path: Path
) -> None:
    root = tmp_path / "appended"
    data = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "v": pa.array(["a", "b", None, "d", "e", "f"]),
            "p": pa.array(["x/y", "z", "x/y", "z", "x/y", "z"]),
        }
    )
    write_table(str(root), data, partition_by=["p"])
    version = kernel.append(
        root,
        [
            {"partition": {"p": "x/y"}, "rows": [{"id": 10, "v": "k1", "p": "x/y"}]},
            {"partition": {"p": "new part"}, "rows": [{"id": 11, "v": None, "p": "new part"}]},
        ],
        tmp_path,
    )
    assert version == 1
    table = DeltaTable(str(root))
    assert table.version() == 1
    rows = sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows[-2:] == [
        {"id": 10, "v": "k1", "p": "x/y"},
        {"id": 11, "v": None, "p": "new part"},
    ]
    assert table.check(data_files=True).findings == []
    write_table(str(root), data.slice(0, 2), mode="append")  # deltalog continues after Kernel
    _agree(kernel, root, [1])


@pytest.mark.parametrize("required", [True, False])
def test_jars_that_cannot_be_had_fail_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, required: bool
) -> None:
    """No cached jars and no Maven: a failure under ``scripts/test.sh`` (CI), else a skip."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn
    monkeypatch.delenv(kernelutil.JARS_ENV, raising=False)
    monkeypatch.delenv("DELTALOG_REQUIRE_SERVERS", raising=False)
    monkeypatch.setenv("DELTALOG_REQUIRE_DELTA_SPARK", "1" if required else "0")
    expected = pytest.fail.Exception if required else pytest.skip.Exception
    with pytest.raises(expected, match="mvn is not on PATH"):
        kernelutil._resolve_jars()
