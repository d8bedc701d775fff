"""Checkpoints written by deltalog, read back by delta-rs at the latest and older versions."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

import deltalake
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaTable


def _rs_files(root: Path, version: int | None) -> list[str]:
    dt = (
        deltalake.DeltaTable(str(root))
        if version is None
        else deltalake.DeltaTable(str(root), version=version)
    )
    return sorted(os.path.relpath(u, root) for u in dt.file_uris())


def _our_files(root: Path, version: int | None) -> list[str]:
    t = DeltaTable(str(root), version=version)
    return sorted(unquote(p) for p in t.files(with_stats=False).column("path").to_pylist())


def test_delta_rs_reads_deltalog_checkpoints(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    table = DeltaTable.create(str(tmp_path), schema, partition_by=["p"])
    for i in range(25):
        rel = f"p=v {i % 4}/f{i}.parquet"
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [i]}), tmp_path / rel)
        table.append_files([rel])
    assert table.wait_for_checkpoints(timeout=120)  # written on the background thread
    log = tmp_path / "_delta_log"
    assert sorted(n for n in os.listdir(log) if ".checkpoint." in n) == [
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000020.checkpoint.parquet",
    ]
    assert orjson.loads((log / "_last_checkpoint").read_bytes())["version"] == 20
    for version in (None, 5, 10, 15, 20):
        expected = _our_files(tmp_path, version)
        assert _rs_files(tmp_path, version) == expected, version
        assert len(expected) == (25 if version is None else version)
    rows = deltalake.DeltaTable(str(tmp_path)).to_pyarrow_table()
    assert sorted(rows.column("id").to_pylist()) == list(range(25))
    # Without the JSON commits before 20, delta-rs must be reading our checkpoint.
    for v in range(0, 20):
        (log / f"{v:020d}.json").unlink()
    assert _rs_files(tmp_path, None) == _our_files(tmp_path, None)
    assert deltalake.DeltaTable(str(tmp_path)).version() == 25
