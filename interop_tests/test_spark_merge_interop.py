"""``deltalog.spark.merge`` against delta-spark's own MERGE on the same input.

Two copies of one table are built with ``write_table``; deltalog.spark.merge changes one and
delta-spark's ``MERGE INTO`` the other, with the same source and clauses. Both must hold the
same rows; delta-spark must read every version of deltalog's copy as deltalog does (deletion
vectors and all), ``check`` must be clean, and the commits must have the same operation,
parameter and metric names, and the same row counts. All tests share the process's one Spark
session (with delta-spark's jars).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaTable, MultipleSourceRowMatchError, write_table
from deltalog.spark import SparkMerger
from deltalog.spark import merge as spark_merge

pytestmark = pytest.mark.spark

DV = {"delta.enableDeletionVectors": "true"}


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
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


def _source(spark: Any, with_op: bool) -> Any:
    ids = [0, 1, 2, 5, 10, 24, 25, 33, 58, 59, 70, 71, 72]
    rows = [
        (i, ("a", "b/c", "ü 1%")[i % 3], float(i) * 10, f"new{i}", ("D", "U", "I")[i % 3])
        for i in ids
    ]
    ddl = "id long, p string, v double, s string, op string"
    frame = spark.createDataFrame(rows, ddl)
    return frame if with_op else frame.drop("op")


MERGES: dict[str, tuple[str, Callable[[SparkMerger], SparkMerger], str]] = {
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
    "partition-pruned": (
        "t.id = s.id AND t.p = 'b/c'",
        lambda m: m.when_matched_delete("s.id % 2 = 0").when_matched_update({"s": "s.s"}),
        "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET s = s.s",
    ),
}

CASES = [
    *[(name, False, True) for name in sorted(MERGES)],
    *[(name, True, False) for name in sorted(MERGES)],
    ("clauses", True, True),
]


@pytest.mark.parametrize(("name", "dv", "partitioned"), CASES)
def test_spark_merge_matches_delta_spark(
    delta_spark: Any, tmp_path: Path, name: str, dv: bool, partitioned: bool
) -> None:
    condition, build, clauses = MERGES[name]
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for root in (ours, theirs):
        _table(root, DV if dv else None, partitioned)
    source = _source(delta_spark, with_op=name == "clauses")
    result = build(
        spark_merge(delta_spark, ours, source, condition, source_alias="s", target_alias="t")
    ).execute()
    assert result.committed and result.version == 3
    source.createOrReplaceTempView("merge_source")
    delta_spark.sql(f"MERGE INTO delta.`{theirs}` t USING merge_source s ON {condition} {clauses}")
    assert _dl(ours) == _dl(theirs)
    for version in range(DeltaTable(ours).version() + 1):
        assert _spark(delta_spark, ours, version) == _dl(ours, version), version
    report = DeltaTable(ours).check()
    assert report.ok, report.findings
    mine, spark_info = _info(ours, 3), _info(theirs, 3)
    assert mine["operation"] == spark_info["operation"] == "MERGE"
    assert set(mine["operationParameters"]) == set(spark_info["operationParameters"])
    assert set(mine["operationMetrics"]) == set(spark_info["operationMetrics"])
    for key in (
        "numSourceRows",
        "numTargetRowsInserted",
        "numTargetRowsUpdated",
        "numTargetRowsDeleted",
        "numTargetRowsMatchedUpdated",
        "numTargetRowsMatchedDeleted",
        "numTargetRowsNotMatchedBySourceUpdated",
        "numTargetRowsNotMatchedBySourceDeleted",
    ):
        assert mine["operationMetrics"][key] == spark_info["operationMetrics"][key], key
    if dv:  # only the rows taken out are marked: no row is copied
        assert mine["operationMetrics"]["numTargetRowsCopied"] == "0"


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_conditional_duplicate_matches_as_delta_spark(
    delta_spark: Any, tmp_path: Path, dv: bool
) -> None:
    """Every matched pair counts as a match, taken by a clause or not (as delta-spark).

    Two source rows match target row 1 and only one satisfies the clause's condition: both
    delta-spark and deltalog refuse the merge, and nothing is written.
    """
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for root in (ours, theirs):
        _table(root, DV if dv else None, False)
    source = delta_spark.createDataFrame(
        [(1, "x", True), (1, "y", False), (2, "z", True)], "id long, s string, ok boolean"
    )
    merger = spark_merge(
        delta_spark, ours, source, "t.id = s.id", source_alias="s", target_alias="t"
    ).when_matched_update({"s": "s.s"}, "s.ok")
    with pytest.raises(MultipleSourceRowMatchError):
        merger.execute()
    source.createOrReplaceTempView("dup_source")
    with pytest.raises(Exception, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
        delta_spark.sql(
            f"MERGE INTO delta.`{theirs}` t USING dup_source s ON t.id = s.id "
            "WHEN MATCHED AND s.ok THEN UPDATE SET s = s.s"
        )
    assert DeltaTable(ours).version() == DeltaTable(theirs).version() == 2
