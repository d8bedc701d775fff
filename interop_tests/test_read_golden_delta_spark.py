"""``DeltaTable.to_pyarrow_table()`` returns delta-spark's rows on every golden table with data.

For each table of ``../shared/delta-golden`` whose latest version deltalog can read, delta-spark
reads the same path and both row sets must be equal (order ignored; maps compared as dicts,
timestamps as UTC instants). Deletion-vector and column-mapping tables are among them. Tables
deltalog refuses must raise a named :class:`DeltaLogError` (and are listed in ``REFUSED``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import DeltaLogError, DeltaTable

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "delta-golden"

#: Golden tables deltalog does not read rows of, and why (a named error each).
REFUSED = {
    "spark-variant-checkpoint": "InvalidSchemaError",  # variant has no Arrow type
}


def _spark_cannot_read() -> set[str]:
    """Golden tables the installed delta-spark refuses (type widening needs delta-spark 4)."""
    from sparkutil import delta_spark_version

    if int(delta_spark_version().split(".")[0]) >= 4:
        return set()
    return {"type-widening", "type-widening-nested"}


def _tables() -> list[str]:
    if not GOLDEN.is_dir():
        return []
    return sorted(p.name for p in GOLDEN.iterdir() if (p / "_delta_log").is_dir())


def _normal(value: Any) -> Any:
    if isinstance(value, dict):  # a struct
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map
            return ("map", tuple(sorted((repr(_normal(k)), _normal(v)) for k, v in value)))
        return tuple(_normal(v) for v in value)
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    return value


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(tuple(sorted((k, _normal(v)) for k, v in r.items()))) for r in rows)


def _spark_rows(spark: Any, path: str) -> list[dict[str, Any]]:
    """delta-spark's rows through Arrow (maps may have list keys, which Row.asDict cannot)."""
    frame = spark.read.format("delta").load(path)
    if hasattr(frame, "toArrow"):  # PySpark 4
        table = frame.toArrow()
    else:  # PySpark 3.5
        batches = frame._collect_as_arrow()
        if not batches:
            return []
        table = pa.Table.from_batches(batches)
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


# Every golden table through delta-spark 4.4 (two minutes); on the 3.5 line delta-spark 3.3 reads
# them in test_spark_read_interop.py, and its deletion vectors in the test below.
@pytest.mark.one_spark_line
def test_to_pyarrow_table_equals_delta_spark_on_golden_tables(
    delta_spark: Any, tmp_path: Path
) -> None:
    names = _tables()
    assert names, f"no golden tables under {GOLDEN}"
    compared: list[str] = []
    refused: list[str] = []
    failures: list[str] = []
    for name in names:
        copy = tmp_path / name
        shutil.copytree(GOLDEN / name, copy)
        try:
            ours = DeltaTable(str(copy)).to_pyarrow_table().to_pylist()
        except DeltaLogError as exc:
            refused.append(name)
            if name in REFUSED:
                assert type(exc).__name__ == REFUSED[name], (name, exc)
            continue
        try:
            theirs = _spark_rows(delta_spark, str(copy))
        except Exception as exc:
            if name in _spark_cannot_read():  # this delta-spark line refuses it; we read it
                assert "DELTA_UNSUPPORTED_TYPE_CHANGE_IN_PREVIEW" in str(exc), (name, exc)
                continue
            failures.append(
                f"{name}: deltalog read {len(ours)} rows, delta-spark failed: {exc}"[:800]
            )
            continue
        if _rows(ours) != _rows(theirs):
            failures.append(f"{name}: rows differ ({len(ours)} ours, {len(theirs)} delta-spark)")
            continue
        compared.append(name)
    assert not failures, failures
    assert {"dv-partitioned-with-checkpoint", "dv-with-columnmapping"} <= set(compared)
    assert {"table-with-columnmapping-mode-name", "table-with-columnmapping-mode-id"} <= set(
        compared
    )
    assert len(compared) >= 60, (len(compared), refused)


def test_to_pyarrow_table_applies_delta_spark_deletion_vectors_of_every_kind(
    delta_spark: Any, tmp_path: Path
) -> None:
    """Large DVs (bitmap containers) and ranges (run containers) written by delta-spark."""
    spark = delta_spark
    root = str(tmp_path / "dvs")
    spark.range(0, 30000, numPartitions=1).selectExpr("id", "id % 3 AS k").write.format(
        "delta"
    ).option("delta.enableDeletionVectors", "true").save(root)
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id % 2 = 0 AND id < 20000")  # dense: bitmap
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id BETWEEN 21000 AND 26000")  # a range: runs
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id IN (29001, 29500)")  # sparse: array
    table = DeltaTable(root)
    dvs = [dv for dv in table.files().column("deletion_vector").to_pylist() if dv]
    assert dvs, "delta-spark wrote no deletion vector"
    ours = table.to_pyarrow_table()
    theirs = _spark_rows(spark, root)
    assert ours.num_rows == len(theirs) == 30000 - 10000 - 5001 - 2
    assert sorted(ours.column("id").to_pylist()) == sorted(r["id"] for r in theirs)
