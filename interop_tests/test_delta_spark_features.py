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

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_delta_spark import _sql_table, dl_live_rows, spark_count, spark_version

import deltalog.spark
from deltalog.column_mapping import mapping_mode, to_physical_batch
from deltalog.errors import UnsupportedFeatureError
from deltalog.features import active_writer_features
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
    "in-commit-timestamps": "inCommitTimestamp",
    "row-tracking": "rowTracking",
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
