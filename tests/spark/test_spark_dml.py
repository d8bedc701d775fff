"""``deltalog.spark.delete`` / ``update``: rows changed on Spark's executors, read back by deltalog.

Tables are written with ``write_table`` (no Spark job), so only the DML itself runs on the
process-wide local[2] session. The conflict test uses a seam: the driver's job runner
(:func:`deltalog.spark.dml_rewrite.run_job`) is wrapped so that another writer commits between
the scan and the commit; no sleeps, no threads.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import (
    ConcurrentDeleteReadError,
    DeltaLogError,
    DeltaTable,
    InvalidExpressionError,
    InvalidPredicateError,
    write_table,
)
from deltalog.spark import DmlResult, delete, update

pytestmark = pytest.mark.spark

DV = {"delta.enableDeletionVectors": "true"}
# (the package's ``delete``/``update`` functions shadow their modules' names)
spark_delete_module = importlib.import_module("deltalog.spark.delete")
spark_update_module = importlib.import_module("deltalog.spark.update")


def _rows() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(40), pa.int64()),
            "v": pa.array([float(i) for i in range(40)], pa.float64()),
            "p": pa.array(["a", "b", "c", "d"] * 10),
        }
    )


def _make(root: Path, *, dvs: bool = False, partitioned: bool = True) -> str:
    uri = str(root)
    table = _rows()
    configuration = DV if dvs else None
    for part in range(4):  # four appends: several files per partition
        write_table(
            uri,
            table.slice(part * 10, 10),
            partition_by=["p"] if partitioned else None,
            configuration=configuration if part == 0 else None,
            mode="error" if part == 0 else "append",
        )
    return uri


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def _data_files(root: Path) -> set[str]:
    out = set()
    for dirpath, _, names in os.walk(root):
        if "_delta_log" in dirpath:
            continue
        out |= {os.path.join(dirpath, n) for n in names}
    return out


def _commit_info(uri: str, version: int) -> dict[str, Any]:
    text = (Path(uri) / "_delta_log" / f"{version:020d}.json").read_text()
    for line in text.splitlines():
        action = orjson.loads(line)
        if "commitInfo" in action:
            info: dict[str, Any] = action["commitInfo"]
            return info
    raise AssertionError("no commitInfo")


def _actions(uri: str, version: int) -> list[dict[str, Any]]:
    text = (Path(uri) / "_delta_log" / f"{version:020d}.json").read_text()
    return [orjson.loads(line) for line in text.splitlines()]


# --------------------------------------------------------------------------- delete


def test_delete_rewrites_only_files_with_matching_rows(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path)
    before = DeltaTable(uri).files().num_rows
    result = delete(spark, uri, "id = 5 OR id = 6")
    assert isinstance(result, DmlResult) and result.committed
    assert _ids(uri) == [i for i in range(40) if i not in (5, 6)]
    assert result["numDeletedRows"] == 2 and result["num_deleted_rows"] == 2
    # ids 5 and 6 sit in two files (partitions b and c of the first append): only those go
    assert result["numRemovedFiles"] == 2 and result["numAddedFiles"] == 2
    assert result["numCopiedRows"] == 3  # each file held 3 rows (ids 1,5,9 / 2,6)
    assert DeltaTable(uri).files().num_rows == before
    info = _commit_info(uri, result.version)
    assert info["operation"] == "DELETE"
    assert info["operationParameters"]["predicate"] == '["id = 5 OR id = 6"]'
    assert info["operationMetrics"]["numDeletedRows"] == "2"


def test_delete_with_deletion_vectors_marks_rows(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path, dvs=True)
    result = delete(spark, uri, "v >= 1 AND v < 2")  # partition b of the first append: 1, 5, 9
    assert _ids(uri) == [i for i in range(40) if i != 1]
    assert result["numDeletionVectorsAdded"] == 1
    assert result["numAddedFiles"] == 0 and result["numRemovedFiles"] == 0
    adds = [a["add"] for a in _actions(uri, result.version) if "add" in a]
    assert len(adds) == 1 and adds[0]["deletionVector"]["cardinality"] == 1
    assert orjson.loads(adds[0]["stats"])["tightBounds"] is False
    # a second delete in the same file grows its DV
    again = delete(spark, uri, "id = 5")
    assert again["numDeletionVectorsUpdated"] == 1
    assert _ids(uri) == [i for i in range(40) if i not in (1, 5)]


def test_delete_on_partitions_removes_files_without_a_job(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path)
    result = delete(spark, uri, "p = 'a'")
    assert _ids(uri) == [i for i in range(40) if i % 4 != 0]
    assert result["numDeletedRows"] == 10 and result["numRemovedFiles"] == 4
    assert result["numAddedFiles"] == 0


def test_delete_without_predicate_empties_the_table(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path, partitioned=False)
    result = delete(spark, uri)
    assert _ids(uri) == [] and result["numDeletedRows"] == 40
    assert _commit_info(uri, result.version)["operationParameters"]["predicate"] == "[]"


def test_delete_matching_nothing_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path)
    version = DeltaTable(uri).version()
    result = delete(spark, uri, "id = 1000")
    assert not result.committed and result.version == version
    assert DeltaTable(uri).version() == version


def test_delete_whole_file_removes_it(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path, dvs=True, partitioned=False)
    result = delete(spark, uri, "id < 10")  # the first append's file, every row of it
    assert result["numRemovedFiles"] == 1 and result["numDeletionVectorsAdded"] == 0
    assert _ids(uri) == list(range(10, 40))


# --------------------------------------------------------------------------- update


@pytest.mark.parametrize("dvs", [False, True])
def test_update_sets_values(spark: Any, tmp_path: Path, dvs: bool) -> None:
    uri = _make(tmp_path, dvs=dvs)
    result = update(spark, uri, "id < 3", {"v": "v + 100", "p": "'z'"})
    assert result["numUpdatedRows"] == 3 and result["num_updated_rows"] == 3
    rows = {r["id"]: r for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert len(rows) == 40
    for i in range(40):
        expected = (float(i) + 100, "z") if i < 3 else (float(i), "abcd"[i % 4])
        assert (rows[i]["v"], rows[i]["p"]) == expected
    info = _commit_info(uri, result.version)
    assert info["operation"] == "UPDATE"
    assert info["operationParameters"]["predicate"] == '["id < 3"]'
    if dvs:
        assert result["numDeletionVectorsAdded"] == 3 and result["numCopiedRows"] == 0
    else:
        assert result["numCopiedRows"] > 0 and result["numDeletionVectorsAdded"] == 0


def test_update_without_predicate_and_on_partitions(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path)
    on_b = update(spark, uri, "p = 'b'", {"v": "0"})
    assert on_b["numUpdatedRows"] == 10
    everything = update(spark, uri, None, {"id": "id * 2"})
    assert everything["numUpdatedRows"] == 40
    table = DeltaTable(uri).to_pyarrow_table().to_pylist()
    assert sorted(r["id"] for r in table) == [2 * i for i in range(40)]
    assert all(r["v"] == 0 for r in table if r["p"] == "b")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s, u: delete(s, u, "nope > 3"), InvalidPredicateError),
        (lambda s, u: delete(s, u, "id = 'x' AND"), InvalidPredicateError),
        (lambda s, u: update(s, u, "nope = 1", {"v": "1"}), InvalidPredicateError),
        (lambda s, u: update(s, u, "id = 1", {"nope": "1"}), InvalidExpressionError),
        (lambda s, u: update(s, u, "id = 1", {"v": "nope + 1"}), InvalidExpressionError),
        (lambda s, u: update(s, u, "id = 1", {"id": "'abc'"}), InvalidExpressionError),
        (lambda s, u: update(s, u, "id = 1", {}), InvalidExpressionError),
    ],
)
def test_bad_input_is_refused_before_any_file_is_written(
    spark: Any, tmp_path: Path, call: Any, error: type[Exception]
) -> None:
    uri = _make(tmp_path)
    files, version = _data_files(tmp_path), DeltaTable(uri).version()
    with pytest.raises(error):
        call(spark, uri)
    assert _data_files(tmp_path) == files and DeltaTable(uri).version() == version


def test_value_failing_on_the_executors_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path)
    write_table(uri, pa.table({"id": pa.array([1, 2, 3], pa.int32())}))
    write_table(uri, pa.table({"id": pa.array([4, 5], pa.int32())}), mode="append")
    files, version = _data_files(tmp_path), DeltaTable(uri).version()
    with pytest.raises(InvalidExpressionError):  # 3_000_000_000 does not fit an int
        update(spark, uri, None, {"id": "id * 1000000000"})
    assert _data_files(tmp_path) == files and DeltaTable(uri).version() == version


# --------------------------------------------------------------------------- conflicts


@pytest.mark.parametrize("dvs", [False, True])
def test_concurrent_delete_of_a_read_file_conflicts(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dvs: bool
) -> None:
    uri = _make(tmp_path, dvs=dvs)
    real = spark_delete_module.run_job

    def scan_then_concurrent_delete(*args: Any, **kwargs: Any) -> Any:
        changes = real(*args, **kwargs)
        DeltaTable(uri).delete("p = 'b'")  # removes the file holding id 5, meanwhile
        return changes

    monkeypatch.setattr(spark_delete_module, "run_job", scan_then_concurrent_delete)
    files = _data_files(tmp_path)
    with pytest.raises(ConcurrentDeleteReadError):
        delete(spark, uri, "id = 5")
    latest = DeltaTable(uri)
    assert (
        latest.version() == 4
        and latest.history(1)[0]["operationParameters"]["predicate"]
        == orjson.dumps(["p = 'b'"]).decode()
    )
    assert _data_files(tmp_path) == files  # the failed delete's files are gone
    assert _ids(uri) == [i for i in range(40) if i % 4 != 1]


def test_concurrent_append_in_another_partition_does_not_conflict(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _make(tmp_path)
    real = spark_update_module.run_job

    def scan_then_append(*args: Any, **kwargs: Any) -> Any:
        changes = real(*args, **kwargs)
        extra = {"id": pa.array([100], pa.int64()), "v": [1.0], "p": ["q"]}
        write_table(uri, pa.table(extra), mode="append")
        return changes

    monkeypatch.setattr(spark_update_module, "run_job", scan_then_append)
    result = update(spark, uri, "p = 'a' AND id = 4", {"v": "-1"})
    assert result.committed
    assert 100 in _ids(uri)


def test_failed_job_commits_nothing_and_leaves_no_files(spark: Any, tmp_path: Path) -> None:
    uri = _make(tmp_path, partitioned=False)
    table = DeltaTable(uri)
    first = sorted(table.file_uris())[0]
    Path(first).write_bytes(b"not parquet at all")  # the task reading it fails
    files, version = _data_files(tmp_path), table.version()
    with pytest.raises(DeltaLogError):
        delete(spark, uri, "v > 0.5")  # every file holds a matching row
    assert _data_files(tmp_path) == files and DeltaTable(uri).version() == version
