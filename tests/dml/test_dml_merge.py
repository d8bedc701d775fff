"""``DeltaTable.merge``: upserts, clause order, by-source clauses, schema evolution, refusals.

Each refusal leaves the table as it was: no commit and no data or DV file left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from dmlutil import DV, data_files, info, live_files, make_table, rows, rs_rows

import deltalog.dml.rewrite as rewrite_module
from deltalog import (
    AppendOnlyError,
    ConcurrentAppendError,
    DeltaTable,
    InvalidExpressionError,
    InvalidInputError,
    InvalidMergeClausesError,
    InvalidOptionError,
    InvalidPredicateError,
    MultipleSourceRowMatchError,
    RowTrackingRewriteError,
    write_table,
)
from deltalog.dml.merge_clauses import MATCHED, NOT_MATCHED, Clause
from deltalog.dml.merge_plan import MergePlan
from deltalog.stats.sql_expression import parse_expression

SOURCE = pa.table({"id": [1, 3, 20, 21], "p": ["x", "b", "a", "b"], "v": [10.0, 30.0, 2.0, 2.1]})


def _as_tuples(root: str) -> list[tuple[Any, ...]]:
    return [(r["id"], r["p"], r["v"]) for r in rows(root)]


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_upsert(tmp_path: Path, dv: bool, partitioned: bool) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=partitioned)
    before = {r["id"]: r for r in rows(table.uri)}
    result = (
        table.merge(SOURCE, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert result.committed and result.version == table.version()
    expected = {**before, **{r["id"]: r for r in SOURCE.to_pylist()}}
    got = sorted(rows(table.uri), key=lambda r: r["id"])
    assert got == sorted(expected.values(), key=lambda r: r["id"])
    m = result.metrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numSourceRows"]) == (2, 2, 4)
    assert m["numTargetRowsMatchedUpdated"] == 2 and m["numTargetRowsDeleted"] == 0
    assert m["numOutputRows"] == 4 + m["numTargetRowsCopied"]
    assert (m["numTargetRowsCopied"] == 0) == dv
    entry = info(table.uri, result.version)
    assert entry["operation"] == "MERGE"
    assert entry["operationParameters"] == {
        "predicate": '["t.id = s.id"]',
        "matchedPredicates": '[{"actionType":"update"}]',
        "notMatchedPredicates": '[{"actionType":"insert"}]',
        "notMatchedBySourcePredicates": "[]",
    }
    assert rows(table.uri) == rs_rows(table.uri)
    assert table.check().ok


def test_clauses_apply_in_order_with_conditions(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True)
    source = pa.table(
        {
            "id": [1, 2, 3, 50, 51],
            "op": ["D", "U", "D", "U", "D"],
            "v": [0.0, 200.0, 0.0, 500.0, 510.0],
        }
    )
    result = (
        table.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete("s.op = 'D'")
        .when_matched_update({"v": "s.v + t.v"})
        .when_not_matched_insert({"id": "s.id", "v": "s.v", "p": "'new'"}, "s.op <> 'D'")
        .execute()
    )
    got = {r["id"]: (r["p"], r["v"]) for r in rows(table.uri)}
    assert 1 not in got and 3 not in got and 51 not in got
    assert got[2] == ("a", 202.0) and got[50] == ("new", 500.0)
    m = result.metrics
    assert (m["numTargetRowsMatchedDeleted"], m["numTargetRowsMatchedUpdated"]) == (2, 1)
    assert m["numTargetRowsInserted"] == 1
    params = info(table.uri, result.version)["operationParameters"]
    assert params["matchedPredicates"] == (
        '[{"predicate":"s.op = \'D\'","actionType":"delete"},{"actionType":"update"}]'
    )
    assert rows(table.uri) == rs_rows(table.uri)


@pytest.mark.parametrize("dv", [False, True])
def test_not_matched_by_source(tmp_path: Path, dv: bool) -> None:
    table = make_table(tmp_path / "t", dv=dv, partitioned=True)
    result = (
        table.merge(pa.table({"id": [0, 1, 2]}), "t.id = s.id", "s", "t")
        .when_not_matched_by_source_delete("t.id >= 15")
        .when_not_matched_by_source_update({"v": "-t.v"})
        .execute()
    )
    got = {r["id"]: r["v"] for r in rows(table.uri)}
    assert sorted(got) == list(range(15))
    assert got[0] == 0.0 and got[1] == 1.0 and got[3] == -3.0 and got[14] == -14.0
    m = result.metrics
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == 5
    assert m["numTargetRowsNotMatchedBySourceUpdated"] == 12
    assert rows(table.uri) == rs_rows(table.uri)


def test_conditions_on_the_target_alone_and_without_equalities(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True, files=1)
    source = pa.table({"id": [2, 4], "lim": [3, 100]})
    table.merge(source, "t.id = s.id AND t.v > 3", "s", "t").when_matched_delete().execute()
    assert [r["id"] for r in rows(table.uri)] == [0, 1, 2, 3, 5, 6, 7, 8, 9]  # 2 failed t.v > 3
    limits = pa.table({"lim": [2]})
    table.merge(limits, "t.id < s.lim", "s", "t").when_matched_update({"v": "100"}).execute()
    assert [r["v"] for r in rows(table.uri)][:3] == [100.0, 100.0, 2.0]


def test_null_keys_match_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, pa.table({"k": [1, None], "v": ["a", "b"]}), configuration=DV)
    source = pa.table({"k": [None, 1], "v": ["c", "d"]})
    result = (
        DeltaTable(root)
        .merge(source, "t.k = s.k", "s", "t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert result["numTargetRowsInserted"] == 1 and result["numTargetRowsUpdated"] == 1
    assert sorted(r["v"] for r in rows(root)) == ["b", "c", "d"]


def test_a_target_row_matched_twice_is_refused(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True)
    on_disk = data_files(table.uri)
    twice = pa.table({"id": [5, 5, 6], "v": [1.0, 2.0, 3.0]})
    merger = table.merge(twice, "t.id = s.id", "s", "t").when_matched_update({"v": "s.v"})
    with pytest.raises(MultipleSourceRowMatchError) as caught:
        merger.execute()
    assert caught.value.matches == 2 and caught.value.target_row == {"id": 5, "p": "b"}
    assert data_files(table.uri) == on_disk and DeltaTable(table.uri).version() == 1
    # One unconditional delete may take several matches (delta-spark allows it).
    result = table.merge(twice, "t.id = s.id", "s", "t").when_matched_delete().execute()
    assert result["numTargetRowsDeleted"] == 2
    assert 5 not in [r["id"] for r in rows(table.uri)]


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda m: m.when_matched_update({"id": "s.name"}), InvalidExpressionError),
        (lambda m: m.when_matched_update({"nope": "s.v"}), InvalidExpressionError),
        (lambda m: m.when_matched_update({"v": "s.missing"}), InvalidExpressionError),
        (lambda m: m.when_matched_update({"v": "id"}), InvalidExpressionError),  # ambiguous
        (lambda m: m.when_matched_delete("s.nope > 1"), InvalidPredicateError),
        (lambda m: m.when_matched_delete("s.v +"), InvalidPredicateError),
        (lambda m: m.when_not_matched_insert({"v": "t.v"}), InvalidExpressionError),
        (lambda m: m.when_not_matched_by_source_update({"v": "s.v"}), InvalidExpressionError),
        (lambda m: m.when_matched_update_all(), InvalidExpressionError),  # source lacks p
        (lambda m: m, InvalidInputError),  # no clause
    ],
)
def test_bad_clauses_write_nothing(tmp_path: Path, build: Any, error: type[Exception]) -> None:
    table = make_table(tmp_path / "t", dv=True)
    on_disk = data_files(table.uri)
    source = pa.table({"id": [1, 2], "v": [1.0, 2.0], "name": ["x", "y"]})
    with pytest.raises(error):
        build(table.merge(source, "t.id = s.id", "s", "t")).execute()
    assert data_files(table.uri) == on_disk and DeltaTable(table.uri).version() == 1


@pytest.mark.parametrize(
    ("build", "kind"),
    [
        (lambda m: m.when_matched_update({"v": "s.v"}).when_matched_delete("s.v > 1"), "MATCHED"),
        (lambda m: m.when_matched_delete().when_matched_update_all(), "MATCHED"),
        (
            lambda m: (
                m.when_not_matched_insert_all()
                .when_matched_delete()
                .when_not_matched_insert({"id": "s.id"}, "s.v > 1")
            ),
            "NOT MATCHED",
        ),
        (
            lambda m: m.when_not_matched_by_source_delete().when_not_matched_by_source_update(
                {"v": "0"}, "t.v > 1"
            ),
            "NOT MATCHED BY SOURCE",
        ),
    ],
)
def test_only_the_last_clause_of_a_kind_may_omit_its_condition(
    tmp_path: Path, build: Any, kind: str
) -> None:
    """delta-spark's DELTA_NON_LAST_*_CLAUSE_OMIT_CONDITION: refused before anything is written."""
    table = make_table(tmp_path / "t", dv=False)
    on_disk = data_files(table.uri)
    source = pa.table({"id": [1, 30], "p": ["b", "a"], "v": [1.5, 3.0]})
    with pytest.raises(InvalidMergeClausesError, match=f"only the last WHEN {kind} clause"):
        build(table.merge(source, "t.id = s.id", "s", "t")).execute()
    assert data_files(table.uri) == on_disk and DeltaTable(table.uri).version() == 1
    # One clause of each kind without a condition, kinds interleaved: accepted.
    result = (
        table.merge(source, "t.id = s.id", "s", "t")
        .when_matched_update({"v": "s.v"}, "s.v > 2")
        .when_not_matched_insert_all()
        .when_matched_delete()
        .when_not_matched_by_source_delete("t.id > 10")
        .when_not_matched_by_source_update({"v": "0"})
        .execute()
    )
    m = result.metrics
    assert (m["numTargetRowsMatchedDeleted"], m["numTargetRowsInserted"]) == (1, 1)
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == 9


def test_the_shared_plan_refuses_the_clause_order(tmp_path: Path) -> None:
    """MergePlan, which the Python and the Spark merge both build, checks the order itself."""
    snapshot = make_table(tmp_path / "t", dv=False).snapshot
    source = pa.table({"id": [1], "v": [1.0]})

    def plan(*clauses: Clause) -> MergePlan:
        return MergePlan(
            snapshot,
            source,
            parse_expression("t.id = s.id"),
            clauses,
            target_alias="t",
            source_alias="s",
            output_schema=snapshot.schema,
            evolve=False,
        )

    with pytest.raises(InvalidMergeClausesError, match="only the last WHEN MATCHED clause"):
        plan(Clause.build(MATCHED, "delete", None), Clause.build(MATCHED, "delete", "s.v > 0"))
    with pytest.raises(InvalidMergeClausesError, match="at least one"):
        plan()
    last = Clause.build(NOT_MATCHED, "insert", None, {"id": "s.id"})
    assert len(plan(Clause.build(MATCHED, "delete", "s.v > 0"), last).not_matched) == 1


@pytest.mark.parametrize(
    ("predicate", "kwargs", "error"),
    [
        ("t.nope = s.id", {}, InvalidPredicateError),
        ("id = id", {}, InvalidPredicateError),  # ambiguous
        ("t.id =", {}, InvalidPredicateError),
        ("t.id = s.id", {"source_alias": "t", "target_alias": "t"}, InvalidOptionError),
        ("t.id = s.id", {"schema_mode": "overwrite"}, InvalidOptionError),
        ("t.id = s.p", {}, InvalidPredicateError),  # bigint vs string
    ],
)
def test_bad_merge_conditions(
    tmp_path: Path, predicate: str, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    table = make_table(tmp_path / "t", dv=False)
    on_disk = data_files(table.uri)
    options = {"source_alias": "s", "target_alias": "t", **kwargs}
    with pytest.raises(error):
        table.merge(SOURCE, predicate, **options).when_matched_delete().execute()
    assert data_files(table.uri) == on_disk and DeltaTable(table.uri).version() == 1


def test_schema_evolution(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True, files=1)
    wider = pa.table({"id": [1, 30], "p": ["a", "b"], "v": [1.5, 3.0], "note": ["upd", "new"]})
    # Without schema_mode the extra source column is not taken (as delta-spark).
    table.merge(wider, "t.id = s.id", "s", "t").when_matched_update_all().execute()
    assert "note" not in table.schema().names
    result = (
        table.merge(wider, "t.id = s.id", "s", "t", schema_mode="merge")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert table.schema().names == ["id", "p", "v", "note"]
    notes = {r["id"]: r["note"] for r in rows(table.uri)}
    assert notes[1] == "upd" and notes[30] == "new" and notes[2] is None
    assert result.committed and rows(table.uri) == rs_rows(table.uri)
    # A source without a target column: with evolution the update keeps it, the insert nulls it.
    narrow = pa.table({"id": [2, 40], "v": [9.0, 9.0]})
    table.merge(narrow, "t.id = s.id", "s", "t", merge_schema=True).when_matched_update_all(
    ).when_not_matched_insert_all().execute()  # fmt: skip
    got = {r["id"]: r for r in rows(table.uri)}
    assert got[2]["p"] == "a" and got[2]["v"] == 9.0 and got[40]["p"] is None


def test_sources_of_every_kind(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=False, files=1)
    frame = pd.DataFrame({"id": [100], "p": ["a"], "v": [1.0]})
    table.merge(frame, "t.id = s.id", "s", "t").when_not_matched_insert_all().execute()
    reader = pa.RecordBatchReader.from_batches(SOURCE.schema, SOURCE.to_batches())
    table.merge(reader, "target.id = source.id").when_not_matched_insert_all().execute()
    assert sorted(r["id"] for r in rows(table.uri))[-3:] == [20, 21, 100]
    with pytest.raises(InvalidInputError):
        table.merge(object(), "t.id = s.id", "s", "t")


def test_nothing_changed_commits_nothing(tmp_path: Path) -> None:
    table = make_table(tmp_path / "t", dv=True)
    on_disk = data_files(table.uri)
    result = (
        table.merge(pa.table({"id": [999]}), "t.id = s.id", "s", "t")
        .when_matched_delete()
        .execute()
    )
    assert not result.committed and result.version == table.version() == 1
    assert data_files(table.uri) == on_disk


def test_append_only_and_row_tracking(tmp_path: Path) -> None:
    table = make_table(tmp_path / "ao", dv=True, configuration={"delta.appendOnly": "true"})
    with pytest.raises(AppendOnlyError):
        table.merge(SOURCE, "t.id = s.id", "s", "t").when_matched_delete().execute()
    table.merge(SOURCE, "t.id = s.id", "s", "t").when_not_matched_insert_all().execute()
    assert len(rows(table.uri)) == 22
    tracked = make_table(
        tmp_path / "rt", dv=True, configuration={"delta.enableRowTracking": "true"}
    )
    on_disk = data_files(tracked.uri)
    with pytest.raises(RowTrackingRewriteError):
        tracked.merge(SOURCE, "t.id = s.id", "s", "t").when_matched_update_all().execute()
    assert data_files(tracked.uri) == on_disk
    tracked.merge(SOURCE, "t.id = s.id", "s", "t").when_matched_delete().execute()
    assert len(rows(tracked.uri)) == 18


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
    merger = (
        table.merge(SOURCE, "t.p = 'a' AND t.id = s.id", "s", "t")
        .when_matched_update({"v": "s.v"})
        .when_not_matched_insert_all()
    )
    on_disk = data_files(table.uri)
    with pytest.raises(ConcurrentAppendError):
        merger.execute()
    assert written and not any(Path(w).exists() for w in written)
    # every file left on disk that was not there before is the other writer's
    assert set() < data_files(table.uri) - on_disk <= live_files(table.uri)
