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
