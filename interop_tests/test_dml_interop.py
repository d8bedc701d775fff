"""``DeltaTable.delete``/``update``/``merge``/``optimize`` read back by delta-spark and delta-rs.

After every operation delta-spark reads each version as deltalog does (deletion vectors and
all), delta-rs reads each version too (through DataFusion, which applies deletion vectors; its
``to_pyarrow_table`` refuses tables with the ``deletionVectors`` reader feature in 1.6.6, and
that refusal is asserted), and ``check`` is clean after every operation. delta-spark also
changes the same tables in turn (its DELETE and UPDATE on deltalog's deletion vectors,
deltalog's on delta-spark's), and its commits are compared with deltalog's: same operation
names, parameters and metric names. All tests share the process's one Spark session.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaTable, write_table

pytestmark = pytest.mark.spark

DV = {"delta.enableDeletionVectors": "true"}


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _norm(rows: list[dict[str, Any]]) -> list[str]:
    plain = [{k: _plain(v) for k, v in r.items()} for r in rows]
    return sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS, default=str).decode() for r in plain)


def _dl(root: str, version: int | None = None) -> list[str]:
    return _norm(DeltaTable(root, version=version).to_pyarrow_table().to_pylist())


def _spark(spark: Any, root: str, version: int) -> list[str]:
    frame = spark.read.format("delta").option("versionAsOf", version).load(root)
    return _norm([row.asDict(recursive=True) for row in frame.collect()])


def _rs(root: str, version: int | None = None) -> list[str]:
    table = deltalake.DeltaTable(root, version=version)
    builder = deltalake.QueryBuilder().register("t", table)
    return _norm(pa.table(builder.execute("SELECT * FROM t").read_all()).to_pylist())


def _rs_pyarrow(root: str, version: int) -> list[str] | None:
    """delta-rs's ``to_pyarrow_table``; ``None`` where delta-rs 1.6.6 refuses the table.

    Its pyarrow reader does not apply deletion vectors and refuses every table whose protocol
    lists the ``deletionVectors`` reader feature (DataFusion, ``_rs``, reads them).
    """
    table = deltalake.DeltaTable(root, version=version)
    if "deletionVectors" in (table.protocol().reader_features or []):
        with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="deletionVectors"):
            table.to_pyarrow_table()
        return None
    return _norm(table.to_pyarrow_table().to_pylist())


def _clean(root: str) -> None:
    """``check`` finds nothing wrong (called after every operation)."""
    report = DeltaTable(root).check()
    assert report.ok, report.findings


def _agree(spark: Any, root: str, first: int = 0) -> None:
    """delta-spark and delta-rs read every version from ``first`` as deltalog."""
    last = DeltaTable(root).version()
    for version in range(first, last + 1):
        ours = _dl(root, version)
        assert _spark(spark, root, version) == ours, version
        assert _rs(root, version) == ours, version
        assert _rs_pyarrow(root, version) in (ours, None), version
    _clean(root)


def _info(root: str, version: int) -> dict[str, Any]:
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return next(a["commitInfo"] for a in lines if "commitInfo" in a)


def _table(root: str, configuration: dict[str, str] | None, partitioned: bool) -> None:
    for n in range(3):
        ids = list(range(n * 20, n * 20 + 20))
        data = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": [("a", "b/c", "ü 1%")[i % 3] for i in ids],
                "v": [float(i) for i in ids],
                "s": [None if i % 7 == 0 else f"s{i}" for i in ids],
            }
        )
        write_table(
            root,
            data,
            mode="append",
            partition_by=["p"] if partitioned and n == 0 else None,
            configuration=configuration if n == 0 else None,
        )


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_deletes_read_the_same_everywhere(
    delta_spark: Any, tmp_path: Path, dv: bool, partitioned: bool
) -> None:
    root = str(tmp_path / "t")
    _table(root, DV if dv else None, partitioned)
    table = DeltaTable(root)
    table.delete("id IN (1, 2, 3, 25, 41)")
    _clean(root)
    table.delete("v > 50 AND s IS NULL")
    _clean(root)
    table.delete("p = 'b/c' AND id < 30")
    _clean(root)
    table.delete("id >= 0 AND id < 20", inline_deletion_vectors=4096)
    _agree(delta_spark, root)


def test_delta_spark_and_deltalog_take_turns_on_deletion_vectors(
    delta_spark: Any, tmp_path: Path
) -> None:
    root = str(tmp_path / "t")
    _table(root, DV, partitioned=False)
    table = DeltaTable(root)
    table.delete("id IN (1, 21, 41)")  # a DV in each file
    delta_spark.sql(f"DELETE FROM delta.`{root}` WHERE id IN (2, 22, 42)")  # merged by Spark
    spark_version = DeltaTable(root).version()
    table.delete("id IN (3, 23, 43)")  # merged with Spark's DVs
    _agree(delta_spark, root)
    ours, theirs = _info(root, spark_version + 1), _info(root, spark_version)
    assert ours["operation"] == theirs["operation"] == "DELETE"
    assert set(ours["operationParameters"]) == set(theirs["operationParameters"])
    assert set(ours["operationMetrics"]) == set(theirs["operationMetrics"])
    for key in ("numDeletedRows", "numDeletionVectorsUpdated", "numRemovedFiles"):
        assert ours["operationMetrics"][key] == theirs["operationMetrics"][key], key


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_updates_read_the_same_everywhere(
    delta_spark: Any, tmp_path: Path, dv: bool, partitioned: bool
) -> None:
    root = str(tmp_path / "t")
    _table(root, DV if dv else None, partitioned)
    table = DeltaTable(root)
    table.update("id > 50", set={"v": "v * 2 + 1", "s": "coalesce(s, 'none')"})
    _clean(root)
    table.update("s IS NULL", set={"s": "'was null'"})
    _clean(root)
    table.update("p = 'a' AND id < 10", set={"p": "'moved'"})
    _clean(root)
    table.update(set={"id": "id + 1000"})
    _agree(delta_spark, root)


def test_delta_spark_and_deltalog_take_turns_updating(delta_spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    _table(root, DV, partitioned=True)
    table = DeltaTable(root)
    table.update("id % 4 = 0", set={"v": "-v"})
    delta_spark.sql(f"UPDATE delta.`{root}` SET v = v + 0.5 WHERE id % 3 = 0")
    spark_version = DeltaTable(root).version()
    table.update("id % 5 = 0", set={"s": "upper(s)"})
    _agree(delta_spark, root)
    ours, theirs = _info(root, spark_version + 1), _info(root, spark_version)
    assert ours["operation"] == theirs["operation"] == "UPDATE"
    assert set(ours["operationParameters"]) == set(theirs["operationParameters"])
    assert set(ours["operationMetrics"]) == set(theirs["operationMetrics"])


@pytest.mark.parametrize("dv", [False, True], ids=["plain", "deletion-vectors"])
def test_optimize_reads_the_same_everywhere(delta_spark: Any, tmp_path: Path, dv: bool) -> None:
    root = str(tmp_path / "t")
    _table(root, DV if dv else None, partitioned=True)
    table = DeltaTable(root)
    table.delete("id IN (4, 5, 6, 33, 47)")
    _clean(root)
    result = table.optimize()
    assert result.committed and result.files_added == 3  # one per partition
    _agree(delta_spark, root)
    ours = _info(root, result.version)
    # delta-spark compacts the same table again after an append: same commit shape
    write_table(root, pa.table({"id": [100], "p": ["a"], "v": [1.0], "s": ["x"]}), mode="append")
    delta_spark.sql(f"OPTIMIZE delta.`{root}`")
    theirs = _info(root, DeltaTable(root).version())
    assert ours["operation"] == theirs["operation"] == "OPTIMIZE"
    assert set(ours["operationParameters"]) == set(theirs["operationParameters"])
    assert set(ours["operationMetrics"]) == set(theirs["operationMetrics"])
    _agree(delta_spark, root)


MERGES = {
    "upsert": (
        "t.id = s.id",
        lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    ),
    "clauses": (
        "t.id = s.id",
        lambda m: (
            m.when_matched_delete("s.op = 'D'")
            .when_matched_update({"v": "s.v + t.v", "s": "concat(t.s, s.op)"}, "s.op = 'U'")
            .when_not_matched_insert({"id": "s.id", "p": "'new'", "v": "s.v"}, "s.op <> 'D'")
            .when_not_matched_by_source_update({"v": "-t.v"}, "t.id > 50")
            .when_not_matched_by_source_delete("t.id < 3")
        ),
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        "WHEN MATCHED AND s.op = 'U' THEN UPDATE SET v = s.v + t.v, s = concat(t.s, s.op) "
        "WHEN NOT MATCHED AND s.op <> 'D' THEN INSERT (id, p, v) VALUES (s.id, 'new', s.v) "
        "WHEN NOT MATCHED BY SOURCE AND t.id > 50 THEN UPDATE SET v = -t.v "
        "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE",
    ),
    "residual": (
        "t.id = s.id AND t.v < s.v AND t.p <> 'a'",
        lambda m: m.when_matched_update({"v": "s.v"}).when_not_matched_insert_all(),
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    ),
}


def _merge_source() -> pa.Table:
    ids = [0, 1, 2, 5, 10, 24, 25, 33, 58, 59, 70, 71, 72]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": [("a", "b/c", "ü 1%")[i % 3] for i in ids],
            "v": [float(i) * 10 for i in ids],
            "s": [f"new{i}" for i in ids],
            "op": [("D", "U", "I")[i % 3] for i in ids],
        }
    )


@pytest.mark.parametrize("name", sorted(MERGES))
@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_merges_match_delta_spark(
    delta_spark: Any, tmp_path: Path, name: str, dv: bool, partitioned: bool
) -> None:
    condition, build, clauses = MERGES[name]
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for root in (ours, theirs):
        _table(root, DV if dv else None, partitioned)
    source = _merge_source()
    if name == "upsert":
        source = source.drop_columns(["op"])
    build(DeltaTable(ours).merge(source, condition, "s", "t")).execute()
    _clean(ours)
    delta_spark.createDataFrame(source.to_pandas()).createOrReplaceTempView("merge_source")
    delta_spark.sql(f"MERGE INTO delta.`{theirs}` t USING merge_source s ON {condition} {clauses}")
    assert _dl(ours) == _dl(theirs)
    _agree(delta_spark, ours)
    mine, spark_info = _info(ours, 3), _info(theirs, 3)
    assert mine["operation"] == spark_info["operation"] == "MERGE"
    assert set(mine["operationParameters"]) == set(spark_info["operationParameters"])
    assert set(mine["operationMetrics"]) == set(spark_info["operationMetrics"])
    for key in ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"):
        assert mine["operationMetrics"][key] == spark_info["operationMetrics"][key], key
