"""``deltalog.spark.read``: a Delta table as a Spark DataFrame, read by the executors with deltalog.

The rows must be those of :meth:`DeltaTable.to_pyarrow_table` (deltalog's own reader, checked
against delta-spark in ``interop_tests/``) on every golden table, and the read must work in a
PySpark session that has no delta-spark jars at all (a child process starts one).
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import spark_arrow as _arrow
from testpaths import GOLDEN_DIR, REPO_ROOT

from deltalog import (
    ConflictingOptionsError,
    DeltaLogError,
    DeltaTable,
    InvalidInputError,
    InvalidOptionError,
    InvalidPredicateError,
    InvalidSchemaError,
    TableNotFoundError,
    VersionNotFoundError,
    col,
    write_table,
)
from deltalog.spark import read
from deltalog.spark.scan import ScanPlan, describe_files, scan_task

# The module, not the function deltalog.spark.read that shadows it as an attribute.
spark_read = importlib.import_module("deltalog.spark.read")


def _golden() -> list[str]:
    return sorted(p.name for p in GOLDEN_DIR.iterdir() if (p / "_delta_log").is_dir())


def _rows(table: pa.Table) -> list[str]:
    return sorted(repr(r) for r in table.to_pylist())


def _events(root: Path) -> str:
    """A table partitioned by ``day`` (3 files), one file per day."""
    uri = str(root / "events")
    for day in ("2026-11-20", "2026-11-21", "2026-11-22"):
        data = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "name": ["ann", "bob", None],
                "day": pa.array([dt.date.fromisoformat(day)] * 3, pa.date32()),
            }
        )
        write_table(uri, data, mode="append", partition_by=["day"])
    return uri


# --------------------------------------------------------------------------- golden tables


def test_read_gives_deltalogs_rows_on_every_golden_table(spark: Any, tmp_path: Path) -> None:
    compared, refused = [], []
    for name in _golden():
        copy = tmp_path / name
        shutil.copytree(GOLDEN_DIR / name, copy)
        try:
            ours = DeltaTable(str(copy)).to_pyarrow_table()
        except DeltaLogError as exc:
            try:
                frame = read(spark, str(copy))
            except DeltaLogError as refusal:  # the log or the schema: refused before any job
                assert type(refusal) is type(exc), (name, refusal, exc)
            else:  # a data file the log names is missing: the job fails on it
                with pytest.raises(Exception, match="MissingDataFileError"):
                    _arrow(frame)
            refused.append(name)
            continue
        theirs = _arrow(read(spark, str(copy)))
        assert theirs.schema.names == ours.schema.names, name
        assert _rows(theirs) == _rows(ours), name
        compared.append(name)
    assert {"dv-with-columnmapping", "table-with-columnmapping-mode-id"} <= set(compared)
    assert len(compared) >= 75, (len(compared), refused)


def test_a_type_without_an_arrow_equivalent_is_refused_before_any_job(spark: Any) -> None:
    with pytest.raises(InvalidSchemaError, match="variant"):
        read(spark, str(GOLDEN_DIR / "spark-variant-checkpoint"))


def test_spark_types_come_from_the_delta_schema(spark: Any) -> None:
    frame = read(spark, str(GOLDEN_DIR / "dv-with-columnmapping"))
    fields = {f.name: f for f in frame.schema.fields}
    delta = DeltaTable(str(GOLDEN_DIR / "dv-with-columnmapping")).schema()
    assert list(fields) == delta.names
    for f in frame.schema.fields:  # the log's column-mapping metadata stays in the log
        assert not any(k.startswith("delta.columnMapping") for k in f.metadata), f
    typed = read(spark, str(GOLDEN_DIR / "data-reader-partition-values"))
    assert json.loads(typed.schema.json()) == _schema_without_mapping(
        DeltaTable(str(GOLDEN_DIR / "data-reader-partition-values")).schema().to_json_string()
    )


def _schema_without_mapping(text: str) -> Any:
    document = json.loads(text)
    for f in document["fields"]:
        f["metadata"] = {
            k: v for k, v in f["metadata"].items() if not k.startswith("delta.columnMapping")
        }
    return document


# --------------------------------------------------------------------------- arguments


def test_columns_in_the_order_asked(spark: Any, tmp_path: Path) -> None:
    uri = _events(tmp_path)
    frame = read(spark, uri, columns=["day", "id"])
    assert frame.columns == ["day", "id"]
    assert _rows(_arrow(frame)) == _rows(DeltaTable(uri).to_pyarrow_table(columns=["day", "id"]))


def test_filter_rows_and_files(spark: Any, tmp_path: Path, monkeypatch: Any) -> None:
    uri = _events(tmp_path)
    chosen: list[int] = []
    real = spark_read.live_files

    def spy(table: DeltaTable, predicate: Any) -> pa.Table:
        files = real(table, predicate)
        chosen.append(files.num_rows)
        return files

    monkeypatch.setattr(spark_read, "live_files", spy)
    text = "day >= '2026-11-21' AND id > 1"
    frame = read(spark, uri, filter=text, columns=["id", "name"])
    assert frame.columns == ["id", "name"]
    expected = DeltaTable(uri).to_pyarrow_table(columns=["id", "name"], filter=text)
    assert _rows(_arrow(frame)) == _rows(expected)
    assert len(expected) == 4
    assert chosen == [2]  # the partition of 2026-11-20 is not read


def test_a_pruned_file_is_never_opened(spark: Any, tmp_path: Path) -> None:
    """The executors read only the files chosen: deleting a pruned one changes nothing."""
    uri = _events(tmp_path)
    (data_file,) = (tmp_path / "events" / "day=2026-11-20").glob("*.parquet")
    data_file.unlink()
    got = _arrow(read(spark, uri, filter=col("day") == dt.date(2026, 11, 22)))
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3]
    with pytest.raises(Exception, match="does not exist"):  # without the filter it is read
        _arrow(read(spark, uri))


def test_files_are_pruned_by_statistics(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    for start in (0, 100, 200):
        write_table(uri, pa.table({"x": pa.array(range(start, start + 10), pa.int64())}),
                    mode="append")  # fmt: skip
    files = spark_read.live_files(DeltaTable(uri), spark_read.as_predicate("x >= 150"))
    assert files.num_rows == 1


def test_filter_forms(spark: Any, tmp_path: Path) -> None:
    uri = _events(tmp_path)
    for given in (
        {"id": 2},
        [("id", "=", 2)],
        col("id") == 2,
    ):
        got = _arrow(read(spark, uri, filter=given))
        assert sorted(got.column("day").to_pylist()) == [
            dt.date(2026, 11, 20),
            dt.date(2026, 11, 21),
            dt.date(2026, 11, 22),
        ], given


def test_timestamp_filter_in_the_session_time_zone(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "ts")
    stamps = [dt.datetime(2026, 1, 1, h, tzinfo=dt.UTC) for h in (0, 6, 12)]
    for s in stamps:
        write_table(uri, pa.table({"t": pa.array([s], pa.timestamp("us", "UTC"))}), mode="append")
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Europe/Paris")  # UTC+1 in January
    try:
        got = _arrow(read(spark, uri, filter="t >= '2026-01-01 07:00:00'"))
        naive = _arrow(read(spark, uri, filter=col("t") >= dt.datetime(2026, 1, 1, 7)))
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    # 07:00 in Paris is 06:00 UTC: files pruned as if it were 07:00 UTC would lose 06:00.
    # PySpark 3.5 hands timestamps over in the session's zone, PySpark 4 in UTC: compare in UTC.
    assert sorted(v.astimezone(dt.UTC).hour for v in got.column("t").to_pylist()) == [6, 12]
    assert sorted(v.astimezone(dt.UTC).hour for v in naive.column("t").to_pylist()) == [6, 12]


def test_time_travel(spark: Any, tmp_path: Path) -> None:
    uri = _events(tmp_path)
    assert _arrow(read(spark, uri, version=0)).num_rows == 3
    assert _arrow(read(spark, uri, version=1)).num_rows == 6
    log = tmp_path / "events" / "_delta_log"
    for version, seconds in ((0, 1_000), (1, 2_000), (2, 3_000)):
        os.utime(log / f"{version:020d}.json", (seconds, seconds))
    at = dt.datetime.fromtimestamp(2_500, dt.UTC)
    assert _arrow(read(spark, uri, timestamp=at)).num_rows == 6
    assert _arrow(read(spark, uri, timestamp=at.isoformat())).num_rows == 6
    assert _arrow(read(spark, uri, versionAsOf=0)).num_rows == 3  # delta-spark's options
    assert _arrow(read(spark, uri, VERSIONASOF="1")).num_rows == 6
    assert _arrow(read(spark, uri, timestampAsOf=at.isoformat())).num_rows == 6
    with pytest.raises(VersionNotFoundError):
        read(spark, uri, version=9)
    with pytest.raises(InvalidInputError):
        read(spark, uri, version=1, timestamp=at)


def test_deletion_vectors_applied(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    data = pa.table({"id": pa.array(range(100), pa.int64())})
    write_table(uri, data, configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(uri).delete("id < 10 OR id = 50")
    assert DeltaTable(uri).files().column("deletion_vector").null_count == 0
    got = sorted(_arrow(read(spark, uri)).column("id").to_pylist())
    assert got == [i for i in range(10, 100) if i != 50]


def test_an_empty_table_has_the_schema_and_no_rows(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "empty")
    DeltaTable.create(uri, pa.schema([("a", pa.int32()), ("b", pa.string())]))
    frame = read(spark, uri)
    assert frame.columns == ["a", "b"]
    assert frame.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"columns": ["nope"]}, InvalidPredicateError),
        ({"filter": "nope = 1"}, InvalidPredicateError),
        ({"filter": "id = = 1"}, InvalidPredicateError),
        ({"columns": []}, InvalidInputError),
        ({"columns": "id"}, InvalidInputError),
        ({"versionAsOf": "one"}, InvalidOptionError),
        ({"version": 0, "versionAsOf": 1}, ConflictingOptionsError),
        ({"asOf": 1}, InvalidOptionError),
    ],
)
def test_bad_arguments_are_named_errors(
    spark: Any, tmp_path: Path, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    uri = _events(tmp_path)
    with pytest.raises(error):
        read(spark, uri, **kwargs)


def test_no_table(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        read(spark, str(tmp_path / "none"))


# --------------------------------------------------------------------------- executor side


def test_scan_task_alone_reads_what_the_files_hold(tmp_path: Path) -> None:
    """The executor function without Spark: descriptors in, the table's rows out."""
    source = GOLDEN_DIR / "dv-with-columnmapping"
    table = DeltaTable(str(source))
    schema = table.schema()
    rows = describe_files(table.files(with_stats=False))
    plan = ScanPlan(
        uri=str(source),
        table_schema=schema.to_json_string(),
        partition_columns=tuple(table.snapshot.partition_columns),
        columns=tuple(schema.names),
        batch_rows=4,
    )
    batch = pa.RecordBatch.from_pylist(
        [dict(zip(("path", "partition_values", "deletion_vector"), r, strict=True)) for r in rows]
    )
    out = list(scan_task(plan, [batch]))
    assert all(b.num_rows <= 4 for b in out)
    assert _rows(pa.Table.from_batches(out)) == _rows(table.to_pyarrow_table())


# --------------------------------------------------------------------------- no delta-spark

_PLAIN = """
import json, os, sys
import pyarrow as pa
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
import deltalog.spark
from deltalog import DeltaTable
uri = sys.argv[1]
try:
    spark.read.format("delta").load(uri).count()
    native = "read"
except Exception as exc:
    native = type(exc).__name__ + ": " + str(exc)[:200]
frame = deltalog.spark.read(spark, uri, filter="col1 > 5")
if hasattr(frame, "toArrow"):
    arrow = frame.toArrow()
else:  # PySpark 3.5
    arrow = pa.Table.from_batches(frame._collect_as_arrow())
got = sorted(map(repr, arrow.to_pylist()))
want = sorted(map(repr, DeltaTable(uri).to_pyarrow_table(filter="col1 > 5").to_pylist()))
print("RESULT " + json.dumps({"native": native, "equal": got == want, "rows": len(got),
      "jars": spark.conf.get("spark.jars", ""), "ext": spark.conf.get("spark.sql.extensions", "")}))
"""


def test_read_in_a_session_without_delta_spark(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    table = tmp_path / "dv-with-columnmapping"
    shutil.copytree(GOLDEN_DIR / "dv-with-columnmapping", table)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "DELTALOG_DELTA_SPARK_JARS")
    }
    env.update(PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN, str(table)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["native"] != "read"  # no delta-spark here: Spark cannot read Delta itself
    assert "delta" in result["native"].lower(), result["native"]
    assert result["equal"], result
    assert result["rows"] > 0
    assert result["jars"] == "" and result["ext"] == ""
