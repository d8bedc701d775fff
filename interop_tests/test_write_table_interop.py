"""``deltalog.write_table`` read back by delta-spark and delta-rs, version by version.

One table goes through every mode (create, append from pandas, overwrite of a partition,
overwrite of the rows a predicate on a data column selects, a schema-merging append, a full
overwrite) with partition values that need escaping; after each write delta-spark (every
version, by ``versionAsOf``) and delta-rs read the same rows as deltalog. Column-mapped tables
(``name`` and ``id``), the types pandas and pyarrow hand over (nanosecond and naive timestamps,
decimals, dates, nested structs, lists and maps), and delta-spark appending to a table
``write_table`` created (and the other way round) are checked the same way. All tests share
the process's one Spark session.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pandas as pd
import pyarrow as pa
import pytest

import deltalog
from deltalog import DeltaTable, write_table

pytestmark = pytest.mark.spark


def _plain(value: Any) -> Any:
    """A value as every engine should agree on it (instants as naive UTC, structs as dicts)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and isinstance(value[0], tuple) and len(value[0]) == 2:  # pyarrow's map
            return {k: _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _norm(rows: list[dict[str, Any]]) -> list[str]:
    option = orjson.OPT_SORT_KEYS
    plain = [{k: _plain(v) for k, v in r.items()} for r in rows]
    return sorted(orjson.dumps(r, option=option, default=str).decode() for r in plain)


def _dl(root: str, version: int | None = None) -> list[str]:
    table = DeltaTable(root) if version is None else DeltaTable(root, version=version)
    return _norm(table.to_pyarrow_table().to_pylist())


def _spark(spark: Any, root: str, version: int) -> list[str]:
    frame = spark.read.format("delta").option("versionAsOf", version).load(root)
    return _norm([row.asDict(recursive=True) for row in frame.collect()])


def _rs(root: str, version: int | None = None, *, sql: bool = False) -> list[str]:
    table = deltalake.DeltaTable(root, version=version)
    if sql:  # DataFusion maps columns; to_pyarrow_table reads mapped columns as nulls (1.6.6)
        builder = deltalake.QueryBuilder().register("t", table)
        return _norm(pa.table(builder.execute("SELECT * FROM t").read_all()).to_pylist())
    return _norm(table.to_pyarrow_table().to_pylist())


def _write(root: str, data: Any, **kwargs: Any) -> None:
    """``write_table``, then ``check`` finds nothing wrong."""
    write_table(root, data, **kwargs)
    report = DeltaTable(root).check()
    assert report.ok, report.findings


def test_every_mode_read_by_delta_spark_and_delta_rs(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "modes")
    days = ["2024-01-01", "a/b=c", "50% off", "ünï code", None]
    first = pa.table(
        {
            "id": list(range(10)),
            "day": [days[i % len(days)] for i in range(10)],
            "amount": [float(i) for i in range(10)],
        }
    )
    _write(root, first, partition_by=["day"])
    more = pd.DataFrame({"id": [10, 11], "day": ["a/b=c", "new"], "amount": [10.0, 11.0]})
    _write(root, more, mode="append")
    part = pa.table({"id": [20], "day": ["50% off"], "amount": [20.0]})
    _write(root, part, mode="overwrite", predicate="day = '50% off'")
    rows = pa.table({"id": [30], "day": ["2024-01-01"], "amount": [7.5]})
    _write(root, rows, mode="overwrite", predicate="amount >= 5 AND amount < 9")
    wider = pa.table({"id": [40], "day": ["x"], "amount": [40.0], "note": ["merged"]})
    _write(root, wider, mode="append", schema_mode="merge")
    last = DeltaTable(root).version()
    assert last == 4
    for version in range(last + 1):
        assert _spark(spark, root, version) == _dl(root, version), version
        assert _rs(root, version) == _dl(root, version), version
    _write(root, first.slice(0, 3), mode="overwrite", schema_mode="overwrite")
    assert _spark(spark, root, 5) == _dl(root) == _rs(root)
    assert DeltaTable(root).check().ok


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_tables(delta_spark: Any, tmp_path: Path, mode: str) -> None:
    root = str(tmp_path / f"mapped_{mode}")
    data = pa.table({"id": [1, 2, 3], "p": ["x", "y", "x"], "s": [{"a": 1}, None, {"a": 3}]})
    write_table(root, data, partition_by=["p"], configuration={"delta.columnMapping.mode": mode})
    write_table(root, data, mode="append")
    write_table(root, data.slice(2, 1), mode="overwrite", predicate="id = 3")
    for version in range(3):
        assert _spark(delta_spark, root, version) == _dl(root, version)
    assert _rs(root, sql=True) == _dl(root)


def test_types_pandas_and_pyarrow_hand_over(delta_spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "types")
    frame = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2024-03-01 10:00:00.123456", None], utc=True),
            "naive": pd.to_datetime(["1999-12-31 23:59:59", "2000-01-01 00:00:00"]),
            "day": [dt.date(2024, 2, 29), dt.date(1900, 1, 1)],
            "small": pd.array([1, None], dtype="Int16"),
            "text": ["ü", None],
        }
    )
    write_table(root, frame)
    nested = pa.table(
        {
            "ts": pa.array([None], pa.timestamp("us", tz="UTC")),
            "naive": pa.array([dt.datetime(2001, 1, 1)], pa.timestamp("ns")),
            "day": pa.array([None], pa.date32()),
            "small": pa.array([7], pa.int8()),
            "text": ["x"],
            "dec": pa.array([decimal.Decimal("12.345")], pa.decimal128(9, 3)),
            "tags": pa.array([["a", None]], pa.list_(pa.string())),
            "attrs": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
            "st": pa.array([{"x": 1.5, "y": "z"}]),
        }
    )
    write_table(root, nested, mode="append", schema_mode="merge")
    for version in range(2):
        assert _spark(delta_spark, root, version) == _dl(root, version)
    assert _rs(root) == _dl(root)
    assert DeltaTable(root).check().ok


def test_delta_spark_and_write_table_append_to_each_other(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    root = str(tmp_path / "both")
    write_table(root, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    spark.createDataFrame([(3, "a"), (4, "c")], "id long, p string").write.format("delta").mode(
        "append"
    ).save(root)
    write_table(root, pa.table({"id": [5], "p": ["c"]}), mode="append")
    assert _spark(spark, root, 2) == _dl(root) == _rs(root)
    assert len(_dl(root)) == 5
    assert deltalog.DeltaTable(root).check().ok
    # delta-spark's data skipping uses the statistics write_table gathered
    stats = [orjson.loads(s) for s in DeltaTable(root).files().column("stats").to_pylist()]
    assert all(s["numRecords"] >= 1 and "id" in s["minValues"] for s in stats)
    assert spark.read.format("delta").load(root).where("id = 5").count() == 1
