"""deltalog writes into delta-spark's column-mapped and liquid-clustered tables.

For column mapping (``name`` and ``id``, with a column renamed, one dropped, a nested struct and
a partition column) and for a table created with ``CLUSTER BY``: deltalog appends with
``deltalog.spark.write`` and ``append_files`` and commits a transaction that removes files;
delta-spark then reads exactly the rows deltalog reads, its ``DESCRIBE HISTORY``/``DETAIL``
agree with deltalog's log, it appends after deltalog, and delta-rs reads the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pytest
from tableutil import write_parquet
from test_delta_spark import _sql_table, sort_rows, spark_history, spark_rows

import deltalog.spark
from deltalog import ClusteringChangeError, DeltaTable, InvalidInputError, col
from deltalog.protocol.column_mapping import logical_to_physical, to_physical_batch
from deltalog.protocol.schema import StructType

COLUMNS = ["id", "w", "s", "day"]


def _detail(spark: Any, root: str) -> dict[str, Any]:
    row = spark.sql(f"DESCRIBE DETAIL {_sql_table(root)}").collect()[0]
    return dict(row.asDict())


def _spark_rows(spark: Any, root: str, columns: list[str]) -> list[dict[str, Any]]:
    frame = spark.read.format("delta").load(root).select(*columns)
    return sort_rows([row.asDict(recursive=True) for row in frame.collect()], columns)


def _dl_rows(root: str, columns: list[str]) -> list[dict[str, Any]]:
    return sort_rows(DeltaTable(root).to_pyarrow_table(columns=columns).to_pylist(), columns)


def _rs_rows(root: str, columns: list[str]) -> list[dict[str, Any]]:
    """delta-rs's rows through its DataFusion reader, which maps columns (its pyarrow
    ``to_pyarrow_table`` reads a column-mapped table's columns as nulls in 1.6.6)."""
    builder = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(root))
    table = pa.table(builder.execute("SELECT * FROM t").read_all())
    return sort_rows(table.select(columns).to_pylist(), columns)


def _deltalog_commits(root: str, versions: range) -> list[list[dict[str, Any]]]:
    out = []
    for v in versions:
        with open(Path(root) / "_delta_log" / f"{v:020d}.json", "rb") as f:
            out.append([orjson.loads(line) for line in f.read().splitlines() if line.strip()])
    return out


@pytest.mark.parametrize("mode", ["name", "id"])
def test_deltalog_writes_column_mapped_table(delta_spark: Any, tmp_path: Path, mode: str) -> None:
    spark = delta_spark
    root = str(tmp_path / mode)
    t = _sql_table(root)
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, x STRING, s STRUCT<a: INT>, day STRING) "
        f"USING DELTA PARTITIONED BY (day) TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')"
    )
    spark.sql(
        f"INSERT INTO {t} VALUES (1, 'a', 'x1', named_struct('a', 10), 'd1'), "
        "(2, 'b', 'x2', named_struct('a', 20), 'd2')"
    )
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO w")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN x")
    table = DeltaTable(root)
    start = table.version()
    phys = logical_to_physical(table.schema())
    assert all(phys[c] != c for c in COLUMNS)

    # A Spark write: nested and partition columns go to physical names.
    frame = spark.createDataFrame(
        [(3, "c", (30,), "d1"), (4, None, None, "d3")],
        "id long, w string, s struct<a:int>, day string",
    )
    written = deltalog.spark.write(frame, root, mode="append")
    assert written.version == start + 1
    # append_files of a file that already holds the physical names (and ids in id mode).
    nested = pa.array([{"a": 50}], pa.struct([("a", pa.int32())]))
    data = pa.table({"id": [5], "w": ["e"], "s": nested})
    batch = to_physical_batch(data.to_batches()[0], table.schema(), field_ids=mode == "id")
    rel = write_parquet(root, "day=d2/deltalog-append.parquet", pa.Table.from_batches([batch]))
    table = DeltaTable(root)
    assert table.append_files([rel]) == start + 2
    # A transaction with removes: drop partition d1 (delta-spark's row and deltalog's).
    with table.transaction("DELETE", parameters={"predicate": '["(day = d1)"]'}) as tx:
        tx.remove(tx.read_files(col("day") == "d1"))
    assert tx.version == start + 3

    expected = [
        {"id": 2, "w": "b", "s": {"a": 20}, "day": "d2"},
        {"id": 4, "w": None, "s": None, "day": "d3"},
        {"id": 5, "w": "e", "s": {"a": 50}, "day": "d2"},
    ]
    assert _spark_rows(spark, root, COLUMNS) == expected
    assert _dl_rows(root, COLUMNS) == expected
    assert _rs_rows(root, COLUMNS) == expected

    # The log says what delta-spark says.
    history = spark_history(spark, root, limit=3)
    assert [h["version"] for h in history] == [start + 3, start + 2, start + 1]
    assert [h["operation"] for h in history] == ["DELETE", "WRITE", "WRITE"]
    detail = _detail(spark, root)
    assert detail["numFiles"] == DeltaTable(root).files().num_rows == 3
    assert detail["partitionColumns"] == ["day"]
    removes = [
        a["remove"]
        for a in _deltalog_commits(root, range(start + 3, start + 4))[0]
        if "remove" in a
    ]
    assert len(removes) == 2 and all(set(r["partitionValues"]) == {phys["day"]} for r in removes)

    # delta-spark appends after deltalog.
    spark.sql(f"INSERT INTO {t} VALUES (6, 'f', named_struct('a', 60), 'd1')")
    assert len(_spark_rows(spark, root, COLUMNS)) == 4
    assert len(_dl_rows(root, COLUMNS)) == 4
    assert DeltaTable(root).version() == start + 4


def test_deltalog_writes_clustered_table(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "clustered")
    t = _sql_table(root)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING DELTA CLUSTER BY (id)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    table = DeltaTable(root)
    start = table.version()
    domain = table.snapshot.domains["delta.clustering"]
    assert orjson.loads(domain.configuration)["clusteringColumns"] == [["id"]]

    written = deltalog.spark.write(
        spark.createDataFrame([(3, "c")], "id long, v string"), root, mode="append"
    )
    assert written.version == start + 1
    rel = write_parquet(root, "deltalog-append.parquet", pa.table({"id": [4], "v": ["d"]}))
    table = DeltaTable(root)
    assert table.append_files([rel]) == start + 2
    with table.transaction("DELETE") as tx:
        files = tx.read_whole_table()
        paths = files.column("path").to_pylist()
        tx.remove([p for p in paths if p != rel])  # keep only deltalog's appended file
    assert tx.version == start + 3

    # Nothing a clustered table forbids: partitioning it, dropping its clustering column.
    with pytest.raises(InvalidInputError):
        deltalog.spark.write(
            spark.createDataFrame([(5, "e")], "id long, v string"),
            root,
            mode="append",
            partition_by=["v"],
        )
    with pytest.raises(ClusteringChangeError), DeltaTable(root).transaction() as bad:
        bad.update_metadata(partition_by=["v"])
    only_v = StructType(tuple(f for f in DeltaTable(root).schema().fields if f.name == "v"))
    with pytest.raises(ClusteringChangeError), DeltaTable(root).transaction() as bad:
        bad.update_metadata(schema=only_v)
    assert DeltaTable(root).version() == start + 3

    # The domain is untouched; appends carry no clusteringProvider.
    after = DeltaTable(root)
    assert after.snapshot.domains["delta.clustering"] == domain
    for actions in _deltalog_commits(root, range(start + 1, start + 4)):
        assert not any("domainMetadata" in a for a in actions)
        assert all("clusteringProvider" not in a["add"] for a in actions if "add" in a)
    assert spark_rows(spark, root, ["id", "v"]) == [{"id": 4, "v": "d"}]
    assert _rs_rows(root, ["id", "v"]) == [{"id": 4, "v": "d"}]
    detail = _detail(spark, root)
    assert list(detail["clusteringColumns"]) == ["id"]
    assert detail["numFiles"] == 1
    history = spark_history(spark, root, limit=3)
    assert [h["operation"] for h in history] == ["DELETE", "WRITE", "WRITE"]

    # delta-spark appends and clusters after deltalog.
    spark.sql(f"INSERT INTO {t} VALUES (5, 'e')")
    spark.sql(f"OPTIMIZE {t}")
    assert spark_rows(spark, root, ["id", "v"]) == [{"id": 4, "v": "d"}, {"id": 5, "v": "e"}]
    assert _dl_rows(root, ["id", "v"]) == [{"id": 4, "v": "d"}, {"id": 5, "v": "e"}]
    assert (
        DeltaTable(root).snapshot.domains["delta.clustering"].configuration == domain.configuration
    )
