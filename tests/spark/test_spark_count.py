"""``deltalog.spark.count`` answers from the log's ``numRecords`` as delta-spark's ``count()``.

No Spark job runs when every live file's statistics count its rows (less the rows a deletion
vector deletes); otherwise, and with a filter, Spark counts the rows of ``read``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaTable, InvalidOptionError, write_table
from deltalog.spark import count, read


def _jobs(spark: Any) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def _ids(start: int, stop: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(start, stop), pa.int64()), "p": [i % 3 for i in range(start, stop)]}
    )


def test_a_count_from_the_log_runs_no_spark_job(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_table(uri, _ids(0, 50), partition_by=["p"])
    write_table(uri, _ids(50, 80), partition_by=["p"], mode="append")
    before = _jobs(spark)
    assert count(spark, uri) == 80
    assert count(spark, uri, version=0) == 50
    assert count(spark, uri, versionAsOf="0") == 50
    assert _jobs(spark) == before  # no data file opened
    assert read(spark, uri).count() == 80


def test_deletion_vectors_are_subtracted(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    write_table(uri, _ids(0, 100), configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(uri).delete("id >= 10 AND id < 25")
    before = _jobs(spark)
    assert count(spark, uri) == 85
    assert _jobs(spark) == before
    assert read(spark, uri).count() == 85


def test_files_without_num_records_are_counted_by_spark(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "nostats"
    write_table(str(uri), _ids(0, 40))
    write_table(str(uri), _ids(40, 60), mode="append")
    commit = uri / "_delta_log" / f"{1:020d}.json"
    lines = []
    for line in commit.read_bytes().splitlines():
        action = orjson.loads(line)
        if "add" in action:
            action["add"].pop("stats", None)
        lines.append(orjson.dumps(action))
    commit.write_bytes(b"\n".join(lines) + b"\n")
    before = _jobs(spark)
    assert count(spark, str(uri)) == 60
    assert _jobs(spark) != before  # Spark counted


def test_a_filtered_count_is_counted_by_spark(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "f")
    write_table(uri, _ids(0, 90), partition_by=["p"])
    write_table(uri, _ids(90, 120), partition_by=["p"], mode="append")
    assert count(spark, uri, filter="p = 1 AND id >= 30") == 30
    assert count(spark, uri, version=0, filter="id < 10") == 10


def test_an_empty_table_counts_zero(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "empty")
    write_table(uri, _ids(0, 0))
    assert count(spark, uri) == 0


def test_options_are_checked_as_read_checks_them(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "o")
    write_table(uri, _ids(0, 5))
    with pytest.raises(InvalidOptionError):
        count(spark, uri, mergeSchema="true")


def test_read_count_answers_from_the_log(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "r")
    write_table(uri, _ids(0, 60), partition_by=["p"])
    write_table(uri, _ids(60, 75), partition_by=["p"], mode="append")
    frame = read(spark, uri)
    narrow = read(spark, uri, columns=["id"], version=0)
    before = _jobs(spark)
    assert frame.count() == 75
    assert frame.count() == 75  # worked out once
    assert narrow.count() == 60
    assert frame.cache().count() == 75  # the same DataFrame
    assert _jobs(spark) == before  # no data file opened
    assert type(frame).__name__ == "DataFrame"
    assert frame.filter("p = 1").count() == 25  # a derived DataFrame is counted by Spark
    assert read(spark, uri, filter="id < 7").count() == 7
    assert _jobs(spark) != before
    frame.unpersist()


def test_read_count_from_the_log_subtracts_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "dvr")
    write_table(uri, _ids(0, 100), configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(uri).delete("id >= 40 AND id < 52")
    frame = read(spark, uri)
    before = _jobs(spark)
    assert frame.count() == 88
    assert _jobs(spark) == before
    assert len(frame.collect()) == 88


def test_read_count_without_num_records_or_switched_off_runs_spark(
    spark: Any, tmp_path: Path
) -> None:
    uri = tmp_path / "off"
    write_table(str(uri), _ids(0, 30))
    before = _jobs(spark)
    spark.conf.set("spark.databricks.delta.optimizeMetadataQuery.enabled", "false")
    try:
        assert read(spark, str(uri)).count() == 30
    finally:
        spark.conf.unset("spark.databricks.delta.optimizeMetadataQuery.enabled")
    assert _jobs(spark) != before  # delta-spark's switch turns the shortcut off
    commit = uri / "_delta_log" / f"{0:020d}.json"
    lines = []
    for line in commit.read_bytes().splitlines():
        action = orjson.loads(line)
        if "add" in action:
            action["add"]["stats"] = orjson.dumps({"minValues": {"id": 0}}).decode()
        lines.append(orjson.dumps(action))
    commit.write_bytes(b"\n".join(lines) + b"\n")
    before = _jobs(spark)
    assert read(spark, str(uri)).count() == 30
    assert _jobs(spark) != before  # a file whose stats lack numRecords: Spark counts
