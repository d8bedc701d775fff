"""The executor side of deltalog.spark without Spark: Arrow batches in, data files and stats out."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.protocol.paths import decode_path
from deltalog.protocol.schema import StructType
from deltalog.spark.task import RESULT_SCHEMA, TaskPlan, write_task


def plan_for(root: Path, schema: pa.Schema, partition_by: list[str], **kw: object) -> TaskPlan:
    struct = StructType.from_arrow(schema)
    return TaskPlan(
        uri=str(root),
        partition_schema=StructType(tuple(struct.field(c) for c in partition_by)).to_json_string(),
        data_columns=tuple(n for n in schema.names if n not in partition_by),
        **kw,  # type: ignore[arg-type]
    )


def run(plan: TaskPlan, batches: list[pa.RecordBatch]) -> list[dict[str, object]]:
    out = list(write_task(plan, batches))
    assert len(out) == 1 and out[0].schema == RESULT_SCHEMA
    rows: list[dict[str, object]] = out[0].to_pylist()
    return rows


def test_rows_are_split_by_partition_with_nulls_and_two_columns(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int32())])
    ids = list(range(1000))
    batch = pa.record_batch(
        [
            pa.array(ids, pa.int64()),
            pa.array([None if i % 10 == 0 else f"x/{i % 3}" for i in ids]),
            pa.array([i % 2 for i in ids], pa.int32()),
        ],
        schema=schema,
    )
    rows = run(plan_for(tmp_path, schema, ["a", "b"]), [batch, batch.slice(0, 0)])
    assert len(rows) == 7  # (x/0, x/1, x/2) x (0, 1), and null only with b=0 (i % 10 == 0)
    seen = []
    for row in rows:
        values = orjson.loads(row["partition_values"])  # type: ignore[arg-type]
        path = decode_path(str(row["path"]))
        data = pq.read_table(tmp_path / path)
        assert data.column_names == ["id"]
        assert data.num_rows == row["num_records"] == orjson.loads(row["stats"])["numRecords"]  # type: ignore[arg-type]
        for i in data.column("id").to_pylist():
            expected_a = None if i % 10 == 0 else f"x/{i % 3}"
            assert values == {"a": expected_a, "b": str(i % 2)}
            seen.append(i)
        assert (tmp_path / path).stat().st_size == row["size"]
        if values["a"] is None:
            assert "a=__HIVE_DEFAULT_PARTITION__/" in path
        else:
            assert path.startswith("a=x%2F")  # '/' escaped in the directory name
    assert sorted(seen) == ids


def test_max_records_per_file_rolls_files(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    batches = [
        pa.record_batch([pa.array(range(s, s + 300), pa.int64())], schema=schema)
        for s in (0, 300, 600)
    ]
    rows = run(plan_for(tmp_path, schema, [], max_records_per_file=250), batches)
    assert sorted(r["num_records"] for r in rows) == [150, 250, 250, 250]  # type: ignore[type-var]
    assert len({r["path"] for r in rows}) == 4


def test_stats_come_from_the_written_footer_and_timestamps_are_utc(tmp_path: Path) -> None:
    tz = pa.timestamp("us", tz="America/New_York")
    schema = pa.schema([("t", tz), ("s", pa.string()), ("p", pa.date32())])
    t0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    batch = pa.record_batch(
        [
            pa.array([t0, t0 + dt.timedelta(hours=1), None], tz),
            pa.array(["b", "a", None]),
            pa.array([dt.date(2026, 1, 1)] * 3, pa.date32()),
        ],
        schema=schema,
    )
    (row,) = run(plan_for(tmp_path, schema, ["p"]), [batch])
    stats = orjson.loads(row["stats"])  # type: ignore[arg-type]
    assert stats["numRecords"] == 3
    assert stats["nullCount"] == {"t": 1, "s": 1}
    assert stats["minValues"] == {"t": "2026-01-01T12:00:00.000Z", "s": "a"}
    assert stats["maxValues"] == {"t": "2026-01-01T13:00:00.000Z", "s": "b"}
    written = pq.read_schema(tmp_path / decode_path(str(row["path"])))
    assert written.field("t").type == pa.timestamp("us", tz="UTC")
    assert orjson.loads(row["partition_values"]) == {"p": "2026-01-01"}  # type: ignore[arg-type]


def test_empty_string_partition_value_is_null_like_spark(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    batch = pa.record_batch([pa.array([1, 2], pa.int64()), pa.array(["", None])], schema=schema)
    (row,) = run(plan_for(tmp_path, schema, ["p"]), [batch])
    assert orjson.loads(row["partition_values"]) == {"p": None}  # type: ignore[arg-type]
    assert row["num_records"] == 2


def test_files_are_never_overwritten(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    batch = pa.record_batch([pa.array([1], pa.int64())], schema=schema)
    first = run(plan_for(tmp_path, schema, []), [batch])
    second = run(plan_for(tmp_path, schema, []), [batch])
    assert first[0]["path"] != second[0]["path"]
    assert len(list(tmp_path.glob("*.parquet"))) == 2


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip", "uncompressed"])
def test_codec_names_the_file_like_spark(tmp_path: Path, codec: str) -> None:
    schema = pa.schema([("id", pa.int64())])
    batch = pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=schema)
    (row,) = run(plan_for(tmp_path, schema, [], codec=codec), [batch])
    name = str(row["path"])
    infix = {"snappy": ".snappy", "zstd": ".zstd", "gzip": ".gz", "uncompressed": ""}[codec]
    assert name.endswith(f".c000{infix}.parquet")
    meta = pq.read_metadata(tmp_path / name)
    assert meta.row_group(0).column(0).compression.lower() == (
        "uncompressed" if codec == "uncompressed" else codec
    )


def test_a_constraint_violation_is_a_result_row_not_an_exception(tmp_path: Path) -> None:
    """The task returns the violation (and the files it wrote, for the driver to delete).

    An exception raised inside ``mapInArrow`` reaches the driver through the Python worker's
    socket, which a busy executor may close first ("Socket closed"); a result row cannot race.
    """
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table_schema = orjson.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "id", "type": "long", "nullable": False, "metadata": {}},
                {
                    "name": "v",
                    "type": "string",
                    "nullable": True,
                    "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "varchar(3)"},
                },
            ],
        }
    ).decode()
    plan = plan_for(tmp_path, schema, [], table_schema=table_schema)
    good = pa.record_batch([pa.array([1, 2]), pa.array(["a", "abc"])], schema=schema)
    too_long = pa.record_batch([pa.array([3]), pa.array(["abcd"])], schema=schema)
    after = pa.record_batch([pa.array([None], pa.int64()), pa.array(["x"])], schema=schema)

    rows = run(plan, [good, too_long, after])  # the first violation is the one reported
    *files, last = rows
    assert last["path"] is None and "'v' is varchar(3)" in str(last["violation"])
    assert [f["violation"] for f in files] == [None]
    assert pq.read_table(tmp_path / decode_path(str(files[0]["path"]))).num_rows == 2

    (only,) = run(plan, [after])
    assert "NOT NULL constraint violated for column 'id'" in str(only["violation"])


def test_statistics_columns_and_prefix_follow_the_table(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("t", pa.string())])
    batch = pa.record_batch(
        [pa.array([1, 2]), pa.array(["abcdef", "b"]), pa.array(["x", "y"])], schema=schema
    )
    properties = (
        ("delta.dataSkippingStatsColumns", "s"),
        ("delta.dataSkippingStringPrefixLength", "3"),
    )
    (row,) = run(plan_for(tmp_path, schema, [], stats_properties=properties), [batch])
    stats = orjson.loads(row["stats"])  # type: ignore[arg-type]
    assert stats["nullCount"] == {"s": 0}
    assert stats["minValues"] == {"s": "abc"} and stats["maxValues"] == {"s": "b"}
