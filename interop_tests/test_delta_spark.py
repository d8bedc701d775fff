"""Interoperability with delta-spark, Delta Lake's reference engine, on each Spark line.

``scripts/test.sh`` runs this file on delta-spark 4.4 (PySpark 4.2, Scala 2.13) and again on
delta-spark 3.3 (PySpark 3.5, Scala 2.12).

* deltalog writes (``deltalog.spark.write`` and ``DeltaTable.append_files``), delta-spark reads:
  every version (``versionAsOf``), time travel by timestamp (``timestampAsOf``), tables with
  deltalog's checkpoints (also with the commits before them deleted, so that delta-spark has to
  read the checkpoint), and partition values that need escaping.
* delta-spark writes (INSERT, UPDATE, DELETE, MERGE, OPTIMIZE; with and without deletion
  vectors), deltalog reads: the same version, operation and live rows, and delta-rs agrees.
* Both engines append to one local table in turns, reading each other's commits and checkpoints.
* delta-spark's ``DESCRIBE HISTORY`` shows deltalog's ``commitInfo`` (operation, parameters,
  metrics) as it shows its own, and ``DESCRIBE DETAIL`` agrees with deltalog's snapshot (files,
  size, partition columns, protocol, properties).

Tables delta-spark writes with modern table features are in ``test_delta_spark_features.py``.

delta-spark's jars come through ``spark.jars.packages`` from Maven Central, matched to the
installed delta-spark (``tests/sparkutil.py``); ``scripts/test.sh`` makes their absence a failure.

The engines take turns here; they never race. delta-spark's log store for local paths checks
that a commit file is absent and then renames onto it under a lock that only exists inside its
own JVM, so it is not mutually exclusive with any other process (deltalog included): two engines
committing the same version at the same moment could both "win". Concurrent writers of
different engines need a commit that is atomic across processes, e.g. S3 with a DynamoDB table
as the arbiter: delta-spark's ``S3DynamoDBLogStore`` and deltalog's ``s3.commit_protocol=dynamodb``
speak the same protocol (see ``tests/test_s3_dynamodb.py`` for deltalog's side).
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import re
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog.spark
from deltalog.errors import TimestampOutOfRangeError
from deltalog.protocol.partitions import hive_partition_dir, serialize_partition_value
from deltalog.protocol.paths import decode_path
from deltalog.table import DeltaTable

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
COMMIT_NAME = re.compile(r"(\d{20})\.json")
CHECKPOINT_NAME = re.compile(r"(\d{20})\.checkpoint(?:\.\d{10}\.\d{10})?\.parquet")


# --------------------------------------------------------------------------- delta-spark side
# Everything that talks to delta-spark goes through these few functions.
def _sql_table(root: str) -> str:
    """The SQL name of the table at ``root``: delta.`/path`."""
    return "delta.`" + root.replace("`", "``") + "`"


def spark_frame(spark: Any, rows: Iterable[Mapping[str, Any]], ddl: str) -> Any:
    """A DataFrame of ``rows`` (dicts) with the schema ``ddl`` ("id long, v string")."""
    names = [part.split()[0] for part in ddl.split(",")]
    return spark.createDataFrame([tuple(r[n] for n in names) for r in rows], ddl)


def spark_rows(
    spark: Any,
    root: str,
    columns: Sequence[str],
    *,
    version: int | None = None,
    timestamp: str | None = None,
    where: tuple[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """delta-spark's rows (``columns`` only, sorted), at a version or timestamp if given.

    ``where=(column, value)`` keeps the rows whose ``column`` equals ``value`` (is null for
    ``None``): on a partition column, delta-spark prunes files by the log's partition values.
    """
    from pyspark.sql import functions as F

    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    if timestamp is not None:
        reader = reader.option("timestampAsOf", timestamp)
    frame = reader.load(root)
    if where is not None:
        column, value = where
        frame = frame.where(
            F.col(column).isNull() if value is None else F.col(column) == F.lit(value)
        )
    return sort_rows([row.asDict() for row in frame.select(*columns).collect()], columns)


def spark_count(spark: Any, root: str) -> int:
    """delta-spark's live row count of the latest version."""
    return int(spark.read.format("delta").load(root).count())


def spark_history(spark: Any, root: str, limit: int | None = None) -> list[dict[str, Any]]:
    """``DESCRIBE HISTORY``, newest first, one dict per commit; ``timestamp`` in ms (UTC).

    delta-spark's history timestamps are the commit files' modification times (made strictly
    increasing), the same times its ``timestampAsOf`` searches.
    """
    from pyspark.sql import functions as F

    query = f"DESCRIBE HISTORY {_sql_table(root)}"
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    frame = spark.sql(query).withColumn("timestamp", F.unix_millis(F.col("timestamp")))
    rows = [row.asDict(recursive=True) for row in frame.collect()]
    return sorted(rows, key=lambda r: -int(r["version"]))


def spark_version(spark: Any, root: str) -> int:
    """The latest version delta-spark sees."""
    return int(spark_history(spark, root, limit=1)[0]["version"])


def spark_append(spark: Any, root: str, frame: Any) -> None:
    """Append ``frame`` with delta-spark's writer."""
    frame.write.format("delta").mode("append").save(root)


def spark_replace_where(spark: Any, root: str, frame: Any, predicate: str) -> None:
    """Overwrite the rows matching ``predicate`` with ``frame``, with delta-spark's writer."""
    frame.write.format("delta").mode("overwrite").option("replaceWhere", predicate).save(root)


def spark_create_table(
    spark: Any,
    root: str,
    columns_ddl: str,
    partition_by: Sequence[str],
    properties: Mapping[str, str],
) -> None:
    """CREATE TABLE at ``root`` with delta-spark (version 0)."""
    partitioned = f" PARTITIONED BY ({', '.join(partition_by)})" if partition_by else ""
    props = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    spark.sql(
        f"CREATE TABLE {_sql_table(root)} ({columns_ddl}) USING DELTA{partitioned}"
        + (f" TBLPROPERTIES ({props})" if props else "")
    )


def spark_table(spark: Any, root: str) -> Any:
    """delta-spark's ``DeltaTable`` for ``root`` (update, delete, merge, optimize)."""
    from delta.tables import DeltaTable as SparkDeltaTable

    return SparkDeltaTable.forPath(spark, root)


def timestamp_text(ms: int) -> str:
    """``ms`` since the epoch as 'yyyy-MM-dd HH:mm:ss.SSS' in UTC, the sessions' time zone."""
    moment = EPOCH + dt.timedelta(milliseconds=ms)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


def check_session_time_zone(spark: Any) -> None:
    """``timestamp_text`` values are read in the session time zone, which must be UTC."""
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


# --------------------------------------------------------------------------- deltalog side
def sort_rows(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> list[dict[str, Any]]:
    """``rows`` reduced to ``columns`` and sorted by them (nulls first)."""
    projected = [{c: row[c] for c in columns} for row in rows]
    return sorted(projected, key=lambda r: tuple((r[c] is not None, r[c]) for c in columns))


def dl_open(root: str, version: int | None = None) -> DeltaTable:
    return DeltaTable(root) if version is None else DeltaTable(root, version=version)


def dl_live_rows(root: str, version: int | None = None) -> int:
    """Live rows by deltalog's log: ``numRecords`` minus deletion-vector cardinalities."""
    files = dl_open(root, version).files()
    total = 0
    for path, stats, dv in zip(
        files.column("path").to_pylist(),
        files.column("stats").to_pylist(),
        files.column("deletion_vector").to_pylist(),
        strict=True,
    ):
        assert stats, f"{path} has no statistics"
        total += int(orjson.loads(stats)["numRecords"]) - (int(dv["cardinality"]) if dv else 0)
    return total


def dl_rows(root: str, columns: Sequence[str], version: int | None = None) -> list[dict[str, Any]]:
    """The live rows, read with pyarrow from the files deltalog lists (string partitions only).

    Partition values come from the log, not from directory names.
    """
    files = dl_open(root, version).files()
    rows: list[dict[str, Any]] = []
    for path, values, dv in zip(
        files.column("path").to_pylist(),
        files.column("partition_values").to_pylist(),
        files.column("deletion_vector").to_pylist(),
        strict=True,
    ):
        assert dv is None, f"{path} has a deletion vector; read counts with dl_live_rows"
        relative = decode_path(path)
        assert not relative.startswith(("/", "file:")), relative
        partition = dict(values or [])
        for row in pq.ParquetFile(os.path.join(root, relative)).read().to_pylist():
            rows.append({**row, **partition})
    return sort_rows(rows, columns)


def rs_rows(root: str, columns: Sequence[str]) -> list[dict[str, Any]]:
    """delta-rs's rows of the latest version."""
    return sort_rows(deltalake.DeltaTable(root).to_pyarrow_table().to_pylist(), columns)


def commit_mtime_ms(root: str, version: int) -> int:
    """The commit file's modification time in ms, truncated like Java's File.lastModified."""
    return os.stat(os.path.join(root, "_delta_log", f"{version:020d}.json")).st_mtime_ns // 10**6


def last_checkpoint_version(root: str) -> int:
    with open(os.path.join(root, "_delta_log", "_last_checkpoint"), "rb") as f:
        return int(orjson.loads(f.read())["version"])


def checkpoint_versions(root: str) -> set[int]:
    names = os.listdir(os.path.join(root, "_delta_log"))
    return {int(m.group(1)) for m in map(CHECKPOINT_NAME.fullmatch, names) if m}


def checkpoint_only_copy(root: str, copy: str) -> int:
    """Copy the table and delete the commits before its last checkpoint; returns that version.

    A reader of the copy can only rebuild the latest version from the checkpoint. The commit
    at the checkpoint's version stays, as delta-spark's own log cleanup keeps it: delta-spark
    cannot load version N without ``N.json``.
    """
    shutil.copytree(root, copy)
    log = os.path.join(copy, "_delta_log")
    version = last_checkpoint_version(copy)
    for name in os.listdir(log):
        commit = COMMIT_NAME.fullmatch(name.removeprefix(".").removesuffix(".crc"))
        if commit and int(commit.group(1)) < version:
            os.remove(os.path.join(log, name))  # the commit and Hadoop's .crc of it
    return version


def write_parquet(
    root: str, relative: str, rows: Sequence[Mapping[str, Any]], schema: pa.Schema
) -> str:
    """Write ``rows`` to ``root/relative`` (directories created); returns ``relative``."""
    full = os.path.join(root, relative)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), full)
    return relative


# ============================================================ 1. deltalog writes, delta-spark reads
SIMPLE_DDL = "id long, v string"
SIMPLE_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
SIMPLE_COLUMNS = ("id", "v")
#: Seconds between the commits of the time-travel table; timestamps halfway between commits
#: then select a version unambiguously whatever the file system's clock granularity.
COMMIT_GAP = 1.2
HALF_GAP_MS = 500


def simple_rows(ids: Iterable[int]) -> list[dict[str, Any]]:
    return [{"id": i, "v": f"row {i}"} for i in ids]


def test_delta_spark_reads_every_version_of_deltalog_table(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    check_session_time_zone(spark)
    root = str(tmp_path / "travel")
    table = DeltaTable.create(root, SIMPLE_SCHEMA)
    expected: dict[int, list[dict[str, Any]]] = {0: []}

    time.sleep(COMMIT_GAP)
    result = deltalog.spark.write(
        spark_frame(spark, simple_rows(range(4)), SIMPLE_DDL), root, mode="append"
    )
    assert result.version == 1
    expected[1] = simple_rows(range(4))

    time.sleep(COMMIT_GAP)
    name = write_parquet(root, "appended.parquet", simple_rows(range(4, 7)), SIMPLE_SCHEMA)
    assert table.append_files([name]) == 2
    table.wait_for_checkpoints()
    expected[2] = simple_rows(range(7))

    time.sleep(COMMIT_GAP)
    result = deltalog.spark.write(
        spark_frame(spark, simple_rows(range(10, 13)), SIMPLE_DDL), root, mode="overwrite"
    )
    assert (result.version, result.files_removed) == (3, len(DeltaTable(root, version=2).files()))
    expected[3] = simple_rows(range(10, 13))

    time.sleep(COMMIT_GAP)
    result = deltalog.spark.write(
        spark_frame(spark, simple_rows([13, 14]), SIMPLE_DDL), root, mode="append"
    )
    assert result.version == 4
    expected[4] = simple_rows(range(10, 15))
    latest = 4

    # By version.
    assert spark_version(spark, root) == latest
    assert spark_rows(spark, root, SIMPLE_COLUMNS) == sort_rows(expected[latest], SIMPLE_COLUMNS)
    for version, rows in expected.items():
        want = sort_rows(rows, SIMPLE_COLUMNS)
        assert spark_rows(spark, root, SIMPLE_COLUMNS, version=version) == want, version
        assert dl_live_rows(root, version) == len(rows), version

    # By timestamp, from deltalog's history: halfway between a commit and the next one.
    history = {h["version"]: h["timestamp"] for h in DeltaTable(root).history()}
    assert sorted(history) == list(range(latest + 1))
    for version in range(latest):
        at = history[version] + HALF_GAP_MS
        assert commit_mtime_ms(root, version) <= at < commit_mtime_ms(root, version + 1)
        want = sort_rows(expected[version], SIMPLE_COLUMNS)
        got = spark_rows(spark, root, SIMPLE_COLUMNS, timestamp=timestamp_text(at))
        assert got == want, (version, timestamp_text(at))
        assert DeltaTable(root, timestamp=at).version() == version
        assert DeltaTable(root, timestamp=timestamp_text(at)).version() == version
    # After the latest commit: both refuse (the table might still change).
    after = max(history[latest], commit_mtime_ms(root, latest)) + HALF_GAP_MS
    with pytest.raises(
        Exception, match=r"DELTA_TIMESTAMP_GREATER_THAN_COMMIT|after the latest commit timestamp"
    ):
        spark_rows(spark, root, SIMPLE_COLUMNS, timestamp=timestamp_text(after))
    with pytest.raises(TimestampOutOfRangeError, match="after the latest commit"):
        DeltaTable(root, timestamp=after)

    # Exactly at the commit times delta-spark reports: both search the commit files'
    # modification times, and a commit is visible from its own time on.
    reported = {h["version"]: h["timestamp"] for h in spark_history(spark, root)}
    mtimes = {v: commit_mtime_ms(root, v) for v in range(latest + 1)}
    assert reported == mtimes, "delta-spark's commit times are not the files' mtimes in ms"
    assert history == reported  # deltalog's history reports the same commit times
    for version, at in reported.items():
        want = sort_rows(expected[version], SIMPLE_COLUMNS)
        assert spark_rows(spark, root, SIMPLE_COLUMNS, timestamp=timestamp_text(at)) == want
        assert DeltaTable(root, timestamp=at).version() == version
        if version:
            before = sort_rows(expected[version - 1], SIMPLE_COLUMNS)
            got = spark_rows(spark, root, SIMPLE_COLUMNS, timestamp=timestamp_text(at - 1))
            assert got == before, version
            assert DeltaTable(root, timestamp=at - 1).version() == version - 1
    first = reported[0] - 1
    with pytest.raises(Exception, match="before the earliest version"):
        spark_rows(spark, root, SIMPLE_COLUMNS, timestamp=timestamp_text(first))
    with pytest.raises(TimestampOutOfRangeError):
        DeltaTable(root, timestamp=first)


def test_delta_spark_reads_deltalog_checkpoints(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "checkpointed")
    DeltaTable.create(root, SIMPLE_SCHEMA)  # delta.checkpointInterval: the default 10
    writer = DeltaTable(root, background_checkpoints=False)
    expected: dict[int, list[dict[str, Any]]] = {0: []}
    rows: list[dict[str, Any]] = []

    def commit(step: int) -> int:
        """One deltalog commit of two rows: every third through Spark, else append_files."""
        new = simple_rows([10 * step, 10 * step + 1])
        if step % 3 == 0:
            frame = spark_frame(spark, new, SIMPLE_DDL)
            version = deltalog.spark.write(frame, root, mode="append").version
        else:
            writer.update()
            name = write_parquet(root, f"part-{step}.parquet", new, SIMPLE_SCHEMA)
            version = writer.append_files([name])
        rows.extend(new)
        expected[version] = list(rows)
        return version

    for step in range(1, 12):
        assert commit(step) == step
    # Version 10 was checkpointed by the commit that made it.
    assert checkpoint_versions(root) == {10}
    assert last_checkpoint_version(root) == 10
    assert DeltaTable(root).snapshot.checkpoint_version == 10
    assert spark_count(spark, root) == len(expected[11])
    assert spark_rows(spark, root, SIMPLE_COLUMNS) == sort_rows(expected[11], SIMPLE_COLUMNS)
    for version in (5, 10, 11):
        want = sort_rows(expected[version], SIMPLE_COLUMNS)
        assert spark_rows(spark, root, SIMPLE_COLUMNS, version=version) == want, version

    # An explicit checkpoint of the latest version, then one more commit after it.
    checkpointed = DeltaTable(root).checkpoint()
    assert checkpointed.version == 11
    assert last_checkpoint_version(root) == 11
    assert commit(12) == 12
    assert spark_count(spark, root) == len(expected[12])

    # Without the commits before it, delta-spark can only read the table from the checkpoint.
    copy = str(tmp_path / "from-checkpoint")
    assert checkpoint_only_copy(root, copy) == 11
    assert not os.path.exists(os.path.join(copy, "_delta_log", f"{0:020d}.json"))
    assert DeltaTable(copy).snapshot.checkpoint_version == 11
    assert spark_rows(spark, copy, SIMPLE_COLUMNS) == sort_rows(expected[12], SIMPLE_COLUMNS)
    want = sort_rows(expected[11], SIMPLE_COLUMNS)
    assert spark_rows(spark, copy, SIMPLE_COLUMNS, version=11) == want
    assert spark_version(spark, copy) == 12


PARTITION_DDL = "id long, v string, p string, q int"
PARTITION_COLUMNS = ("id", "v", "p", "q")
PARTITION_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("v", pa.string()),
        pa.field("p", pa.string()),
        pa.field("q", pa.int32()),
    ]
)
SPECIAL_VALUES = [
    "plain",
    "with space",
    "x/y",
    "a=b",
    "100%",
    "%20",
    "12:30:00",
    "ünï 東京",
    "🦀",
    "#?{}[]^*'\"\\",
    None,
]


def test_delta_spark_reads_special_partition_values(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "partitioned")
    expected: list[dict[str, Any]] = []
    for k, value in enumerate(SPECIAL_VALUES):
        q = None if k % 4 == 3 else k - 5
        expected += [{"id": 2 * k + j, "v": f"row {2 * k + j}", "p": value, "q": q} for j in (0, 1)]
    result = deltalog.spark.write(
        spark_frame(spark, expected, PARTITION_DDL), root, partition_by=["p", "q"]
    )
    assert result.version == 0  # the table is created by its first write, as delta-spark does
    assert result.rows == len(expected)

    # One more file per partition from append_files, into Hive-style directories.
    table = DeltaTable(root)
    schema = table.schema()
    data_schema = pa.schema([PARTITION_SCHEMA.field("id"), PARTITION_SCHEMA.field("v")])
    names, more = [], []
    for k, value in enumerate(SPECIAL_VALUES):
        q = None if k % 3 == 0 else 100 + k
        directory = hive_partition_dir(
            {
                "p": serialize_partition_value(value, schema.field("p").type),
                "q": serialize_partition_value(q, schema.field("q").type),
            }
        )
        new = [{"id": 1000 + k, "v": None}]
        names.append(write_parquet(root, f"{directory}/extra-{k}.parquet", new, data_schema))
        more += [{**r, "p": value, "q": q} for r in new]
    assert table.append_files(names) == 1
    table.wait_for_checkpoints()
    expected += more

    want = sort_rows(expected, PARTITION_COLUMNS)
    assert spark_rows(spark, root, PARTITION_COLUMNS) == want
    assert spark_rows(spark, root, PARTITION_COLUMNS, version=0) == sort_rows(
        [r for r in expected if r["id"] < 1000], PARTITION_COLUMNS
    )
    for value in SPECIAL_VALUES:  # partition pruning on the log's partition values
        subset = [r for r in expected if r["p"] == value]
        assert spark_rows(spark, root, PARTITION_COLUMNS, where=("p", value)) == sort_rows(
            subset, PARTITION_COLUMNS
        ), value
    for q in (None, -5, 101):
        subset = [r for r in expected if r["q"] == q]
        assert subset
        got = spark_rows(spark, root, PARTITION_COLUMNS, where=("q", q))
        assert got == sort_rows(subset, PARTITION_COLUMNS), q

    # The same partition values from deltalog's checkpoint (the commits deleted).
    DeltaTable(root).checkpoint()
    copy = str(tmp_path / "partitioned-from-checkpoint")
    assert checkpoint_only_copy(root, copy) == 1
    assert spark_rows(spark, copy, PARTITION_COLUMNS) == want
    assert spark_rows(spark, copy, PARTITION_COLUMNS, where=("p", None)) == sort_rows(
        [r for r in expected if r["p"] is None], PARTITION_COLUMNS
    )


# ============================================================ 2. delta-spark writes, deltalog reads
DML_COLUMNS_DDL = "id BIGINT, p STRING, v STRING"
DML_DDL = "id long, p string, v string"
DML_COLUMNS = ("id", "p", "v")
DML_PARTITIONS = ["a b", "x/y", "c=d%", None]


def dml_rows(ids: Iterable[int], v: str | None = None) -> list[dict[str, Any]]:
    return [{"id": i, "p": DML_PARTITIONS[i % len(DML_PARTITIONS)], "v": v or f"v{i}"} for i in ids]


@pytest.mark.parametrize("deletion_vectors", [False, True], ids=["plain", "deletion-vectors"])
def test_deltalog_reads_delta_spark_dml(
    delta_spark: Any, tmp_path: Path, deletion_vectors: bool
) -> None:
    spark = delta_spark
    root = str(tmp_path / "from-delta-spark")
    spark_create_table(
        spark,
        root,
        DML_COLUMNS_DDL,
        ["p"],
        {"delta.enableDeletionVectors": "true" if deletion_vectors else "false"},
    )
    model: dict[int, dict[str, Any]] = {}
    states: dict[int, list[dict[str, Any]]] = {}

    def check(version: int, operation: str) -> None:
        """Both engines (and delta-rs) see ``version`` with the rows of ``model``."""
        want = sort_rows(model.values(), DML_COLUMNS)
        states[version] = want
        newest = spark_history(spark, root, limit=1)[0]
        assert (newest["version"], newest["operation"]) == (version, operation)
        dl = DeltaTable(root)
        assert dl.version() == version
        assert dl.history(limit=1)[0]["operation"] == operation
        assert spark_rows(spark, root, DML_COLUMNS) == want, operation
        assert dl_live_rows(root) == len(want), operation
        if not deletion_vectors:
            assert dl_rows(root, DML_COLUMNS) == want, operation
            assert deltalake.DeltaTable(root).version() == version
            assert rs_rows(root, DML_COLUMNS) == want, operation

    check(0, "CREATE TABLE")
    dl = DeltaTable(root)
    assert dl.metadata().partition_columns == ["p"]
    assert (
        dl.metadata().configuration.get("delta.enableDeletionVectors")
        == str(deletion_vectors).lower()
    )

    # INSERT, twice, so that every partition has several files for OPTIMIZE to compact.
    for version, ids in ((1, range(20)), (2, range(20, 30))):
        rows = dml_rows(ids)
        spark_append(spark, root, spark_frame(spark, rows, DML_DDL))
        model.update({r["id"]: r for r in rows})
        check(version, "WRITE")
    per_partition = collections.Counter(
        dict(pv)["p"] for pv in DeltaTable(root).files().column("partition_values").to_pylist()
    )
    assert per_partition.keys() == set(DML_PARTITIONS)
    assert min(per_partition.values()) >= 2

    spark_table(spark, root).update(condition="id % 3 = 0", set={"v": "'updated'"})
    for key in [k for k in model if k % 3 == 0]:
        model[key] = {**model[key], "v": "updated"}
    check(3, "UPDATE")

    spark_table(spark, root).delete("id % 4 = 1")
    for key in [k for k in model if k % 4 == 1]:
        del model[key]
    check(4, "DELETE")
    live_dvs = [dv for dv in DeltaTable(root).files().column("deletion_vector").to_pylist() if dv]
    assert bool(live_dvs) == deletion_vectors
    if deletion_vectors:
        assert "deletionVectors" in (DeltaTable(root).protocol().reader_features or [])

    source = dml_rows(range(24, 34), v="merged")  # 24, 26-28 match; 25, 29 were deleted
    (
        spark_table(spark, root)
        .alias("t")
        .merge(spark_frame(spark, source, DML_DDL).alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    model.update({r["id"]: r for r in source})
    check(5, "MERGE")

    files_before = len(DeltaTable(root).files())
    spark_table(spark, root).optimize().executeCompaction()
    check(6, "OPTIMIZE")
    assert len(DeltaTable(root).files()) < files_before

    # deltalog appends to delta-spark's table; delta-spark reads it.
    rows = dml_rows(range(40, 44))
    result = deltalog.spark.write(spark_frame(spark, rows, DML_DDL), root, mode="append")
    assert result.version == 7
    model.update({r["id"]: r for r in rows})
    check(7, "WRITE")

    # Every version again, by time travel in both.
    for version, want in states.items():
        assert spark_rows(spark, root, DML_COLUMNS, version=version) == want, version
        assert dl_live_rows(root, version) == len(want), version
        assert DeltaTable(root, version=version).version() == version


# ============================================================ 3. both append to one table in turns
TURNS = 40  # 20 commits each
TURN_DDL = "batch long, row int, engine string"
TURN_COLUMNS = ("batch", "row", "engine")
TURN_SCHEMA = pa.schema(
    [pa.field("batch", pa.int64()), pa.field("row", pa.int32()), pa.field("engine", pa.string())]
)
TURN_INTERVAL = 5  # delta.checkpointInterval: both engines write some of the checkpoints


def turn_rows(step: int, engine: str) -> list[dict[str, Any]]:
    return [{"batch": step, "row": r, "engine": engine} for r in range(2)]


def latest_checkpoint_at(version: int) -> int | None:
    return None if version < TURN_INTERVAL else version - version % TURN_INTERVAL


def test_deltalog_and_delta_spark_take_turns_appending(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "turns")
    DeltaTable.create(
        root, TURN_SCHEMA, configuration={"delta.checkpointInterval": str(TURN_INTERVAL)}
    )
    writer = DeltaTable(root, background_checkpoints=False)
    expected: list[dict[str, Any]] = []

    # Odd versions are delta-spark's, even ones deltalog's; so are the checkpoints at multiples
    # of TURN_INTERVAL (5, 15, ... by delta-spark; 10, 20, ... by deltalog).
    for step in range(1, TURNS + 1):
        if step % 2:
            rows = turn_rows(step, "delta-spark")
            spark_append(spark, root, spark_frame(spark, rows, TURN_DDL))
            expected += rows
            assert writer.update() == step  # deltalog sees delta-spark's commit...
            assert writer.snapshot.checkpoint_version == latest_checkpoint_at(step)
            assert dl_live_rows(root) == len(expected)  # ...and its rows
        else:
            rows = turn_rows(step, "deltalog")
            if step % 20 == 10:  # some through Spark, the rest (and checkpoints) append_files
                frame = spark_frame(spark, rows, TURN_DDL)
                version = deltalog.spark.write(frame, root, mode="append").version
            else:
                name = write_parquet(root, f"deltalog-{step:03d}.parquet", rows, TURN_SCHEMA)
                version = writer.append_files([name])
            assert version == step
            expected += rows
            assert spark_version(spark, root) == step  # delta-spark sees deltalog's commit...
            assert spark_count(spark, root) == len(expected)  # ...and its rows

    # Contiguous versions 0..TURNS, alternating engines, in both histories.
    dl_history = sorted(DeltaTable(root).history(), key=lambda h: h["version"])
    sp_history = sorted(spark_history(spark, root), key=lambda h: h["version"])
    assert [h["version"] for h in dl_history] == list(range(TURNS + 1))
    assert [h["version"] for h in sp_history] == list(range(TURNS + 1))
    for entry, reported in zip(dl_history, sp_history, strict=True):
        version = entry["version"]
        by_deltalog = version % 2 == 0
        assert entry["engineInfo"].startswith("deltalog/") == by_deltalog, version
        assert reported["engineInfo"] == entry["engineInfo"], version
        assert reported["engineInfo"].startswith("Apache-Spark/") != by_deltalog, version

    # Every batch exactly once, in all three readers.
    want = sort_rows(expected, TURN_COLUMNS)
    got = spark_rows(spark, root, TURN_COLUMNS)
    assert collections.Counter(r["batch"] for r in got) == {s: 2 for s in range(1, TURNS + 1)}
    assert got == want
    assert spark_count(spark, root) == dl_live_rows(root) == len(want) == 2 * TURNS
    assert dl_rows(root, TURN_COLUMNS) == want
    assert rs_rows(root, TURN_COLUMNS) == want

    # Each engine wrote its checkpoints and reads the other's.
    assert checkpoint_versions(root) == set(range(TURN_INTERVAL, TURNS + 1, TURN_INTERVAL))
    assert last_checkpoint_version(root) == TURNS
    for version in (TURNS - TURN_INTERVAL, TURNS):  # delta-spark's, then deltalog's
        snapshot = DeltaTable(root, version=version).snapshot
        assert snapshot.checkpoint_version == version
        assert dl_live_rows(root, version) == 2 * version
    copy = str(tmp_path / "turns-from-checkpoint")
    assert checkpoint_only_copy(root, copy) == TURNS
    assert spark_rows(spark, copy, TURN_COLUMNS) == want


# ============================================================ 4. DESCRIBE HISTORY of deltalog
def _as_text(value: Any) -> str | None:
    """A commitInfo parameter as delta-spark's history gives it (a string map)."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def test_delta_spark_history_shows_deltalog_commits(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "history")
    ddl = "id long, p string"
    first = deltalog.spark.write(
        spark_frame(spark, [{"id": i, "p": "ab"[i % 2]} for i in range(4)], ddl),
        root,
        partition_by=["p"],
    )
    assert first.version == 0  # metadata, protocol and the files in one commit
    files_of_a = [
        pv
        for pv in DeltaTable(root).files().column("partition_values").to_pylist()
        if dict(pv)["p"] == "a"
    ]
    over = deltalog.spark.write(
        spark_frame(spark, [{"id": 10, "p": "a"}, {"id": 11, "p": "a"}], ddl),
        root,
        mode="overwrite",
        replace_where="p = 'a'",
    )
    assert over.version == 1
    assert (over.rows, over.files_removed) == (2, len(files_of_a))
    data_schema = pa.schema([pa.field("id", pa.int64())])
    name = write_parquet(root, "p=b/extra.parquet", [{"id": 20}, {"id": 21}], data_schema)
    assert DeltaTable(root).append_files([name]) == 2

    ours = {h["version"]: h for h in DeltaTable(root).history()}
    reported = {h["version"]: h for h in spark_history(spark, root)}
    assert sorted(reported) == sorted(ours) == [0, 1, 2]
    for version, entry in ours.items():
        shown = reported[version]
        assert shown["operation"] == entry["operation"], version
        assert shown["timestamp"] == entry["timestamp"], version  # the commit file's time
        assert shown["engineInfo"] == entry["engineInfo"], version
        assert shown["readVersion"] == entry.get("readVersion"), version
        assert shown["isolationLevel"] == entry.get("isolationLevel"), version
        assert shown["isBlindAppend"] == entry.get("isBlindAppend"), version
        assert shown["operationMetrics"] == entry.get("operationMetrics"), version
        if entry["operation"] == "WRITE":
            parameters = {k: _as_text(v) for k, v in entry["operationParameters"].items()}
            assert shown["operationParameters"] == parameters, version

    # No CREATE TABLE commit: like delta-spark's first write, version 0 is the WRITE.
    assert reported[0]["operation"] == "WRITE"
    # The first write used the default mode, as df.write.save(path) does: ErrorIfExists.
    assert reported[0]["operationParameters"] == {
        "mode": "ErrorIfExists",
        "partitionBy": '["p"]',
    }
    assert reported[0]["readVersion"] is None
    assert reported[0]["isBlindAppend"] is True
    assert reported[0]["operationMetrics"]["numFiles"] == str(first.files_added)
    assert reported[0]["operationMetrics"]["numOutputRows"] == "4"

    replace = reported[1]
    assert replace["operation"] == "WRITE"
    assert replace["operationParameters"] == {
        "mode": "Overwrite",
        "partitionBy": "[]",  # the writer's partitionBy, as delta-spark records it: none given
        "predicate": "p = 'a'",
    }
    assert replace["readVersion"] == 0
    assert replace["isBlindAppend"] is False
    assert replace["engineInfo"].startswith("deltalog/")
    metrics = replace["operationMetrics"]
    assert metrics["numFiles"] == str(over.files_added)
    assert metrics["numOutputRows"] == "2"
    assert metrics["numRemovedFiles"] == str(over.files_removed)
    assert reported[2]["operationMetrics"]["numOutputRows"] == "2"

    live = [(1, "b"), (3, "b"), (10, "a"), (11, "a"), (20, "b"), (21, "b")]
    assert spark_rows(spark, root, ("id", "p")) == [{"id": i, "p": p} for i, p in live]

    # DESCRIBE DETAIL agrees with deltalog's snapshot.
    (detail,) = [
        r.asDict(recursive=True) for r in spark.sql(f"DESCRIBE DETAIL {_sql_table(root)}").collect()
    ]
    table = DeltaTable(root)
    files = table.files(with_stats=False)
    protocol, metadata = table.protocol(), table.metadata()
    assert detail["format"] == "delta"
    assert detail["id"] == metadata.id
    assert detail["numFiles"] == files.num_rows == 5
    assert detail["sizeInBytes"] == sum(files.column("size").to_pylist())
    assert detail["partitionColumns"] == metadata.partition_columns == ["p"]
    assert detail["minReaderVersion"] == protocol.min_reader_version
    assert detail["minWriterVersion"] == protocol.min_writer_version
    assert detail["properties"] == {
        k: v for k, v in metadata.configuration.items() if v is not None
    }
    assert detail["createdAt"] is not None

    # delta-spark's own replaceWhere records its predicate the way deltalog does.
    spark_replace_where(spark, root, spark_frame(spark, [{"id": 30, "p": "b"}], ddl), "p = 'b'")
    theirs = DeltaTable(root).history(limit=1)[0]
    assert theirs["version"] == 3
    assert theirs["operation"] == "WRITE"
    assert theirs["operationParameters"]["mode"] == "Overwrite"
    assert theirs["operationParameters"]["predicate"] == "p = 'b'"
    assert dl_live_rows(root) == 3
    assert spark_rows(spark, root, ("id", "p")) == sort_rows(
        [{"id": 10, "p": "a"}, {"id": 11, "p": "a"}, {"id": 30, "p": "b"}], ("id", "p")
    )
