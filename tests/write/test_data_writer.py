"""The data writer's files: statistics gathered while writing, Parquet settings, layout."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import TransactionClosedError
from deltalog.logstores import open_store
from deltalog.protocol.schema import StructType
from deltalog.stats.footers import FooterInfo, compute_stats
from deltalog.write.data_writer import DataWriter
from deltalog.write.parquet_options import ParquetOptions


def _write(root: Path, table: pa.Table, partitions: list[str] = (), **kw: Any) -> list[Any]:  # type: ignore[assignment]
    store, location = open_store(str(root))
    config = kw.pop("configuration", {})
    chunk = kw.pop("chunk", 1000)
    schema = StructType.from_arrow(table.schema)
    with DataWriter(store, location, schema, list(partitions), config, **kw) as writer:
        for batch in table.to_batches(max_chunksize=chunk):
            writer.write(batch)
    return writer.adds


MIXED = pa.table(
    {
        "i": pa.array([3, None, -7, 12], pa.int32()),
        "l": pa.array([2**40, 5, None, -1], pa.int64()),
        "d": [1.5, -2.25, None, 1e10],
        "s": ["pear", None, "apple", "zebra"],
        "day": pa.array([dt.date(2024, 1, 2), None, dt.date(1999, 12, 31), dt.date(2030, 6, 1)]),
        "ts": pa.array(
            [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None, dt.datetime(1970, 1, 1), None],
            pa.timestamp("us", tz="UTC"),
        ),
        "ntz": pa.array([dt.datetime(2020, 2, 2, 2, 2, 2, 999)] * 4, pa.timestamp("us")),
        "dec": pa.array(
            [decimal.Decimal("1.25"), None, decimal.Decimal("-3.50"), None], pa.decimal128(10, 2)
        ),
        "b": [True, False, None, True],
        "bin": [b"x", None, b"y", b"z"],
        "st": pa.array([{"a": 1, "c": "q"}, None, {"a": None, "c": "r"}, {"a": 5, "c": None}]),
    }
)


def test_statistics_gathered_while_writing_equal_the_footer_statistics(tmp_path: Path) -> None:
    adds = _write(tmp_path, MIXED)
    assert len(adds) == 1
    location = tmp_path / adds[0].path
    parquet = pq.ParquetFile(location)
    from_footer = compute_stats(FooterInfo(parquet.schema_arrow, parquet.metadata))
    assert orjson.loads(adds[0].stats) == orjson.loads(from_footer)
    stats = orjson.loads(adds[0].stats)
    assert list(stats) == ["numRecords", "minValues", "maxValues", "nullCount"]
    assert stats["numRecords"] == 4
    assert stats["minValues"]["ts"] == "1970-01-01T00:00:00.000Z"
    assert stats["maxValues"]["ts"] == "2024-01-01T01:02:03.456Z"
    assert stats["minValues"]["ntz"] == "2020-02-02T02:02:02.000"
    assert stats["nullCount"]["st"] == {"a": 2, "c": 2}  # a null struct nulls its fields
    assert "b" not in stats["minValues"] and stats["nullCount"]["b"] == 1


def test_statistics_over_several_row_groups_and_batches(tmp_path: Path) -> None:
    table = pa.table({"n": list(range(10_000)), "s": [f"k{i % 97:03d}" for i in range(10_000)]})
    options = ParquetOptions(row_group_rows=1_500)
    adds = _write(tmp_path, table, options=options)
    stats = orjson.loads(adds[0].stats)
    assert stats["minValues"] == {"n": 0, "s": "k000"}
    assert stats["maxValues"] == {"n": 9_999, "s": "k096"}
    assert pq.ParquetFile(tmp_path / adds[0].path).metadata.num_row_groups > 3


def test_statistics_columns_follow_the_table_properties(tmp_path: Path) -> None:
    two = _write(tmp_path / "a", MIXED, configuration={"delta.dataSkippingNumIndexedCols": "2"})
    assert set(orjson.loads(two[0].stats)["nullCount"]) == {"i", "l"}
    named = _write(
        tmp_path / "b", MIXED, configuration={"delta.dataSkippingStatsColumns": "s,st.c"}
    )
    stats = orjson.loads(named[0].stats)
    assert stats["nullCount"] == {"s": 1, "st": {"c": 2}}
    assert stats["minValues"] == {"s": "apple", "st": {"c": "q"}}


def test_nan_long_strings_and_the_prefix_length(tmp_path: Path) -> None:
    table = pa.table({"f": [1.0, float("nan")], "s": ["a" * 40, "b"], "t": ["x" * 40, "a"]})
    stats = orjson.loads(_write(tmp_path / "a", table)[0].stats)
    assert "f" not in stats["minValues"]  # Spark orders NaN above every number: no upper bound
    assert "t" not in stats["minValues"]  # its maximum would be cut
    assert stats["minValues"]["s"] == "a" * 32 and stats["maxValues"]["s"] == "b"
    short = {"delta.dataSkippingStringPrefixLength": "4"}
    stats = orjson.loads(_write(tmp_path / "b", table, configuration=short)[0].stats)
    assert stats["minValues"]["s"] == "aaaa"


def test_dictionary_only_where_it_pays_and_the_codec(tmp_path: Path) -> None:
    n = 50_000
    table = pa.table({"unique": list(range(n)), "few": [f"v{i % 5}" for i in range(n)]})
    adds = _write(tmp_path / "a", table, chunk=n)
    meta = pq.ParquetFile(tmp_path / "a" / adds[0].path).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(2)}
    assert "RLE_DICTIONARY" in encodings["few"]
    assert "RLE_DICTIONARY" not in encodings["unique"]
    assert meta.column(0).compression == "SNAPPY"
    assert adds[0].path.endswith(".snappy.parquet")
    zstd = _write(tmp_path / "b", table, options=ParquetOptions(codec="zstd"))
    assert zstd[0].path.endswith(".zstd.parquet")
    meta = pq.ParquetFile(tmp_path / "b" / zstd[0].path).metadata.row_group(0)
    assert meta.column(0).compression == "ZSTD"


def test_many_partitions_with_few_open_files(tmp_path: Path) -> None:
    table = pa.table({"id": list(range(600)), "p": [i % 30 for i in range(600)]})
    options = ParquetOptions(max_open_files=4)
    adds = _write(tmp_path, table, ["p"], options=options, chunk=100)
    assert sum(orjson.loads(a.stats)["numRecords"] for a in adds) == 600
    assert {a.partition_values["p"] for a in adds} == {str(i) for i in range(30)}
    for add in adds:
        assert add.path.startswith(f"p={add.partition_values['p']}/")
        rows = pq.read_table(tmp_path / add.path)
        assert "p" not in rows.column_names


def test_abort_deletes_every_file(tmp_path: Path) -> None:
    store, location = open_store(str(tmp_path))
    schema = StructType.from_arrow(pa.schema([("id", pa.int64()), ("p", pa.string())]))
    options = ParquetOptions(max_open_files=1)
    writer = DataWriter(store, location, schema, ["p"], {}, options=options)
    writer.write(pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}))
    assert len(writer.locations) == 3
    writer.abort()
    assert not [p for p in tmp_path.rglob("*.parquet")]


def test_after_close_the_files_are_the_callers(tmp_path: Path) -> None:
    """An exception after ``close`` (say, in code that committed the files) deletes nothing."""
    store, location = open_store(str(tmp_path))
    schema = StructType.from_arrow(pa.schema([("id", pa.int64())]))
    try:
        with DataWriter(store, location, schema, [], {}) as writer:
            writer.write(pa.table({"id": [1, 2]}))
            writer.close()
            raise KeyError("after the commit")
    except KeyError:
        pass
    assert len(list(tmp_path.rglob("*.parquet"))) == 1
    with pytest.raises(TransactionClosedError):
        writer.write(pa.table({"id": [3]}))
