"""``deltalog.spark.read`` hands the plain files to Spark's own Parquet reader.

Files without a deletion vector, in directories spelled as Hive spells their partition values,
are read by ``spark.read.parquet`` (column pruning, filter push-down, ``count()`` from the
footers); every other file by deltalog's reader through ``mapInArrow``. Both give the rows of
:meth:`DeltaTable.to_pyarrow_table`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import spark_arrow as _arrow

from deltalog import DeltaTable, MissingDataFileError, write_table
from deltalog.protocol.actions import Protocol
from deltalog.spark import read
from deltalog.spark.parquet_read import split_files

_ODD_VALUES = ["a b", "x/y", "100%", "é", "a=b", "c:d", None, "#?*[]"]


def _rows(table: pa.Table) -> list[str]:
    return sorted(repr(r) for r in table.to_pylist())


def _readers(frame: Any) -> set[str]:
    """Which readers a DataFrame's plan uses: ``parquet`` (Spark's) and ``deltalog``."""
    plan = frame._jdf.queryExecution().executedPlan().toString()
    out = set()
    if "FileScan parquet" in plan:
        out.add("parquet")
    if "MapInArrow" in plan:
        out.add("deltalog")
    return out


def _partitioned(root: Path) -> str:
    uri = str(root / "odd")
    n = len(_ODD_VALUES)
    data = pa.table(
        {
            "id": pa.array(range(n * 3), pa.int64()),
            "k": _ODD_VALUES * 3,
            "day": pa.array([dt.date(2026, 11, 1 + i % 2) for i in range(n * 3)], pa.date32()),
            "x": pa.array([i / 7 for i in range(n * 3)], pa.float64()),
        }
    )
    write_table(uri, data, partition_by=["k", "day"])
    return uri


def test_plain_partitioned_files_are_read_by_sparks_parquet_reader(
    spark: Any, tmp_path: Path
) -> None:
    uri = _partitioned(tmp_path)
    frame = read(spark, uri)
    assert _readers(frame) == {"parquet"}
    assert frame.columns == ["id", "k", "day", "x"]
    assert [f.dataType.simpleString() for f in frame.schema.fields] == [
        "bigint",
        "string",
        "date",
        "double",
    ]
    assert _rows(_arrow(frame)) == _rows(DeltaTable(uri).to_pyarrow_table())
    assert frame.count() == 3 * len(_ODD_VALUES)
    picked = read(spark, uri, columns=["x", "k"], filter="k = '100%' AND id > 3")
    expected = DeltaTable(uri).to_pyarrow_table(columns=["x", "k"], filter="k = '100%' AND id > 3")
    assert picked.columns == ["x", "k"]
    assert _rows(_arrow(picked)) == _rows(expected)
    assert len(expected) == 2


def test_files_with_deletion_vectors_are_read_by_deltalog(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    for start in (0, 100, 200):
        data = pa.table({"id": pa.array(range(start, start + 100), pa.int64())})
        write_table(uri, data, mode="append", configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(uri).delete("id >= 100 AND id < 110")
    frame = read(spark, uri)
    assert _readers(frame) == {"parquet", "deltalog"}
    got = sorted(_arrow(frame).column("id").to_pylist())
    assert got == [i for i in range(300) if not 100 <= i < 110]
    assert frame.count() == 290


def test_timestamp_partitions_are_read_by_deltalog(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ts")
    at = dt.datetime(2026, 11, 1, 12, 30, tzinfo=dt.UTC)
    data = pa.table(
        {"id": pa.array([1, 2], pa.int64()), "at": pa.array([at, None], pa.timestamp("us", "UTC"))}
    )
    write_table(uri, data, partition_by=["at"])
    frame = read(spark, uri)
    assert _readers(frame) == {"deltalog"}
    assert _rows(_arrow(frame)) == _rows(DeltaTable(uri).to_pyarrow_table())


def test_column_mapping_by_name_at_every_level(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "mapped")
    point = pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.struct([("t", pa.string())])))])
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "p": ["a", "b", None],
            "point": pa.array([{"x": 1, "tags": [{"t": "u"}]}, None, {"x": 3, "tags": []}], point),
        }
    )
    write_table(uri, data, configuration={"delta.columnMapping.mode": "name"})
    table = DeltaTable(uri)
    assert table.schema().fields[2].metadata.get("delta.columnMapping.physicalName") != "point"
    frame = read(spark, uri)
    assert _readers(frame) == {"parquet"}
    assert frame.columns == ["id", "p", "point"]
    assert (
        frame.schema["point"].dataType.simpleString()
        == "struct<x:int,tags:array<struct<t:string>>>"
    )
    assert _rows(_arrow(frame)) == _rows(table.to_pyarrow_table())


def test_a_missing_plain_file_is_a_named_error(spark: Any, tmp_path: Path) -> None:
    uri = _partitioned(tmp_path)
    victim = next((tmp_path / "odd").rglob("*.parquet"))
    victim.unlink()
    with pytest.raises(MissingDataFileError):
        read(spark, uri).count()


def _files(paths: list[str], dv: bool = False) -> pa.Table:
    return pa.table(
        {
            "path": paths,
            "partition_values": pa.array(
                [[("k", "a%b")]] * len(paths), pa.map_(pa.string(), pa.string())
            ),
            "deletion_vector": pa.array(
                [{"storageType": "u"} if dv else None] * len(paths),
                pa.struct([("storageType", pa.string())]),
            ),
        }
    )


@pytest.mark.parametrize(
    ("path", "native"),
    [
        ("k=a%2525b/part-0.parquet", True),  # the directory k=a%25b, URI-encoded in the log
        ("k=a%25b/part-0.parquet", False),  # k=a%b: not Hive's spelling of the value
        ("k=a%2525b/sub/part-0.parquet", False),
        ("part-0.parquet", False),
        ("k=a%2525b/_part-0.parquet", False),  # hidden from Spark's listing
        ("k=a%2525b/part-*.parquet", False),  # a glob to Spark
        ("/elsewhere/k=a%2525b/part-0.parquet", False),
        ("s3://bucket/k=a%2525b/part-0.parquet", False),
    ],
)
def test_which_files_spark_reads(path: str, native: bool) -> None:
    from deltalog.protocol.schema import StructType

    schema = StructType.from_json_string(
        '{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}},'
        '{"name":"v","type":"long","nullable":true,"metadata":{}}]}'
    )
    protocol = Protocol(1, 2)
    split = split_files("/t", _files([path]), schema, ["k"], {}, protocol)
    assert (split.native == ["/t/k=a%25b/part-0.parquet"]) is native
    assert split.rest.num_rows == (0 if native else 1)
    with_dv = split_files("/t", _files([path], dv=True), schema, ["k"], {}, protocol)
    assert with_dv.native == []
    for root, configuration in [
        ("s3://bucket/t", {}),
        ("/t", {"delta.columnMapping.mode": "id"}),
    ]:
        assert (
            split_files(root, _files([path]), schema, ["k"], configuration, protocol).native == []
        )
    widened = Protocol(3, 7, reader_features=["typeWidening"], writer_features=["typeWidening"])
    assert split_files("/t", _files([path]), schema, ["k"], {}, widened).native == []


def test_many_files_are_listed_without_a_spark_job(spark: Any, tmp_path: Path) -> None:
    """Spark lists more than 32 paths with a job of its own; the log already listed them."""
    uri = str(tmp_path / "many")
    for start in range(0, 40):
        write_table(uri, pa.table({"id": pa.array([start], pa.int64())}), mode="append")
    tracker = spark.sparkContext.statusTracker()
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = set(tracker.getJobIdsForGroup(None))
    frame = read(spark, uri)
    assert set(tracker.getJobIdsForGroup(None)) == before
    assert spark.conf.get(key, None) is None  # the session's setting is back as it was
    assert sorted(r.id for r in frame.collect()) == list(range(40))


def _round_trips(spark: Any, monkeypatch: pytest.MonkeyPatch, uri: str) -> int:
    """How many py4j calls building ``read(spark, uri)`` makes (none run a job)."""
    client = spark.sparkContext._gateway._gateway_client
    calls = []
    send = client.send_command

    def counted(command: str, *args: Any, **kwargs: Any) -> Any:
        if not command.startswith("m\nd\n"):  # not py4j freeing a collected proxy (GC timing)
            calls.append(1)
        return send(command, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(client, "send_command", counted)
        read(spark, uri)
    return len(calls)


def test_building_a_read_does_not_cost_a_round_trip_per_file(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PySpark hands a list of paths to the JVM one element at a time; a read hands it whole."""
    uris = []
    for files in (3, 43):
        uri = str(tmp_path / f"files{files}")
        for start in range(files):
            write_table(uri, pa.table({"id": pa.array([start], pa.int64())}), mode="append")
        uris.append(uri)
        read(spark, uri)  # the first read also makes one-time calls
    few, many = (_round_trips(spark, monkeypatch, u) for u in uris)
    assert many == few
    assert read(spark, uris[1]).count() == 43
    assert sorted(r.id for r in read(spark, uris[1]).collect()) == list(range(43))


def test_a_value_spelled_as_hives_null_is_read_by_deltalog() -> None:
    # Spark's partition parsing reads the directory k=__HIVE_DEFAULT_PARTITION__ as null
    from deltalog.protocol.schema import StructType

    schema = StructType.from_json_string(
        '{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}},'
        '{"name":"v","type":"long","nullable":true,"metadata":{}}]}'
    )
    files = _files(["k=__HIVE_DEFAULT_PARTITION__/part-0.parquet"]).set_column(
        1,
        "partition_values",
        pa.array([[("k", "__HIVE_DEFAULT_PARTITION__")]], pa.map_(pa.string(), pa.string())),
    )
    split = split_files("/t", files, schema, ["k"], {}, Protocol(1, 2))
    assert split.native == []
    assert split.rest.num_rows == 1
