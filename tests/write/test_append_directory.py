"""``DeltaTable.append_files([directory])``: registering a Spark output directory in one commit.

A directory is read the way Spark reads an output directory: ``_SUCCESS``, ``.crc`` checksums,
and names starting with ``.`` or ``_`` (unless they hold ``=``) are skipped at any depth;
``col=value`` directories give partition values; a directory still holding ``_temporary`` and
the table root are refused. The Spark tests write real output with the ``spark`` fixture
(``tests/sparkutil.py``); the rest use pyarrow-written files, so the logic is covered without a
JVM.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import boto3
import deltalake
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import BUCKET, cloud_location
from tableutil import log_names, write_parquet

import deltalog
from deltalog import (
    DataFileNotFoundError,
    DeltaLogError,
    DeltaTable,
    DuplicateFileError,
    InvalidPathError,
    SchemaMismatchError,
)
from deltalog.logstores import open_store

# --------------------------------------------------------------------------- helpers


def live_files(table: DeltaTable) -> dict[str, dict[str, Any]]:
    """Live files by decoded relative path: partition values, stats and size."""
    out = {}
    for row in table.files().to_pylist():
        out[unquote(row["path"])] = {
            "partition": dict(row["partition_values"]),
            "stats": orjson.loads(row["stats"]),
            "size": row["size"],
        }
    return out


def delta_rs_rows(uri: str, key: str = "id") -> list[dict[str, Any]]:
    data = deltalake.DeltaTable(uri).to_pyarrow_table()
    return sorted(data.to_pylist(), key=lambda r: r[key])


def files_under(root: Path) -> list[str]:
    """Every file under ``root``, relative, sorted."""
    return sorted(
        str(Path(d, n).relative_to(root)).replace(os.sep, "/")
        for d, _, names in os.walk(root)
        for n in names
    )


class Unchanged:
    """Asserts that a failed call left the table as it was: same version, same log files."""

    def __init__(self, table: DeltaTable, root: Path) -> None:
        self.table, self.root = table, root
        self.version = table.version()
        self.log = log_names(root)

    def check(self) -> None:
        assert log_names(self.root) == self.log
        assert DeltaTable(str(self.root)).version() == self.version
        assert self.table.update() == self.version


# --------------------------------------------------------------------------- Spark output

SPARK_DDL = "id long, name string, ts timestamp, p string"
SPARK_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("p", pa.string()),
    ]
)
# A space is kept in a directory name, ':' is escaped as %3A, null is __HIVE_DEFAULT_PARTITION__.
SPARK_PARTITIONS = ["a", "b c", "x:y", None]
SPARK_ROWS = [
    (
        i,
        None if i % 7 == 0 else f"name-{i}",
        None if i % 11 == 0 else dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
        SPARK_PARTITIONS[i % 4],
    )
    for i in range(48)
]


def spark_write(spark: Any, path: Path, *, partitioned: bool = True) -> None:
    df = spark.createDataFrame(SPARK_ROWS, SPARK_DDL).repartition(2)
    writer = df.write.partitionBy("p") if partitioned else df.write
    writer.parquet(str(path))


def spark_data_files(batch: Path) -> list[str]:
    """The Parquet files Spark wrote under ``batch`` (relative to it)."""
    return [
        f
        for f in files_under(batch)
        if f.rsplit("/", 1)[-1].startswith("part-") and f.endswith(".parquet")
    ]


def test_spark_partitioned_output_directory(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "table"
    table = DeltaTable.create(str(root), SPARK_SCHEMA, partition_by=["p"])
    batch = root / "batch-0001"
    spark_write(spark, batch)

    written = files_under(batch)
    data_files = spark_data_files(batch)
    # What makes the test meaningful: Spark's markers and local checksums are there.
    assert "_SUCCESS" in written
    assert "._SUCCESS.crc" in written
    assert any(f.endswith(".parquet.crc") and "/." in f for f in written)
    assert {f.split("/")[0] for f in data_files} == {
        "p=a",
        "p=b c",
        "p=x%3Ay",
        "p=__HIVE_DEFAULT_PARTITION__",
    }
    assert len(data_files) > 4  # repartition(2): up to two files per partition

    version = table.append_files(["batch-0001"])  # relative to the table root
    assert version == 1
    live = live_files(table)
    assert sorted(live) == [f"batch-0001/{f}" for f in data_files]
    assert not any("_SUCCESS" in p or p.endswith(".crc") for p in live)

    # Partition values come from the p=... directories, unescaped, null for Hive's default.
    by_dir = {"p=a": "a", "p=b c": "b c", "p=x%3Ay": "x:y", "p=__HIVE_DEFAULT_PARTITION__": None}
    records: dict[str | None, int] = {}
    for path, info in live.items():
        expected = by_dir[path.split("/")[1]]
        assert info["partition"] == {"p": expected}, path
        assert info["size"] == (root / path).stat().st_size
        stats = info["stats"]
        assert stats["numRecords"] == pq.ParquetFile(root / path).metadata.num_rows > 0
        assert stats["nullCount"]["id"] == 0
        records[expected] = records.get(expected, 0) + stats["numRecords"]
    assert records == {p: sum(1 for r in SPARK_ROWS if r[3] == p) for p in SPARK_PARTITIONS}
    assert sum(records.values()) == len(SPARK_ROWS)

    # The percent sign of Spark's escaped directory is itself encoded in the action's path.
    raw_paths = table.files(with_stats=False).column("path").to_pylist()
    assert any("p=x%253Ay/" in p for p in raw_paths)
    assert any("p=b%20c/" in p for p in raw_paths)

    # delta-rs reads every row back, with the partition column from the log (INT96 timestamps
    # included).
    expected_rows = [{"id": i, "name": n, "ts": ts, "p": p} for i, n, ts, p in SPARK_ROWS]
    assert delta_rs_rows(str(root)) == expected_rows
    assert deltalog.DeltaTable(str(root)).history(1)[0]["operation"] == "WRITE"


def test_spark_output_by_absolute_path_and_registered_twice(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "table"
    table = DeltaTable.create(str(root), SPARK_SCHEMA, partition_by=["p"])
    batch = root / "batch-0002"
    spark_write(spark, batch)
    data_files = spark_data_files(batch)

    assert table.append_files([str(batch)]) == 1
    # Inside the table, so logged relative to it.
    assert sorted(live_files(table)) == [f"batch-0002/{f}" for f in data_files]
    assert not any(p.startswith(("/", "file:")) for p in table.files().column("path").to_pylist())

    unchanged = Unchanged(table, root)
    for again in (
        [str(batch)],
        ["batch-0002"],
        [f"file://{batch}"],
        [str(batch) + "/"],
        ["batch-0002/p=a"],  # part of it
        [f"batch-0002/{data_files[0]}"],  # one of its files
    ):
        with pytest.raises(DuplicateFileError, match="already in the table"):
            table.append_files(again)
        unchanged.check()
    assert len(delta_rs_rows(str(root))) == len(SPARK_ROWS)


def test_spark_unpartitioned_output_directory(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "table"
    table = DeltaTable.create(str(root), SPARK_SCHEMA)
    spark_write(spark, root / "batch-0001", partitioned=False)
    assert "_SUCCESS" in files_under(root / "batch-0001")

    table.append_files([f"file://{root / 'batch-0001'}"])
    live = live_files(table)
    assert len(live) == len(spark_data_files(root / "batch-0001"))
    assert all(info["partition"] == {} for info in live.values())
    assert sum(info["stats"]["numRecords"] for info in live.values()) == len(SPARK_ROWS)
    assert [r["id"] for r in delta_rs_rows(str(root))] == [r[0] for r in SPARK_ROWS]


# --------------------------------------------------------------------------- without Spark

SCHEMA = pa.schema(
    [("id", pa.int64()), ("name", pa.string()), ("p", pa.string()), ("q", pa.int32())]
)


def rows(ids: range) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(ids), pa.int64()), "name": [f"n{i}" for i in ids]},
    )


@pytest.fixture
def table_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "table"
    DeltaTable.create(str(root), SCHEMA, partition_by=["p", "q"])
    yield root


# A two-level partitioned output written by hand the way Spark lays it out.
NESTED = {
    "batch/p=a/q=1/part-00000.parquet": range(0, 3),
    "batch/p=a/q=1/part-00001.parquet": range(3, 5),
    "batch/p=a/q=2/part-00000.parquet": range(5, 6),
    "batch/p=b/q=__HIVE_DEFAULT_PARTITION__/part-00000.parquet": range(6, 10),
    "batch/p=__HIVE_DEFAULT_PARTITION__/q=-7/part-00000.parquet": range(10, 12),
    "batch/p=c%2Fd/q=3/part-00000.parquet": range(12, 13),
}
NESTED_PARTITIONS = {
    "batch/p=a/q=1": {"p": "a", "q": "1"},
    "batch/p=a/q=2": {"p": "a", "q": "2"},
    "batch/p=b/q=__HIVE_DEFAULT_PARTITION__": {"p": "b", "q": None},
    "batch/p=__HIVE_DEFAULT_PARTITION__/q=-7": {"p": None, "q": "-7"},
    "batch/p=c%2Fd/q=3": {"p": "c/d", "q": "3"},
}


def write_nested(root: Path) -> None:
    for relative, ids in NESTED.items():
        write_parquet(root, relative, rows(ids))
    (root / "batch" / "_SUCCESS").write_bytes(b"")
    (root / "batch" / "._SUCCESS.crc").write_bytes(b"crc")
    (root / "batch" / "p=a" / "q=1" / ".part-00000.parquet.crc").write_bytes(b"crc")


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda root: "batch", id="relative"),
        pytest.param(lambda root: "batch/", id="relative-trailing-slash"),
        pytest.param(lambda root: "./batch", id="relative-dot"),
        pytest.param(lambda root: str(root / "batch"), id="absolute"),
        pytest.param(lambda root: f"file://{root / 'batch'}", id="file-uri"),
        pytest.param(lambda root: f"file:{root / 'batch'}", id="file-uri-single-slash"),
    ],
)
def test_nested_partition_directories(table_root: Path, given: Any) -> None:
    write_nested(table_root)
    table = DeltaTable(str(table_root))
    assert table.append_files([given(table_root)]) == 1

    live = live_files(table)
    assert sorted(live) == sorted(NESTED)
    for path, info in live.items():
        assert info["partition"] == NESTED_PARTITIONS[path.rsplit("/", 1)[0]], path
        assert info["stats"]["numRecords"] == len(NESTED[path])
        assert info["stats"]["minValues"]["id"] == NESTED[path][0]
        assert info["size"] == (table_root / path).stat().st_size

    got = delta_rs_rows(str(table_root))
    assert [r["id"] for r in got] == list(range(13))
    by_id = {r["id"]: (r["p"], r["q"]) for r in got}
    assert by_id[0] == ("a", 1)
    assert by_id[6] == ("b", None)
    assert by_id[10] == (None, -7)
    assert by_id[12] == ("c/d", 3)


def test_a_directory_and_files_together(table_root: Path) -> None:
    write_nested(table_root)
    write_parquet(table_root, "p=z/q=9/single.parquet", rows(range(100, 102)))
    write_parquet(table_root, "more/p=z/q=8/part-0.parquet", rows(range(200, 201)))
    table = DeltaTable(str(table_root))
    table.append_files(["batch/p=a", "p=z/q=9/single.parquet", str(table_root / "more")])
    assert sorted(live_files(table)) == sorted(
        [
            "batch/p=a/q=1/part-00000.parquet",
            "batch/p=a/q=1/part-00001.parquet",
            "batch/p=a/q=2/part-00000.parquet",
            "p=z/q=9/single.parquet",
            "more/p=z/q=8/part-0.parquet",
        ]
    )
    assert table.version() == 1  # one commit


def test_hidden_and_underscore_names_are_skipped(table_root: Path) -> None:
    # Every skipped file is a valid data file of the right partition, so committing one by
    # mistake would succeed silently; only the listing rules keep them out.
    keep = {
        "batch/p=a/q=1/part-00000.parquet": range(0, 2),
        "batch/p=a/q=1/x.snappy.parquet": range(2, 3),
        "batch/p=a/q=1/no-extension": range(3, 4),
        "batch/p=a/q=1/under_score.parquet": range(4, 5),  # '_' inside a name is fine
    }
    skip = {
        "batch/p=a/q=1/.foo.parquet": range(10, 11),
        "batch/p=a/q=1/_underscore.parquet": range(11, 12),
        "batch/p=a/q=1/_SUCCESS.parquet": range(12, 13),
        "batch/p=a/q=1/part-00009.parquet.crc": range(13, 14),
        "batch/p=a/q=1/part-00008.parquet._COPYING_": range(14, 15),
        "batch/p=a/.staging/q=1/part-0.parquet": range(15, 16),
        "batch/_committed/p=a/q=1/part-0.parquet": range(16, 17),
        "batch/p=a/_metadata/q=1/part-0.parquet": range(17, 18),
        "batch/.hive-staging_1/p=a/q=1/part-0.parquet": range(18, 19),
    }
    for relative, ids in {**keep, **skip}.items():
        write_parquet(table_root, relative, rows(ids))
    (table_root / "batch" / "_SUCCESS").write_bytes(b"")
    (table_root / "batch" / "_common_metadata").write_bytes(b"not parquet")
    (table_root / "batch" / ".DS_Store").write_bytes(b"not parquet")

    table = DeltaTable(str(table_root))
    table.append_files(["batch"])
    assert sorted(live_files(table)) == sorted(keep)
    assert [r["id"] for r in delta_rs_rows(str(table_root))] == [0, 1, 2, 3, 4]


def test_underscore_directories_holding_equals_are_partitions(tmp_path: Path) -> None:
    root = tmp_path / "table"
    schema = pa.schema([("x", pa.int64()), ("_p", pa.int32())])
    table = DeltaTable.create(str(root), schema, partition_by=["_p"])
    data = pa.table({"x": pa.array([1, 2], pa.int64())})
    write_parquet(root, "batch/_p=1/part-0.parquet", data)
    write_parquet(root, "batch/_p=2/part-0.parquet", data)
    write_parquet(root, "batch/_p=2/_hidden.parquet", data)  # '_' name without '=': skipped
    write_parquet(root, "batch/_p=3/_x=y/part-0.parquet", data)  # '_x=y': kept, not a column
    (root / "batch" / "_SUCCESS").write_bytes(b"")

    table.append_files(["batch"])
    live = live_files(table)
    assert {p: i["partition"] for p, i in live.items()} == {
        "batch/_p=1/part-0.parquet": {"_p": "1"},
        "batch/_p=2/part-0.parquet": {"_p": "2"},
        "batch/_p=3/_x=y/part-0.parquet": {"_p": "3"},
    }
    got = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert sorted(got.column("_p").to_pylist()) == [1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize(
    "temporary",
    [
        pytest.param("batch/_temporary/0/_temporary/attempt_1/p=a/q=1/part-0.parquet", id="spark"),
        pytest.param("batch/_temporary/0/task_1/p=a/q=1/part-0.parquet", id="task-committed"),
        pytest.param("batch/p=a/_temporary/part-0.parquet", id="nested"),
    ],
)
def test_a_directory_with_temporary_is_refused(table_root: Path, temporary: str) -> None:
    write_nested(table_root)
    write_parquet(table_root, temporary, rows(range(50, 51)))
    table = DeltaTable(str(table_root))
    unchanged = Unchanged(table, table_root)
    with pytest.raises(InvalidPathError, match="_temporary"):
        table.append_files(["batch"])
    unchanged.check()
    # A subdirectory without it is a complete partition and can be registered.
    if "/p=a/" not in temporary:
        table.append_files(["batch/p=b"])
        assert sorted(live_files(table)) == [
            "batch/p=b/q=__HIVE_DEFAULT_PARTITION__/part-00000.parquet"
        ]


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda root: str(root), id="absolute"),
        pytest.param(lambda root: str(root) + "/", id="absolute-trailing-slash"),
        pytest.param(lambda root: f"file://{root}", id="file-uri"),
        pytest.param(lambda root: f"file://{root}/", id="file-uri-trailing-slash"),
        pytest.param(lambda root: f"{root}/batch/..", id="dot-dot"),
        pytest.param(lambda root: ".", id="dot"),
        pytest.param(lambda root: "./", id="dot-slash"),
        pytest.param(lambda root: "", id="empty"),
        pytest.param(lambda root: "batch/..", id="relative-dot-dot"),
    ],
)
def test_the_table_root_is_refused(table_root: Path, given: Any) -> None:
    write_nested(table_root)
    # The root holds files the table does not list (e.g. removed ones): none may come back.
    write_parquet(table_root, "p=a/q=1/removed.parquet", rows(range(90, 91)))
    table = DeltaTable(str(table_root))
    unchanged = Unchanged(table, table_root)
    with pytest.raises(InvalidPathError):
        table.append_files([given(table_root)])
    unchanged.check()


def test_an_ancestor_of_the_table_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "table"
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["p", "q"])
    write_parquet(root, "batch/p=a/q=1/part-0.parquet", rows(range(2)))
    table.append_files(["batch"])
    table.overwrite_files([])  # removes it
    assert table.files().num_rows == 0
    unchanged = Unchanged(table, root)
    with pytest.raises(InvalidPathError):
        table.append_files([str(tmp_path)])
    unchanged.check()


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda root: "p=a", id="relative"),
        pytest.param(lambda root: "p=a/", id="relative-trailing-slash"),
        pytest.param(lambda root: "p=a/q=1", id="two-levels"),
        pytest.param(lambda root: "./p=a/q=1/", id="two-levels-dot"),
        pytest.param(lambda root: str(root / "p=a"), id="absolute"),
        pytest.param(lambda root: f"file://{root / 'p=a' / 'q=1'}", id="file-uri"),
        pytest.param(lambda root: f"{root}/batch/../p=a", id="dot-dot"),
    ],
)
def test_a_partition_directory_of_the_table_is_refused(table_root: Path, given: Any) -> None:
    # Like the table root, the table's own partition directories hold files it removed.
    table = DeltaTable(str(table_root))
    write_parquet(table_root, "p=a/q=1/removed.parquet", rows(range(90, 91)))
    write_parquet(table_root, "p=a/q=1/live.parquet", rows(range(91, 92)))
    table.append_files(["p=a/q=1/removed.parquet", "p=a/q=1/live.parquet"])
    table.overwrite_files(["p=a/q=1/live.parquet"], where="p = 'a'")
    unchanged = Unchanged(table, table_root)
    with pytest.raises(InvalidPathError, match="partition directory"):
        table.append_files([given(table_root)])
    unchanged.check()
    assert sorted(live_files(table)) == ["p=a/q=1/live.parquet"]
    # A Spark output directory inside the table may hold partition directories, and a file
    # in a partition directory may be given by itself.
    write_parquet(table_root, "batch/p=a/q=1/part-0.parquet", rows(range(3)))
    write_parquet(table_root, "p=a/q=1/single.parquet", rows(range(5, 6)))
    table.append_files(["batch/p=a", "p=a/q=1/single.parquet"])
    assert sorted(live_files(table)) == [
        "batch/p=a/q=1/part-0.parquet",
        "p=a/q=1/live.parquet",
        "p=a/q=1/single.parquet",
    ]


@pytest.mark.parametrize(
    ("setup", "given"),
    [
        pytest.param(lambda root: None, "missing", id="nonexistent"),
        pytest.param(lambda root: None, "missing/deeper", id="nonexistent-parent"),
        pytest.param(lambda root: (root / "empty").mkdir(), "empty", id="empty"),
        pytest.param(
            lambda root: (root / "empty" / "p=a" / "q=1").mkdir(parents=True),
            "empty",
            id="empty-partition-dirs",
        ),
        pytest.param(
            lambda root: (
                (root / "markers").mkdir(),
                (root / "markers" / "_SUCCESS").write_bytes(b""),
                (root / "markers" / "._SUCCESS.crc").write_bytes(b"x"),
            ),
            "markers",
            id="only-markers",
        ),
    ],
)
def test_a_directory_without_data_files_raises_not_found(
    table_root: Path, setup: Any, given: str
) -> None:
    setup(table_root)
    table = DeltaTable(str(table_root))
    unchanged = Unchanged(table, table_root)
    with pytest.raises(DataFileNotFoundError) as info:
        table.append_files([given])
    assert isinstance(info.value, DeltaLogError)
    assert given.split("/")[0] in str(info.value)
    unchanged.check()
    with pytest.raises(DataFileNotFoundError):
        table.append_files([str(table_root / given)])
    unchanged.check()


@pytest.mark.parametrize(
    "paths",
    [
        pytest.param(["batch", "batch"], id="same-directory"),
        pytest.param(["batch", "batch/"], id="same-directory-slash"),
        pytest.param(["batch/p=a", "batch"], id="directory-and-its-parent"),
        pytest.param(["batch", "batch/p=a/q=2/part-00000.parquet"], id="directory-and-its-file"),
        pytest.param(["batch", "BATCH_ABS"], id="relative-and-absolute"),
    ],
)
def test_the_same_file_twice_in_one_call(table_root: Path, paths: list[str]) -> None:
    write_nested(table_root)
    table = DeltaTable(str(table_root))
    unchanged = Unchanged(table, table_root)
    given = [str(table_root / "batch") if p == "BATCH_ABS" else p for p in paths]
    with pytest.raises(DuplicateFileError):
        table.append_files(given)
    unchanged.check()


def test_registering_the_same_directory_twice(table_root: Path) -> None:
    write_nested(table_root)
    table = DeltaTable(str(table_root))
    table.append_files(["batch"])
    unchanged = Unchanged(table, table_root)
    with pytest.raises(DuplicateFileError, match="already in the table"):
        table.append_files(["batch"])
    unchanged.check()
    # A new file in the directory does not make the second registration partial.
    write_parquet(table_root, "batch/p=a/q=1/part-00002.parquet", rows(range(50, 51)))
    with pytest.raises(DuplicateFileError):
        table.append_files(["batch"])
    unchanged.check()
    assert len(live_files(table)) == len(NESTED)


def test_one_bad_file_in_a_directory_writes_nothing(table_root: Path) -> None:
    write_nested(table_root)
    write_parquet(
        table_root, "batch/p=a/q=1/part-00009.parquet", pa.table({"other": pa.array([1])})
    )
    table = DeltaTable(str(table_root))
    unchanged = Unchanged(table, table_root)
    with pytest.raises(SchemaMismatchError):
        table.append_files(["batch"])
    unchanged.check()


def test_a_directory_on_an_object_store(tmp_path: Path) -> None:
    # memory:// has object-store notation (URIs, no directories): same rules.
    uri = f"memory://append-dir-{uuid.uuid4().hex}/table"
    table = DeltaTable.create(uri, SCHEMA, partition_by=["p", "q"])
    store, root = open_store(uri)

    def put(relative: str, data: pa.Table | bytes) -> None:
        if isinstance(data, pa.Table):
            buffer = io.BytesIO()
            pq.write_table(data, buffer)
            data = buffer.getvalue()
        store.write(f"{root}/{relative}", data)

    for relative, ids in NESTED.items():
        put(relative, rows(ids))
    put("batch/_SUCCESS", b"")
    put("batch/p=a/q=1/.part-00000.parquet.crc", b"crc")
    put("batch/p=a/q=1/_hidden.parquet", rows(range(99, 100)))
    put("batch2/p=a/q=1/part-0.parquet", rows(range(99, 100)))  # a sibling, not under batch

    table.append_files(["batch"])
    live = live_files(table)
    assert sorted(live) == sorted(NESTED)
    for path, info in live.items():
        assert info["partition"] == NESTED_PARTITIONS[path.rsplit("/", 1)[0]]

    unchanged_version = table.version()
    with pytest.raises(DuplicateFileError):
        table.append_files([f"{uri}/batch"])
    with pytest.raises(InvalidPathError):
        table.append_files([uri])
    with pytest.raises(DataFileNotFoundError):
        table.append_files(["missing"])
    put("tmp/_temporary/0/p=a/q=1/part-0.parquet", rows(range(1)))
    put("tmp/p=a/q=1/part-0.parquet", rows(range(1)))
    with pytest.raises(InvalidPathError, match="_temporary"):
        table.append_files(["tmp"])
    assert table.update() == unchanged_version


def test_s3_directory_markers_in_an_output_directory_are_skipped(
    request: pytest.FixtureRequest,
) -> None:
    # Some tools (the S3 console, Hadoop's S3A) create empty objects named "dir/" for
    # directories: they are no data files.
    location = cloud_location(request, "s3")
    uri, options = location.uri, location.options
    table = DeltaTable.create(uri, SCHEMA, partition_by=["p", "q"], storage_options=options)
    store, root = open_store(uri, options)
    for relative, ids in NESTED.items():
        buffer = io.BytesIO()
        pq.write_table(rows(ids), buffer)
        store.write(f"{root}/{relative}", buffer.getvalue())
    s3 = boto3.client(
        "s3",
        endpoint_url=options["s3.endpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    key_prefix = uri.removeprefix(f"s3://{BUCKET}/")
    markers = ["batch/", "batch/p=a/", "batch/p=a/q=1/", "batch/p=b/q=__HIVE_DEFAULT_PARTITION__/"]
    for marker in markers:
        s3.put_object(Bucket=BUCKET, Key=f"{key_prefix}/{marker}", Body=b"")
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/batch/")["Contents"]
    assert {o["Key"] for o in listed} >= {f"{key_prefix}/{m}" for m in markers}

    assert table.append_files(["batch"]) == 1

    live = live_files(table)
    assert sorted(live) == sorted(NESTED)
    for path, info in live.items():
        assert info["partition"] == NESTED_PARTITIONS[path.rsplit("/", 1)[0]], path
        assert info["stats"]["numRecords"] == len(NESTED[path])
    # A directory holding nothing but markers has no data files.
    s3.put_object(Bucket=BUCKET, Key=f"{key_prefix}/only-markers/p=a/", Body=b"")
    with pytest.raises(DataFileNotFoundError):
        table.append_files(["only-markers"])
    assert table.update() == 1


# --------------------------------------------------------------------------- reserved names


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda root: "_delta_log", id="log-dir"),
        pytest.param(lambda root: "_delta_log/", id="log-dir-slash"),
        pytest.param(lambda root: "./_delta_log", id="log-dir-dot"),
        pytest.param(lambda root: f"_delta_log/{0:020d}.json", id="commit-file"),
        pytest.param(lambda root: str(root / "_delta_log"), id="log-dir-absolute"),
        pytest.param(lambda root: f"file://{root}/_delta_log", id="log-dir-uri"),
        pytest.param(lambda root: "batch/../_delta_log", id="log-dir-dot-dot"),
        pytest.param(lambda root: "_change_data/cdc.parquet", id="change-data"),
        pytest.param(lambda root: "_delta_index/ix.parquet", id="delta-index"),
        pytest.param(lambda root: "_staging", id="underscore-dir"),
        pytest.param(lambda root: "_staging/f.parquet", id="underscore-dir-file"),
        pytest.param(lambda root: ".hidden/f.parquet", id="dot-dir-file"),
        pytest.param(lambda root: "p=a/q=1/_f.parquet", id="underscore-file"),
        pytest.param(lambda root: "p=a/q=1/.f.parquet", id="dot-file"),
        pytest.param(lambda root: str(root / "batch" / "_tmp"), id="underscore-dir-absolute"),
    ],
)
@pytest.mark.parametrize("mode", ["append", "merge", "overwrite"])
def test_reserved_and_hidden_paths_are_refused_before_reading(
    table_root: Path, given: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_delta_log`` (and every name Delta treats as hidden) is refused as a path, not read.

    Every file under these names is a valid data file of the table, so only the path can be
    the reason; nothing is listed, opened or committed.
    """
    for relative in (
        "_change_data/cdc.parquet",
        "_delta_index/ix.parquet",
        "_staging/f.parquet",
        ".hidden/f.parquet",
        "p=a/q=1/_f.parquet",
        "p=a/q=1/.f.parquet",
        "batch/_tmp/p=a/q=1/f.parquet",
    ):
        write_parquet(table_root, relative, rows(range(1)))
    table = DeltaTable(str(table_root))
    unchanged = Unchanged(table, table_root)

    def no_reading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a data path was read before it was refused")

    monkeypatch.setattr(deltalog.write.data_files, "read_footer", no_reading)
    store = type(table._storage.store)
    monkeypatch.setattr(store, "list_tree", no_reading)
    with pytest.raises(InvalidPathError, match=r"_delta_log|not data"):
        if mode == "overwrite":
            table.overwrite_files([given(table_root)])
        else:
            table.append_files(
                [given(table_root)], schema_mode="merge" if mode == "merge" else None
            )
    monkeypatch.undo()
    unchanged.check()


def test_another_tables_log_outside_the_table_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    DeltaTable.create(str(other), SCHEMA)
    root = tmp_path / "table"
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["p", "q"])
    unchanged = Unchanged(table, root)
    with pytest.raises(InvalidPathError, match="_delta_log"):
        table.append_files([str(other / "_delta_log")])
    unchanged.check()
    # Names starting with '_' outside the table are the caller's business.
    write_parquet(tmp_path, "_outside/p=a/q=1/f.parquet", rows(range(2)))
    table.append_files([str(tmp_path / "_outside" / "p=a" / "q=1" / "f.parquet")])
    assert table.files().num_rows == 1
