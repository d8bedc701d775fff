"""``write(mode="overwrite", replace_where=...)`` on data columns, against delta-spark itself.

One test walks through the steps (the machine is small): a table with a deletion vector and a
row whose predicate is null, the same replaceWhere done by deltalog and by delta-spark on a copy,
the rows compared through delta-spark, delta-rs and deltalog; untouched files; refused input
that writes nothing; and the conflict with a commit that removes a file the overwrite read.
"""

from __future__ import annotations

import datetime as dt
import decimal
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pytest
from tableutil import parquet_on_disk

from deltalog import (
    ConcurrentDeleteReadError,
    DeltaTable,
    InvalidPredicateError,
    ReplaceWhereMismatchError,
)
from deltalog.spark import stage, write

DDL = "id long, p string, x double, ts timestamp, dec decimal(10,2)"
PREDICATE = "id >= 5 AND id < 15"


def _row(i: int | None, p: str, x: float) -> tuple[Any, ...]:
    k = i or 0
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=k)
    return (i, p, x, ts, decimal.Decimal(k) / 4)


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(r[c] for c in ("id", "p", "x", "dec")) for r in rows),
        key=lambda t: (t[0] is None, t[0] or 0, t[1], t[2]),
    )


def _table(spark: Any, root: Path, dv: bool) -> None:
    """Three Spark tasks: ids None,0..9 / 10..19 / 20..29; p cycles: every task writes 3 files."""
    rows = [_row(None, "a", -5.0)] + [_row(i, "abc"[i % 3], i * 1.5) for i in range(30)]
    first = spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), DDL)
    config = {"delta.enableDeletionVectors": "true"} if dv else {}
    write(first, str(root), partition_by=["p"], configuration=config)
    if dv:
        spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 7")  # a deletion vector on a candidate
        assert DeltaTable(str(root)).files().column("deletion_vector").drop_null().to_pylist()


def _replace_both(spark: Any, ours: Path, new: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    """The same replaceWhere by deltalog on ``ours`` and by delta-spark on a copy of it."""
    theirs = ours.with_name(ours.name + "-delta-spark")
    shutil.copytree(ours, theirs)
    result = write(new, str(ours), mode="overwrite", replace_where=PREDICATE)
    writer = new.write.format("delta").mode("overwrite").option("replaceWhere", PREDICATE)
    writer.save(str(theirs))
    expected = _sorted([r.asDict() for r in spark.read.format("delta").load(str(theirs)).collect()])
    got_spark = _sorted([r.asDict() for r in spark.read.format("delta").load(str(ours)).collect()])
    got_ours = _sorted(DeltaTable(str(ours)).to_pyarrow_table().to_pylist())
    assert got_spark == expected == got_ours
    return result, expected


def test_replace_where_on_data_columns_matches_delta_spark(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    new = spark.createDataFrame([_row(i, "abc"[i % 2], -1.0) for i in (5, 8, 14)], DDL)

    # With a deletion vector on a rewritten file: the deleted row stays deleted.
    with_dv = tmp_path / "dv"
    _table(spark, with_dv, dv=True)
    _, expected = _replace_both(spark, with_dv, new)
    ids = [r[0] for r in expected]
    assert None in ids and 7 not in ids and 6 not in ids and ids.count(5) == 1
    assert len(expected) == 31 - 1 - 9 + 3  # 9 ids of [5, 15) left besides the deleted 7

    ours = tmp_path / "plain"
    _table(spark, ours, dv=False)
    table = DeltaTable(str(ours))
    before = {f["path"]: f for f in table.files(flatten_stats=True).to_pylist()}

    # Refused: a row outside the predicate; a predicate on an unknown column. Nothing written.
    version, on_disk = table.version(), parquet_on_disk(ours)
    bad = spark.createDataFrame([_row(5, "a", 0.0), _row(40, "b", 0.0)], DDL)
    with pytest.raises(ReplaceWhereMismatchError, match="40"):
        write(bad, str(ours), mode="overwrite", replace_where=PREDICATE)
    with pytest.raises(InvalidPredicateError, match="nope"):
        write(bad, str(ours), mode="overwrite", replace_where="nope = 1")
    assert DeltaTable(str(ours)).version() == version and parquet_on_disk(ours) == on_disk

    # delta-rs reads the rows delta-spark produces.
    result, expected = _replace_both(spark, ours, new)
    assert _sorted(deltalake.DeltaTable(str(ours)).to_pyarrow_table().to_pylist()) == expected
    assert len(expected) == 31 - 10 + 3

    # Files wholly outside [5, 15) are untouched; the candidates are gone.
    after = DeltaTable(str(ours)).files().column("path").to_pylist()
    outside = {p for p, f in before.items() if f["min.id"] is not None and f["min.id"] >= 15}
    assert outside and outside <= set(after)
    assert result.files_removed == len(before) - len(outside)
    assert not (set(before) - outside) & set(after)

    # A commit that removes a file the overwrite read makes it fail with the named conflict.
    staged = stage(new, str(ours), mode="overwrite", replace_where=PREDICATE)
    other = DeltaTable(str(ours))
    tx = other.transaction("DELETE")
    tx.remove(tx.read_files({"p": "a"}))
    tx.commit()
    with pytest.raises(ConcurrentDeleteReadError):
        staged.commit()
