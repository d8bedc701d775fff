"""Re-overwriting a partition with the file it already holds: delta-rs and delta-spark agree.

An idempotent re-run of ``overwrite_files([f], where=part == 'a')`` while ``f`` is live must
not commit both a ``remove`` and an ``add`` of ``f`` (readers disagree on what that means:
delta-rs drops the file, deltalog and delta-spark keep it). deltalog commits only the removes of
the partition's other files; every engine then reads ``f``'s rows, and nothing else of ``a``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaTable, col


def _write(root: Path, relative: str, ids: list[int]) -> str:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    return relative


def test_engines_agree_after_re_overwriting_a_partition_with_its_own_file(
    delta_spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(
        str(root), pa.schema([("id", pa.int64()), ("part", pa.string())]), partition_by=["part"]
    )
    kept = _write(root, "part=a/kept.parquet", [1, 2])
    other = _write(root, "part=a/other.parquet", [3])
    b = _write(root, "part=b/b.parquet", [4])
    table.append_files([kept, other, b])
    version = table.overwrite_files([kept], where=col("part") == "a")

    want = [(1, "a"), (2, "a"), (4, "b")]
    ours = table.to_pyarrow_table()
    assert sorted(zip(*ours.select(["id", "part"]).to_pydict().values(), strict=True)) == want
    rs = deltalake.DeltaTable(str(root))
    assert rs.version() == version
    got = rs.to_pyarrow_table().select(["id", "part"]).to_pydict()
    assert sorted(zip(got["id"], got["part"], strict=True)) == want
    frame = delta_spark.read.format("delta").load(str(root))
    assert sorted((r["id"], r["part"]) for r in frame.collect()) == want
