"""Tables delta-spark creates with the features modern Delta tables carry, read and appended by us.

One table per feature (delta-spark's defaults, deletion vectors, column mapping by name and by
id with a column renamed and one dropped, liquid clustering, V2 checkpoints, in-commit
timestamps, row tracking, type widening, a CHECK constraint, a generated column), each written
by delta-spark with a few commits. For each:

* deltalog opens the same version and lists the same file set as delta-spark's snapshot, and
  counts the same live rows (statistics minus deletion-vector cardinalities);
* an append by deltalog (``append_files`` of a Parquet file, and ``deltalog.spark.write``)
  either lands, after which delta-spark reads the new rows and appends after it, or is refused
  before anything is written with :class:`UnsupportedFeatureError` naming the feature: never a
  commit delta-spark cannot read. ``EXPECTED_REFUSAL`` records which features deltalog writes
  today; a change there is a deliberate change of this file.

All tables share the module's one delta-spark session (see ``tests/sparkutil.py``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections.abc import Container, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sparkutil import delta_spark_version
from test_delta_spark import (
    _sql_table,
    dl_live_rows,
    spark_count,
    spark_history,
    spark_version,
    timestamp_text,
)

import deltalog.spark
from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol.column_mapping import mapping_mode, physical_name, to_physical_batch
from deltalog.protocol.features import active_writer_features
from deltalog.table import DeltaTable

BASE_COLUMNS = "id BIGINT, v STRING"


@dataclass(frozen=True)
class FeatureTable:
    """How delta-spark makes a table with one feature."""

    columns: str = BASE_COLUMNS
    clause: str = ""  # CLUSTER BY / TBLPROPERTIES
    after: tuple[str, ...] = ()  # statements run after the inserts ({t} is the table)
    protocol_feature: str | None = None  # the table feature the protocol must then list
    live_rows: int = 6  # rows delta-spark then reads
    generated: tuple[str, str, str] | None = None  # (column, type, expression), made by the builder


CASES: dict[str, FeatureTable] = {
    "defaults": FeatureTable(),
    "deletion-vectors": FeatureTable(
        clause="TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        after=("DELETE FROM {t} WHERE id = 2",),
        protocol_feature="deletionVectors",
        live_rows=5,
    ),
    "column-mapping-name": FeatureTable(
        columns="id BIGINT, v STRING, x STRING",
        clause="TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        after=("ALTER TABLE {t} RENAME COLUMN v TO w", "ALTER TABLE {t} DROP COLUMN x"),
        protocol_feature="columnMapping",
    ),
    "column-mapping-id": FeatureTable(
        columns="id BIGINT, v STRING, x STRING",
        clause="TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
        after=("ALTER TABLE {t} RENAME COLUMN v TO w", "ALTER TABLE {t} DROP COLUMN x"),
        protocol_feature="columnMapping",
    ),
    "liquid-clustering": FeatureTable(clause="CLUSTER BY (id)", protocol_feature="clustering"),
    "v2-checkpoints": FeatureTable(
        clause="TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')",
        protocol_feature="v2Checkpoint",
    ),
    "in-commit-timestamps": FeatureTable(
        clause="TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
        protocol_feature="inCommitTimestamp",
    ),
    "row-tracking": FeatureTable(
        clause="TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
        protocol_feature="rowTracking",
    ),
    "type-widening": FeatureTable(
        columns="id BIGINT, v STRING, s SMALLINT",
        clause="TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        after=("ALTER TABLE {t} ALTER COLUMN s TYPE INT", "INSERT INTO {t} VALUES (9, 'i', 70000)"),
        live_rows=7,
    ),
    "check-constraint": FeatureTable(
        after=("ALTER TABLE {t} ADD CONSTRAINT positive_id CHECK (id > 0)",),
        protocol_feature="checkConstraints",
    ),
    "generated-column": FeatureTable(
        generated=("g", "BIGINT", "id * 2"),
        protocol_feature="generatedColumns",
    ),
}

#: The feature deltalog names when it refuses to append to each table; None: the append lands.
EXPECTED_REFUSAL: dict[str, str | None] = {
    "defaults": None,
    "deletion-vectors": None,
    "column-mapping-name": None,
    "column-mapping-id": None,
    "liquid-clustering": None,
    "v2-checkpoints": None,
    "in-commit-timestamps": None,
    "row-tracking": None,
    "type-widening": None,
    "check-constraint": "checkConstraints",
    "generated-column": "generatedColumns",
}


def _make_table(spark: Any, root: str, case: FeatureTable) -> None:
    t = _sql_table(root)
    if case.generated is None:
        spark.sql(f"CREATE TABLE {t} ({case.columns}) USING DELTA {case.clause}")
    else:  # delta-spark 3.3 has no SQL for generated columns of a path-based table
        from delta.tables import DeltaTable as SparkDeltaTable

        builder = SparkDeltaTable.create(spark).location(root)
        for column in case.columns.split(","):
            name, type_name = column.split()
            builder = builder.addColumn(name, type_name)
        name, type_name, expression = case.generated
        builder.addColumn(name, type_name, generatedAlwaysAs=expression).execute()
    spark.sql(f"INSERT INTO {t} (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"INSERT INTO {t} (id, v) VALUES (4, 'd'), (5, 'e')")
    spark.sql(f"INSERT INTO {t} (id, v) VALUES (6, 'f')")
    for statement in case.after:
        spark.sql(statement.format(t=t))


def _spark_files(spark: Any, root: str) -> set[str]:
    """The ``path`` of every file in delta-spark's latest snapshot (through its JVM API)."""
    jvm = spark._jvm
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
    delta_log.clearCache()
    snapshot = delta_log.forTable(spark._jsparkSession, root).unsafeVolatileSnapshot()
    rows = snapshot.allFiles().toDF().collectAsList()
    return {str(row.getAs("path")) for row in rows}


def _data_files(root: str) -> set[str]:
    """Every file under the table root outside ``_delta_log``."""
    found = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        found |= {os.path.join(directory, f) for f in files}
    return found


def _check_refused(exc: UnsupportedFeatureError, name: str) -> None:
    assert exc.feature == EXPECTED_REFUSAL[name], (name, exc.feature, str(exc))
    assert str(EXPECTED_REFUSAL[name]) in str(exc)


@pytest.mark.parametrize("name", list(CASES))
def test_deltalog_reads_and_appends_to_delta_spark_feature_table(
    name: str, delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    case = CASES[name]
    root = str(tmp_path / name)
    _make_table(spark, root, case)

    # The same version, protocol, file set and live rows as delta-spark's snapshot.
    version = spark_version(spark, root)
    table = DeltaTable(root)
    assert table.version() == version
    if case.protocol_feature is not None:
        active = active_writer_features(table.protocol(), table.metadata())
        assert case.protocol_feature in active, active
    paths = set(table.files(with_stats=False).column("path").to_pylist())
    assert paths == _spark_files(spark, root)
    rows = spark_count(spark, root)
    assert dl_live_rows(root) == rows == case.live_rows

    # append_files of a Parquet file with the table's columns (logical names).
    arrow_schema = table.schema().to_arrow()
    data = pa.table(
        {
            f.name: pa.array(
                [100 + i for i in range(2)] if f.name == "id" else [None, None], f.type
            )
            for f in arrow_schema
        },
        schema=arrow_schema,
    )
    mode = mapping_mode(table.metadata().configuration)
    if mode != "none":  # a mapped table's files hold physical names (and ids in id mode)
        batch = to_physical_batch(data.to_batches()[0], table.schema(), field_ids=mode == "id")
        data = pa.Table.from_batches([batch])
    pq.write_table(data, os.path.join(root, "deltalog-append.parquet"))
    before_files = _data_files(root)
    try:
        landed = table.append_files(["deltalog-append.parquet"])
    except UnsupportedFeatureError as exc:
        _check_refused(exc, name)
        assert DeltaTable(root).version() == version  # nothing committed
        landed = None
    else:
        assert EXPECTED_REFUSAL[name] is None, f"{name}: deltalog appended; update EXPECTED_REFUSAL"
        assert landed == version + 1
        assert spark_version(spark, root) == landed
        assert spark_count(spark, root) == rows + 2
        assert DeltaTable(root).files(with_stats=False).num_rows == len(_spark_files(spark, root))

    # deltalog.spark.write: lands, or refused before any data file is written.
    frame = spark.createDataFrame([(200,)], "id long")
    head = DeltaTable(root).version()
    try:
        result = deltalog.spark.write(frame, root, mode="append")
    except UnsupportedFeatureError as exc:
        _check_refused(exc, name)
        assert DeltaTable(root).version() == head
        assert _data_files(root) == before_files, "data files written before the refusal"
    else:
        assert EXPECTED_REFUSAL[name] is None, f"{name}: deltalog wrote; update EXPECTED_REFUSAL"
        assert result.version == head + 1
        assert spark.read.format("delta").load(root).where("id = 200").count() == 1

    # delta-spark appends after deltalog without complaint and sees every row.
    final_before = spark_count(spark, root)
    spark.sql(f"INSERT INTO {_sql_table(root)} (id) VALUES (300)")
    assert spark_count(spark, root) == final_before + 1
    assert DeltaTable(root).version() == spark_version(spark, root)
    assert dl_live_rows(root) == final_before + 1
    if landed is not None:
        assert spark.read.format("delta").load(root).where("id >= 100 AND id < 200").count() == 2
    # every .crc (delta-spark's and deltalog's) agrees with deltalog's replay
    report = DeltaTable(root).check(data_files=False)
    assert report.checked.get("checksums", 0) > 0
    crc_findings = [f for f in report.findings if "checksum" in f.code]
    assert not crc_findings, crc_findings


def _row_ids(spark: Any, root: str) -> dict[int, int]:
    """``id -> _metadata.row_id`` of every live row, by delta-spark."""
    frame = spark.read.format("delta").load(root).select("id", "_metadata.row_id")
    rows = frame.collect()
    ids = [int(r["row_id"]) for r in rows]
    assert len(ids) == len(set(ids)), "delta-spark sees duplicate row ids"
    return {int(r["id"]): int(r["row_id"]) for r in rows}


def _log_icts(root: str) -> dict[int, int]:
    """Each commit's ``inCommitTimestamp``, read from the JSON files (not by deltalog)."""
    import json

    log = os.path.join(root, "_delta_log")
    out = {}
    for name in sorted(os.listdir(log)):
        if name.endswith(".json") and name[:20].isdigit():
            with open(os.path.join(log, name)) as fh:
                first = json.loads(fh.readline())
            out[int(name[:20])] = first["commitInfo"]["inCommitTimestamp"]
    return out


def test_deltalog_commits_on_an_ict_and_row_tracking_table(
    delta_spark: Any, tmp_path: Path
) -> None:
    """delta-spark makes a table with in-commit timestamps and row tracking; deltalog appends
    (append_files, deltalog.spark.write) and removes a file; delta-spark reads the same rows with
    stable, unique row ids, its history shows the in-commit timestamps, its DETAIL agrees with
    the checksums deltalog wrote, and it appends after deltalog; delta-rs reads the rows."""
    spark = delta_spark
    root = str(tmp_path / "ict-rows")
    t = _sql_table(root)
    spark.sql(
        f"CREATE TABLE {t} ({BASE_COLUMNS}) USING DELTA TBLPROPERTIES "
        "('delta.enableInCommitTimestamps' = 'true', 'delta.enableRowTracking' = 'true')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'd')")
    before = _row_ids(spark, root)

    table = DeltaTable(root)
    data = pa.table({"id": pa.array([10, 11], pa.int64()), "v": pa.array(["x", "y"])})
    pq.write_table(data, os.path.join(root, "deltalog-append.parquet"))
    table.append_files(["deltalog-append.parquet"])
    deltalog.spark.write(
        spark.createDataFrame([(20, "z")], "id long, v string"), root, mode="append"
    )
    table.update()
    files = table.files()
    one_row = next(  # the file delta-spark wrote for id 4
        p
        for p, st in zip(
            files.column("path").to_pylist(), files.column("stats").to_pylist(), strict=True
        )
        if '"numRecords":1' in st and "deltalog" not in p and '"id":4' in st
    )
    with table.transaction("DELETE", parameters={"predicate": '["(id = 4)"]'}) as tx:
        tx.read_files()
        tx.remove(one_row)
    head = table.version()

    # the same rows; row ids unique, and unchanged for the rows delta-spark wrote
    after = _row_ids(spark, root)
    assert sorted(after) == [1, 2, 3, 10, 11, 20]
    assert all(after[i] == before[i] for i in (1, 2, 3))
    # history: the in-commit timestamps, strictly increasing
    icts = _log_icts(root)
    history = spark_history(spark, root)
    assert {int(h["version"]): int(h["timestamp"]) for h in history} == icts
    assert [icts[v] for v in sorted(icts)] == sorted(set(icts.values()))
    assert [h["timestamp"] for h in DeltaTable(root).history()] == [h["timestamp"] for h in history]
    # DESCRIBE DETAIL agrees with deltalog (delta-spark takes them from the .crc files)
    assert os.path.exists(os.path.join(root, "_delta_log", f"{head:020d}.crc"))
    detail = spark.sql(f"DESCRIBE DETAIL {t}").collect()[0]
    snap = DeltaTable(root).snapshot
    assert (int(detail["numFiles"]), int(detail["sizeInBytes"])) == (
        snap.num_files,
        snap.size_in_bytes,
    )
    assert DeltaTable(root).check(data_files=False).ok

    # delta-spark appends after deltalog; row ids stay unique
    spark.sql(f"INSERT INTO {t} VALUES (30, 'w')")
    final = _row_ids(spark, root)
    assert sorted(final) == [1, 2, 3, 10, 11, 20, 30]
    assert all(final[i] == after[i] for i in after)
    report = DeltaTable(root).check(data_files=False)
    assert report.ok, report.findings

    import deltalake

    assert deltalake.DeltaTable(root).to_pyarrow_table().num_rows == 7


def test_deltalog_enables_in_commit_timestamps_on_a_delta_spark_table(
    delta_spark: Any, tmp_path: Path
) -> None:
    """deltalog turns in-commit timestamps on for a table delta-spark made without them;
    delta-spark's history then shows file times before and in-commit timestamps from the
    enablement version on, its time travel by timestamp agrees with deltalog's, and it commits
    after deltalog."""
    from deltalog.protocol.actions import Protocol

    spark = delta_spark
    root = str(tmp_path / "enable-ict")
    t = _sql_table(root)
    spark.sql(f"CREATE TABLE {t} ({BASE_COLUMNS}) USING DELTA")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    table = DeltaTable(root)
    old = table.protocol()
    writer = set(active_writer_features(old, table.metadata()))
    writer |= {"appendOnly", "invariants", "inCommitTimestamp"}  # what writerVersion 2 implies
    with table.transaction("SET TBLPROPERTIES") as tx:
        tx.update_protocol(
            Protocol(old.min_reader_version, 7, writer_features=sorted(writer))
            if old.min_reader_version < 3
            else Protocol(3, 7, reader_features=old.reader_features, writer_features=sorted(writer))
        )
        tx.update_metadata(
            configuration={
                **table.metadata().configuration,
                "delta.enableInCommitTimestamps": "true",
            }
        )
    enabled_at = table.version()
    config = table.metadata().configuration
    assert config["delta.inCommitTimestampEnablementVersion"] == str(enabled_at)
    pq.write_table(
        pa.table({"id": pa.array([2], pa.int64()), "v": pa.array(["b"])}),
        os.path.join(root, "deltalog-append.parquet"),
    )
    table.append_files(["deltalog-append.parquet"])
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")

    icts = _log_icts_from(root, enabled_at)
    history = {int(h["version"]): int(h["timestamp"]) for h in spark_history(spark, root)}
    assert {v: history[v] for v in icts} == icts
    assert str(icts[enabled_at]) == config["delta.inCommitTimestampEnablementTimestamp"]
    assert history[enabled_at - 1] < icts[enabled_at]
    ours = {h["version"]: h["timestamp"] for h in DeltaTable(root).history()}
    assert ours == history
    head = max(history)
    at = icts[head - 1]
    assert DeltaTable(root, timestamp=at).version() == head - 1
    frame = spark.read.format("delta").option("timestampAsOf", timestamp_text(at)).load(root)
    assert frame.count() == 2
    assert spark_count(spark, root) == 3


def _log_icts_from(root: str, first: int) -> dict[int, int]:
    """``inCommitTimestamp`` of every commit from ``first`` on (read with json)."""
    import json

    log = os.path.join(root, "_delta_log")
    out = {}
    for name in sorted(os.listdir(log)):
        if name.endswith(".json") and name[:20].isdigit() and int(name[:20]) >= first:
            with open(os.path.join(log, name)) as fh:
                info = json.loads(fh.readline())["commitInfo"]
            out[int(name[:20])] = info["inCommitTimestamp"]
    return out


@pytest.mark.parametrize("json_stats", [True, False], ids=["stats-and-struct", "struct-only"])
def test_deltalog_reads_typed_statistics_from_delta_spark_checkpoints(
    json_stats: bool, delta_spark: Any, tmp_path: Path
) -> None:
    """Statistics of checkpoints delta-spark writes with ``writeStatsAsStruct``.

    delta-spark 4.4 writes ``stats_parsed`` (and with ``writeStatsAsJson=false`` only that);
    3.3 writes no ``stats_parsed``, so with ``writeStatsAsJson=false`` its checkpoints keep no
    statistics at all. deltalog's typed statistics (read from the struct) and its ``stats`` JSON
    (written from it where the checkpoint has none) must describe the data files as they are,
    and where the checkpoint kept nothing, be null rather than wrong.
    """
    spark = delta_spark
    root = str(tmp_path / "typed-stats")
    t = _sql_table(root)
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, d DATE, amount DECIMAL(10,2), ts TIMESTAMP, "
        "p STRING) "
        "USING DELTA PARTITIONED BY (p) TBLPROPERTIES ('delta.checkpointInterval' = '2', "
        "'delta.checkpoint.writeStatsAsStruct' = 'true', "
        f"'delta.checkpoint.writeStatsAsJson' = '{str(json_stats).lower()}')"
    )
    spark.sql(
        f"INSERT INTO {t} VALUES (1, 'a', DATE'2024-01-01', 1.50, TIMESTAMP'2024-01-01 10:00:00', "
        "'x'), (2, NULL, DATE'2024-01-02', 2.25, TIMESTAMP'9999-12-31 00:00:00', 'y')"
    )
    spark.sql(  # checkpoint
        f"INSERT INTO {t} VALUES (10, 'k', DATE'2024-02-01', 10.00, TIMESTAMP'2024-02-01 00:00:00',"
        " 'x')"
    )
    spark.sql(  # JSON only
        f"INSERT INTO {t} VALUES (20, 'z', DATE'2024-03-01', 20.00, NULL, 'y')"
    )
    checkpoint = Path(root, "_delta_log", f"{2:020d}.checkpoint.parquet")
    add = pq.read_schema(checkpoint).field("add").type
    names = {add.field(i).name for i in range(add.num_fields)}
    struct = "stats_parsed" in names
    assert ("stats" in names) == json_stats
    assert struct == (int(delta_spark_version().split(".")[0]) >= 4)

    table = DeltaTable(root)
    assert table.snapshot.checkpoint_version == 2
    parsed = table.snapshot.parsed_stats()
    assert (parsed is not None) == struct
    if parsed is not None:
        assert len(parsed) - parsed.null_count == 3  # the checkpoint's three files
    flat = table.files(with_stats=False, flatten_stats=True)
    assert "files" not in table.snapshot.__dict__  # typed: from the struct or JSON batches
    from_json = DeltaTable(root).files(flatten_stats=True)
    kept_nothing = {
        r["path"] for r in from_json.select(["path", "stats"]).to_pylist() if r["stats"] is None
    }
    assert len(kept_nothing) == (3 if not struct and not json_stats else 0)
    by_path = {row["path"]: row for row in flat.to_pylist()}
    assert by_path == {r["path"]: r for r in from_json.drop_columns(["stats"]).to_pylist()}
    _assert_describes_data(root, by_path, kept_nothing)
    big = {p for p, row in by_path.items() if row["max.id"] is None or row["max.id"] >= 10}
    assert set(table.files(filter="id >= 10").column("path").to_pylist()) == big
    assert len(big) == (4 if kept_nothing else 2)


def _assert_describes_data(
    root: str,
    by_path: dict[str, dict[str, Any]],
    kept_nothing: Container[str] = (),
    renames: Mapping[str, str] | None = None,
) -> None:
    """Each file's typed statistics are its data's count, null counts and bounds.

    ``renames`` maps data files' column names to the columns' names (column mapping).
    """
    for path, row in by_path.items():
        if path in kept_nothing:
            assert row["num_records"] is None and row["min.id"] is None, path
            continue
        # Spark writes timestamps as INT96: read as microseconds, 9999-12-31 does not wrap
        data = pq.read_table(os.path.join(root, path), coerce_int96_timestamp_unit="us")
        if renames:
            data = data.rename_columns([renames.get(c, c) for c in data.column_names])
        assert row["num_records"] == data.num_rows, path
        for name in ("id", "v", "d", "amount", "ts"):
            values = [_utc(x) for x in data.column(name).to_pylist() if x is not None]
            assert row[f"null_count.{name}"] == data.num_rows - len(values), (path, name)
            assert row[f"min.{name}"] == (min(values) if values else None), (path, name)
            assert row[f"max.{name}"] == (max(values) if values else None), (path, name)


@pytest.mark.parametrize(
    ("asked", "mapping"),
    [(True, False), (False, False), (False, True)],
    ids=["property-true", "property-unset", "unset-column-mapping"],
)
def test_delta_spark_reads_deltalog_checkpoints_with_typed_statistics(
    asked: bool, mapping: bool, delta_spark: Any, tmp_path: Path
) -> None:
    """deltalog's checkpoint over delta-spark's: ``stats_parsed`` kept, written, read back.

    With ``writeStatsAsStruct=true`` deltalog writes the struct (parsing the JSON delta-spark
    3.3 leaves it); unset, it carries the struct of delta-spark 4's checkpoint and writes none
    over 3.3's; under column mapping the struct is keyed by physical names. delta-spark then
    reads the table through deltalog's checkpoint, prunes by it, and writes on top; delta-rs
    reads the same statistics from it.
    """
    spark = delta_spark
    root = str(tmp_path / "typed-out")
    t = _sql_table(root)
    asked_clause = ", 'delta.checkpoint.writeStatsAsStruct' = 'true'" if asked else ""
    mapping_clause = ", 'delta.columnMapping.mode' = 'name'" if mapping else ""
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, d DATE, amount DECIMAL(10,2), ts TIMESTAMP, "
        "p STRING) USING DELTA PARTITIONED BY (p) "
        f"TBLPROPERTIES ('delta.checkpointInterval' = '2'{asked_clause}{mapping_clause})"
    )
    spark.sql(
        f"INSERT INTO {t} VALUES (1, 'a', DATE'2024-01-01', 1.50, TIMESTAMP'2024-01-01 10:00:00', "
        "'x'), (2, NULL, DATE'2024-01-02', 2.25, TIMESTAMP'9999-12-31 00:00:00', 'y')"
    )
    spark.sql(  # delta-spark's checkpoint at 2
        f"INSERT INTO {t} VALUES (10, 'k', DATE'2024-02-01', 10.00, TIMESTAMP'2024-02-01 00:00:00',"
        " 'x')"
    )
    rows = pa.table(
        {
            "id": pa.array([30, 31], pa.int64()),
            "v": pa.array(["m", None]),
            "d": pa.array([dt.date(2024, 3, 1), dt.date(2024, 3, 2)]),
            "amount": pa.array([decimal.Decimal("30.25"), None], pa.decimal128(10, 2)),
            "ts": pa.array(
                [dt.datetime(2024, 3, 1, tzinfo=dt.UTC), None], pa.timestamp("us", "UTC")
            ),
        }
    )
    ours = DeltaTable(root)
    schema = ours.schema()
    # column name in data files and statistics -> the column's name
    logical = {physical_name(f): f.name for f in schema.fields}
    batch = to_physical_batch(rows.to_batches()[0], schema, field_ids=False)
    os.makedirs(os.path.join(root, "p=x"), exist_ok=True)
    pq.write_table(pa.Table.from_batches([batch]), os.path.join(root, "p=x", "deltalog-0.parquet"))
    ours.append_files(["p=x/deltalog-0.parquet"])  # version 3
    ours.checkpoint()
    spark_4 = int(delta_spark_version().split(".")[0]) >= 4
    written = asked or spark_4
    checkpoint = Path(root, "_delta_log", f"{3:020d}.checkpoint.parquet")
    add = pq.read_schema(checkpoint).field("add").type
    assert (add.get_field_index("stats_parsed") >= 0) == written

    table = DeltaTable(root, version=3)
    parsed = table.snapshot.parsed_stats()
    assert (parsed is not None) == written
    assert parsed is None or parsed.null_count == 0  # every file: carried or parsed
    flat = table.files(with_stats=False, flatten_stats=True)
    by_path = {row["path"]: row for row in flat.to_pylist()}
    assert len(by_path) == 4
    _assert_describes_data(root, by_path, renames=logical)
    if mapping and parsed is not None:  # the struct uses the physical names
        names = {f.name for f in parsed.type.field("minValues").type}
        assert names == {physical_name(f) for f in schema.fields if f.name != "p"}
        assert "id" not in names
    # delta-rs reads the same statistics from deltalog's checkpoint (by physical names)
    import deltalake

    theirs = pa.table(deltalake.DeltaTable(root, version=3).get_add_actions(flatten=True))
    physical = {name: column for column, name in logical.items()}
    for row in theirs.to_pylist():
        for name in ("id", "v", "d", "amount"):
            for kind in ("min", "max", "null_count"):
                key = f"{kind}.{name}"
                assert row[f"{kind}.{physical[name]}"] == by_path[row["path"]][key], (
                    row["path"],
                    key,
                )

    # delta-spark reads through deltalog's checkpoint, prunes by it, and writes on top
    def ids(where: str) -> list[int]:
        found = spark.sql(f"SELECT id FROM {t} WHERE {where}").collect()
        return sorted(r["id"] for r in found)

    assert ids("id >= 30") == [30, 31]
    assert ids("ts >= TIMESTAMP'9999-01-01 00:00:00'") == [2]
    assert ids("amount > 20") == [30]
    assert ids("v IS NULL") == [2, 31]
    assert ids("d < DATE'2024-01-02'") == [1]
    spark.sql(f"INSERT INTO {t} VALUES (40, 'w', DATE'2024-04-01', 40.00, NULL, 'y')")  # 4
    assert Path(root, "_delta_log", f"{4:020d}.checkpoint.parquet").exists()
    assert ids("id > 0") == [1, 2, 10, 30, 31, 40]
    assert DeltaTable(root).files().num_rows == 5


def _utc(value: Any) -> Any:
    """A data file's timestamp as an aware UTC datetime (Spark writes them as UTC instants)."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value
