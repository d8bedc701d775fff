"""Write modes, options and schema evolution of ``deltalog.spark.write``, read by delta-spark
and delta-rs.

One table goes through every mode (the default ``error`` creating it, ``error`` and ``ignore``
on it, ``append`` with ``mergeSchema`` and ``maxRecordsPerFile``, ``overwrite`` with
``overwriteSchema`` and new partitioning), two races between a merge-schema append and a plain
append (interleaved with ``stage``: no sleeps, no threads), and ``userMetadata`` from the
option and from the session conf. delta-spark reads every version; delta-rs the latest ones.
A second, small table checks type widening through ``mergeSchema``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pytest
from sparkutil import delta_spark_version
from tableutil import parquet_on_disk
from test_delta_spark import spark_history

from deltalog import DeltaTable, MetadataChangedError, TableAlreadyExistsError
from deltalog.spark import stage, write

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def _commit(root: str, version: int) -> list[dict[str, Any]]:
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _norm(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as sorted JSON text (structs as dicts), so engines compare exactly."""
    return sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS).decode() for r in rows)


def _spark_rows(spark: Any, root: str, version: int) -> list[str]:
    frame = spark.read.format("delta").option("versionAsOf", version).load(root)
    return _norm([row.asDict(recursive=True) for row in frame.collect()])


def _rs_rows(root: str, version: int) -> list[str]:
    return _norm(deltalake.DeltaTable(root, version=version).to_pyarrow_table().to_pylist())


def _row(i: int, p: str, *, b: bool = False, extra: bool = False, more: bool = False,
         last: bool = False) -> dict[str, Any]:  # fmt: skip
    """Row ``i`` as every engine should read it at the schema its flags name."""
    row: dict[str, Any] = {"id": i, "s": {"a": i}, "p": p}
    if b:
        row["s"]["b"] = None
    if extra:
        row["extra"] = None
    if more:
        row["more"] = None
    if last:
        row["last"] = None
    return row


def test_modes_options_and_schema_evolution_read_by_delta_spark_and_delta_rs(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    root = str(tmp_path / "modes")
    base_ddl = "id long, s struct<a:int>, p string"
    expected: dict[int, list[dict[str, Any]]] = {}

    # v0: the default mode ("error") creates a missing table; userMetadata lands in commitInfo.
    first = spark.createDataFrame([(1, (1,), "x"), (2, (2,), "y")], base_ddl)
    created = write(first, root, partition_by=["p"], options={"userMetadata": "created"})
    assert created.version == 0
    assert _commit(root, 0)[0]["commitInfo"]["userMetadata"] == "created"
    expected[0] = [_row(1, "x"), _row(2, "y")]

    # "error" and "ignore" on the existing table write nothing at all.
    files, log = parquet_on_disk(root), sorted(os.listdir(Path(root) / "_delta_log"))
    with pytest.raises(TableAlreadyExistsError):
        write(first, root)
    ignored = write(first, root, mode="ignore")
    assert (ignored.ignored, ignored.version, ignored.files_added) == (True, 0, 0)
    assert parquet_on_disk(root) == files
    assert sorted(os.listdir(Path(root) / "_delta_log")) == log

    # v1: mergeSchema (any case) adds a nested field and a column in the data's commit;
    # maxRecordsPerFile=1 gives one file per row.
    wide_ddl = "id long, s struct<a:int,b:string>, p string, extra double"
    wide = spark.createDataFrame(
        [(3, (3, "b3"), "x", 0.5), (4, (4, "b4"), "x", None), (5, (5, None), "x", 2.5)], wide_ddl
    ).coalesce(1)
    merged = write(
        wide, root, mode="append", options={"MERGESCHEMA": "true", "maxRecordsPerFile": "1"}
    )
    assert (merged.version, merged.files_added) == (1, 3)
    actions = _commit(root, 1)
    assert [next(iter(a)) for a in actions][:2] == ["commitInfo", "metaData"]
    assert actions[0]["commitInfo"]["operationParameters"]["canMergeSchema"] is True
    expected[1] = [_row(i, p, b=True, extra=True) for i, p in ((1, "x"), (2, "y"))] + [
        {"id": 3, "s": {"a": 3, "b": "b3"}, "p": "x", "extra": 0.5},
        {"id": 4, "s": {"a": 4, "b": "b4"}, "p": "x", "extra": None},
        {"id": 5, "s": {"a": 5, "b": None}, "p": "x", "extra": 2.5},
    ]

    # Race 1: a merge-schema append is staged, a plain blind append lands first (v2); the
    # merge-schema append still commits (v3), as delta-spark resolves it.
    more_ddl = wide_ddl + ", more string"
    loser = stage(
        spark.createDataFrame([(6, (6, None), "y", None, "m6")], more_ddl),
        root,
        mode="append",
        schema_mode="merge",
    )
    plain = spark.createDataFrame([(7, (7,), "y")], base_ddl)  # lacks s.b and extra: fine
    assert write(plain, root, mode="append").version == 2
    expected[2] = [*expected[1], _row(7, "y", b=True, extra=True)]
    assert loser.commit().version == 3
    expected[3] = [{**r, "more": None} for r in expected[2]] + [
        {"id": 6, "s": {"a": 6, "b": None}, "p": "y", "extra": None, "more": "m6"}
    ]

    # Race 2: a plain append is staged, a merge-schema append lands first (v4): the plain one
    # fails with MetadataChangedError and its files are deleted.
    staged = stage(spark.createDataFrame([(8, (8,), "x")], base_ddl), root, mode="append")
    last = spark.createDataFrame([(9, (9, None), "x", None, None, 9)], more_ddl + ", last int")
    assert write(last, root, mode="append", options={"mergeSchema": True}).version == 4
    with pytest.raises(MetadataChangedError) as info:
        staged.commit()
    assert info.value.winning_version == 4
    assert not any(os.path.exists(os.path.join(root, a.path)) for a in staged.adds)
    expected[4] = [{**r, "last": None} for r in expected[3]] + [
        {"id": 9, "s": {"a": 9, "b": None}, "p": "x", "extra": None, "more": None, "last": 9}
    ]

    # v5: overwriteSchema replaces schema and partitioning in one commit; userMetadata comes
    # from the session conf, as in delta-spark.
    spark.conf.set(USER_METADATA_CONF, "from-session")
    try:
        replaced = write(
            spark.createDataFrame([("a", 1), ("b", 2)], "id string, q int"),
            root,
            mode="overwrite",
            partition_by=["q"],
            options={"overwriteSchema": "true"},
        )
    finally:
        spark.conf.unset(USER_METADATA_CONF)
    assert replaced.version == 5
    actions = _commit(root, 5)
    assert actions[0]["commitInfo"]["userMetadata"] == "from-session"
    assert actions[0]["commitInfo"]["operationParameters"]["canOverwriteSchema"] is True
    metadata = next(a["metaData"] for a in actions if "metaData" in a)
    assert metadata["partitionColumns"] == ["q"]
    assert DeltaTable(root).schema().names == ["id", "q"]
    expected[5] = [{"id": "a", "q": 1}, {"id": "b", "q": 2}]

    for version, rows in expected.items():
        assert _spark_rows(spark, root, version) == _norm(rows), version
    for version in (1, 4, 5):
        assert _rs_rows(root, version) == _norm(expected[version]), version
    history = {h["version"]: h for h in spark_history(spark, root)}
    assert history[0]["userMetadata"] == "created"
    assert history[5]["userMetadata"] == "from-session"
    assert history[1]["operationParameters"]["mode"] == "Append"


def test_merge_schema_widens_types_on_a_type_widening_table(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    root = str(tmp_path / "widen")
    # delta-spark 3.x reads only its preview's widenings (byte -> short -> int); 4.x more.
    modern = int(delta_spark_version().split(".")[0]) >= 4
    narrow, wide, big = ("int", "long", 2**40) if modern else ("short", "int", 2**20)
    names = {"int": "integer", "long": "long", "short": "short"}
    write(
        spark.createDataFrame([(1, 1.5)], f"id {narrow}, f double"),
        root,
        configuration={"delta.enableTypeWidening": "true"},
    )
    result = write(
        spark.createDataFrame([(big, 2.25)], f"id {wide}, f double"),
        root,
        mode="append",
        options={"mergeSchema": "true"},
    )
    assert result.version == 1
    fields = {f.name: f for f in DeltaTable(root).schema().fields}
    assert fields["id"].metadata["delta.typeChanges"] == [
        {"fromType": names[narrow], "toType": names[wide]}
    ]
    assert _spark_rows(spark, root, 1) == _norm([{"id": 1, "f": 1.5}, {"id": big, "f": 2.25}])
    # delta-spark's own append after the widening sees the wider column.
    spark.createDataFrame([(3, 0.5)], f"id {wide}, f double").write.format("delta").mode(
        "append"
    ).save(root)
    assert _spark_rows(spark, root, 2) == _norm(
        [{"id": 1, "f": 1.5}, {"id": big, "f": 2.25}, {"id": 3, "f": 0.5}]
    )
