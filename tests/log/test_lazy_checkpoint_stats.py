"""Statistics read lazily from a checkpoint decode only the ``add`` columns and the sidecars.

The snapshot's protocol, metaData, txn and domainMetadata were read when it was loaded; a
later read of ``stats`` (or typed statistics) decoded them again: in a checkpoint of one row
group of a million files, each such column is decoded over every row (40 ms for metaData).
Checked on classic and V2 (sidecar) checkpoints of deltalog and on delta-spark's V2 golden table.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from tableutil import write_parquet
from testpaths import GOLDEN_DIR

from deltalog import DeltaTable
from deltalog.checkpoints import reader
from deltalog.log import replay


def _table(root: Path, policy: str) -> str:
    table = DeltaTable.create(
        str(root),
        pa.schema([("id", pa.int64())]),
        configuration={"delta.checkpointPolicy": policy, "delta.checkpointInterval": "1000"},
    )
    for i in range(4):
        table.append_files([write_parquet(root, f"f{i}.parquet", pa.table({"id": [i]}))])
    table.checkpoint()
    return str(root)


def _actions_checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = reader._has_struct_column

    def spy(top: pa.Schema, action: str, path: str) -> Any:
        seen.append(action)
        return real(top, action, path)

    monkeypatch.setattr(reader, "_has_struct_column", spy)
    return seen


@pytest.mark.parametrize("source", ["classic", "v2", "golden-v2-checkpoint-parquet"])
@pytest.mark.parametrize("small", [True, False], ids=["one-pass", "batches"])
def test_lazy_statistics_read_only_file_actions_and_sidecars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, small: bool
) -> None:
    if source.startswith("golden"):
        root = tmp_path / "g"
        shutil.copytree(GOLDEN_DIR / "v2-checkpoint-parquet", root)
        path = str(root)
    else:
        path = _table(tmp_path / "t", source)
    if not small:
        monkeypatch.setattr(reader, "SMALL_ROWS", -1)
    expected = DeltaTable(path).files()  # opened and read in one go: the reference
    # statistics of a checkpoint this small come with its first read: make it "big"
    monkeypatch.setattr(replay, "SMALL_CHECKPOINT_BYTES", 0)
    table = DeltaTable(path)
    assert table.snapshot.checkpoint_version is not None
    seen = _actions_checked(monkeypatch)
    files = table.files()
    assert seen and set(seen) <= {"add", "sidecar"}, seen
    assert files.select(["path", "stats"]).equals(expected.select(["path", "stats"]))
    counts = [orjson.loads(s)["numRecords"] for s in files.column("stats").to_pylist() if s]
    assert counts and all(c >= 1 for c in counts)
    seen.clear()
    flat = DeltaTable(path).files(with_stats=False, flatten_stats=True)
    assert flat.num_rows == files.num_rows
