"""The Spark-free parts of a data-column ``replace_where`` (``deltalog.spark.replace_data``).

The executor functions run here on plain Arrow batches; the end-to-end behaviour against
delta-spark is in ``test_spark_replace_data.py``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import write_parquet

from deltalog import ConcurrentAppendError, DeltaTable, InvalidPredicateError
from deltalog.spark.replace_data import (
    _ReadPlan,
    check_predicate_columns,
    check_task,
    kept_rows_task,
    partition_part,
)
from deltalog.stats.predicate_input import as_predicate
from deltalog.stats.predicates import TRUE

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    t = DeltaTable.create(
        str(tmp_path),
        SCHEMA,
        partition_by=["p"],
        configuration={"delta.isolationLevel": "Serializable"},
    )
    for k, p in enumerate("ab"):
        data = pa.table({"id": pa.array([k * 10 + j for j in range(5)] + [None], pa.int64())})
        t.append_files([write_parquet(tmp_path, f"p={p}/f{k}.parquet", data)])
    return t


def test_partition_part_keeps_only_partition_conjuncts() -> None:
    parts = ["p"]
    assert partition_part(as_predicate("id > 1"), parts) is TRUE
    assert str(partition_part(as_predicate("p = 'a' AND id > 1"), parts)) == "p = 'a'"
    assert partition_part(as_predicate("p = 'a' OR id > 1"), parts) is TRUE  # not a conjunct
    both = partition_part(as_predicate("p = 'a' AND (id > 1 AND p != 'b')"), parts)
    assert both.columns() == {"p"} and "p != 'b'" in str(both)


def test_check_predicate_columns_refuses_unknown_columns_and_bad_values(
    table: DeltaTable,
) -> None:
    with pytest.raises(InvalidPredicateError, match="nope"):
        check_predicate_columns(as_predicate("nope = 1"), table.schema())
    with pytest.raises(InvalidPredicateError):
        check_predicate_columns(as_predicate("id = 'x'"), table.schema())
    check_predicate_columns(as_predicate("id = 1 AND p = 'a'"), table.schema())


def test_check_task_counts_rows_not_satisfying_the_predicate(table: DeltaTable) -> None:
    batch = pa.record_batch({"id": pa.array([1, 2, None, 9], pa.int64())})  # p missing: null
    (out,) = check_task(as_predicate("id < 5"), table.schema().to_json_string(), [batch])
    assert out.column("violations").to_pylist() == [2]  # 9, and null (unknown is not true)
    assert '"id":null' in out.column("example")[0].as_py()  # the first one


def test_kept_rows_task_keeps_false_and_null_rows(table: DeltaTable) -> None:
    files = table.files().sort_by("path")
    plan = _ReadPlan(
        uri=table.uri,
        storage_options={},
        table_schema=table.schema().to_json_string(),
        partition_columns=("p",),
        files=tuple(files.select(["path", "partition_values", "deletion_vector"]).to_pylist()),
    )
    ids = pa.record_batch({"id": pa.array([0, 1], pa.int64())})
    kept = pa.Table.from_batches(list(kept_rows_task(plan, as_predicate("id >= 3"), [ids])))
    rows = sorted(kept.to_pylist(), key=lambda r: (r["id"] is None, r["id"] or 0, r["p"]))
    assert rows == [
        {"id": 0, "p": "a"},
        {"id": 1, "p": "a"},
        {"id": 2, "p": "a"},
        {"id": None, "p": "a"},
        {"id": None, "p": "b"},
    ]


def test_recorded_partition_predicate_makes_appends_there_conflict(
    table: DeltaTable, tmp_path: Path
) -> None:
    tx = table.transaction("WRITE")
    predicate = as_predicate("p = 'a' AND id > 2")
    candidates = table.files(filter=predicate)
    assert candidates.num_rows == 1
    tx.track_files_read(candidates, predicate=partition_part(predicate, ["p"]))
    other = DeltaTable(table.uri)
    data = pa.table({"id": pa.array([99], pa.int64())})
    other.append_files([write_parquet(tmp_path, "p=b/g.parquet", data)])  # elsewhere: fine
    tx.add([write_parquet(tmp_path, "p=a/new.parquet", data)])
    tx.remove(candidates)
    tx.commit()
    tx = DeltaTable(table.uri).transaction("WRITE")
    tx.track_files_read(candidates.slice(0, 0), predicate=partition_part(predicate, ["p"]))
    other.update()
    other.append_files([write_parquet(tmp_path, "p=a/h.parquet", data)])  # in p=a: conflicts
    tx.add([write_parquet(tmp_path, "p=a/new2.parquet", data)])
    with pytest.raises(ConcurrentAppendError):
        tx.commit()


def test_a_data_column_replace_on_a_row_tracking_table_is_refused_before_any_job(
    tmp_path: Path,
) -> None:
    from deltalog import RowTrackingRewriteError
    from deltalog.spark.replace_data import stage_data_replace

    t = DeltaTable.create(
        str(tmp_path), SCHEMA, partition_by=["p"], configuration={"delta.enableRowTracking": "true"}
    )
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    t.append_files([write_parquet(tmp_path, "p=a/f.parquet", data)])
    before = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())

    def no_job(*_: object) -> list[object]:
        raise AssertionError("no Spark job may run")

    tx = t.transaction()
    with pytest.raises(RowTrackingRewriteError, match="replace_where"):
        # The DataFrame is never touched: the refusal comes first.
        stage_data_replace(
            object(),  # type: ignore[arg-type]
            t,
            tx,
            as_predicate("id > 1"),
            write_new=no_job,  # type: ignore[arg-type]
            options={},
            app=False,
        )
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == before
    assert DeltaTable(str(tmp_path)).version() == 1
