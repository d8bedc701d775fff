"""``DeltaTable.update``: expressions, literals, deletion vectors, copy-on-write, refusals.

Each refusal leaves the table as it was: no commit and no data or DV file left behind.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from dmlutil import DV, actions, data_files, info, live_files, make_table, rows, rs_rows

import deltalog.dml.rewrite as rewrite_module
from deltalog import (
    AppendOnlyError,
    ConcurrentAppendError,
    ConstraintViolationError,
    DeltaTable,
    InvalidExpressionError,
    InvalidPredicateError,
    RowTrackingRewriteError,
    write_table,
)


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_update_sets_expressions_on_matching_rows(
    tmp_path: Path, dv: bool, partitioned: bool
) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=partitioned)
    before = rows(table.uri)
    result = table.update("id > 14 OR v < 2", set={"v": "v * 10 + id", "p": "upper(p)"})
    assert result.committed and result["numUpdatedRows"] == 7
    expected = [
        {**r, "v": r["v"] * 10 + r["id"], "p": r["p"].upper()} if r["id"] > 14 or r["v"] < 2 else r
        for r in before
    ]
    assert rows(table.uri) == sorted(expected, key=_key)
    entry = info(table.uri, result.version)
    assert entry["operation"] == "UPDATE"
    assert entry["operationParameters"] == {"predicate": '["id > 14 OR v < 2"]'}
    metrics = entry["operationMetrics"]
    assert metrics["numUpdatedRows"] == "7"
    if dv:
        assert metrics["numCopiedRows"] == "0"
        assert int(metrics["numDeletionVectorsAdded"]) > 0
    else:
        assert int(metrics["numCopiedRows"]) > 0
        assert all(
            a.get("deletionVector") is None for a in actions(table.uri, result.version, "add")
        )
    assert rows(table.uri) == rs_rows(table.uri)
    assert table.check().ok


def _key(row: dict[str, Any]) -> str:
    import orjson

    return orjson.dumps(row, default=str).decode()


def test_update_without_predicate_and_literals(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    data = pa.table(
        {
            "id": [1, 2],
            "d": pa.array([dt.date(2024, 1, 1), None]),
            "s": ["a", "b"],
            "n": pa.array([1, 2], pa.int16()),
        }
    )
    write_table(root, data, configuration=DV)
    table = DeltaTable(root)
    table.update(set={"d": "'2025-06-30'", "s": "concat(s, '!')", "n": 7})
    got = rows(root)
    assert [r["d"] for r in got] == [dt.date(2025, 6, 30)] * 2
    assert [r["s"] for r in got] == ["a!", "b!"]
    assert [r["n"] for r in got] == [7, 7]
    assert info(root, table.version())["operationParameters"] == {"predicate": "[]"}
    # delta-rs's spelling: updates (SQL) and new_values (Python values; a str is a value)
    table.update(predicate="id = 1", updates={"n": "n + 1"}, new_values={"s": "it's"})
    first = rows(root)[0]
    assert (first["n"], first["s"]) == (8, "it's")


def test_update_moves_rows_between_partitions(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True, partitioned=True)
    table.update("p = 'a'", set={"p": "'c'"})
    values = {r["p"] for r in rows(table.uri)}
    assert values == {"b", "c"}
    assert rows(table.uri) == rs_rows(table.uri)


def test_no_match_commits_nothing(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=False)
    on_disk = data_files(table.uri)
    result = table.update("id > 1000", set={"v": "0"})
    assert not result.committed and table.version() == 1
    assert data_files(table.uri) == on_disk


def test_update_without_arguments_still_moves_to_the_latest_version(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=False)
    stale = DeltaTable(table.uri, version=0)
    assert stale.update() == 1 == stale.version() == stale.refresh()
    with pytest.raises(InvalidExpressionError, match="needs the columns to set"):
        stale.update("id = 1")


@pytest.mark.parametrize(
    ("predicate", "assignments", "error"),
    [
        ("missing = 1", {"v": "1"}, InvalidPredicateError),
        ("id >", {"v": "1"}, InvalidPredicateError),
        ("id = 1", {"missing": "1"}, InvalidExpressionError),
        ("id = 1", {"v": "nope + 1"}, InvalidExpressionError),
        ("id = 1", {"id": "p"}, InvalidExpressionError),  # a string column into a bigint
        ("id = 1", {"id": "'abc'"}, InvalidExpressionError),  # a literal that is no number
        ("id = 1", {"v": "v +"}, InvalidExpressionError),
        ("id = 1", {"v": "frobnicate(v)"}, InvalidExpressionError),
        ("id = 1", {}, InvalidExpressionError),
        ("id = 1", {"id": "id / 0"}, InvalidExpressionError),  # fails on the row
    ],
)
@pytest.mark.parametrize("dv", [False, True])
def test_bad_input_writes_nothing(
    tmp_path: Path, predicate: str, assignments: dict[str, Any], error: type[Exception], dv: bool
) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=True)
    on_disk = data_files(table.uri)
    with pytest.raises(error):
        table.update(predicate, set=assignments)
    assert DeltaTable(table.uri).version() == 1
    assert data_files(table.uri) == on_disk


def test_constraints_are_enforced(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    write_table(root, pa.table({"id": [1, 2], "v": [1, 2]}, schema=schema), configuration=DV)
    table = DeltaTable(root)
    on_disk = data_files(root)
    with pytest.raises(ConstraintViolationError):
        table.update("id = 1", set={"id": "NULL"})
    assert data_files(root) == on_disk and table.version() == 0


def test_append_only_and_row_tracking_refuse(tmp_path: Path) -> None:
    table = make_table(tmp_path / "ao", dv=True, configuration={"delta.appendOnly": "true"})
    with pytest.raises(AppendOnlyError):
        table.update("id = 1", set={"v": "0"})
    tracked = make_table(
        tmp_path / "rt", dv=True, configuration={"delta.enableRowTracking": "true"}
    )
    on_disk = data_files(tracked.uri)
    with pytest.raises(RowTrackingRewriteError):
        tracked.update("id = 1", set={"v": "0"})
    assert data_files(tracked.uri) == on_disk


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_a_concurrent_append_to_the_partition_read_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool
) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=True)
    other = DeltaTable(table.uri)
    real_stage = rewrite_module.RowRewrite.stage
    written: list[str] = []

    def stage_then_race(self: rewrite_module.RowRewrite, tx: Any) -> None:
        real_stage(self, tx)
        if not written:
            written.extend(self.written)
            other.update("p = 'a' AND id = 0", set={"v": "-1"})

    monkeypatch.setattr(rewrite_module.RowRewrite, "stage", stage_then_race)
    on_disk = data_files(table.uri)
    with pytest.raises(ConcurrentAppendError):
        table.update("p = 'a' AND id = 2", set={"v": "-2"})
    assert written and not any(Path(w).exists() for w in written)
    # every file left on disk that was not there before is the other writer's
    assert set() < data_files(table.uri) - on_disk <= live_files(table.uri)
    assert [r["v"] for r in rows(table.uri) if r["id"] in (0, 2)] == [-1.0, 2.0]
