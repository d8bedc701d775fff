"""Small checkpoint files are read in one Parquet pass, with the same result as batch by batch.

A checkpoint of a few hundred rows took one Parquet read per action it might hold (ten with
domain metadata); :func:`deltalog.checkpoints.reader._read_once` reads every action's columns
at once. Checked on the checkpoints of every engine: delta-spark's (every table of
``../shared/delta-golden`` with one), delta-rs's and deltalog's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from testpaths import GOLDEN_DIR

import deltalog
import deltalog.checkpoints.reader as reader
from deltalog import DeltaTable
from deltalog.checkpoints.reader import CheckpointData, read_checkpoint
from deltalog.checkpoints.schema import ACTION_TYPES
from deltalog.logstores.local import LocalLogStore

ADD_FIELDS = [f.name for f in ACTION_TYPES["add"]] + ["stats_parsed", "partitionValues_parsed"]
REMOVE_FIELDS = [f.name for f in ACTION_TYPES["remove"]]


def _golden() -> list[str]:
    if not GOLDEN_DIR.is_dir():
        return []
    found = []
    for log in sorted(GOLDEN_DIR.rglob("_delta_log")):
        for name in sorted(os.listdir(log)):
            if ".checkpoint." in name and name.endswith(".parquet"):
                found.append(str((log / name).relative_to(GOLDEN_DIR)))
    return found


def _read(path: Path) -> CheckpointData | type[Exception]:
    store = LocalLogStore()
    try:
        return read_checkpoint(
            store, [str(path)], add_fields=ADD_FIELDS, remove_fields=REMOVE_FIELDS
        )
    except Exception as exc:  # a file meant to be bad: both ways must refuse it alike
        return type(exc)


def _same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> CheckpointData:
    once = _read(path)
    with monkeypatch.context() as m:
        m.setattr(reader, "SMALL_ROWS", -1)  # batch by batch, action by action
        batches = _read(path)
    if isinstance(once, type):
        assert once is batches
        pytest.skip(f"{path.name} is refused both ways ({once.__name__})")
    assert isinstance(batches, CheckpointData)
    assert once.actions == batches.actions
    for ours, theirs in [(once.adds, batches.adds), (once.removes, batches.removes)]:
        assert _rows(ours) == _rows(theirs)
    return once


def _rows(tables: list[pa.Table]) -> list[dict[str, Any]]:
    return [r for t in tables for r in t.to_pylist()]


@pytest.mark.parametrize("name", _golden())
def test_delta_spark_checkpoints_read_the_same_in_one_pass(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _same_both_ways(GOLDEN_DIR / name, monkeypatch)


def test_the_golden_tables_hold_checkpoints() -> None:
    assert len(_golden()) >= 10


def _checkpoint(root: Path) -> Path:
    log = root / "_delta_log"
    return log / next(n for n in sorted(os.listdir(log)) if n.endswith(".checkpoint.parquet"))


def test_delta_rs_and_deltalog_checkpoints_read_the_same_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = pa.table({"id": pa.array(range(10), pa.int64()), "p": ["a", "b"] * 5})
    rs = tmp_path / "rs"
    for _ in range(3):
        deltalake.write_deltalake(str(rs), data, mode="append", partition_by=["p"])
    deltalake.DeltaTable(str(rs)).delete("id = 3")
    deltalake.DeltaTable(str(rs)).create_checkpoint()
    found = _same_both_ways(_checkpoint(rs), monkeypatch)
    assert found.num_adds == len(deltalake.DeltaTable(str(rs)).file_uris())
    assert {a for a, _ in found.actions} >= {"protocol", "metaData"}
    ours = tmp_path / "ours"
    for _ in range(3):
        deltalog.write_table(str(ours), data, mode="append", partition_by=["p"])
    table = DeltaTable(str(ours))
    table.delete("id = 3")
    table.checkpoint()
    found = _same_both_ways(_checkpoint(ours), monkeypatch)
    assert found.num_adds == table.files().num_rows


def test_a_small_checkpoint_takes_one_parquet_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    data = pa.table({"id": pa.array(range(10), pa.int64())})
    for _ in range(3):
        deltalog.write_table(str(root), data, mode="append")
    DeltaTable(str(root)).checkpoint()
    reads: list[str] = []
    real_read, real_batches = pq.ParquetFile.read, pq.ParquetFile.iter_batches

    def read(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> pa.Table:
        reads.append("read")
        return real_read(self, *args, **kwargs)

    def iter_batches(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Any:
        reads.append("iter_batches")
        return real_batches(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", read)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", iter_batches)
    found = _read(_checkpoint(root))
    assert isinstance(found, CheckpointData) and found.num_adds == 3
    assert reads == ["read"]
    reads.clear()
    assert DeltaTable(str(root)).files(with_stats=False).num_rows == 3  # opening reads it
    assert reads == ["read"]
