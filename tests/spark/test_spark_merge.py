"""``deltalog.spark.merge``: delta-spark's MERGE run on Spark's executors, committed by deltalog.

Tables are created with ``write_table`` (no Spark job) and read back with deltalog's own
reader, so each test runs only the merge itself on the shared local[2] session. Races go
through the ``before_commit`` seam of :mod:`deltalog.spark.merge_run` (no sleeps).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import (
    ConcurrentAppendError,
    DeltaTable,
    InvalidExpressionError,
    InvalidInputError,
    InvalidMergeClausesError,
    InvalidOptionError,
    InvalidPredicateError,
    MultipleSourceRowMatchError,
    write_table,
)
from deltalog.spark import merge as spark_merge
from deltalog.spark import merge_run

DV = {"delta.enableDeletionVectors": "true"}


def _table(path: Path, *, config: dict[str, str] | None = None, partitioned: bool = False) -> str:
    uri = str(path / "t")
    data = pa.table(
        {
            "id": pa.array(range(10), pa.int64()),
            "v": pa.array([f"v{i}" for i in range(10)]),
            "p": pa.array([i % 2 for i in range(10)], pa.int64()),
        }
    )
    write_table(
        uri,
        data,
        partition_by=["p"] if partitioned else None,
        configuration=config,
    )
    return uri


def _rows(uri: str) -> list[tuple[Any, ...]]:
    table = DeltaTable(uri).to_pyarrow_table()
    return sorted(tuple(r.values()) for r in table.select(["id", "v", "p"]).to_pylist())


def _files(uri: str) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, f), uri)
        for d, _, names in os.walk(uri)
        for f in names
        if "_delta_log" not in d
    }


def _source(spark: Any, rows: list[tuple[Any, ...]], ddl: str = "id long, v string") -> Any:
    return spark.createDataFrame(rows, ddl)


EXPECTED_UPSERT = [
    (0, "v0", 0),
    (1, "new1", 1),
    (3, "v3", 1),
    *[(i, f"v{i}", i % 2) for i in range(4, 10)],
    (20, "ins20", 0),
]


@pytest.mark.parametrize(
    ("config", "partitioned"), [(None, False), (DV, False), (None, True), (DV, True)]
)
def test_update_delete_insert(
    spark: Any, tmp_path: Path, config: dict[str, str] | None, partitioned: bool
) -> None:
    uri = _table(tmp_path, config=config, partitioned=partitioned)
    source = _source(spark, [(1, "new1"), (2, "new2"), (20, "ins20")])
    result = (
        spark_merge(spark, uri, source, "target.id = source.id")
        .when_matched_update(set={"v": "source.v"}, predicate="source.id = 1")
        .when_matched_delete()
        .when_not_matched_insert(values={"id": "source.id", "v": "source.v", "p": 0})
        .execute()
    )
    assert result.committed and result.version == 1
    assert _rows(uri) == EXPECTED_UPSERT
    m = result.metrics
    assert m["numSourceRows"] == 3
    assert m["numTargetRowsInserted"] == 1
    assert m["numTargetRowsMatchedUpdated"] == m["numTargetRowsUpdated"] == 1
    assert m["numTargetRowsMatchedDeleted"] == m["numTargetRowsDeleted"] == 1
    info = DeltaTable(uri).history(1)[0]
    assert info["operation"] == "MERGE"
    assert info["operationParameters"]["matchedPredicates"] == (
        '[{"predicate":"source.id = 1","actionType":"update"},{"actionType":"delete"}]'
    )
    assert info["operationMetrics"]["numTargetRowsInserted"] == "1"
    if config is None:
        assert m["numTargetDeletionVectorsAdded"] == 0
        assert m["numTargetRowsCopied"] > 0
    else:
        assert m["numTargetDeletionVectorsAdded"] >= 1
        assert m["numTargetRowsCopied"] == 0
        table = DeltaTable(uri)
        assert any(f["deletion_vector"] is not None for f in table.files().to_pylist())


def test_star_clauses_and_by_source(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path)
    source = _source(spark, [(1, "a", 1), (30, "b", 0)], "id long, v string, p long")
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update(set={"v": "concat(t.v, '!')"}, predicate="t.id < 3")
        .when_not_matched_by_source_delete(predicate="t.id >= 8")
        .execute()
    )
    assert _rows(uri) == sorted(
        [(0, "v0!", 0), (1, "a", 1), (2, "v2!", 0)]
        + [(i, f"v{i}", i % 2) for i in range(3, 8)]
        + [(30, "b", 0)]
    )
    m = result.metrics
    assert m["numTargetRowsNotMatchedBySourceUpdated"] == 2
    assert m["numTargetRowsNotMatchedBySourceDeleted"] == 2
    assert m["numTargetRowsUpdated"] == 3
    assert m["numTargetRowsInserted"] == 1


def test_nothing_to_change_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path)
    before = _files(uri)
    result = (
        spark_merge(spark, uri, _source(spark, [(50, "x")]), "target.id = source.id")
        .when_matched_delete()
        .execute()
    )
    assert not result.committed and result.version == 0
    assert _files(uri) == before


def test_multiple_matches_are_refused_and_write_nothing(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path)
    before = _files(uri)
    source = _source(spark, [(1, "a"), (1, "b"), (40, "c")])
    merger = (
        spark_merge(spark, uri, source, "target.id = source.id")
        .when_matched_update(set={"v": "source.v"})
        .when_not_matched_insert_all(except_cols=["p"])
    )
    with pytest.raises(MultipleSourceRowMatchError) as caught:
        merger.execute()
    assert caught.value.matches == 2
    assert caught.value.target_row == {"id": 1, "v": "v1", "p": 1}
    assert DeltaTable(uri).version() == 0 and _files(uri) == before
    # the one unconditional delete takes every match (delta-spark allows it)
    result = (
        spark_merge(spark, uri, source, "target.id = source.id").when_matched_delete().execute()
    )
    assert result.metrics["numTargetRowsDeleted"] == 1
    assert 1 not in [r[0] for r in _rows(uri)]


def test_schema_evolution(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path, partitioned=True)
    source = _source(
        spark, [(1, "a", 1, 1.5), (60, "b", 0, 2.5)], "id long, v string, p long, w double"
    )
    lacking = _source(spark, [(1, 1)], "id long, p long")
    with pytest.raises(InvalidExpressionError):  # SET * needs every target column (v)
        (
            spark_merge(spark, uri, lacking, "target.id = source.id")
            .when_matched_update_all()
            .execute()
        )
    result = (
        spark_merge(spark, uri, source, "target.id = source.id", mergeSchema="true")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert result.committed
    table = DeltaTable(uri)
    assert table.schema().names == ["id", "v", "p", "w"]
    rows = {r["id"]: r for r in table.to_pyarrow_table().to_pylist()}
    assert rows[1]["w"] == 1.5 and rows[60]["w"] == 2.5 and rows[0]["w"] is None


@pytest.mark.parametrize(
    ("predicate", "error"),
    [
        ("target.id = source.missing", InvalidPredicateError),
        ("id = id", InvalidPredicateError),  # ambiguous
        ("target.id = ", InvalidPredicateError),
    ],
)
def test_bad_predicates_write_nothing(
    spark: Any, tmp_path: Path, predicate: str, error: type[Exception]
) -> None:
    uri = _table(tmp_path)
    before = _files(uri)
    with pytest.raises(error):
        (
            spark_merge(spark, uri, _source(spark, [(1, "a")]), predicate)
            .when_matched_delete()
            .execute()
        )
    assert DeltaTable(uri).version() == 0 and _files(uri) == before


def test_bad_arguments(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path)
    source = _source(spark, [(1, "a")])
    with pytest.raises(InvalidOptionError):
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="x y")
    with pytest.raises(InvalidOptionError):
        spark_merge(spark, uri, source, "a.id = a.id", source_alias="a", target_alias="A")
    with pytest.raises(InvalidOptionError):
        spark_merge(spark, uri, source, "target.id = source.id", merge_schema="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="unknown merge option"):
        spark_merge(spark, uri, source, "target.id = source.id", replaceWhere="id > 1")
    with pytest.raises(InvalidOptionError):
        spark_merge(spark, uri, source, "target.id = source.id", mergeSchema="maybe")
    with pytest.raises(InvalidInputError):
        spark_merge(spark, uri, source, "target.id = source.id").execute()  # no clause
    with pytest.raises(InvalidExpressionError):
        (
            spark_merge(spark, uri, source, "target.id = source.id")
            .when_matched_update(set={"nope": "source.v"})
            .execute()
        )
    assert DeltaTable(uri).version() == 0


def test_only_the_last_clause_of_a_kind_may_omit_its_condition(spark: Any, tmp_path: Path) -> None:
    """delta-spark's DELTA_NON_LAST_*_CLAUSE_OMIT_CONDITION, refused before any Spark job."""
    uri = _table(tmp_path)
    before = _files(uri)
    source = _source(spark, [(1, "a", 1), (30, "b", 0)], "id long, v string, p long")

    def start() -> Any:
        return spark_merge(spark, uri, source, "target.id = source.id")

    for kind, merger in [
        ("MATCHED", start().when_matched_delete().when_matched_update_all("source.v > 'a'")),
        (
            "NOT MATCHED",
            start().when_not_matched_insert_all().when_not_matched_insert_all("source.id > 1"),
        ),
        (
            "NOT MATCHED BY SOURCE",
            start()
            .when_not_matched_by_source_delete()
            .when_not_matched_by_source_delete("target.id > 1"),
        ),
    ]:
        with pytest.raises(InvalidMergeClausesError, match=f"only the last WHEN {kind} clause"):
            merger.execute()
    assert DeltaTable(uri).version() == 0 and _files(uri) == before


def _append(uri: str, ids: list[int], p: int, *, read_first: bool) -> None:
    """Another writer's commit of rows ``ids`` into partition ``p``.

    ``read_first``: it read the table first (not a blind append), so a merge that should have
    read its rows conflicts with it, as delta-spark's conflict checker decides.
    """
    table = DeltaTable(uri)
    data = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array(["late"] * len(ids)),
            "p": pa.array([p] * len(ids), pa.int64()),
        }
    )
    if not read_first:
        write_table(uri, data, mode="append")
        return
    with table.transaction("WRITE") as tx:
        tx.read_whole_table()
        from deltalog.write.data_writer import DataWriter

        writer = DataWriter(
            table._storage.store,
            table._storage.root,
            table.snapshot.schema,
            ["p"],
            dict(table.snapshot.configuration),
        )
        writer.write(data)
        tx.add(writer.close())
        tx.commit()


@pytest.mark.parametrize("touched", [False, True])
def test_concurrent_append(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, touched: bool
) -> None:
    uri = _table(tmp_path, partitioned=True)
    source = _source(spark, [(1, "new1"), (3, "new3")], "id long, v string")

    def race(tx: Any) -> None:
        # partition 1 is the one the merge reads (its condition names p = 1)
        _append(uri, [101] if touched else [100], 1 if touched else 0, read_first=touched)

    monkeypatch.setattr(merge_run, "before_commit", race)
    merger = spark_merge(
        spark, uri, source, "target.id = source.id AND target.p = 1"
    ).when_matched_update(set={"v": "source.v"})
    if not touched:
        result = merger.execute()
        assert result.version == 2
        rows = _rows(uri)
        assert (1, "new1", 1) in rows and (100, "late", 0) in rows
        return
    before = _files(uri)
    with pytest.raises(ConcurrentAppendError):
        merger.execute()
    table = DeltaTable(uri)
    assert table.version() == 1  # the other writer's commit only
    added = {f["path"] for f in table.files().to_pylist()}
    # the merge's files are gone: only the table's files and the other writer's remain
    assert _files(uri) - before <= added
    assert (1, "v1", 1) in _rows(uri)


@pytest.mark.parametrize(("config", "partitioned"), [(None, False), (DV, False), (None, True)])
def test_counting_pass_reads_only_the_condition_columns(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: dict[str, str] | None,
    partitioned: bool,
) -> None:
    # the pass finding touched files reads the columns the conditions name and only the target
    # rows a source row matches, as delta-spark's does; the write pass reads them all (found by
    # benchmarks/bench_spark_merge.py at 10M rows)
    from pyspark.sql import functions as F

    seen: list[list[str]] = []
    untouched: list[int] = []
    count = merge_run._count

    def recording(joined: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(list(joined.columns))
        # target rows no source row matches and no clause takes: not needed to count
        alone = F.col(merge_run._SOURCE_PRESENT).isNull() & F.col(merge_run._CLAUSE).isNull()
        untouched.append(joined.where(alone).count())
        return count(joined, *args, **kwargs)

    monkeypatch.setattr(merge_run, "_count", recording)
    uri = _table(tmp_path, config=config, partitioned=partitioned)
    source = _source(spark, [(1, "a"), (2, "b"), (30, "c")], "id long, w string")
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(set={"v": "s.w"}, predicate="s.id = 1")
        .when_not_matched_insert(values={"id": "s.id", "v": "s.w", "p": 0})
        .execute()
    )
    assert [c for c in seen[0] if not c.startswith("__deltalog")] == ["id", "id", "w"]
    assert untouched == [0]
    rows = [(i, f"v{i}", i % 2) for i in range(10) if i != 1]
    assert _rows(uri) == sorted([*rows, (1, "a", 1), (30, "c", 0)])
    m = result.metrics
    assert m["numTargetRowsUpdated"] == 1 and m["numTargetRowsInserted"] == 1
    # copy-on-write copies the other live rows of the touched file (p = 1 when partitioned),
    # the matched row no clause takes (id 2) among them when it is in that file
    assert m["numTargetRowsCopied"] == (0 if config else 4 if partitioned else 9)
    # a clause condition naming a target column keeps it in the counting pass
    seen.clear()
    spark_merge(
        spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t"
    ).when_matched_delete(predicate="t.p = 0").execute()
    assert [c for c in seen[0] if not c.startswith("__deltalog")] == ["id", "p", "id", "w"]
    assert 2 not in [r[0] for r in _rows(uri)]


@pytest.mark.parametrize("partitioned", [False, True])
def test_plain_target_files_are_read_by_sparks_parquet_reader(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitioned: bool
) -> None:
    # only the files with a deletion vector go through deltalog's mapInArrow reader; the plain
    # ones are read by Spark's own (file and row position from its _metadata column), and the
    # deletion vectors the merge writes name exactly the rows it took out of both kinds
    uri = _table(tmp_path, config=DV, partitioned=partitioned)
    ids = range(10, 20)
    more = {"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids], "p": [i % 2 for i in ids]}
    write_table(uri, pa.table(more), mode="append")
    DeltaTable(uri).delete("id = 4")  # the file holding id 4 gets a deletion vector
    files = DeltaTable(uri).snapshot.files.to_pylist()
    with_dv = sorted(f["path"] for f in files if f["deletion_vector"] is not None)
    assert len(with_dv) == 1 and len(files) > 1
    described: list[list[str]] = []
    describe = merge_run.describe_files

    def recording(table: pa.Table) -> Any:
        described.append(sorted(table.column("path").to_pylist()))
        return describe(table)

    monkeypatch.setattr(merge_run, "describe_files", recording)
    source = _source(spark, [(2, "x"), (12, "x"), (3, "y"), (13, "q"), (30, "w")])
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.v = 'x'")
        .when_matched_update(set={"v": "s.v"})
        .when_not_matched_insert(values={"id": "s.id", "v": "s.v", "p": 0})
        .execute()
    )
    assert described == [with_dv, with_dv]  # the write pass's join and the counting pass's
    kept = [(i, f"v{i}", i % 2) for i in range(20) if i not in (2, 3, 4, 12, 13)]
    assert _rows(uri) == sorted([*kept, (3, "y", 1), (13, "q", 1), (30, "w", 0)])
    m = result.metrics
    assert m["numTargetRowsDeleted"] == 2 and m["numTargetRowsUpdated"] == 2
    assert m["numTargetRowsInserted"] == 1 and m["numTargetRowsCopied"] == 0
    assert DeltaTable(uri).check().ok


@pytest.mark.parametrize("partitioned", [False, True])
def test_copy_on_write_write_pass_shuffles_no_file_name(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitioned: bool
) -> None:
    # the write pass's target rows carry whether their file is touched (a boolean computed in
    # the scan, before the join's shuffle and sort), not the file's URI: ~100 bytes a row more
    # through the shuffle and the sort of a 10M-row rewrite (benchmarks/bench_spark_merge.py)
    import contextlib
    import io

    plans: list[str] = []
    run_job = merge_run.run_job

    def recording(df: Any, *args: Any, **kwargs: Any) -> Any:
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            df.explain()
        plans.append(text.getvalue())
        return run_job(df, *args, **kwargs)

    monkeypatch.setattr(merge_run, "run_job", recording)
    uri = _table(tmp_path, partitioned=partitioned)
    source = _source(spark, [(1, "new1"), (2, "x"), (20, "ins20")])
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(set={"v": "s.v"}, predicate="s.id = 1")
        .when_not_matched_insert(values={"id": "s.id", "v": "s.v", "p": 0})
        .execute()
    )
    (plan,) = plans
    assert f"AS {merge_run.FILE_COLUMN}" not in plan  # no node outputs the file's name
    assert merge_run._TOUCHED in plan
    assert _rows(uri) == sorted(
        [*[(i, f"v{i}", i % 2) for i in range(10) if i != 1], (1, "new1", 1), (20, "ins20", 0)]
    )
    m = result.metrics
    assert m["numTargetRowsUpdated"] == 1 and m["numTargetRowsInserted"] == 1
    assert m["numTargetRowsCopied"] == (4 if partitioned else 9)


@pytest.mark.parametrize("dv", [False, True])
def test_counting_pass_streams_the_target_and_keeps_no_insert(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool
) -> None:
    # the counting pass joins inner (as delta-spark's search for touched files): Spark may
    # broadcast the source instead of shuffling and sorting every target row with its file
    # (benchmarks/bench_spark_merge.py); the inserted rows are counted from the files written
    from pyspark.sql import functions as F

    source_only: list[int] = []
    count = merge_run._count

    def recording(joined: Any, *args: Any, **kwargs: Any) -> Any:
        source_only.append(joined.where(F.col(merge_run._TARGET_PRESENT).isNull()).count())
        return count(joined, *args, **kwargs)

    monkeypatch.setattr(merge_run, "_count", recording)
    uri = _table(tmp_path, config=DV if dv else None)
    source = _source(spark, [(1, "new1"), (2, "x"), (20, "ins20"), (21, "ins21"), (22, "no")])
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(set={"v": "s.v"}, predicate="s.id = 1")
        .when_not_matched_insert(values={"id": "s.id", "v": "s.v", "p": 0}, predicate="s.id = 20")
        .when_not_matched_insert(values={"id": "s.id", "v": "s.v", "p": 1}, predicate="s.id = 21")
        .execute()
    )
    assert source_only == [0]
    kept = [(i, f"v{i}", i % 2) for i in range(10) if i != 1]
    assert _rows(uri) == sorted([*kept, (1, "new1", 1), (20, "ins20", 0), (21, "ins21", 1)])
    m = result.metrics
    assert m["numTargetRowsUpdated"] == 1 and m["numTargetRowsInserted"] == 2
    assert m["numTargetRowsCopied"] == (0 if dv else 9)
    assert m["numOutputRows"] == 3 + m["numTargetRowsCopied"]


def test_inserts_only_count_the_rows_written(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path)
    source = _source(spark, [(1, "x"), (20, "ins20"), (21, "ins21")])
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_not_matched_insert_all(except_cols=["p"])
        .execute()
    )
    assert result.committed
    m = result.metrics
    assert m["numTargetRowsInserted"] == 2 and m["numOutputRows"] == 2
    assert m["numTargetRowsCopied"] == 0 and m["numTargetFilesRemoved"] == 0
    assert m["numSourceRows"] == 3
    assert _rows(uri) == sorted(
        [*[(i, f"v{i}", i % 2) for i in range(10)], (20, "ins20", None), (21, "ins21", None)]
    )


def test_inserting_nothing_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri = _table(tmp_path)
    before = _files(uri)
    source = _source(spark, [(1, "x"), (20, "ins20")])
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(set={"v": "s.v"}, predicate="s.id = 5")
        .when_not_matched_insert_all(except_cols=["p"], predicate="s.id > 100")
        .execute()
    )
    assert not result.committed and result.version == 0
    assert result.metrics["numTargetRowsInserted"] == 0
    assert _files(uri) == before


def test_inserts_beside_no_touched_file_join_no_untouched_target_row(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no file is touched, so the write pass has no row to copy: its join keeps no target row
    # no source row matches (no full outer join of the whole target for two inserts)
    import contextlib
    import io

    plans: list[str] = []
    run_job = merge_run.run_job

    def recording(df: Any, *args: Any, **kwargs: Any) -> Any:
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            df.explain()
        plans.append(text.getvalue())
        return run_job(df, *args, **kwargs)

    monkeypatch.setattr(merge_run, "run_job", recording)
    uri = _table(tmp_path)
    source = _source(spark, [(1, "x"), (20, "ins20")])
    result = (
        spark_merge(spark, uri, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update(set={"v": "s.v"}, predicate="s.id = 5")
        .when_not_matched_insert_all(except_cols=["p"])
        .execute()
    )
    (plan,) = plans
    assert "FullOuter" not in plan and "LeftOuter" not in plan
    assert result.committed
    m = result.metrics
    assert m["numTargetRowsInserted"] == 1 and m["numTargetRowsUpdated"] == 0
    assert m["numTargetRowsCopied"] == 0 and m["numTargetFilesRemoved"] == 0
    assert _rows(uri) == sorted([*[(i, f"v{i}", i % 2) for i in range(10)], (20, "ins20", None)])
