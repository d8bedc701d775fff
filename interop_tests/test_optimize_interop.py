"""A table compacted by ``deltalog.spark.optimize`` reads the same in delta-spark and delta-rs.

The tables are written with pyarrow and ``append_files`` (no Spark write job); only the
optimize and the reads run on Spark. With deletion vectors (delta-spark's DELETE writes one),
optimize leaves that file alone, so the deleted rows stay deleted, and compacts the rest
(delta-rs cannot read tables with deletion vectors, so only delta-spark checks that one).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable as RsTable
from tableutil import write_parquet

from deltalog import DeltaTable
from deltalog.spark import optimize
from deltalog.spark.optimize import DELETION_VECTOR_REASON

Row = tuple[int, str, str]


def _table(root: Path, configuration: Mapping[str, str] | None = None) -> list[Row]:
    """30 files of 10 rows in partitions ``a`` and ``b``; the rows, sorted."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])
    DeltaTable.create(str(root), schema, partition_by=["p"], configuration=configuration)
    paths = []
    for i in range(30):
        ids = list(range(i * 10, i * 10 + 10))
        rows = pa.table({"id": ids, "s": [f"v{x}" for x in ids]})
        paths.append(write_parquet(root, f"p={'ab'[i % 2]}/part-{i:05d}.parquet", rows))
    DeltaTable(str(root)).append_files(paths)
    return sorted((i, f"v{i}", "ab"[(i // 10) % 2]) for i in range(300))


def _spark_rows(spark: Any, uri: str) -> list[Row]:
    return sorted((r["id"], r["s"], r["p"]) for r in spark.read.format("delta").load(uri).collect())


def test_optimized_table_reads_the_same_in_delta_spark_and_delta_rs(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    uri = str(tmp_path / "t")
    expected = _table(tmp_path / "t")

    result = optimize(spark, uri)

    assert result.files_removed == 30 and result.files_added == 2
    table = DeltaTable(uri)
    assert len(table.files()) == 2
    assert table.check().findings == []
    assert _spark_rows(spark, uri) == expected
    rs = RsTable(uri)
    assert rs.version() == result.version
    assert sorted((r["id"], r["s"], r["p"]) for r in rs.to_pyarrow_table().to_pylist()) == expected
    assert len(rs.file_uris()) == 2
    history = spark.sql(f"DESCRIBE HISTORY delta.`{uri}` LIMIT 1").collect()[0]
    assert history["operation"] == "OPTIMIZE"
    assert history["version"] == result.version
    assert history["operationParameters"] == {
        "predicate": "[]",
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": "false",
    }
    assert history["operationMetrics"]["numRemovedFiles"] == "30"
    assert history["operationMetrics"]["numAddedFiles"] == "2"
    assert rs.history(1)[0]["operation"] == "OPTIMIZE"


def test_files_with_deletion_vectors_are_left_alone(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    uri = str(tmp_path / "dv")
    expected = _table(tmp_path / "dv", {"delta.enableDeletionVectors": "true"})
    spark.sql(f"DELETE FROM delta.`{uri}` WHERE id IN (3, 4)")  # a DV on part-00000
    with_dv = [
        f["path"] for f in DeltaTable(uri).files().to_pylist() if f["deletion_vector"] is not None
    ]
    assert with_dv == ["p=a/part-00000.parquet"]
    expected = [r for r in expected if r[0] not in (3, 4)]

    result = optimize(spark, uri)

    assert result.files_removed == 29 and result.files_added == 2
    assert [(s.path, s.reason) for s in result.skipped] == [
        ("p=a/part-00000.parquet", DELETION_VECTOR_REASON)
    ]
    table = DeltaTable(uri)
    assert len(table.files()) == 3
    assert table.check().findings == []
    assert _spark_rows(spark, uri) == expected
