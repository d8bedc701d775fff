"""``read(spark, uri).filter(text)`` reads only the files the text may match, as delta-spark's.

The DataFrame of a whole snapshot reads again, at the same snapshot, the files whose partition
values and statistics may hold a matching row; Spark filters the rows by the same text. Column
conditions, text deltalog cannot read and cached DataFrames keep Spark's own filter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import DeltaTable, write_table
from deltalog.spark import read


def _batch(start: int, stop: int) -> pa.Table:
    ids = range(start, stop)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([i // 50 for i in ids], pa.int32()),
            "s": [f"s{i}" for i in ids],
        }
    )


@pytest.fixture
def ten_files(tmp_path: Path) -> str:
    """A table of ids 0..99 in ten files of ten ascending ids, partitioned by ``id // 50``."""
    uri = str(tmp_path / "t")
    for start in range(0, 100, 10):
        write_table(uri, _batch(start, start + 10), partition_by=["p"], mode="append")
    return uri


def _ids(frame: Any) -> list[int]:
    return sorted(r["id"] for r in frame.collect())


def test_text_filter_reads_only_the_files_it_may_match(spark: Any, ten_files: str) -> None:
    whole = read(spark, ten_files)
    assert len(whole.inputFiles()) == 10
    high = whole.filter("id >= 95")
    assert _ids(high) == [95, 96, 97, 98, 99]
    assert len(high.inputFiles()) == 1  # statistics: only the last file
    part = whole.where("p = 0 AND id < 12")
    assert _ids(part) == list(range(12))
    assert len(part.inputFiles()) == 2
    either = whole.filter("id < 3 OR id IN (41, 77)")
    assert _ids(either) == [0, 1, 2, 41, 77]
    assert len(either.inputFiles()) == 3
    assert whole.filter("id > 1000").collect() == []
    assert len(whole.inputFiles()) == 10  # the DataFrame itself is unchanged
    narrow = read(spark, ten_files, columns=["s", "id"]).filter("id = 7")
    assert narrow.columns == ["s", "id"]
    assert narrow.collect()[0].asDict() == {"s": "s7", "id": 7}


def test_what_deltalog_cannot_judge_is_filtered_by_spark(spark: Any, ten_files: str) -> None:
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    whole = read(spark, ten_files)
    by_column = whole.filter(F.col("id") >= 95)
    assert _ids(by_column) == [95, 96, 97, 98, 99]
    assert len(by_column.inputFiles()) == 10  # a Column: Spark's filter over every file
    spark_only = whole.filter("length(s) = 2")
    assert _ids(spark_only) == list(range(10))
    assert len(spark_only.inputFiles()) == 10
    # A column the DataFrame lacks: Spark's own filter, which resolves it below the projection.
    hidden = read(spark, ten_files, columns=["id"]).filter("p = 1")
    assert _ids(hidden) == list(range(50, 100))
    assert len(hidden.inputFiles()) == 10
    with pytest.raises(AnalysisException):
        whole.filter("nope = 1").collect()
    cached = read(spark, ten_files).cache()
    try:
        hit = cached.filter("id >= 95")
        assert _ids(hit) == [95, 96, 97, 98, 99]
        assert hit.inputFiles() == []  # served from the cache (it lists no file), not a read
    finally:
        cached.unpersist()


def test_pruned_reads_stay_at_the_snapshot(spark: Any, ten_files: str) -> None:
    old = read(spark, ten_files, version=4)  # ids 0..49
    write_table(ten_files, _batch(100, 110), partition_by=["p"], mode="append")
    assert _ids(old.filter("id >= 45")) == [45, 46, 47, 48, 49]
    assert _ids(read(spark, ten_files).filter("id >= 105")) == [105, 106, 107, 108, 109]


def test_deletion_vectors_are_applied_in_pruned_reads(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    config = {"delta.enableDeletionVectors": "true"}
    for start in range(0, 40, 10):
        write_table(uri, _batch(start, start + 10), configuration=config, mode="append")
    DeltaTable(uri).delete("id IN (31, 33)")
    high = read(spark, uri).filter("id > 29")
    assert _ids(high) == [30, 32, 34, 35, 36, 37, 38, 39]
    assert read(spark, uri).filter("id > 29").count() == 8
