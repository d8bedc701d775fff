"""``DeltaTable.update()`` moves to the newest version: the new commits, or a new checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from deltalog import DeltaTable


def _append(table: DeltaTable, root: Path, i: int) -> None:
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [i]}), root / f"f{i}.parquet")
    table.append_files([f"f{i}.parquet"])


def test_update_starts_from_a_checkpoint_another_writer_made(tmp_path: Path) -> None:
    DeltaTable.create(str(tmp_path), pa.schema([("id", pa.int64())]))
    reader = DeltaTable(str(tmp_path))
    writer = DeltaTable(str(tmp_path), background_checkpoints=False)
    for i in range(1, 4):
        _append(writer, tmp_path, i)
    writer.checkpoint()  # at version 3, the newest commit
    assert reader.update() == 3
    assert reader.snapshot.checkpoint_version == 3
    assert sorted(reader.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


def test_update_applies_new_commits_without_a_checkpoint(tmp_path: Path) -> None:
    DeltaTable.create(str(tmp_path), pa.schema([("id", pa.int64())]))
    reader = DeltaTable(str(tmp_path))
    writer = DeltaTable(str(tmp_path), background_checkpoints=False)
    for i in range(1, 3):
        _append(writer, tmp_path, i)
    assert reader.update() == 2
    assert reader.snapshot.checkpoint_version is None
    assert sorted(reader.to_pyarrow_table().column("id").to_pylist()) == [1, 2]


def test_update_starts_from_the_checkpoint_this_object_wrote(tmp_path: Path) -> None:
    DeltaTable.create(
        str(tmp_path),
        pa.schema([("id", pa.int64())]),
        configuration={"delta.checkpointInterval": "2"},
    )
    writer = DeltaTable(str(tmp_path), background_checkpoints=False)
    other = DeltaTable(str(tmp_path), background_checkpoints=False)
    _append(writer, tmp_path, 1)
    _append(writer, tmp_path, 2)  # version 2: checkpointed inline by this object
    _append(other, tmp_path, 3)  # version 3 by another writer
    assert writer.update() == 3
    assert writer.snapshot.checkpoint_version == 2
    assert sorted(writer.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


def test_update_to_a_new_checkpoint_lists_the_log_once(tmp_path: Path, monkeypatch: Any) -> None:
    from deltalog.log.storage import TableStorage

    DeltaTable.create(str(tmp_path), pa.schema([("id", pa.int64())]))
    reader = DeltaTable(str(tmp_path))
    writer = DeltaTable(str(tmp_path), background_checkpoints=False)
    for i in range(1, 4):
        _append(writer, tmp_path, i)
    writer.checkpoint()
    calls: list[str] = []
    list_log, read_hint = TableStorage.list_log, TableStorage.read_last_checkpoint

    def counted_list(self: TableStorage, start: str = "") -> Any:
        calls.append("list")
        return list_log(self, start)

    def counted_hint(self: TableStorage) -> Any:
        calls.append("_last_checkpoint")
        return read_hint(self)

    monkeypatch.setattr(TableStorage, "list_log", counted_list)
    monkeypatch.setattr(TableStorage, "read_last_checkpoint", counted_hint)
    assert reader.update() == 3
    assert reader.snapshot.checkpoint_version == 3
    assert calls == ["list"]
