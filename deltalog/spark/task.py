"""The executor side of a Spark write: Arrow batches in, Parquet data files and their stats out.

Each Spark task receives its rows as Arrow record batches (``DataFrame.mapInArrow``), splits
them by partition value, and writes each partition's rows straight into the table directory
under a fresh name (``<col>=<value>/part-<task>-<uuid>.c000.<codec>.parquet``), as delta-spark's
commit protocol does: no staging directory, no rename, nothing visible until the driver commits
the files to the log. The files are written by the same data writer as ``deltalog.write_table``
(:mod:`deltalog.write.data_writer`: statistics gathered while writing); the task returns one
small row per file, and only those rows travel to the driver.

Nothing here imports Spark: the functions run inside Python workers and are testable alone.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.errors import ConstraintViolationError, SchemaMismatchError
from deltalog.logstores import LogStore, open_store
from deltalog.protocol.column_mapping import (
    PARQUET_FIELD_ID,
    arrow_with_field_ids,
    physical_schema,
    physical_to_logical,
)
from deltalog.protocol.config import NUM_INDEXED_COLS
from deltalog.protocol.schema import StructField, StructType, type_from_arrow
from deltalog.write.data_writer import DataWriter
from deltalog.write.parquet_options import ParquetOptions

#: Spark DDL of the rows a task returns: one per data file, and one with ``violation`` set
#: (every other column null) when a row broke a constraint.
RESULT_DDL = (
    "path string, partition_values string, size long, modification_time long, "
    "stats string, num_records long, violation string"
)
RESULT_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("partition_values", pa.string()),
        ("size", pa.int64()),
        ("modification_time", pa.int64()),
        ("stats", pa.string()),
        ("num_records", pa.int64()),
        ("violation", pa.string()),
    ]
)


@dataclass(frozen=True)
class TaskPlan:
    """Everything a task needs, shipped from the driver (picklable, no Spark objects).

    Attributes:
        uri: The table URI.
        storage_options: Options for the table's store (credentials, endpoints).
        partition_schema: Delta schema JSON of the partition columns, in partition order.
        data_columns: The columns written into the files, in order.
        num_indexed_cols: ``delta.dataSkippingNumIndexedCols``.
        stats_properties: The other table properties that choose the statistics
            (``delta.dataSkippingStatsColumns``, ``delta.dataSkippingStringPrefixLength``).
        codec: A key of :data:`CODECS`.
        max_records_per_file: Start a new file after this many rows (0: no limit).
        row_group_rows: Rows buffered per partition before a row group is written.
        row_group_bytes: Bytes buffered per partition before a row group is written.
        max_file_bytes: Start a new file once this many bytes are written (files for object
            stores are assembled in memory before their single upload).
        max_open_files: Files a task keeps open at once; past it the oldest is finished (and a
            later row of its partition starts a new file), so memory and file handles stay
            bounded however many partitions a task sees.
        table_schema: Delta schema JSON of the whole table, for its column constraints.
        spark_version: Recorded in each footer (``org.apache.spark.version``), which tells
            Spark's reader the dates are proleptic Gregorian and need no rebasing.
        column_mapping: The table's ``delta.columnMapping.mode``. When ``name`` or ``id``, rows
            arrive with logical names (``table_schema``'s) and are written with physical
            names (and, for ``id``, Parquet field ids); ``partition_schema`` and
            ``data_columns`` then hold physical names.
    """

    uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)  # secrets
    partition_schema: str = '{"type":"struct","fields":[]}'
    data_columns: tuple[str, ...] = ()
    num_indexed_cols: int = 32
    stats_properties: tuple[tuple[str, str], ...] = ()
    codec: str = "snappy"
    max_records_per_file: int = 0
    row_group_rows: int = 1 << 20
    row_group_bytes: int = 64 << 20
    max_file_bytes: int = 512 << 20
    max_open_files: int = 64
    table_schema: str = '{"type":"struct","fields":[]}'
    spark_version: str = ""
    column_mapping: str = "none"


def write_task(plan: TaskPlan, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Write one task's rows as data files; yield one batch describing them.

    The rows carry the table's logical column names; the data writer
    (:class:`~deltalog.write.data_writer.DataWriter`) checks constraints, splits partitions,
    maps column names and gathers statistics. A row that breaks a NOT NULL or CHAR/VARCHAR
    constraint does not fail the task: the task stops writing, finishes the files it has open,
    and returns them with one more row whose ``violation`` names the broken constraint. The
    driver then deletes the files and raises ``ConstraintViolationError``. An exception raised
    inside ``mapInArrow`` reaches the driver only through the Python worker's socket, which a
    busy executor can close first ("Socket closed", seen as a plain job failure); a result row
    always arrives.

    Raises:
        PartitionValueError: A partition value cannot be serialised (non-UTF-8 binary).
        logstores.LogStoreError: Writing a file failed.
    """
    stream = iter(batches)
    first = next((b for b in stream if b.num_rows), None)
    if first is None:
        yield pa.RecordBatch.from_pylist([], schema=RESULT_SCHEMA)
        return
    writer = _task_writer(plan, _written_schema(plan, first.schema))
    return_rows = _run(writer, itertools.chain([first], stream))
    yield pa.RecordBatch.from_pylist(return_rows, schema=RESULT_SCHEMA)


def _written_schema(plan: TaskPlan, arrow: pa.Schema) -> StructType:
    """The logical schema of the columns the task writes (data columns, then partitions)."""
    table = StructType.from_json_string(plan.table_schema)
    partitions = StructType.from_json_string(plan.partition_schema)
    if not table.fields:  # no table schema shipped: the rows' own types, no constraints
        table = StructType.from_arrow(pa.schema([pa.field(f.name, f.type, True) for f in arrow]))
    to_logical = physical_to_logical(table) if plan.column_mapping != "none" else {}
    names = [to_logical.get(c, c) for c in plan.data_columns]
    names += [to_logical.get(f.name, f.name) for f in partitions.fields]
    return StructType(tuple(table.field(n) for n in names))


def _task_writer(
    plan: TaskPlan,
    schema: StructType,
    partition_columns: list[str] | None = None,
    configuration: dict[str, str] | None = None,
    file_id: str | None = None,
) -> DataWriter:
    """A data writer for this task's files, named as Spark names them.

    ``file_id`` replaces the random UUID in the names (a DML job marks its files with it, so
    that a failed job's files can be found and deleted).
    """
    task_id, attempt = _task_identity()
    store, root = open_store(plan.uri, plan.storage_options or None)
    logical = configuration is None  # the schema's names are the table's logical ones
    if partition_columns is None:
        partitions = StructType.from_json_string(plan.partition_schema)
        to_logical = physical_to_logical(schema) if plan.column_mapping != "none" else {}
        partition_columns = [to_logical.get(f.name, f.name) for f in partitions.fields]
    if configuration is None:
        configuration = {"delta.columnMapping.mode": plan.column_mapping}
    configuration = {**configuration, NUM_INDEXED_COLS: str(plan.num_indexed_cols)}
    if logical or plan.column_mapping == "none":  # statistics columns are named logically
        configuration.update(plan.stats_properties)
    metadata = (("org.apache.spark.version", plan.spark_version),) if plan.spark_version else ()
    options = ParquetOptions(
        codec=plan.codec,
        target_file_size=plan.max_file_bytes,
        max_rows_per_file=plan.max_records_per_file,
        row_group_bytes=plan.row_group_bytes,
        row_group_rows=plan.row_group_rows,
        max_open_files=plan.max_open_files,
        file_metadata=metadata,
    )
    return DataWriter(
        store,
        root,
        schema,
        partition_columns,
        configuration,
        options=options,
        file_prefix=f"part-{task_id:05d}-{file_id or uuid.uuid4()}-a{attempt}",
    )


def _run(writer: DataWriter, batches: Iterable[pa.RecordBatch]) -> list[dict[str, Any]]:
    """Write the batches; a result row per file (and one for a constraint violation)."""
    violation = None
    try:
        for batch in batches:
            try:
                writer.write(batch)
            except ConstraintViolationError as exc:
                violation = str(exc)
                break
        adds = writer.close()
    except BaseException:
        writer.abort()
        raise
    rows: list[dict[str, Any]] = [
        {
            "path": add.path,
            "partition_values": orjson.dumps(add.partition_values).decode(),
            "size": add.size,
            "modification_time": add.modification_time,
            "stats": add.stats,
            "num_records": orjson.loads(add.stats or "{}").get("numRecords"),
        }
        for add in adds
    ]
    if violation is not None:
        rows.append({"violation": violation})
    return rows


def _task_identity() -> tuple[int, int]:
    """(partition id, attempt number) of the running Spark task; (0, 0) outside Spark."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - only without pyspark
        return 0, 0
    context = TaskContext.get()
    if context is None:
        return 0, 0
    return context.partitionId(), context.attemptNumber()


@dataclass(frozen=True)
class RewriteBin:
    """Files of one partition that one task rewrites into one file (compaction).

    Attributes:
        locations: Where each file is, in the table store's notation.
        partition_values: The files' ``partitionValues``, as logged (kept as they are).
    """

    locations: tuple[str, ...]
    partition_values: tuple[tuple[str, str | None], ...]


def rewrite_task(
    plan: TaskPlan, bins: list[RewriteBin], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Rewrite the bins whose indexes arrive in ``batches`` (column ``id``); describe the files.

    Each bin's files are read through the table's store, their columns matched to the table
    schema (by name, case-insensitively; a column a file lacks is null) and written as new
    files of the same partition by the data writer, which gathers their statistics. The plan's
    partition columns must be typed ``string``: partition values are copied as logged.

    Raises:
        SchemaMismatchError: A file's column cannot be cast to the table's type.
        logstores.LogStoreError: Reading or writing a file failed.
    """
    store, _ = open_store(plan.uri, plan.storage_options or None)
    table = StructType.from_json_string(plan.table_schema)
    if plan.column_mapping != "none":  # the files and the data columns use physical names
        table = physical_schema(table)
    target = table.to_arrow()
    if plan.column_mapping == "id":
        target = arrow_with_field_ids(target.remove_metadata(), table)
    data = pa.schema([_plain(target.field(name)) for name in plan.data_columns])

    partitions = StructType.from_json_string(plan.partition_schema)
    names = [f.name for f in partitions.fields]
    columns = [_plain(target.field(name)) for name in plan.data_columns]
    columns += [pa.field(name, pa.string()) for name in names]  # values copied as logged
    written = StructType(tuple(StructField(f.name, type_from_arrow(f.type), True) for f in columns))

    def rows() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column("id").to_pylist():
                one = bins[index]
                for location in one.locations:
                    table = _conform(_read_parquet(store, location), data, location)
                    for name, value in one.partition_values:
                        column = pa.array([value] * table.num_rows, pa.string())
                        table = table.append_column(name, column)
                    yield from table.to_batches()

    # The rows are the table's already (physical names, field ids): no constraints to check,
    # no names to map.
    writer = _task_writer(plan, written, names, {})
    yield pa.RecordBatch.from_pylist(_run(writer, rows()), schema=RESULT_SCHEMA)


def _plain(f: pa.Field) -> pa.Field:
    """``f`` without Delta's field metadata, keeping a Parquet field id."""
    kept = {k: v for k, v in (f.metadata or {}).items() if k == PARQUET_FIELD_ID}
    return pa.field(f.name, f.type, True, kept or None)


def _read_parquet(store: LogStore, location: str) -> pa.Table:
    local = store.local_path(location)
    if local is not None:
        return pq.read_table(local)
    with store.open_input(location) as fh:
        return pq.read_table(fh)


def _conform(table: pa.Table, schema: pa.Schema, location: str) -> pa.Table:
    """``table``'s columns as ``schema`` has them: matched by name, cast, missing ones null."""
    by_lower = {name.lower(): i for i, name in enumerate(table.column_names)}
    columns = []
    for f in schema:
        names = table.column_names
        i = names.index(f.name) if f.name in names else by_lower.get(f.name.lower())
        if i is None:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        column = table.column(i)
        if column.type != f.type:
            # INT96 and nanosecond timestamps become microseconds, as Spark reads them.
            lossy = pa.types.is_timestamp(column.type) and pa.types.is_timestamp(f.type)
            try:
                column = column.cast(f.type, safe=not lossy)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"column {f.name!r} of {location} is {column.type}, which cannot be read "
                    f"as the table's {f.type}: {exc}",
                    path=location,
                ) from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)
