"""``deltalog.spark.delete``/``update`` read back by delta-spark, and delta-spark's DML after them.

After every deltalog Spark DELETE or UPDATE, delta-spark reads the table as deltalog does
(deletion vectors and all) and ``check`` is clean; delta-spark's own DELETE and UPDATE then
change the same table, and deltalog reads them back. A conflict with a delta-spark commit is
made deterministic through a seam: the driver's job runner
(:func:`deltalog.spark.dml_rewrite.run_job`) is wrapped so that delta-spark commits between
deltalog's scan and its commit. All tests share the process's one Spark session.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import ConcurrentDeleteReadError, DeltaTable, write_table
from deltalog.spark import delete, update

pytestmark = pytest.mark.spark

DV = {"delta.enableDeletionVectors": "true"}
MAPPED = {"delta.columnMapping.mode": "name"}
# (the package's ``delete`` function shadows its module's name)
spark_delete_module = importlib.import_module("deltalog.spark.delete")


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _norm(rows: list[dict[str, Any]]) -> list[str]:
    plain = [{k: _plain(v) for k, v in r.items()} for r in rows]
    return sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS, default=str).decode() for r in plain)


def _dl(root: str) -> list[str]:
    return _norm(DeltaTable(root).to_pyarrow_table().to_pylist())


def _spark(spark: Any, root: str) -> list[str]:
    frame = spark.read.format("delta").load(root)
    return _norm([row.asDict(recursive=True) for row in frame.collect()])


def _agree(spark: Any, root: str) -> list[str]:
    """delta-spark reads the latest version as deltalog does; ``check`` is clean."""
    ours = _dl(root)
    assert _spark(spark, root) == ours
    report = DeltaTable(root).check()
    assert report.ok, report.findings
    return ours


def _info(root: str, version: int) -> dict[str, Any]:
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return next(a["commitInfo"] for a in lines if "commitInfo" in a)


def _table(root: str, configuration: dict[str, str] | None, partitioned: bool) -> None:
    for n in range(3):
        ids = list(range(n * 20, n * 20 + 20))
        data = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": [("a", "b/c", "ü 1%")[i % 3] for i in ids],
                "v": [float(i) for i in ids],
                "s": [None if i % 7 == 0 else f"s{i}" for i in ids],
            }
        )
        write_table(
            root,
            data,
            mode="append",
            partition_by=["p"] if partitioned and n == 0 else None,
            configuration=configuration if n == 0 else None,
        )


@pytest.mark.parametrize(
    ("configuration", "partitioned"),
    [(None, False), (DV, False), (None, True), ({**DV, **MAPPED}, True)],
    ids=["flat-copy-on-write", "flat-dvs", "partitioned-copy-on-write", "partitioned-dvs-mapped"],
)
def test_spark_dml_reads_the_same_in_delta_spark(
    delta_spark: Any, tmp_path: Path, configuration: dict[str, str] | None, partitioned: bool
) -> None:
    root = str(tmp_path / "t")
    _table(root, configuration, partitioned)
    _agree(delta_spark, root)

    deleted = delete(delta_spark, root, "id IN (1, 2, 3, 25, 41)")
    assert deleted["numDeletedRows"] == 5
    assert _info(root, deleted.version)["operation"] == "DELETE"
    assert len(_agree(delta_spark, root)) == 55

    assert delete(delta_spark, root, "v > 50 AND s IS NULL")["numDeletedRows"] == 1  # 56
    _agree(delta_spark, root)
    assert delete(delta_spark, root, "p = 'b/c'").committed
    assert len(_agree(delta_spark, root)) == 54 - 18  # b/c: 20 ids, 1 and 25 gone

    updated = update(delta_spark, root, "id < 30 AND s IS NOT NULL", {"v": "v * 10", "s": "'u'"})
    assert updated["numUpdatedRows"] > 0
    assert _info(root, updated.version)["operation"] == "UPDATE"
    rows = _agree(delta_spark, root)
    assert any('"s":"u"' in r for r in rows)
    assert update(delta_spark, root, "p = 'a'", {"s": "NULL"})["numUpdatedRows"] > 0
    _agree(delta_spark, root)

    # delta-spark's own DML on deltalog's files and deletion vectors; deltalog reads it back
    delta_spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 4 OR id = 10")
    delta_spark.sql(f"UPDATE delta.`{root}` SET v = -1 WHERE id = 7")
    assert _dl(root) == _spark(delta_spark, root)
    # and deltalog's after delta-spark's (on delta-spark's deletion vectors)
    assert delete(delta_spark, root, "id = 12 OR id = 15")["numDeletedRows"] == 2
    _agree(delta_spark, root)


def test_conflict_with_a_delta_spark_delete(delta_spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    _table(root, DV, partitioned=True)
    real = spark_delete_module.run_job

    def scan_then_delta_spark_deletes(*args: Any, **kwargs: Any) -> Any:
        changes = real(*args, **kwargs)
        delta_spark.sql(f"DELETE FROM delta.`{root}` WHERE p = 'a'")  # removes id 3's files
        return changes

    before = DeltaTable(root).version()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spark_delete_module, "run_job", scan_then_delta_spark_deletes)
        with pytest.raises(ConcurrentDeleteReadError):
            delete(delta_spark, root, "id = 3")
    assert DeltaTable(root).version() == before + 1  # delta-spark's delete only
    assert "id" in _agree(delta_spark, root)[0]
