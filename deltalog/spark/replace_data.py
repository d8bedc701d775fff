"""An overwrite predicate on data columns: an overwrite that deletes the rows it selects.

delta-spark's ``replaceWhere`` with ``spark.databricks.delta.replaceWhere.dataColumns.enabled``
(the default) is a DELETE of the rows matching the predicate plus an append of the new rows, in
one commit, where every new row must satisfy the predicate. Here:

1. Every row of the DataFrame is checked against the predicate first (one Spark pass); a row for
   which it is false or null refuses the write with :class:`ReplaceWhereMismatchError` before any
   file is written.
2. The candidate files are the live files that may hold a matching row, by partition values and
   statistics (:mod:`deltalog.stats.skipping`). The transaction records them as read (a concurrent
   commit that removes one conflicts) and, as read predicate, the conjuncts of the predicate on
   partition columns only (``TRUE`` if there are none), as delta-spark's conflict checker uses a
   read's partition filters.
3. A Spark job reads the candidates through the table's store (deletion vectors applied, so
   deleted rows stay deleted) and writes the rows for which the predicate is not true (false or
   null) as new files with statistics; the new data is written by the usual write job.
4. One commit removes the candidates and adds both sets of files.

Files wholly outside the predicate are untouched. The predicate is evaluated with
:func:`deltalog.stats.predicates.matches` on both sides (check and rewrite), so they cannot
disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import ReplaceWhereMismatchError
from deltalog.protocol.schema import StructType
from deltalog.spark.session import default_parallelism
from deltalog.spark.shipping import job_failure
from deltalog.stats.predicates import Predicate, matches
from deltalog.write.rewrite_plan import (
    candidate_files,
    check_predicate_columns,
    is_data_predicate,
    partition_part,
)
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.writer.staged import StagedWrite

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.protocol.actions import AddFile
    from deltalog.table import DeltaTable
    from deltalog.write.transaction import Transaction

__all__ = ["check_predicate_columns", "is_data_predicate", "partition_part", "stage_data_replace"]

_CHECK_DDL = "violations long, example string"
#: Runs the write job for a DataFrame of table rows (and the columns it has); its adds.
WriteJob = Callable[["DataFrame", list[str]], list["AddFile"]]


# ---------------------------------------------------------------------------- executor side
def _with_table_columns(batch: pa.RecordBatch, schema: pa.Schema) -> pa.Table:
    """The batch's columns named as the table's; a table column the batch lacks is null."""
    table = pa.Table.from_batches([batch])
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    return table


def check_task(
    predicate: Predicate, table_schema: str, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Count the rows for which ``predicate`` is not true; yield one row with an example."""
    schema = StructType.from_json_string(table_schema).to_arrow()
    violations = 0
    example: str | None = None
    for batch in batches:
        if not batch.num_rows:
            continue
        table = _with_table_columns(batch, schema)
        bad = pc.invert(matches(predicate, table))
        count = pc.sum(bad).as_py() or 0
        if count and example is None:
            row = table.filter(bad).slice(0, 1).to_pylist()[0]
            example = orjson.dumps(row, default=str).decode()
        violations += count
    yield pa.RecordBatch.from_pylist(
        [{"violations": violations, "example": example}],
        schema=pa.schema([("violations", pa.int64()), ("example", pa.string())]),
    )


@dataclass(frozen=True)
class _ReadPlan:
    """What a task needs to read candidate files: the table and the files' log entries."""

    uri: str
    storage_options: Mapping[str, str]
    table_schema: str
    partition_columns: tuple[str, ...]
    files: tuple[dict[str, Any], ...]


def kept_rows_task(
    plan: _ReadPlan, predicate: Predicate, ids: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Rows of the files whose indexes arrive in ``ids`` for which ``predicate`` is not true.

    Files are read through the table's store as :func:`deltalog.read.read_rows` reads them
    (partition values typed, deletion vectors applied).
    """
    from deltalog.log.storage import TableStorage
    from deltalog.read import _read_file

    storage = TableStorage.open(plan.uri, dict(plan.storage_options) or None)
    schema = StructType.from_json_string(plan.table_schema)
    target = pa.schema([f.remove_metadata() for f in schema.to_arrow()])
    for batch in ids:
        for index in batch.column("id").to_pylist():
            entry = plan.files[index]
            rows = _read_file(storage, schema, list(plan.partition_columns), target, entry)
            kept = rows.filter(pc.invert(matches(predicate, rows)))
            yield from kept.to_batches()


# ---------------------------------------------------------------------------- driver side
def _check_rows(df: DataFrame, predicate: Predicate, schema: StructType, uri: str) -> None:
    """Refuse the write when a DataFrame row does not satisfy the predicate.

    Raises:
        ReplaceWhereMismatchError: Naming the number of rows and one of them.
        SparkWriteError: The checking job failed.
    """
    table_schema = schema.to_json_string()
    try:
        results = df.mapInArrow(
            lambda batches: check_task(predicate, table_schema, batches), _CHECK_DDL
        ).collect()
    except Exception as exc:
        what = "the Spark job checking the rows against the overwrite predicate"
        raise job_failure(df.sparkSession, exc, uri, what) from exc
    violations = sum(int(r["violations"]) for r in results)
    if violations:
        example = next((r["example"] for r in results if r["example"] is not None), None)
        raise ReplaceWhereMismatchError(
            f"{violations} written row(s) do not satisfy the overwrite predicate {predicate}, e.g. "
            f"{example}; nothing was written"
        )


def stage_data_replace(
    df: DataFrame,
    table: DeltaTable,
    tx: Transaction,
    predicate: Predicate,
    *,
    write_new: WriteJob,
    options: dict[str, str],
    app: bool,
) -> StagedWrite:
    """Stage an overwrite of the rows ``predicate`` selects with ``df`` (see the module docstring).

    Args:
        df: The new rows, with the table's column names.
        table: The table (its snapshot is the one ``tx`` reads).
        tx: The write's transaction (app id already recorded).
        predicate: The checked ``replace_where`` predicate, naming some data column.
        write_new: Runs a write job for a DataFrame of table rows and its columns; returns the
            ``add`` actions.
        options: Storage options for the executors.
        app: Whether the write carries an app id (for :class:`StagedWrite`).

    Raises:
        ReplaceWhereMismatchError: A row of ``df`` does not satisfy the predicate.
        SparkWriteError: A Spark job failed.
        RowTrackingRewriteError: Rows would be copied on a row-tracking table.
    """
    snapshot = tx.snapshot
    schema = snapshot.schema
    partition_columns = snapshot.partition_columns
    candidates = candidate_files(snapshot, predicate)
    if candidates.num_rows:  # their unselected rows would be copied under new row ids
        refuse_table_rewrite(
            snapshot.protocol, snapshot.metadata, operation="a replace_where on data columns of"
        )
    _check_rows(df, predicate, schema, table.uri)
    tx.track_files_read(candidates, predicate=partition_part(predicate, partition_columns))
    adds = write_new(df, list(df.columns))
    staged = StagedWrite(table._storage, adds, table=table, tx=tx, app=app)
    try:
        if candidates.num_rows:
            adds += _rewrite(df, table, candidates, predicate, write_new, options)
            staged.adds = adds
    except BaseException:
        staged.abort()
        raise
    staged.stage(candidates)
    return staged


def _rewrite(
    df: DataFrame,
    table: DeltaTable,
    candidates: pa.Table,
    predicate: Predicate,
    write_new: WriteJob,
    options: dict[str, str],
) -> list[AddFile]:
    """Write the rows of ``candidates`` the predicate does not select; their ``add`` actions."""
    from pyspark.sql.types import StructType as SparkStruct

    snapshot = table.snapshot
    files = candidates.select(["path", "partition_values", "deletion_vector"]).to_pylist()
    plan = _ReadPlan(
        uri=table.uri,
        storage_options=dict(options),
        table_schema=snapshot.schema.to_json_string(),
        partition_columns=tuple(snapshot.partition_columns),
        files=tuple(files),
    )
    spark = df.sparkSession
    parallelism = max(1, min(len(files), default_parallelism(spark)))
    jobs = spark.range(0, len(files), 1, parallelism)
    out_schema = SparkStruct.fromJson(snapshot.schema.to_json())
    kept = jobs.mapInArrow(lambda ids: kept_rows_task(plan, predicate, ids), out_schema)
    return write_new(kept, snapshot.schema.names)
