"""``deltalog.spark.merge`` reading plain target files with Spark's Parquet reader.

A table whose files mix deletion vectors (read through ``mapInArrow``) and plain files (read by
Spark's own reader, their file and row position from Spark's ``_metadata``), with escaped
partition values and ``name`` column mapping, is merged by deltalog and, from an identical
copy, by delta-spark: both must hold the same rows, and delta-spark must read every version of
deltalog's copy as deltalog does (so the positions deltalog's deletion vectors name are the
rows the merge took out).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaTable, write_table
from deltalog.spark import merge as spark_merge
from deltalog.spark.merge_native import split_target

pytestmark = pytest.mark.spark

#: Partition values Hive escapes in directory names (``/``, ``%``, ``:``, ``=``, ``#``).
PARTS = ("a", "b/c", "ü 1%", "k:=v#1")


def _norm(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS).decode() for r in rows)


def _dl(root: str, version: int | None = None) -> list[str]:
    return _norm(DeltaTable(root, version=version).to_pyarrow_table().to_pylist())


def _spark(spark: Any, root: str, version: int) -> list[str]:
    frame = spark.read.format("delta").option("versionAsOf", version).load(root)
    return _norm([row.asDict(recursive=True) for row in frame.collect()])


def _table(root: str, configuration: dict[str, str]) -> None:
    for n in range(3):
        ids = list(range(n * 20, n * 20 + 20))
        data = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": [PARTS[i % len(PARTS)] for i in ids],
                "v": [float(i) for i in ids],
            }
        )
        write_table(
            root,
            data,
            mode="append",
            partition_by=["p"] if n == 0 else None,
            configuration=configuration if n == 0 else None,
        )
    # the first append's files get deletion vectors (or are rewritten, copy-on-write)
    DeltaTable(root).delete("id < 20 AND id % 3 = 0")


@pytest.mark.parametrize(
    ("mapping", "dv"),
    [("none", True), ("name", True), ("name", False)],
    ids=["dv", "dv-name-mapping", "copy-on-write-name-mapping"],
)
def test_mixed_files_merge_as_delta_spark(
    delta_spark: Any, tmp_path: Path, mapping: str, dv: bool
) -> None:
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    configuration = {"delta.columnMapping.mode": mapping}
    if dv:
        configuration["delta.enableDeletionVectors"] = "true"
    _table(ours, configuration)
    shutil.copytree(ours, theirs)
    snapshot = DeltaTable(ours).snapshot
    files = snapshot.files
    target = split_target(
        DeltaTable(ours)._storage.root,
        files,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
        snapshot.protocol,
    )
    with_dv = {r["path"] for r in files.to_pylist() if r["deletion_vector"] is not None}
    assert set(target.split.rest.column("path").to_pylist()) == with_dv
    assert len(target.split.native) == files.num_rows - len(with_dv) >= len(PARTS)
    assert bool(with_dv) == dv

    ops = {1: "D", 2: "U", 5: "D", 21: "U", 22: "D", 40: "U", 41: "U", 59: "D", 70: "I"}
    source = delta_spark.createDataFrame(
        [(i, PARTS[i % len(PARTS)], float(i) * 10, op) for i, op in ops.items()],
        "id long, p string, v double, op string",
    )
    spark_merge(delta_spark, ours, source, "t.id = s.id", source_alias="s", target_alias="t") \
        .when_matched_delete("s.op = 'D'") \
        .when_matched_update({"v": "s.v + t.v"}) \
        .when_not_matched_insert({"id": "s.id", "p": "s.p", "v": "s.v"}) \
        .execute()  # fmt: skip
    source.createOrReplaceTempView("native_source")
    delta_spark.sql(
        f"MERGE INTO delta.`{theirs}` t USING native_source s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v + t.v "
        "WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, s.p, s.v)"
    )
    assert _dl(ours) == _dl(theirs)
    assert len(_dl(ours)) == 60 - 7 - 4 + 1
    for version in range(DeltaTable(ours).version() + 1):
        assert _spark(delta_spark, ours, version) == _dl(ours, version), version
    report = DeltaTable(ours).check()
    assert report.ok, report.findings
