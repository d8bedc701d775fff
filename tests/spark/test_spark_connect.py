"""deltalog.spark from a Spark Connect client, against a local Spark Connect server.

One server per module (:mod:`connect_server`, ``local[2]`` in its own JVM). Its Python workers
run an interpreter without deltalog (:func:`cluster.bare_python`): the client session ships
the package with ``spark.addArtifacts(package_zip(), pyfile=True)``, the Connect spelling of
``addPyFile``, and a session that ships nothing gets an error saying how to fix it. The
driver-side commit runs here, in the client process; the tables are checked with
:class:`deltalog.DeltaTable`, independent of Spark.

Table operations are one parametrised list (:data:`OPERATIONS`): a case seeds a table, runs one
operation over Connect (write, overwrite, replace_where, optimize, delete, update, merge) and
names the ids the table holds after.

The server ships with PySpark 4 (``pyspark/jars/spark-connect_2.13-*.jar``); pip's PySpark 3.5
has no server jar, so on the 3.5 line :mod:`connect_server` loads it from Maven Central (the
nearest served 3.5 patch release) and the module runs on both lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

pytest.importorskip("pyspark")
from cluster import bare_python
from connect_server import connect_server

import deltalog.spark
from deltalog import DeltaTable, SparkWriteError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("java") is None:
        pytest.fail("no java for the Spark Connect server")
    pytest.importorskip("grpc", reason="Spark Connect needs grpcio (deltalog[test])")
    work = tmp_path_factory.mktemp("connect")
    with connect_server(work, bare_python(work)) as url:
        yield url


#: What PySpark's ``builder.remote()`` sets in ``os.environ`` for the rest of the process.
_CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")


@pytest.fixture(scope="module")
def connect(server: str) -> Iterator[Any]:
    """A Connect client session with deltalog shipped as a zip."""
    from pyspark.sql import SparkSession

    before = {name: os.environ.get(name) for name in _CONNECT_ENV}
    spark = SparkSession.builder.remote(server).create()
    try:
        assert type(spark).__module__.startswith("pyspark.sql.connect")
        spark.addArtifacts(str(deltalog.spark.package_zip()), pyfile=True)
        yield spark
    finally:
        spark.stop()
        # builder.remote() marks the whole process as a Connect client (and stop() does not
        # undo it): every later classic session of this pytest process would turn remote.
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _ids(uri: str, version: int | None = None) -> list[int]:
    return sorted(DeltaTable(uri, version=version).to_pyarrow_table()["id"].to_pylist())


def _seed(spark: Any, uri: str) -> None:
    """Ids 0-9, partitioned by ``p = id % 2``, in two appends (two files per partition)."""
    for start in (0, 5):
        df = spark.range(start, start + 5, numPartitions=1).selectExpr("id", "id % 2 AS p")
        deltalog.spark.write(df, uri, mode="append", partition_by=["p"])


def _rows(spark: Any, ids: range) -> Any:
    return spark.range(ids.start, ids.stop, numPartitions=2).selectExpr("id", "id % 2 AS p")


def _append(spark: Any, uri: str) -> None:
    deltalog.spark.write(_rows(spark, range(10, 14)), uri, "append")


def _overwrite(spark: Any, uri: str) -> None:
    deltalog.spark.write(_rows(spark, range(20, 22)), uri, "overwrite")


def _replace_partition(spark: Any, uri: str) -> None:
    df = spark.range(100, 104, numPartitions=2).selectExpr("id", "id * 0 AS p")
    deltalog.spark.write(df, uri, "overwrite", predicate="p = 0")


def _replace_data(spark: Any, uri: str) -> None:  # a rewrite job over the candidate files
    df = spark.range(0, 2, numPartitions=1).selectExpr("id * 2 AS id", "id * 0 AS p")
    deltalog.spark.write(df, uri, "overwrite", predicate="id < 3")


def _optimize(spark: Any, uri: str) -> None:
    result = deltalog.spark.optimize(spark, uri)
    assert (result.files_removed, result.files_added) == (4, 2)


def _delete(spark: Any, uri: str) -> None:  # a scan job over the candidate files
    result = deltalog.spark.delete(spark, uri, "id > 6 AND p = 1")
    assert result["num_deleted_rows"] == 2


def _update(spark: Any, uri: str) -> None:
    result = deltalog.spark.update(spark, uri, "id < 2", {"id": "id + 100"})
    assert result["num_updated_rows"] == 2


def _merge(spark: Any, uri: str) -> None:  # the join and the rewrite on the executors
    source = spark.range(8, 12, numPartitions=1).selectExpr("id", "id % 2 AS p")
    result = (
        deltalog.spark.merge(spark, uri, source, "target.id = source.id")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result["numTargetRowsDeleted"], result["numTargetRowsInserted"]) == (2, 2)


#: (operation, the ids after it); each case starts from :func:`_seed`'s ids 0-9.
OPERATIONS: list[Any] = [
    pytest.param(_append, [*range(10), *range(10, 14)], id="append"),
    pytest.param(_overwrite, [20, 21], id="overwrite"),
    pytest.param(_replace_partition, [1, 3, 5, 7, 9, 100, 101, 102, 103], id="replace_partition"),
    pytest.param(_replace_data, [0, 2, 3, 4, 5, 6, 7, 8, 9], id="replace_where_data"),
    pytest.param(_optimize, list(range(10)), id="optimize"),
    pytest.param(_delete, [0, 1, 2, 3, 4, 5, 6, 8], id="delete"),
    pytest.param(_update, [*range(2, 10), 100, 101], id="update"),
    pytest.param(_merge, [*range(8), 10, 11], id="merge"),
]


@pytest.mark.parametrize(("operation", "expected"), OPERATIONS)
def test_operation(
    connect: Any, tmp_path: Path, operation: Callable[[Any, str], None], expected: list[int]
) -> None:
    uri = str(tmp_path / "table")
    _seed(connect, uri)
    operation(connect, uri)
    assert _ids(uri) == expected
    assert _ids(uri, version=1) == list(range(10))  # nothing committed is lost
    assert DeltaTable(uri).version() == 2


def test_partitioned_write_layout(connect: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "table")
    _seed(connect, uri)
    table = DeltaTable(uri)
    assert table.snapshot.partition_columns == ["p"]
    assert sorted(dict(pv)["p"] for pv in table.files()["partition_values"].to_pylist()) == [
        "0",
        "0",
        "1",
        "1",
    ]


def test_read(connect: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "table")
    _seed(connect, uri)
    _append(connect, uri)
    read = deltalog.spark.read
    everything = read(connect, uri).collect()
    assert sorted(r["id"] for r in everything) == list(range(14))
    filtered = read(connect, uri, filter="p = 1 AND id > 4", columns=["id"])
    assert filtered.columns == ["id"]
    assert sorted(r["id"] for r in filtered.collect()) == [5, 7, 9, 11, 13]
    assert sorted(r["id"] for r in read(connect, uri, version=0).collect()) == list(range(5))
    assert read(connect, uri, versionAsOf=1).count() == 10  # delta-spark's option spelling
    whole = read(connect, uri)
    late = whole.filter("id >= 12")  # only the files that may match: the last append's
    assert sorted(r["id"] for r in late.collect()) == [12, 13]
    assert len(late.inputFiles()) < len(whole.inputFiles())
    some_file = DeltaTable(uri).files()["path"][0].as_py()
    os.remove(os.path.join(uri, unquote(some_file)))
    assert whole.count() == 14  # answered from the log: no data file opened


def test_session_without_deltalog_is_told_to_ship_it(server: str, tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    bare = SparkSession.builder.remote(server).create()  # artifacts are per session
    try:
        uri = str(tmp_path / "table")
        with pytest.raises(SparkWriteError) as caught:
            deltalog.spark.write(bare.range(3), uri)
        message = str(caught.value)
        assert "Spark Connect server's Python workers cannot import deltalog" in message
        assert "spark.addArtifacts(str(deltalog.spark.package_zip()), pyfile=True)" in message
        assert "PYSPARK_PYTHON" in message  # the server runs in local mode
        assert not (tmp_path / "table" / "_delta_log").exists()
        bare.addArtifacts(str(deltalog.spark.package_zip()), pyfile=True)  # the advice works
        assert deltalog.spark.write(bare.range(3), uri).version == 0
        assert _ids(uri) == [0, 1, 2]
    finally:
        bare.stop()


def test_the_docs_snippet_runs(server: str, tmp_path: Path) -> None:
    """docs/spark.md's Spark Connect block, with this server's URL and a local table.

    It runs in a fresh interpreter, as a user's script would: here ``getOrCreate()`` would
    return a session an earlier test already shipped deltalog to, and a Spark 3.5 server
    refuses the same artifact twice in one session ("Duplicate Artifact").
    """
    from docsnippets import ROOT as DOCS_ROOT
    from docsnippets import blocks

    page = DOCS_ROOT / "docs" / "spark.md"
    (block,) = [b for b in blocks(page) if b.tested_by == "tests/spark/test_spark_connect.py"]
    uri = tmp_path / "events"
    code = block.code.replace('"sc://localhost:15002"', repr(server))
    code = code.replace('"s3://bucket/events"', repr(str(uri)))
    assert code.count(repr(server)) == 1 and code.count(repr(str(uri))) == 1
    path = os.pathsep.join(p for p in (str(DOCS_ROOT), os.environ.get("PYTHONPATH")) if p)
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"{page}:{block.line}: {run.stderr[-3000:]}"
    assert run.stdout.split()[0] == "33"  # the ids in 0-99 with id % 3 = 1
    assert _ids(str(uri)) == list(range(100))
    assert DeltaTable(str(uri)).version() == 1  # the write, then the compaction
