"""A checkpoint written as one row group (delta-rs, delta-spark) read column by column side by side.

The result must be what one serial reader gives: the same rows, batches and field order.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import write_parquet

from deltalog import DeltaTable
from deltalog.checkpoints import column_split, reader
from deltalog.checkpoints.schema import ADD, REMOVE
from deltalog.logstores.local import LocalLogStore

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _one_row_group(root: Path) -> None:
    for cp in (root / "_delta_log").glob("*.checkpoint.parquet"):
        pq.write_table(pq.read_table(cp), cp)  # one row group: protocol, metaData, adds, removes
        assert pq.ParquetFile(cp).metadata.num_row_groups == 1


def _table(root: Path) -> DeltaTable:
    t = DeltaTable.create(str(root), SCHEMA, partition_by=["p"])
    for i in range(30):
        t.append_files([write_parquet(root, f"p={i % 3}/f{i}.parquet", pa.table({"id": [i]}))])
    t.delete("id % 4 = 1")  # removes among the adds
    t.checkpoint()
    _one_row_group(root)
    return t


def test_single_row_group_read_in_parallel_gives_the_serial_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(tmp_path)
    monkeypatch.setattr(reader, "BATCH_ROWS", 4)  # many batches, some without adds
    calls: list[list[str]] = []
    split = column_split.by_column

    def spy(*args: Any, **kwargs: Any) -> list[pa.Table] | None:
        calls.append(list(args[2]))
        return split(*args, **kwargs)

    monkeypatch.setattr(reader, "by_column", spy)
    monkeypatch.setattr(reader, "READERS", 4)
    parallel = DeltaTable(str(tmp_path))
    files = parallel.files()
    flat = parallel.files(flatten_stats=True)
    assert calls and all(len(c) > 1 for c in calls)  # the split read ran
    monkeypatch.setattr(reader, "READERS", 1)
    serial = DeltaTable(str(tmp_path))
    assert files.equals(serial.files())
    assert flat.equals(serial.files(flatten_stats=True))
    assert parallel.version() == serial.version()
    assert parallel.metadata() == serial.metadata()
    assert files.num_rows == 22


def test_columns_of_one_row_group_are_decoded_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 40
    adds = [
        None
        if i % 5 == 2
        else {"path": f"a{i}", "size": i, "partitionValues": [("p", str(i % 3))], "stats": "{}"}
        for i in range(n)
    ]
    removes = [
        {"path": f"r{i}", "deletionTimestamp": i} if a is None else None for i, a in enumerate(adds)
    ]
    path = tmp_path / "00000000000000000009.checkpoint.parquet"
    pq.write_table(
        pa.table({"add": pa.array(adds, ADD), "remove": pa.array(removes, REMOVE)}), path
    )
    fields = ("path", "partitionValues", "size")
    store = LocalLogStore()
    monkeypatch.setattr(reader, "BATCH_ROWS", 8)
    monkeypatch.setattr(reader, "READERS", 1)
    serial = reader.read_checkpoint(store, [str(path)], add_fields=fields, remove_fields=("path",))
    monkeypatch.setattr(reader, "READERS", 3)
    together = threading.Barrier(3, timeout=30)  # the three add columns at once
    opened = column_split.open_parquet

    def meet(*args: Any, **kwargs: Any) -> pq.ParquetFile:
        together.wait()
        return opened(*args, **kwargs)

    monkeypatch.setattr(column_split, "open_parquet", meet)
    parallel = reader.read_checkpoint(
        store, [str(path)], add_fields=fields, remove_fields=("path",)
    )
    (add_rows,) = parallel.adds
    assert add_rows.equals(serial.adds[0])
    assert add_rows.column_names == ["path", "partitionValues", "size"]
    assert add_rows.column("path").to_pylist() == [a["path"] for a in adds if a]
    assert parallel.removes[0].equals(serial.removes[0])  # one column: the serial read


def test_big_column_chunks_are_read_page_by_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file with a column chunk of BIG_CHUNK bytes or more is read through a buffer; the
    rows are the ones an unbuffered read gives."""
    _table(tmp_path)
    whole = DeltaTable(str(tmp_path)).files()
    seen: list[int] = []
    opened = reader.open_parquet

    def spy(*args: Any, **kwargs: Any) -> pq.ParquetFile:
        seen.append(kwargs.get("buffer_size", 0))
        return opened(*args, **kwargs)

    monkeypatch.setattr(reader, "open_parquet", spy)
    monkeypatch.setattr(column_split, "open_parquet", spy)
    DeltaTable(str(tmp_path)).files()
    assert seen and not any(seen)  # small chunks: read whole, as before
    seen.clear()
    monkeypatch.setattr(reader, "BIG_CHUNK", 64)
    buffered = DeltaTable(str(tmp_path)).files()
    assert reader.READ_BUFFER in seen
    assert buffered.equals(whole)
