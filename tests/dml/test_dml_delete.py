"""``DeltaTable.delete``: deletion vectors, copy-on-write, partitions, conflicts, refusals.

Each refusal is checked to leave the table as it was: no commit, and no data or DV file left
behind (``data_files`` before and after). Rows are compared with delta-rs (through DataFusion,
which applies deletion vectors) after each change.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from dmlutil import DV, actions, data_files, ids, info, make_table, rows, rs_rows
from testpaths import GOLDEN_DIR

import deltalog.dml.rewrite as rewrite_module
from deltalog import (
    AppendOnlyError,
    CommitProperties,
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    DeltaTable,
    InvalidInputError,
    InvalidPredicateError,
    RowTrackingRewriteError,
    StorageError,
    write_table,
)
from deltalog.logstores import LogStoreError


@pytest.mark.parametrize("partitioned", [False, True])
def test_copy_on_write_delete_rewrites_the_touched_files(tmp_path: Path, partitioned: bool) -> None:
    table = make_table(tmp_path / "t", dv=False, partitioned=partitioned)
    before = table.version()
    result = table.delete("id > 15 OR id = 3")
    assert result.committed and result.version == before + 1 == table.version()
    assert ids(table.uri) == [i for i in range(20) if not (i > 15 or i == 3)]
    entry = info(table.uri, result.version)
    assert entry["operation"] == "DELETE"
    assert entry["operationParameters"] == {"predicate": '["id > 15 OR id = 3"]'}
    metrics = entry["operationMetrics"]
    assert metrics["numDeletedRows"] == "5"
    assert metrics["numRemovedFiles"] == str(3 if partitioned else 2)  # p=a of ids 0-9 untouched
    assert metrics["numCopiedRows"] == str(15 - 5 if partitioned else 20 - 5)
    assert metrics["numDeletionVectorsAdded"] == "0"
    assert result["numDeletedRows"] == result["num_deleted_rows"] == 5
    assert not entry["isBlindAppend"]
    assert all(a.get("deletionVector") is None for a in actions(table.uri, result.version, "add"))
    assert rows(table.uri) == rs_rows(table.uri)
    assert table.check().ok


def test_deletion_vector_delete_writes_only_a_dv_file(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True)
    parquet_before = {f for f in data_files(table.uri) if f.endswith(".parquet")}
    result = table.delete("id IN (1, 2, 12)")
    assert ids(table.uri) == [i for i in range(20) if i not in (1, 2, 12)]
    parquet_after = {f for f in data_files(table.uri) if f.endswith(".parquet")}
    assert parquet_after == parquet_before  # no data file written
    dvs = [f for f in data_files(table.uri) if f.endswith(".bin")]
    assert len(dvs) == 1  # both files' DVs packed into one DV file
    adds = actions(table.uri, result.version, "add")
    removes = actions(table.uri, result.version, "remove")
    assert sorted(a["path"] for a in adds) == sorted(r["path"] for r in removes)
    for add in adds:
        assert add["deletionVector"]["storageType"] == "u"
        stats = orjson.loads(add["stats"])
        assert stats["tightBounds"] is False and stats["numRecords"] == 10
    metrics = info(table.uri, result.version)["operationMetrics"]
    assert metrics["numDeletionVectorsAdded"] == "2"
    assert metrics["numDeletedRows"] == "3"
    assert metrics["numRemovedFiles"] == "0" and metrics["numAddedFiles"] == "0"
    assert rows(table.uri) == rs_rows(table.uri)
    # A second delete merges with the existing DVs; a file losing every row is removed.
    second = table.delete("id = 3 OR id >= 10")
    assert ids(table.uri) == [0, 4, 5, 6, 7, 8, 9]
    metrics = info(table.uri, second.version)["operationMetrics"]
    assert metrics["numDeletionVectorsUpdated"] == "1"
    assert metrics["numDeletionVectorsAdded"] == "1"  # updated ones count as added and removed
    assert metrics["numDeletionVectorsRemoved"] == "2"
    assert metrics["numRemovedFiles"] == "1"
    (kept,) = actions(table.uri, second.version, "add")
    assert kept["deletionVector"]["cardinality"] == 3
    assert rows(table.uri) == rs_rows(table.uri)
    assert table.check().ok


def test_small_deletion_vectors_can_go_inline(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True, files=1)
    result = table.delete("id = 4", inline_deletion_vectors=1024)
    (add,) = actions(table.uri, result.version, "add")
    assert add["deletionVector"]["storageType"] == "i"
    assert not [f for f in data_files(table.uri) if f.endswith(".bin")]
    assert ids(table.uri) == [i for i in range(10) if i != 4]
    assert rows(table.uri) == rs_rows(table.uri)
    with pytest.raises(InvalidInputError):
        table.delete("id = 5", inline_deletion_vectors=-1)


def test_delta_spark_deletion_vectors_are_merged(tmp_path: Path) -> None:
    source = GOLDEN_DIR / "dv-partitioned-with-checkpoint"
    if not source.exists():
        pytest.skip(f"no golden table at {source}")
    root = tmp_path / "golden"
    shutil.copytree(source, root)
    table = DeltaTable(str(root))
    before = table.to_pyarrow_table().to_pylist()
    result = table.delete("col1 < 5 OR col1 IN (46, 48)")  # 46, 48: in files with DVs
    after = table.to_pyarrow_table().to_pylist()
    kept = [r for r in before if r["col1"] >= 5 and r["col1"] not in (46, 48)]
    assert sorted(after, key=orjson.dumps) == sorted(kept, key=orjson.dumps)
    assert info(str(root), result.version)["operationMetrics"]["numDeletionVectorsUpdated"] == "2"
    assert table.check().ok


def test_a_partition_predicate_removes_whole_files(tmp_path: Path) -> None:
    for dv in (False, True):
        table = make_table(tmp_path / f"t{dv}", dv=dv, partitioned=True)
        on_disk = data_files(table.uri)
        result = table.delete("p = 'b'")
        assert ids(table.uri) == list(range(0, 20, 2))
        assert data_files(table.uri) == on_disk  # nothing read, nothing written
        metrics = info(table.uri, result.version)["operationMetrics"]
        assert metrics["numRemovedFiles"] == "2" and metrics["numDeletedRows"] == "10"
        assert not actions(table.uri, result.version, "add")


def test_without_a_predicate_every_row_is_deleted(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True)
    result = table.delete()
    assert ids(table.uri) == []
    assert info(table.uri, result.version)["operationParameters"] == {"predicate": "[]"}
    assert info(table.uri, result.version)["operationMetrics"]["numDeletedRows"] == "20"


def test_nothing_is_committed_when_no_row_matches(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=False)
    on_disk = data_files(table.uri)
    result = table.delete("id > 1000 OR v < -5")
    assert not result.committed and result.version == table.version() == 1
    assert data_files(table.uri) == on_disk


def test_nulls_do_not_match(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, pa.table({"id": [1, 2, 3], "x": [1, None, 3]}), configuration=DV)
    table = DeltaTable(root)
    table.delete("x != 1")
    assert ids(root) == [1, 2]
    table.delete("x IS NULL")
    assert ids(root) == [1]


@pytest.mark.parametrize(
    "predicate",
    ["missing = 1", "id = 'abc'", "id >", "p = 'a' AND nope IS NULL"],
    ids=["missing-column", "bad-value", "syntax", "missing-column-mixed"],
)
@pytest.mark.parametrize("dv", [False, True])
def test_bad_predicates_write_nothing(tmp_path: Path, predicate: str, dv: bool) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=True)
    on_disk = data_files(table.uri)
    with pytest.raises(InvalidPredicateError):
        table.delete(predicate)
    assert DeltaTable(table.uri).version() == 1
    assert data_files(table.uri) == on_disk


def test_append_only_tables_refuse(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=False, configuration={"delta.appendOnly": "true"})
    with pytest.raises(AppendOnlyError):
        table.delete("id = 1")
    assert table.version() == 1


def test_row_tracking_tables_delete_with_dvs_but_refuse_copies(tmp_path: Path) -> None:
    tracked = {"delta.enableRowTracking": "true"}
    table = make_table(tmp_path / "dv", dv=True, configuration=tracked)
    before = {a.path: a.base_row_id for a in _adds(table)}
    table.delete("id = 3")
    assert {a.path: a.base_row_id for a in _adds(table)} == before  # row ids kept
    copied = make_table(tmp_path / "cow", dv=False, configuration=tracked)
    on_disk = data_files(copied.uri)
    with pytest.raises(RowTrackingRewriteError):
        copied.delete("id = 3")
    assert data_files(copied.uri) == on_disk


def _adds(table: DeltaTable) -> list[Any]:
    files = table.snapshot.files.select(["path", "base_row_id"]).to_pylist()
    return [type("F", (), f)() for f in files]


@pytest.mark.parametrize("dv", [False, True])
def test_a_concurrent_append_to_the_partition_read_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool
) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=True)
    other = DeltaTable(table.uri)
    real_stage = rewrite_module.RowRewrite.stage

    def stage_then_race(self: rewrite_module.RowRewrite, tx: Any) -> None:
        real_stage(self, tx)
        write_table(other, pa.table({"id": [100], "p": ["a"], "v": [1.0]}), mode="overwrite",
                    predicate="p = 'a' AND id = 100")  # fmt: skip
        written.extend(self.written)

    written: list[str] = []
    monkeypatch.setattr(rewrite_module.RowRewrite, "stage", stage_then_race)
    on_disk = data_files(table.uri)
    with pytest.raises(ConcurrentAppendError):
        table.delete("p = 'a' AND id < 4")
    assert written and not any(Path(w).exists() for w in written)
    assert len(data_files(table.uri) - on_disk) == 1  # only the other writer's file
    assert 100 in ids(table.uri) and 0 in ids(table.uri)


@pytest.mark.parametrize("dv", [False, True])
def test_a_concurrent_delete_of_a_file_read_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool
) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=True)
    other = DeltaTable(table.uri)
    real_stage = rewrite_module.RowRewrite.stage
    written: list[str] = []

    def stage_then_race(self: rewrite_module.RowRewrite, tx: Any) -> None:
        real_stage(self, tx)
        if not written:  # the first stage is ours; the other writer's runs unpatched
            written.extend(self.written)
            other.delete("p = 'a'")  # removes the files this delete read, adds none

    monkeypatch.setattr(rewrite_module.RowRewrite, "stage", stage_then_race)
    with pytest.raises(ConcurrentDeleteReadError):
        table.delete("p = 'a' AND id = 4")
    assert written and not any(Path(w).exists() for w in written)
    assert ids(table.uri) == list(range(1, 20, 2))


@pytest.mark.parametrize("dv", [False, True])
def test_a_concurrent_rewrite_of_the_rows_read_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool
) -> None:
    # Unpartitioned, the read predicate is TRUE: the winner's new (or re-committed) file is an
    # added file this delete should have read, as delta-spark's conflict checker sees it.
    table = make_table(tmp_path / "t", dv=dv)
    other = DeltaTable(table.uri)
    real_stage = rewrite_module.RowRewrite.stage
    written: list[str] = []

    def stage_then_race(self: rewrite_module.RowRewrite, tx: Any) -> None:
        real_stage(self, tx)
        if not written:
            written.extend(self.written)
            other.delete("id = 5")

    monkeypatch.setattr(rewrite_module.RowRewrite, "stage", stage_then_race)
    with pytest.raises(ConcurrentAppendError):
        table.delete("id = 4")
    assert written and not any(Path(w).exists() for w in written)
    assert 4 in ids(table.uri) and 5 not in ids(table.uri)


def test_a_blind_append_does_not_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = make_table(tmp_path / "t", dv=True)
    other = DeltaTable(table.uri)
    real_stage = rewrite_module.RowRewrite.stage

    def stage_then_append(self: rewrite_module.RowRewrite, tx: Any) -> None:
        real_stage(self, tx)
        write_table(other, pa.table({"id": [100], "p": ["a"], "v": [1.0]}), mode="append")

    monkeypatch.setattr(rewrite_module.RowRewrite, "stage", stage_then_append)
    result = table.delete("id = 4")
    assert result.version == 3
    assert ids(table.uri) == [i for i in range(20) if i != 4] + [100]


def test_a_failing_dv_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = make_table(tmp_path / "t", dv=True)
    on_disk = data_files(table.uri)
    store = table._storage.store
    real_write = store.write

    def failing(path: str, data: bytes, *, overwrite: bool = False) -> None:
        if path.endswith(".bin"):
            real_write(path, data[:3], overwrite=overwrite)  # half written, then the store fails
            raise LogStoreError("injected failure")
        real_write(path, data, overwrite=overwrite)

    monkeypatch.setattr(store, "write", failing)
    with pytest.raises(StorageError):
        table.delete("id = 4")
    assert DeltaTable(table.uri).version() == 1
    assert data_files(table.uri) == on_disk


def test_a_failing_copy_on_write_rewrite_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make_table(tmp_path / "t", dv=False, files=4)
    on_disk = data_files(table.uri)
    store = table._storage.store
    real_stat = store.stat
    written: list[str] = []
    lock = threading.Lock()

    def failing(path: str) -> Any:
        with lock:
            written.append(path)
            if len(written) == 3:  # the third rewritten file fails, the others landed
                raise LogStoreError("injected failure")
        return real_stat(path)

    monkeypatch.setattr(store, "stat", failing)
    with pytest.raises((StorageError, LogStoreError)):  # (data files: the store's error)
        table.delete("id % 10 = 3")
    assert len(written) >= 3
    assert DeltaTable(table.uri).version() == 3
    assert data_files(table.uri) == on_disk


def test_commit_properties_and_column_mapping(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for dv in (False, True):
        where = root / str(dv)
        mapped = {"delta.columnMapping.mode": "name", **(DV if dv else {})}
        write_table(str(where), pa.table({"id": [1, 2, 3], "p": ["x", "y", "x"]}),
                    partition_by=["p"], configuration=mapped)  # fmt: skip
        table = DeltaTable(str(where))
        result = table.delete("id >= 2", commit_properties=CommitProperties(user_metadata="gc"))
        assert ids(where) == [1]
        assert info(where, result.version)["userMetadata"] == "gc"
        assert table.check().ok


def test_memory_tables(tmp_path: Path) -> None:
    del tmp_path
    for dv in (False, True):
        uri = f"memory://dml-delete-{dv}"
        write_table(uri, pa.table({"id": list(range(6))}), configuration=DV if dv else None)
        table = DeltaTable(uri)
        table.delete("id < 2")
        assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [2, 3, 4, 5]
