"""deltalog writes V2 checkpoints into a delta-spark table with delta.checkpointPolicy=v2.

delta-spark creates the table; deltalog appends (``deltalog.spark.write`` and ``append_files``),
removes a file, and writes V2 checkpoints (UUID-named JSON with a Parquet sidecar). A copy of the
table without the commits before deltalog's last checkpoint can only be read through that
checkpoint: delta-spark and delta-rs read the same rows from it. delta-spark then appends to the
original after deltalog.
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
from tableutil import write_parquet
from test_delta_spark import _sql_table, sort_rows, spark_history, spark_rows

import deltalog.spark
from deltalog import DeltaTable

V2_NAME = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-f-]{36}\.json$")


def _only_from_checkpoint(root: str, copy: str, version: int) -> None:
    """Copy the table, then delete every log file for versions before ``version``."""
    shutil.copytree(root, copy)
    log = Path(copy) / "_delta_log"
    for entry in log.iterdir():
        digits = re.match(r"^\.?(\d{20})\.", entry.name)
        if digits and int(digits.group(1)) < version:
            entry.unlink()


def test_deltalog_v2_checkpoints_are_read_by_delta_spark_and_delta_rs(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    root = str(tmp_path / "v2")
    t = _sql_table(root)
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING) USING DELTA TBLPROPERTIES "
        "('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '3')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")
    assert DeltaTable(root).version() == 2

    # Version 3 (a Spark write) is due for a checkpoint: deltalog writes a V2 one.
    assert (
        deltalog.spark.write(
            spark.createDataFrame([(4, "d")], "id long, v string"), root, mode="append"
        ).version
        == 3
    )
    rel = write_parquet(root, "deltalog-append.parquet", pa.table({"id": [5], "v": ["e"]}))
    table = DeltaTable(root)
    assert table.append_files([rel]) == 4
    with table.transaction("DELETE") as tx:
        files = tx.read_whole_table()
        doomed = [
            path
            for path, stats in zip(
                files.column("path").to_pylist(), files.column("stats").to_pylist(), strict=True
            )
            if orjson.loads(stats)["minValues"]["id"] == 1  # delta-spark's first insert
        ]
        tx.remove(doomed)
    assert tx.version == 5
    table = DeltaTable(root)
    last = table.checkpoint()  # an explicit V2 checkpoint of version 5
    assert last.version == 5 and "v2Checkpoint" in last.extra
    names = sorted(os.listdir(Path(root) / "_delta_log"))
    mine = [n for n in names if V2_NAME.match(n)]
    assert [int(V2_NAME.match(n).group(1)) for n in mine] == [3, 5]  # type: ignore[union-attr]
    pointer = orjson.loads((Path(root) / "_delta_log" / "_last_checkpoint").read_bytes())
    assert pointer["version"] == 5 and pointer["v2Checkpoint"]["path"] in mine
    sidecars = os.listdir(Path(root) / "_delta_log" / "_sidecars")
    assert pointer["v2Checkpoint"]["sidecarFiles"][0]["path"] in sidecars

    expected = spark_rows(spark, root, ["id", "v"])
    ids = [r["id"] for r in expected]  # (1, 'a') removed; (2, 'b') too if in the same file
    assert 1 not in ids and {3, 4, 5} <= set(ids)
    assert sort_rows(DeltaTable(root).to_pyarrow_table().to_pylist(), ["id", "v"]) == expected

    # Only the checkpoint at 5 (and the commit at 5) rebuild the copy.
    copy = str(tmp_path / "copy")
    _only_from_checkpoint(root, copy, 5)
    assert not (Path(copy) / "_delta_log" / "00000000000000000004.json").exists()
    assert spark_rows(spark, copy, ["id", "v"]) == expected
    rs = deltalake.DeltaTable(copy)
    assert rs.version() == 5
    # delta-rs' pyarrow reader refuses the v2Checkpoint reader feature; its DataFusion reader
    # (the kernel's log replay) reads it.
    scan = deltalake.QueryBuilder().register("t", rs).execute("SELECT id, v FROM t").read_all()
    assert sort_rows(pa.table(scan).to_pylist(), ["id", "v"]) == expected
    assert DeltaTable(copy).snapshot.checkpoint_version == 5

    # delta-spark's history agrees, and it appends after deltalog.
    history = spark_history(spark, root, limit=3)
    assert [h["operation"] for h in history] == ["DELETE", "WRITE", "WRITE"]
    spark.sql(f"INSERT INTO {t} VALUES (6, 'f')")
    assert len(spark_rows(spark, root, ["id", "v"])) == len(expected) + 1
    assert DeltaTable(root).version() == 6
    assert len(DeltaTable(root).to_pyarrow_table()) == len(expected) + 1
