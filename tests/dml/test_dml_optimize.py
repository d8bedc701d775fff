"""``DeltaTable.optimize``: bin-packing without Spark, deletion vectors applied, conflicts.

Each refusal leaves the table as it was: no commit and no data file left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from dmlutil import DV, actions, data_files, info, rows, rs_rows

import deltalog.dml.optimize as optimize_module
from deltalog import (
    ConcurrentDeleteReadError,
    DeltaTable,
    InvalidInputError,
    InvalidPredicateError,
    MissingDataFileError,
    RowTrackingRewriteError,
    write_table,
)
from deltalog.write.compaction import ALONE_REASON


def _small_files(root: Path, count: int = 12, config: dict[str, str] | None = None) -> DeltaTable:
    for i in range(count):
        ids = list(range(i * 10, i * 10 + 10))
        data = pa.table({"id": ids, "p": ["a", "b"] * 5, "s": [f"v{x}" for x in ids]})
        write_table(str(root), data, mode="append", partition_by=["p"] if i == 0 else None,
                    configuration=config if i == 0 else None)  # fmt: skip
    return DeltaTable(str(root))


def test_small_files_become_one_per_partition(tmp_path: Path) -> None:
    table = _small_files(tmp_path / "t")
    before = rows(table.uri)
    result = table.optimize()
    assert result.committed and result.version == table.version() == 12
    assert (result.files_removed, result.files_added, result.bins) == (24, 2, 2)
    assert result.partitions_optimized == 2
    assert len(table.files()) == 2
    assert rows(table.uri) == before == rs_rows(table.uri)
    entry = info(table.uri, result.version)
    assert entry["operation"] == "OPTIMIZE"
    assert entry["operationParameters"] == {
        "predicate": "[]",
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": False,
    }
    assert entry["isolationLevel"] == "SnapshotIsolation"
    assert entry["operationMetrics"]["numRemovedFiles"] == "24"
    assert entry["operationMetrics"]["numDeletionVectorsRemoved"] == "0"
    assert all(not a["dataChange"] for a in actions(table.uri, result.version, "add"))
    assert all(not r["dataChange"] for r in actions(table.uri, result.version, "remove"))
    assert table.check().ok
    again = table.optimize.compact()
    assert not again.committed and again.version == result.version


def test_deletion_vectors_are_applied_and_dropped(tmp_path: Path) -> None:
    table = _small_files(tmp_path / "t", config=DV)
    table.delete("id % 3 = 0")
    before = rows(table.uri)
    result = table.optimize()
    assert rows(table.uri) == before == rs_rows(table.uri)
    assert result.metrics["numDeletionVectorsRemoved"] == str(24)
    assert all(a.get("deletionVector") is None for a in actions(table.uri, result.version, "add"))
    assert table.check().ok


def test_partition_filters_and_sizes(tmp_path: Path) -> None:
    table = _small_files(tmp_path / "t")
    result = table.optimize.compact(partition_filters=[("p", "=", "a")])
    assert result.partitions_optimized == 1 and result.files_removed == 12
    assert info(table.uri, result.version)["operationParameters"]["predicate"] == "[\"p = 'a'\"]"
    sizes = sorted(f["size"] for f in table.files().to_pylist() if "p=b" in f["path"])
    # Bins of at most three files' bytes: four new files from the twelve of partition b.
    split = table.optimize.compact("p = 'b'", target_size=3 * sizes[-1])
    assert split.files_removed == 12 and split.bins == 4
    # Nothing small: nothing committed. Partition a's one file is alone in its bin.
    assert not table.optimize.compact(min_file_size=1).committed
    alone = table.optimize.compact("p = 'a'")
    assert not alone.committed and alone.version == split.version
    assert [s.reason for s in alone.skipped] == [ALONE_REASON]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"partition_filters": "id = 3"}, InvalidPredicateError),
        ({"partition_filters": "p >"}, InvalidPredicateError),
        ({"target_size": 0}, InvalidInputError),
        ({"target_size": "1GB"}, InvalidInputError),
        ({"min_file_size": -1}, InvalidInputError),
    ],
)
def test_bad_arguments_write_nothing(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    table = _small_files(tmp_path / "t", count=3)
    on_disk = data_files(table.uri)
    with pytest.raises(error):
        table.optimize.compact(**kwargs)
    assert data_files(table.uri) == on_disk and DeltaTable(table.uri).version() == 2


def test_row_tracking_tables_refuse(tmp_path: Path) -> None:
    table = _small_files(tmp_path / "t", count=3, config={"delta.enableRowTracking": "true"})
    on_disk = data_files(table.uri)
    with pytest.raises(RowTrackingRewriteError):
        table.optimize()
    assert data_files(table.uri) == on_disk


def _race(monkeypatch: pytest.MonkeyPatch, action: Any) -> list[int]:
    """Run ``action`` once, after the files are written and before the commit."""
    real = optimize_module.optimize_metrics
    done: list[int] = []

    def metrics_then_race(*args: Any, **kwargs: Any) -> dict[str, str]:
        if not done:
            done.append(1)
            action()
        return real(*args, **kwargs)

    monkeypatch.setattr(optimize_module, "optimize_metrics", metrics_then_race)
    return done


def test_a_concurrent_append_does_not_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _small_files(tmp_path / "t", count=4)
    other = DeltaTable(table.uri)
    row = pa.table({"id": [1000], "p": ["a"], "s": ["late"]})
    # A non-blind write too: OPTIMIZE commits under snapshot isolation.
    _race(monkeypatch, lambda: write_table(other, row, mode="overwrite", predicate="id = 1000"))
    result = table.optimize()
    assert result.committed and result.version == 5
    assert 1000 in [r["id"] for r in rows(table.uri)]


def test_a_concurrent_delete_of_a_compacted_file_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _small_files(tmp_path / "t", count=4)
    other = DeltaTable(table.uri)
    on_disk = data_files(table.uri)
    _race(monkeypatch, lambda: other.delete("p = 'a'"))
    with pytest.raises(ConcurrentDeleteReadError):
        table.optimize()
    assert data_files(table.uri) == on_disk  # the compacted files were deleted
    assert sorted(r["p"] for r in rows(table.uri)) == ["b"] * 20


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_columns_added_later_and_column_mapping_are_read_right(
    tmp_path: Path, mapping: str
) -> None:
    root = tmp_path / "t"
    config = {"delta.columnMapping.mode": mapping}
    write_table(str(root), pa.table({"id": [1, 2], "w": ["x", "y"]}), configuration=config)
    write_table(str(root), pa.table({"id": [3], "w": ["z"], "n": [7]}), mode="append",
                schema_mode="merge")  # fmt: skip
    write_table(str(root), pa.table({"id": [4], "w": pa.array([None], pa.string()), "n": [8]}),
                mode="append")  # fmt: skip
    table = DeltaTable(str(root))
    before = rows(table.uri)
    assert table.optimize().files_removed == 3
    assert rows(table.uri) == before == rs_rows(table.uri)
    assert [r["n"] for r in before] == [None, None, 7, 8]


def test_a_file_the_multi_file_scan_cannot_read_is_read_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _small_files(tmp_path / "t", count=4)
    before = rows(table.uri)
    on_disk = data_files(table.uri)
    real = optimize_module.read_files_together

    def failing_midway(*args: Any, **kwargs: Any) -> Any:
        together = real(*args, **kwargs)
        assert together is not None

        def batches() -> Any:
            yield from together
            raise pa.ArrowInvalid("injected: a file does not fit the first one")

        return batches()

    monkeypatch.setattr(optimize_module, "read_files_together", failing_midway)
    result = table.optimize()
    assert result.files_removed == 8 and result.files_added == 2
    assert rows(table.uri) == before == rs_rows(table.uri)
    assert len(data_files(table.uri)) == len(on_disk) + 2  # the aborted writer left nothing


def test_a_column_mapped_table_is_read_in_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path / "t")
    config = {"delta.columnMapping.mode": "name"}
    for i in range(3):
        data = pa.table({"id": [i], "w": [f"v{i}"], "t": pa.array([i], pa.timestamp("us", "UTC"))})
        write_table(root, data, mode="append", configuration=config if i == 0 else None)
    table = DeltaTable(root)
    before = rows(table.uri)
    scans: list[int] = []
    real = optimize_module.read_files_together

    def counted(*args: Any, **kwargs: Any) -> Any:
        together = real(*args, **kwargs)
        scans.append(together is not None)
        return together

    monkeypatch.setattr(optimize_module, "read_files_together", counted)
    assert table.optimize().files_removed == 3
    assert scans == [True]
    assert rows(table.uri) == before == rs_rows(table.uri)


@pytest.mark.parametrize("which", [0, -1])
def test_a_missing_file_is_named_and_nothing_is_written(tmp_path: Path, which: int) -> None:
    table = _small_files(tmp_path / "t", count=4)
    paths = sorted(a["path"] for v in range(4) for a in actions(table.uri, v, "add"))
    (tmp_path / "t" / paths[which]).unlink()
    on_disk = data_files(table.uri)
    with pytest.raises(MissingDataFileError):
        table.optimize()
    assert DeltaTable(table.uri).version() == 3
    assert data_files(table.uri) == on_disk
