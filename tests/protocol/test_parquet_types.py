"""Files every Delta reader can read are accepted; others are refused before anything is written.

What each engine reads was tried with delta-spark 4.4 (Spark 4.2), delta-rs 1.6.6 and deltalog
(see :mod:`deltalog.protocol.parquet_types`): ``INT64`` nanosecond timestamps (pandas' default) are
unreadable by delta-spark, and by delta-rs and deltalog once a value has sub-microsecond
digits, so they are refused with :class:`UnsupportedParquetTypeError`, as are unsigned integers,
``float16``, time of day and durations, with advice on how to write the file instead. INT96
timestamps (Spark's), other timestamp units and the large/view/dictionary/fixed-size Arrow
variants are accepted, and delta-rs reads them back.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import log_names

from deltalog import (
    DeltaTable,
    InvalidSchemaError,
    SchemaMismatchError,
    StructType,
    UnsupportedParquetTypeError,
)

NS = 1_704_164_645_123_456_789  # 2024-01-02T03:04:05.123456789Z, as pandas keeps it
US = NS // 1000 * 1000  # the same instant, whole microseconds
WHEN = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)


def _ns(tz: str | None = "UTC", value: int = NS) -> pa.Array:
    return pa.array([value], pa.int64()).cast(pa.timestamp("ns", tz))


def _table(root: Path, columns: dict[str, Any]) -> DeltaTable:
    """A table of an ``id`` column and ``columns`` (Delta types), created from JSON."""
    fields = [{"name": "id", "type": "long", "nullable": True, "metadata": {}}] + [
        {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns.items()
    ]
    return DeltaTable.create(str(root), StructType.from_json_string(_json(fields)))


def _json(fields: list[dict[str, Any]]) -> str:
    return orjson.dumps({"type": "struct", "fields": fields}).decode()


def _write(root: Path, name: str, column: pa.Array, **options: Any) -> str:
    data = pa.table({"id": pa.array([1], pa.int64()), "c": column})
    pq.write_table(data, os.path.join(root, name), **options)
    return name


REFUSED: dict[str, tuple[pa.Array, Any, str]] = {
    # name: (file column, table column type, text the advice must hold)
    "ns-utc-sub-us": (_ns(), "timestamp", "coerce_timestamps='us'"),
    "ns-utc-whole-us": (_ns(value=US), "timestamp", "coerce_timestamps='us'"),
    "ns-no-zone": (_ns(None), "timestamp_ntz", "coerce_timestamps='us'"),
    "ns-in-struct": (
        pa.StructArray.from_arrays([_ns()], ["t"]),
        {"type": "struct", "fields": [{"name": "t", "type": "timestamp", "nullable": True}]},
        "coerce_timestamps='us'",
    ),
    "ns-in-list": (
        pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), _ns()),
        {"type": "array", "elementType": "timestamp", "containsNull": True},
        "coerce_timestamps='us'",
    ),
    "ns-in-map": (
        pa.MapArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["k"]), _ns()),
        {
            "type": "map",
            "keyType": "string",
            "valueType": "timestamp",
            "valueContainsNull": True,
        },
        "coerce_timestamps='us'",
    ),
    "uint8": (pa.array([1], pa.uint8()), "short", "pa.int16()"),
    "uint32": (pa.array([1], pa.uint32()), "long", "pa.int64()"),
    "uint64": (pa.array([1], pa.uint64()), "long", "decimal128(20, 0)"),
    "float16": (pa.array([1.5], pa.float16()), "float", "pa.float32()"),
    "time64": (pa.array([dt.time(1, 2, 3)], pa.time64("us")), "long", "time-of-day"),
    "duration": (pa.array([5], pa.duration("us")), "long", "pa.int64()"),
    "uint16-in-struct": (
        pa.StructArray.from_arrays([pa.array([1], pa.uint16())], ["u"]),
        {"type": "struct", "fields": [{"name": "u", "type": "integer", "nullable": True}]},
        "pa.int32()",
    ),
}


def _add(mode: str) -> Callable[[DeltaTable, str], object]:
    def run(table: DeltaTable, path: str) -> object:
        if mode == "append":
            return table.append_files([path])
        if mode == "merge":
            return table.append_files([path], schema_mode="merge")
        if mode == "overwrite":
            return table.overwrite_files([path])
        tx = table.transaction()
        tx.add([path])
        return tx.commit()

    return run


@pytest.mark.parametrize("mode", ["append", "merge", "overwrite", "transaction"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_files_delta_readers_cannot_read_are_refused(tmp_path: Path, case: str, mode: str) -> None:
    column, table_type, advice = REFUSED[case]
    root = tmp_path / "t"
    # merge: the column is new, so its type would come from the file
    table = _table(root, {} if mode == "merge" else {"c": table_type})
    path = _write(root, "f.parquet", column)
    before = log_names(root)
    with pytest.raises(UnsupportedParquetTypeError) as caught:
        _add(mode)(table, path)
    assert isinstance(caught.value, SchemaMismatchError)
    assert "f.parquet" in str(caught.value) and "'c" in str(caught.value)
    assert advice in str(caught.value)
    assert caught.value.column.startswith("c")
    assert log_names(root) == before
    assert DeltaTable(str(root)).version() == 0


def test_the_advice_gives_a_file_every_reader_reads(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root, {"c": "timestamp"})
    with pytest.raises(UnsupportedParquetTypeError):
        table.append_files([_write(root, "pandas.parquet", _ns(value=US))])
    # The advice, on the same rows: a file of microseconds (sub-microsecond digits would make
    # pyarrow raise instead of truncating them).
    data = pa.table({"id": pa.array([1], pa.int64()), "c": _ns(value=US)})
    pq.write_table(
        data, root / "fixed.parquet", coerce_timestamps="us", allow_truncated_timestamps=False
    )
    with pytest.raises(pa.ArrowInvalid):
        pq.write_table(
            pa.table({"id": pa.array([1], pa.int64()), "c": _ns()}),
            root / "lossy.parquet",
            coerce_timestamps="us",
            allow_truncated_timestamps=False,
        )
    table.append_files(["fixed.parquet"])
    assert DeltaTable(str(root)).to_pyarrow_table().column("c").to_pylist() == [WHEN]
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().column("c").to_pylist() == [WHEN]


ACCEPTED: dict[str, tuple[pa.Array, str, dict[str, Any]]] = {
    # name: (file column, table column type, pq.write_table options)
    "int96-from-spark": (
        pa.array([WHEN], pa.timestamp("us", "UTC")),
        "timestamp",
        {"use_deprecated_int96_timestamps": True},
    ),
    "us-utc": (pa.array([WHEN], pa.timestamp("us", "UTC")), "timestamp", {}),
    "us-new-york": (pa.array([WHEN], pa.timestamp("us", "America/New_York")), "timestamp", {}),
    "ms-utc": (
        pa.array([WHEN.replace(microsecond=123000)], pa.timestamp("ms", "UTC")),
        "timestamp",
        {},
    ),
    "us-no-zone": (pa.array([WHEN.replace(tzinfo=None)], pa.timestamp("us")), "timestamp_ntz", {}),
    "ns-written-as-us": (_ns(value=US), "timestamp", {"coerce_timestamps": "us"}),
    "large-string": (pa.array(["a"], pa.large_string()), "string", {}),
    "string-view": (pa.array(["a"], pa.string_view()), "string", {}),
    "large-binary": (pa.array([b"a"], pa.large_binary()), "binary", {}),
    "fixed-binary": (pa.array([b"ab"], pa.binary(2)), "binary", {}),
    "dictionary": (pa.array(["a"]).dictionary_encode(), "string", {}),
    "date64": (pa.array([dt.date(2024, 1, 2)], pa.date64()), "date", {}),
    "decimal256": (pa.array([decimal.Decimal("1.25")], pa.decimal256(10, 2)), "decimal(10,2)", {}),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_files_every_reader_reads_are_accepted(tmp_path: Path, case: str) -> None:
    column, table_type, options = ACCEPTED[case]
    root = tmp_path / "t"
    table = _table(root, {"c": table_type})
    table.append_files([_write(root, "f.parquet", column, **options)])
    expected = [WHEN] if case == "ns-written-as-us" else column.to_pylist()
    assert DeltaTable(str(root)).to_pyarrow_table().column("c").to_pylist() == expected
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().column("c").to_pylist() == expected


@pytest.mark.parametrize(
    ("column", "advice"),
    [
        (pa.field("t", pa.timestamp("ns", "UTC")), "pa.timestamp('us'"),
        (pa.field("t", pa.timestamp("ns")), "pa.timestamp('us'"),
        (pa.field("s", pa.struct([("t", pa.timestamp("ns", "UTC"))])), "pa.timestamp('us'"),
        (pa.field("u", pa.uint32()), "pa.int64()"),
        (pa.field("h", pa.float16()), "pa.float32()"),
    ],
)
def test_a_table_is_not_created_from_such_a_schema(
    tmp_path: Path, column: pa.Field, advice: str
) -> None:
    root = tmp_path / "t"
    with pytest.raises(UnsupportedParquetTypeError) as caught:
        DeltaTable.create(str(root), pa.schema([pa.field("id", pa.int64()), column]))
    assert isinstance(caught.value, InvalidSchemaError)  # what create() documents
    assert advice in str(caught.value)
    assert not (root / "_delta_log").exists()


def test_a_table_from_a_spark_int96_files_schema_takes_its_files(tmp_path: Path) -> None:
    """pyarrow reads INT96 as nanoseconds: the schema is refused, its microsecond cast is not."""
    root = tmp_path / "t"
    root.mkdir()
    data = pa.table({"id": pa.array([1], pa.int64()), "c": pa.array([WHEN], pa.timestamp("us"))})
    pq.write_table(data, root / "spark.parquet", use_deprecated_int96_timestamps=True)
    schema = pq.read_schema(root / "spark.parquet")
    assert schema.field("c").type == pa.timestamp("ns")
    with pytest.raises(UnsupportedParquetTypeError):
        DeltaTable.create(str(root), schema)
    table = DeltaTable.create(str(root), schema.set(1, pa.field("c", pa.timestamp("us", tz="UTC"))))
    table.append_files(["spark.parquet"])
    assert table.to_pyarrow_table().column("c").to_pylist() == [WHEN]
