"""A long-lived writer whose base checkpoint is deleted by another writer's log cleanup.

Statistics of files that came from a checkpoint are read from it lazily. When log cleanup
deletes that checkpoint (allowed once it is older than the retention), the snapshot rebuilds
them from the current log instead of failing, and its background checkpoints go on.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from deltalog import AddFile, DeltaTable, check_table
from deltalog.maintenance.retention import cleanup_log


def _add(path: str, n: int) -> AddFile:
    return AddFile(
        path=path,
        partition_values={},
        size=n,
        modification_time=0,
        data_change=True,
        stats=orjson.dumps({"numRecords": n}).decode(),
    )


def _commit(table: DeltaTable, path: str, n: int) -> int:
    tx = table.transaction()
    tx.add(_add(path, n))
    return tx.commit()


def _stats(table: DeltaTable) -> dict[str, int]:
    files = table.files().to_pylist()
    return {f["path"]: orjson.loads(f["stats"])["numRecords"] for f in files}


@pytest.mark.parametrize("stats_first", [True, False], ids=["files-first", "checkpoint-first"])
def test_writer_survives_cleanup_of_its_base_checkpoint(tmp_path: Path, stats_first: bool) -> None:
    uri = str(tmp_path / "t")
    DeltaTable.create(
        uri,
        pa.schema([("id", pa.int64())]),
        configuration={
            "delta.logRetentionDuration": "interval 0 seconds",
            "delta.checkpointInterval": "10",
        },
    )
    setup = DeltaTable(uri, background_checkpoints=False)
    for i in range(1, 10):
        _commit(setup, f"a{i}.parquet", i)
    assert _commit(setup, "a10.parquet", 10) == 10  # checkpoint 10 (no cleanup: nothing older)
    assert Path(uri, "_delta_log", f"{10:020d}.checkpoint.parquet").exists()

    writer = DeltaTable(uri)  # loads from checkpoint 10; statistics not read yet
    assert writer.snapshot.checkpoint_version == 10
    for i in range(11, 13):
        _commit(writer, f"a{i}.parquet", i)  # version 12, statistics still in checkpoint 10

    other = DeltaTable(uri, background_checkpoints=False)
    other.checkpoint()  # version 12
    _commit(other, "b13.parquet", 13)
    deleted = cleanup_log(other._storage, {"delta.logRetentionDuration": "interval 0 seconds"})
    assert f"{10:020d}.checkpoint.parquet" in deleted

    expected = {f"a{i}.parquet": i for i in range(1, 13)}
    if stats_first:  # else the background checkpoint at 20 is the first to need them
        assert _stats(writer) == expected  # rebuilt from the current log
    for i in range(14, 21):
        _commit(writer, f"a{i}.parquet", i)
    assert writer.wait_for_checkpoints(60)
    assert Path(uri, "_delta_log", f"{20:020d}.checkpoint.parquet").exists()
    latest = DeltaTable(uri)
    assert latest.snapshot.checkpoint_version == 20
    expected |= {"b13.parquet": 13} | {f"a{i}.parquet": i for i in range(14, 21)}
    assert _stats(latest) == expected
    assert _stats(writer) == expected
    assert check_table(uri, data_files=False).ok
