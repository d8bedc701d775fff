from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from deltalog.errors import InvalidPathError, InvalidSchemaError, PartitionValueError
from deltalog.protocol.partitions import (
    HIVE_NULL,
    hive_partition_dir,
    parse_hive_path,
    parse_partition_value,
    serialize_partition_value,
)
from deltalog.protocol.paths import check_relative, decode_path, encode_path
from deltalog.protocol.schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    as_struct,
)

ALL_TYPES = StructType(
    (
        StructField("s", PrimitiveType("string")),
        StructField("l", PrimitiveType("long"), False),
        StructField("i", PrimitiveType("integer")),
        StructField("sh", PrimitiveType("short")),
        StructField("b", PrimitiveType("byte")),
        StructField("f", PrimitiveType("float")),
        StructField("d", PrimitiveType("double")),
        StructField("dec", DecimalType(38, 10)),
        StructField("bo", PrimitiveType("boolean")),
        StructField("bin", PrimitiveType("binary")),
        StructField("date", PrimitiveType("date")),
        StructField("ts", PrimitiveType("timestamp")),
        StructField("ntz", PrimitiveType("timestamp_ntz")),
        StructField("arr", ArrayType(PrimitiveType("long"), False)),
        StructField("m", MapType(PrimitiveType("string"), DecimalType(5, 2), True)),
        StructField(
            "st",
            StructType((StructField("x", PrimitiveType("double"), True, {"comment": "hi"}),)),
            True,
            {"delta.columnMapping.id": 5},
        ),
    )
)


def test_schema_json_round_trip() -> None:
    text = ALL_TYPES.to_json_string()
    assert StructType.from_json_string(text) == ALL_TYPES
    assert StructType.from_json_string(text).to_json_string() == text


def test_schema_arrow_round_trip_keeps_nullability_and_metadata() -> None:
    arrow = ALL_TYPES.to_arrow()
    assert arrow.field("l").nullable is False
    assert arrow.field("ts").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("ntz").type == pa.timestamp("us")
    assert StructType.from_arrow(arrow) == ALL_TYPES


@pytest.mark.parametrize(
    "bad",
    [
        '{"type":"struct","fields":[{"name":"a","type":"uint","nullable":true,"metadata":{}}]}',
        '{"type":"struct","fields":[{"name":"a","type":"decimal(40,2)","nullable":true}]}',
        '{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}',
        '{"type":"array","elementType":"long"}',
        "not json",
    ],
)
def test_invalid_schemas_are_refused(bad: str) -> None:
    with pytest.raises(InvalidSchemaError):
        as_struct(bad)


def test_arrow_types_without_delta_equivalent() -> None:
    with pytest.raises(InvalidSchemaError, match="uint32"):
        as_struct(pa.schema([("a", pa.uint32())]))


@pytest.mark.parametrize(
    ("type_name", "text", "value"),
    [
        ("string", "a b", "a b"),
        ("long", "-9223372036854775808", -(2**63)),
        ("integer", "42", 42),
        ("boolean", "true", True),
        ("double", "1.5", 1.5),
        ("date", "2021-02-03", dt.date(2021, 2, 3)),
        ("timestamp", "2021-02-03 04:05:06", dt.datetime(2021, 2, 3, 4, 5, 6, tzinfo=dt.UTC)),
        (
            "timestamp",
            "2021-02-03T04:05:06.000001Z",
            dt.datetime(2021, 2, 3, 4, 5, 6, 1, tzinfo=dt.UTC),
        ),
        ("timestamp_ntz", "2021-02-03 04:05:06.5", dt.datetime(2021, 2, 3, 4, 5, 6, 500000)),
        ("binary", "\u0001\u0002", b"\x01\x02"),
    ],
)
def test_partition_value_parsing(type_name: str, text: str, value: object) -> None:
    assert parse_partition_value(text, PrimitiveType(type_name)) == value
    assert parse_partition_value("", PrimitiveType(type_name)) is None
    assert parse_partition_value(None, PrimitiveType(type_name)) is None


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (PrimitiveType("integer"), "2147483648"),
        (PrimitiveType("byte"), "x"),
        (PrimitiveType("boolean"), "yes"),
        (PrimitiveType("date"), "2021-13-01"),
        (PrimitiveType("timestamp_ntz"), "2021-01-01T00:00:00Z"),
        (DecimalType(4, 2), "123.4"),
        (DecimalType(4, 2), "1.234"),
    ],
)
def test_bad_partition_values(t: PrimitiveType | DecimalType, text: str) -> None:
    with pytest.raises(PartitionValueError):
        parse_partition_value(text, t)


def test_partition_value_serialisation() -> None:
    assert serialize_partition_value(None, PrimitiveType("string")) is None
    assert serialize_partition_value(True, PrimitiveType("boolean")) == "true"
    assert serialize_partition_value(decimal.Decimal("1.5"), DecimalType(5, 2)) == "1.50"
    ts = dt.datetime(2021, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert serialize_partition_value(ts, PrimitiveType("timestamp")) == (
        "2021-01-02T01:04:05.000000Z"
    )
    assert serialize_partition_value("é".encode(), PrimitiveType("binary")) == "é"
    with pytest.raises(PartitionValueError):
        serialize_partition_value(b"\xff", PrimitiveType("binary"))
    wide = decimal.Decimal("1234567890123456789012345678.0123456789")
    assert serialize_partition_value(wide, DecimalType(38, 10)) == str(wide)
    with pytest.raises(PartitionValueError):
        serialize_partition_value(dt.datetime(2021, 1, 1), PrimitiveType("timestamp"))


@pytest.mark.parametrize("value", ["a b", "100%", "a=b", "x/y", "c:d", "ünï 東京", "#?*", "\x01"])
def test_hive_directories_round_trip(value: str) -> None:
    rel = hive_partition_dir({"p": value, "q": None}) + "/f.parquet"
    assert len(rel.split("/")) == 3  # two partition directories and the file
    assert parse_hive_path(rel) == {"p": value, "q": None}
    assert HIVE_NULL in rel
    assert decode_path(encode_path(rel)) == rel


def test_paths_encode_like_delta_spark() -> None:
    assert encode_path("p=a b%25/ü.parquet") == "p=a%20b%2525/ü.parquet"


@pytest.mark.parametrize("bad", ["../x.parquet", "a/../../x", "/abs/x", "s3://b/k", "", "./.."])
def test_relative_paths_must_stay_inside(bad: str) -> None:
    with pytest.raises(InvalidPathError):
        check_relative(bad)


def test_relative_path_normalisation() -> None:
    assert check_relative("./a//b/c.parquet") == "a/b/c.parquet"
