"""``deltalog.spark.optimize``: bin-packing compaction, rewritten on Spark's executors.

The Spark tests share the process-wide local[2] session. Races are made deterministic with
:func:`deltalog.spark.stage_optimize`: staging runs the Spark job and pins the version read, so
"stage the optimize, commit another writer, commit the optimize" is exactly the interleaving
under test, with no sleeps or threads. Tables for the races are written with pyarrow and
``append_files`` (no Spark job), so only the optimize itself runs on Spark.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import CloudTable
from tableutil import log_names, parquet_on_disk, write_commit, write_parquet

from deltalog import (
    ConcurrentDeleteReadError,
    DeltaTable,
    InvalidInputError,
    InvalidPredicateError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.logstores import open_store
from deltalog.spark import optimize, stage_optimize, write
from deltalog.spark.optimize import ALONE_REASON, optimize_metrics

OPTIMIZE_METRICS = {
    "numAddedFiles",
    "numRemovedFiles",
    "numAddedBytes",
    "numRemovedBytes",
    "minFileSize",
    "p25FileSize",
    "p50FileSize",
    "p75FileSize",
    "maxFileSize",
    "numDeletionVectorsRemoved",
}

# --------------------------------------------------------------------------- helpers


def _ids_by_partition(uri: str, options: dict[str, str] | None = None) -> dict[Any, list[int]]:
    """``{p: sorted ids}`` read file by file through deltalog's file list and pyarrow."""
    table = DeltaTable(uri, storage_options=options)
    store, _ = open_store(uri, options)
    out: dict[Any, list[int]] = {}
    for f, location in zip(table.files().to_pylist(), table.file_uris(), strict=True):
        p = dict(f["partition_values"])["p"]
        data = pq.read_table(pa.BufferReader(store.read(location)), columns=["id"])
        out.setdefault(p, []).extend(data["id"].to_pylist())
    return {p: sorted(ids) for p, ids in out.items()}


def _files_per_partition(uri: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for pv in DeltaTable(uri).files().column("partition_values").to_pylist():
        p = dict(pv)["p"]
        out[p] = out.get(p, 0) + 1
    return out


def _commit(uri: str, version: int) -> list[dict[str, Any]]:
    log = Path(uri) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def _small_table(root: Path, partitions: dict[str, int], rows_per_file: int = 5) -> str:
    """A table partitioned by ``p`` with ``partitions[p]`` small files each (pyarrow)."""
    uri = str(root)
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])
    DeltaTable.create(uri, schema, partition_by=["p"])
    paths = []
    next_id = 0
    for p, count in partitions.items():
        for i in range(count):
            ids = list(range(next_id, next_id + rows_per_file))
            next_id += rows_per_file
            rows = pa.table({"id": ids, "s": [f"v{x}" for x in ids]})
            paths.append(write_parquet(root, f"p={p}/part-{i:05d}.parquet", rows))
    DeltaTable(uri).append_files(paths)
    return uri


# --------------------------------------------------------------------------- acceptance


def test_optimize_compacts_200_small_files(delta_spark: Any, tmp_path: Path) -> None:
    spark = delta_spark
    uri = str(tmp_path / "small")
    df = spark.range(0, 4000, 1, numPartitions=40).selectExpr(
        "id",
        "CASE WHEN id % 5 = 4 THEN NULL ELSE CAST(id % 5 AS STRING) END AS p",
        "concat('v', CAST(id AS STRING)) AS s",
        "timestamp_micros(1600000000000000 + id * 1234567) AS ts",
        "CAST(id AS DECIMAL(12, 2)) / 4 AS dec",
    )
    written = write(df, uri, partition_by=["p"])
    assert written.files_added == 200
    before = _ids_by_partition(uri)
    assert set(before) == {"0", "1", "2", "3", None}
    rows_before = {r["id"]: r for r in spark.read.format("delta").load(uri).collect()}

    # 1. one partition, into bins of at most 10 kB of input files
    sizes = [f["size"] for f in DeltaTable(uri).files().to_pylist()]
    target = 6 * max(sizes)
    first = optimize(spark, uri, where="p = '1'", target_file_size=target)
    assert first.committed and first.version == written.version + 1
    assert first.files_removed == 40 and first.partitions_optimized == 1
    assert 40 / 6 <= first.bins == first.files_added < 40
    counts = _files_per_partition(uri)
    assert counts["1"] == first.files_added
    assert all(counts[p] == 40 for p in ("0", "2", "3", None))
    info = _commit(uri, first.version)[0]["commitInfo"]
    assert info["operationParameters"] == {
        "predicate": "[\"p = '1'\"]",
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": False,
    }
    assert _ids_by_partition(uri) == before

    # 2. the whole table, default target (1 GiB): one file per partition
    second = optimize(spark, uri)
    assert second.version == first.version + 1
    assert second.files_removed == 160 + first.files_added
    assert second.files_added == 5 and second.partitions_optimized == 5
    assert _files_per_partition(uri) == {"0": 1, "1": 1, "2": 1, "3": 1, None: 1}
    assert _ids_by_partition(uri) == before
    table = DeltaTable(uri)
    assert table.check().findings == []
    actions = _commit(uri, second.version)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {
        "predicate": "[]",
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": False,
    }
    assert info["isolationLevel"] == "SnapshotIsolation" and info["isBlindAppend"] is False
    assert info["readVersion"] == first.version
    metrics = info["operationMetrics"]
    assert set(metrics) == OPTIMIZE_METRICS
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(adds) == 5 and len(removes) == second.files_removed
    assert not any(a["dataChange"] for a in adds + removes)
    assert metrics == optimize_metrics([a["size"] for a in adds], [r["size"] for r in removes])
    assert metrics["numAddedBytes"] == str(second.bytes_added)
    assert metrics["numRemovedBytes"] == str(second.bytes_removed)
    for add in adds:  # stats from the new footers
        stats = orjson.loads(add["stats"])
        p = add["partitionValues"]["p"]
        assert stats["numRecords"] == len(before[p])
        assert stats["minValues"]["id"] == before[p][0]
        assert stats["maxValues"]["id"] == before[p][-1]
        assert add["path"].startswith("p=__HIVE_DEFAULT_PARTITION__/" if p is None else f"p={p}/")
    after = {r["id"]: r for r in spark.read.format("delta").load(uri).collect()}
    assert after == rows_before  # every column, through delta-spark

    # 3. nothing left to compact: no commit
    third = optimize(spark, uri)
    assert not third.committed and third.version == second.version
    assert third.files_added == third.files_removed == 0
    assert len(third.skipped) == 5 and {s.reason for s in third.skipped} == {ALONE_REASON}
    assert DeltaTable(uri).version() == second.version


# --------------------------------------------------------------------------- conflicts


def test_racing_append_lands_and_both_commits_survive(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "race_append"
    uri = _small_table(root, {"a": 4, "b": 3})
    before = _ids_by_partition(uri)

    staged = stage_optimize(spark, uri)
    assert len(staged.removed_paths) == 7
    # the racing writer appends to a partition the optimize is compacting
    extra = write_parquet(root, "p=a/late.parquet", pa.table({"id": [1000], "s": ["late"]}))
    appended = DeltaTable(uri).append_files([extra])
    result = staged.commit()

    assert result.committed and result.version == appended + 1 == staged.read_version + 2
    table = DeltaTable(uri)
    paths = set(table.files().column("path").to_pylist())
    assert "p=a/late.parquet" in paths
    assert not paths & set(staged.removed_paths)
    assert paths - {"p=a/late.parquet"} == set(staged.added_paths)
    assert _ids_by_partition(uri) == {"a": sorted([*before["a"], 1000]), "b": before["b"]}
    assert [h["operation"] for h in table.history(2)] == ["OPTIMIZE", "WRITE"]
    assert table.check().findings == []


def test_racing_delete_of_a_rewritten_file_fails_and_writes_nothing(
    spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "race_delete"
    uri = _small_table(root, {"a": 3, "b": 3})
    big = write_parquet(
        root,
        "p=a/big.parquet",
        pa.table({"id": list(range(500, 2500)), "s": [f"big{i:09d}" for i in range(2000)]}),
    )
    DeltaTable(uri).append_files([big])
    minimum = (root / "p=a" / "big.parquet").stat().st_size  # the big file is not compacted

    # a concurrent delete of a file the optimize did NOT rewrite: no conflict
    staged = stage_optimize(spark, uri, where="p = 'a'", min_file_size=minimum)
    assert big not in staged.removed_paths and len(staged.removed_paths) == 3
    with DeltaTable(uri).transaction("DELETE") as tx:
        tx.remove(big)
    assert staged.commit().committed

    # a concurrent delete of a file it rewrote: ConcurrentDeleteReadError, nothing written
    staged = stage_optimize(spark, uri, where="p = 'b'")
    victim = staged.removed_paths[0]
    new_files = {str(root / unquote(p)) for p in staged.added_paths}
    assert new_files <= parquet_on_disk(root)
    with DeltaTable(uri).transaction("DELETE") as tx:
        tx.remove(victim)
    head = tx.version
    with pytest.raises(ConcurrentDeleteReadError) as info:
        staged.commit()
    assert info.value.path == victim
    assert DeltaTable(uri).version() == head
    assert not (Path(uri) / "_delta_log" / f"{head + 1:020d}.json").exists()
    assert not new_files & parquet_on_disk(root)  # its new files were deleted
    live = set(DeltaTable(uri).files().column("path").to_pylist())
    assert victim not in live and set(staged.removed_paths) - {victim} <= live


# --------------------------------------------------------------------------- object stores


def test_optimize_on_object_stores(spark: Any, cloud_table: CloudTable) -> None:
    uri, options = cloud_table.uri, cloud_table.options
    df = spark.range(0, 60, 1, numPartitions=6).selectExpr(
        "id", "concat('p', CAST(id % 2 AS STRING)) AS p"
    )
    written = write(df, uri, partition_by=["p"], storage_options=options)
    assert written.files_added == 12
    before = _ids_by_partition(uri, options)
    result = optimize(spark, uri, storage_options=options)
    assert result.files_removed == 12 and result.files_added == 2
    table = DeltaTable(uri, storage_options=options)
    assert len(table.files()) == 2
    assert _ids_by_partition(uri, options) == before
    # S3 + DynamoDB keeps its commits' _delta_log/.tmp files until log cleanup (entry TTL)
    findings = [
        f
        for f in table.check().findings
        if not (f.code == "orphan-log-file" and "/_delta_log/.tmp/" in (f.path or ""))
    ]
    assert findings == []


# --------------------------------------------------------------------------- refusals


def test_bad_input_is_refused_before_writing(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "bad"
    uri = _small_table(root, {"a": 2})
    files = parquet_on_disk(root)
    with pytest.raises(InvalidPredicateError):
        optimize(spark, uri, where="nope = 1")
    with pytest.raises(InvalidPredicateError):
        optimize(spark, uri, where="id = 1")  # a data column, not a partition column
    for size in (0, -1, True, 1.5):
        with pytest.raises(InvalidInputError, match="target_file_size"):
            optimize(spark, uri, target_file_size=size)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="min_file_size"):
        optimize(spark, uri, min_file_size=0)
    with pytest.raises(TableNotFoundError):
        optimize(spark, str(tmp_path / "missing"))
    assert parquet_on_disk(root) == files and DeltaTable(uri).version() == 1

    future = tmp_path / "future"
    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    )
    meta = {
        "id": "8b4d0c0e-5d2e-4c8e-9d0e-1f0a2b3c4d5e",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema,
        "partitionColumns": [],
        "configuration": {},
    }
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["someFuture"]}
    add = {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0}
    write_commit(
        future,
        0,
        [orjson.dumps({"protocol": protocol}), orjson.dumps({"metaData": meta})]
        + [
            orjson.dumps({"add": {**add, "path": f"f{i}.parquet", "dataChange": True}})
            for i in range(3)
        ],
    )
    with pytest.raises(UnsupportedFeatureError) as info:
        optimize(spark, str(future))
    assert info.value.feature == "someFuture"
    assert sorted(os.listdir(future)) == ["_delta_log"]
    assert log_names(future) == [f"{0:020d}.json"]
