"""V2 checkpoints that reuse sidecars, read by delta-spark and delta-rs, and continued by both.

deltalog writes a table with ``delta.checkpointPolicy=v2`` whose checkpoints reference sidecars
of the checkpoint before (small sidecars, so that several are written, reused and dropped after
a remove). A copy without the commits before the last checkpoint can only be read through it:
delta-spark and delta-rs see the same rows and files as deltalog's JSON replay. delta-spark
then appends to the copy until it writes its own V2 checkpoint, which deltalog reads back, and
deltalog checkpoints after it again.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pytest
from tableutil import write_parquet
from test_delta_spark import _sql_table, sort_rows, spark_rows
from test_delta_spark_v2_checkpoints import _only_from_checkpoint

import deltalog.maintenance.checkpointing as checkpointing
from deltalog import DeltaTable

#: UUID-named checkpoints: deltalog writes JSON ones, delta-spark may write Parquet ones.
UUID_NAMED = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-f-]{36}\.(json|parquet)$")


def _log(root: str) -> Path:
    return Path(root) / "_delta_log"


def _sidecars(root: str, name: str) -> list[str]:
    lines = [orjson.loads(x) for x in (_log(root) / name).read_bytes().splitlines()]
    return [line["sidecar"]["path"] for line in lines if "sidecar" in line]


def _checkpoints(root: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for name in sorted(os.listdir(_log(root))):
        match = UUID_NAMED.match(name)
        if match:
            json = match.group(2) == "json"
            out[int(match.group(1))] = _sidecars(root, name) if json else []
    return out


def _base_names(uris: list[str]) -> set[str]:
    return {u.rstrip("/").rsplit("/", 1)[-1] for u in uris}


def _json_replay_files(root: str, scratch: Path) -> set[str]:
    """File names deltalog sees replaying the commits alone (checkpoints removed in a copy)."""
    copy = scratch / "json-only"
    shutil.copytree(root, copy)
    for entry in _log(str(copy)).iterdir():
        if ".checkpoint." in entry.name or entry.name == "_last_checkpoint":
            entry.unlink()
    table = DeltaTable(str(copy))
    assert table.snapshot.checkpoint_version is None
    return set(table.files().column("path").to_pylist())


def test_reused_sidecars_are_read_and_continued_by_delta_spark_and_delta_rs(
    delta_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = delta_spark
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 2)
    root = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = DeltaTable.create(
        root,
        schema,
        configuration={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "3"},
    )

    def append(i: int, n: int = 1) -> None:
        rels = [
            write_parquet(
                root,
                f"part-{i}-{j}.parquet",
                pa.table({"id": [i * 10 + j], "v": [f"r{i}.{j}"]}, schema=schema),
            )
            for j in range(n)
        ]
        table.append_files(rels)
        table.wait_for_checkpoints()

    append(1, 4)  # 1
    append(2)  # 2
    append(3)  # 3: checkpoint, sidecars of 2 adds
    append(4)  # 4
    append(5)  # 5
    append(6)  # 6: checkpoint reusing the full sidecars of 3
    with table.transaction("DELETE") as tx:
        tx.remove(["part-1-0.parquet"])  # 7: one of 3's sidecars is not reused at 9
    table.wait_for_checkpoints()
    append(8)  # 8
    append(9)  # 9: checkpoint
    cps = _checkpoints(root)
    assert sorted(cps) == [3, 6, 9]
    assert set(cps[3]) & set(cps[6]) and set(cps[6]) & set(cps[9])  # two checkpoints reuse
    assert set(cps[3]) & set(cps[9])  # a sidecar shared by all three
    assert len(set(cps[3]) - set(cps[9])) >= 1  # the one holding the removed file is not

    expected_files = _json_replay_files(root, tmp_path)
    expected = spark_rows(spark, root, ["id", "v"])
    assert len(expected) == len(expected_files) == 10 and {"id": 10, "v": "r1.0"} not in expected

    copy = str(tmp_path / "copy")
    _only_from_checkpoint(root, copy, 9)
    assert not (_log(copy) / "00000000000000000008.json").exists()
    assert DeltaTable(copy).snapshot.checkpoint_version == 9
    assert set(DeltaTable(copy).files().column("path").to_pylist()) == expected_files
    # delta-spark: the same rows and files, through the checkpoint alone.
    assert spark_rows(spark, copy, ["id", "v"]) == expected
    frame = spark.read.format("delta").load(copy)
    assert _base_names(list(frame.inputFiles())) == expected_files
    # delta-rs: its DataFusion reader (the pyarrow one refuses the v2Checkpoint feature).
    rs = deltalake.DeltaTable(copy)
    assert rs.version() == 9
    scan = deltalake.QueryBuilder().register("t", rs).execute("SELECT id, v FROM t").read_all()
    assert sort_rows(pa.table(scan).to_pylist(), ["id", "v"]) == expected

    # delta-spark appends to the copy until it writes its own V2 checkpoint at 12.
    t = _sql_table(copy)
    for k in range(3):
        spark.sql(f"INSERT INTO {t} VALUES ({100 + k}, 'spark{k}')")
    mine = _checkpoints(copy)
    assert 12 in mine
    spark_expected = spark_rows(spark, copy, ["id", "v"])
    assert len(spark_expected) == len(expected) + 3
    _only_from_checkpoint(copy, str(tmp_path / "copy12"), 12)
    after_spark = DeltaTable(str(tmp_path / "copy12"))
    assert after_spark.version() == 12 and after_spark.snapshot.checkpoint_version == 12
    assert sort_rows(after_spark.to_pyarrow_table().to_pylist(), ["id", "v"]) == spark_expected

    # deltalog continues after delta-spark's checkpoint; delta-spark and delta-rs read it.
    ours = DeltaTable(copy)
    for i in range(13, 16):
        rel = write_parquet(
            copy, f"more-{i}.parquet", pa.table({"id": [i * 10], "v": [f"m{i}"]}, schema=schema)
        )
        ours.append_files([rel])
        ours.wait_for_checkpoints()
    assert 15 in _checkpoints(copy)
    final = str(tmp_path / "copy15")
    _only_from_checkpoint(copy, final, 15)
    want = sort_rows(DeltaTable(copy).to_pyarrow_table().to_pylist(), ["id", "v"])
    assert len(want) == len(spark_expected) + 3
    assert DeltaTable(final).snapshot.checkpoint_version == 15
    assert sort_rows(DeltaTable(final).to_pyarrow_table().to_pylist(), ["id", "v"]) == want
    assert spark_rows(spark, final, ["id", "v"]) == want
    scan = (
        deltalake.QueryBuilder()
        .register("t", deltalake.DeltaTable(final))
        .execute("SELECT id, v FROM t")
        .read_all()
    )
    assert sort_rows(pa.table(scan).to_pylist(), ["id", "v"]) == want
