"""The Spark job of a write: the plan the executors get, running it, and what it wrote.

The driver builds a :class:`~deltalog.spark.task.TaskPlan` from the table and the session
(:func:`task_plan`), runs a task over the DataFrame's partitions with ``mapInArrow``
(:func:`run_tasks`) and turns the rows the tasks report into ``add`` actions. The partitions a
write touched become the predicate it recorded as read (:func:`written_partitions`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import orjson

from deltalog.errors import (
    ConstraintViolationError,
    InvalidInputError,
)
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import (
    logical_to_physical,
    mapping_mode,
    physical_schema,
)
from deltalog.protocol.config import STATS_COLUMNS, num_indexed_cols, property_value
from deltalog.protocol.paths import decode_path
from deltalog.protocol.schema import StructType
from deltalog.spark.shipping import job_failure
from deltalog.spark.task import RESULT_DDL, TaskPlan, write_task
from deltalog.stats.predicates import (
    And,
    In,
    IsNull,
    Or,
    Predicate,
)
from deltalog.stats.stats_json import STRING_PREFIX_KEY
from deltalog.write.parquet_options import CODECS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession


def run_job(
    df: DataFrame,
    uri: str,
    schema: StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str | None],
    written: list[str],
    options: dict[str, str],
    *,
    max_records_per_file: int | None = None,
    compression: str | None = None,
) -> list[AddFile]:
    """Run the Spark job that writes the data files; the ``add`` actions for them.

    Raises:
        ConstraintViolationError: A row breaks a NOT NULL or CHAR/VARCHAR constraint.
        SparkWriteError: The job failed otherwise.
    """
    plan = task_plan(
        df.sparkSession,
        uri,
        schema,
        partition_columns,
        configuration,
        written,
        options,
        max_records_per_file=max_records_per_file,
        compression=compression,
    )
    return run_tasks(df, lambda batches: write_task(plan, batches), uri, options)


def task_plan(
    spark: SparkSession,
    uri: str,
    schema: StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str | None],
    written: list[str],
    options: dict[str, str],
    *,
    max_records_per_file: int | None = None,
    compression: str | None = None,
) -> TaskPlan:
    """The plan the write tasks get: codec and file limits from the session, table settings.

    ``max_records_per_file`` (the ``maxRecordsPerFile`` option) overrides the session's
    ``spark.sql.files.maxRecordsPerFile``; 0 or less means no limit. ``compression`` (the
    ``compression`` option, checked already) overrides ``spark.sql.parquet.compression.codec``.

    Raises:
        InvalidInputError: The session's Parquet codec is not one deltalog can write.
    """
    conf = spark.conf
    codec = str(conf.get("spark.sql.parquet.compression.codec", "snappy") or "snappy").lower()
    if compression is not None:
        codec = compression
    elif codec not in CODECS:
        raise InvalidInputError(
            f"spark.sql.parquet.compression.codec={codec!r} is not one deltalog can write "
            f"({sorted(CODECS)})"
        )
    mode = mapping_mode(configuration)
    partition_schema = StructType(tuple(schema.field(c) for c in partition_columns))
    data_columns = tuple(c for c in written if c not in partition_columns)
    if mode != "none":  # files and partition values use the physical names
        partition_schema = physical_schema(partition_schema)
        to_physical = logical_to_physical(schema)
        data_columns = tuple(to_physical.get(c, c) for c in data_columns)
    return TaskPlan(
        uri=uri,
        storage_options=options,
        partition_schema=partition_schema.to_json_string(),
        data_columns=data_columns,
        column_mapping=mode,
        num_indexed_cols=num_indexed_cols(configuration),
        stats_properties=tuple(
            (key, str(value))
            for key in (STATS_COLUMNS, STRING_PREFIX_KEY)
            if (value := property_value(configuration, key)) is not None
        ),
        codec=codec,
        max_records_per_file=max(
            0,
            max_records_per_file
            if max_records_per_file is not None
            else int(conf.get("spark.sql.files.maxRecordsPerFile", "0") or 0),
        ),
        table_schema=schema.to_json_string(),
        spark_version=str(spark.version),
    )


def run_tasks(
    df: DataFrame,
    task: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    uri: str,
    options: Mapping[str, str],
    *,
    data_change: bool = True,
) -> list[AddFile]:
    """Run ``task`` over ``df``'s partitions (``mapInArrow``); the ``add`` actions it reports.

    Raises:
        ConstraintViolationError: A row breaks a NOT NULL or CHAR/VARCHAR constraint.
        SparkWriteError: The job failed otherwise.
    """
    try:
        rows = df.mapInArrow(task, RESULT_DDL).collect()
    except Exception as exc:
        what = f"the Spark job writing to {uri}"
        raise job_failure(df.sparkSession, exc, uri, what) from exc
    adds = [
        AddFile(
            path=row["path"],
            partition_values=orjson.loads(row["partition_values"]),
            size=row["size"],
            modification_time=row["modification_time"],
            data_change=data_change,
            stats=row["stats"],
        )
        for row in rows
        if row["violation"] is None
    ]
    violations = [row["violation"] for row in rows if row["violation"] is not None]
    if violations:
        storage = TableStorage.open(uri, options)
        for add in adds:  # best effort: an orphan file is harmless (VACUUM deletes it)
            with contextlib.suppress(Exception):
                storage.store.delete(storage.data_file(decode_path(add.path)))
        raise ConstraintViolationError(f"{violations[0]} (writing to {uri}; nothing was committed)")
    return adds


def written_partitions(
    adds: list[AddFile], partition_columns: list[str], keys: Sequence[str] | None = None
) -> Predicate:
    """The partitions the written files are in (nulls included), as a read predicate.

    ``keys`` are the partition columns' keys in ``partitionValues`` (physical names on a
    column-mapped table), in the order of ``partition_columns``.
    """
    logged = list(keys) if keys is not None else partition_columns
    combos = sorted(
        {tuple(a.partition_values.get(c) for c in logged) for a in adds},
        key=lambda combo: tuple((v is None, v or "") for v in combo),
    )
    if len(partition_columns) == 1:
        (name,) = partition_columns
        present = tuple(c[0] for c in combos if c[0] is not None)
        terms: list[Predicate] = [In(name, present)] if present else []
        if any(c[0] is None for c in combos):
            terms.append(IsNull(name))
        return _balanced(terms, Or)
    return _balanced(
        [
            _balanced(
                [
                    IsNull(name) if value is None else In(name, (value,))  # NaN = NaN
                    for name, value in zip(partition_columns, combo, strict=True)
                ],
                And,
            )
            for combo in combos
        ],
        Or,
    )


def _balanced(terms: list[Predicate], kind: type[And] | type[Or]) -> Predicate:
    """Combine terms into a tree of depth log2(n), not n (thousands of partitions)."""
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return kind(_balanced(terms[:middle], kind), _balanced(terms[middle:], kind))
