"""The executor side of a Spark write: Arrow batches in, Parquet data files and their stats out.

Each Spark task receives its rows as Arrow record batches (``DataFrame.mapInArrow``), splits
them by partition value, and writes each partition's rows straight into the table directory
under a fresh name (``<col>=<value>/part-<task>-<uuid>.c000.<codec>.parquet``), as delta-spark's
commit protocol does: no staging directory, no rename, nothing visible until the driver commits
the files to the log. Statistics come from the footer of each written file; the task returns
one small row per file, and only those rows travel to the driver.

Nothing here imports Spark: the functions run inside Python workers and are testable alone.
"""

from __future__ import annotations

import dataclasses
import io
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.errors import ConstraintViolationError, SchemaMismatchError
from deltalog.logstores import LogStore, open_store
from deltalog.protocol.column_mapping import (
    PARQUET_FIELD_ID,
    arrow_with_field_ids,
    physical_schema,
    to_physical_batch,
)
from deltalog.protocol.partitions import hive_partition_dir, serialize_partition_value
from deltalog.protocol.paths import encode_path
from deltalog.protocol.schema import StructType
from deltalog.stats.footers import FooterInfo, compute_stats
from deltalog.write.constraints import enforce, has_constraints

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
#: Spark's codec names mapped to pyarrow's, and the infix Spark puts in file names.
CODECS = {
    "snappy": ("snappy", ".snappy"),
    "zstd": ("zstd", ".zstd"),
    "gzip": ("gzip", ".gz"),
    "lz4": ("lz4", ".lz4"),
    "lz4_raw": ("lz4", ".lz4raw"),
    "brotli": ("brotli", ".br"),
    "uncompressed": ("none", ""),
    "none": ("none", ""),
}


@dataclass(frozen=True)
class TaskPlan:
    """Everything a task needs, shipped from the driver (picklable, no Spark objects).

    Attributes:
        uri: The table URI.
        storage_options: Options for the table's store (credentials, endpoints).
        partition_schema: Delta schema JSON of the partition columns, in partition order.
        data_columns: The columns written into the files, in order.
        num_indexed_cols: ``delta.dataSkippingNumIndexedCols``.
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

    A row that breaks a NOT NULL or CHAR/VARCHAR constraint does not fail the task: the task
    stops writing, finishes the files it has open, and returns them with one more row whose
    ``violation`` names the broken constraint. The driver then deletes the files and raises
    ``ConstraintViolationError``. An exception raised inside ``mapInArrow`` reaches the driver
    only through the Python worker's socket, which a busy executor can close first ("Socket
    closed", seen as a plain job failure); a result row always arrives.

    Raises:
        PartitionValueError: A partition value cannot be serialised (non-UTF-8 binary).
        logstores.LogStoreError: Writing a file failed.
    """
    files = _TaskFiles(plan)
    table_schema = StructType.from_json_string(plan.table_schema)
    checked = has_constraints(table_schema)
    partition_schema = StructType.from_json_string(plan.partition_schema)
    columns = [f.name for f in partition_schema.fields]
    violation = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if checked:
            try:
                batch = enforce(batch, table_schema)
            except ConstraintViolationError as exc:
                violation = str(exc)
                break
        if plan.column_mapping != "none":
            batch = to_physical_batch(batch, table_schema, field_ids=plan.column_mapping == "id")
        for key, rows in _split(_utc(batch), columns, partition_schema):
            files.write(columns, key, rows.select(list(plan.data_columns)))
    done = files.close()
    if violation is not None:
        done.append({"violation": violation})
    yield pa.RecordBatch.from_pylist(done, schema=RESULT_SCHEMA)


class _TaskFiles:
    """The data files one task writes: at most ``max_open_files`` open, one per partition."""

    def __init__(self, plan: TaskPlan) -> None:
        task_id, attempt = _task_identity()
        self.plan = plan
        self.store, self.root = open_store(plan.uri, plan.storage_options or None)
        self.open: dict[tuple[str | None, ...], _DataFile] = {}
        self.done: list[dict[str, Any]] = []
        self.prefix = f"part-{task_id:05d}-{uuid.uuid4()}-a{attempt}"
        self.counter = 0

    def write(self, columns: list[str], key: tuple[str | None, ...], data: pa.RecordBatch) -> None:
        """Append one partition's rows, starting new files as files fill up."""
        start = 0
        while start < data.num_rows:
            current = self.open.get(key)
            if current is None:
                if len(self.open) >= self.plan.max_open_files:  # finish the oldest
                    oldest = next(iter(self.open))
                    self.done.append(self.open.pop(oldest).close())
                stem = f"{self.prefix}.c{self.counter:03d}"
                current = _DataFile(self.store, self.root, self.plan, columns, key, stem)
                self.counter += 1
                self.open[key] = current
            take = current.room(data.num_rows - start)
            current.write(data.slice(start, take))
            start += take
            if current.full():
                self.done.append(current.close())
                del self.open[key]

    def close(self) -> list[dict[str, Any]]:
        """Finish the open files; a result row per file written."""
        for current in self.open.values():
            self.done.append(current.close())
        self.open = {}
        return self.done


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


def _utc(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Spark hands timestamps over in the session time zone; they are UTC instants, say so."""
    fields = []
    arrays = []
    changed = False
    for f, array in zip(batch.schema, batch.columns, strict=True):
        if pa.types.is_timestamp(f.type) and f.type.tz is not None and f.type.tz != "UTC":
            target = pa.timestamp(f.type.unit, tz="UTC")
            array = array.cast(target)
            f = f.with_type(target)
            changed = True
        fields.append(f)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)) if changed else batch


def _split(
    batch: pa.RecordBatch, columns: list[str], schema: StructType
) -> Iterator[tuple[tuple[str | None, ...], pa.RecordBatch]]:
    """The batch's rows grouped by partition value: (serialised values, rows) per partition."""
    if not columns:
        yield (), batch
        return
    codes = []
    dictionaries = []
    for name in columns:
        encoded = pc.dictionary_encode(batch.column(name), null_encoding="encode")
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        dictionaries.append(encoded.dictionary)
    groups, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    ordered = batch.take(pa.array(order))
    offsets = np.concatenate(([0], np.cumsum(np.bincount(inverse, minlength=len(groups)))))
    for g, group in enumerate(groups):
        key = tuple(
            _serialize(dictionaries[i][int(code)].as_py(), schema, name)
            for i, (name, code) in enumerate(zip(columns, group, strict=True))
        )
        start, stop = int(offsets[g]), int(offsets[g + 1])
        yield key, ordered.slice(start, stop - start)


def _serialize(value: Any, schema: StructType, name: str) -> str | None:
    text = serialize_partition_value(value, schema.field(name).type)
    return None if text == "" else text  # Spark writes an empty partition value as null


class _DataFile:
    """One data file being written: buffered row groups, then a footer and a result row."""

    def __init__(
        self,
        store: LogStore,
        root: str,
        plan: TaskPlan,
        columns: list[str],
        key: tuple[str | None, ...],
        stem: str,
    ) -> None:
        codec, infix = CODECS[plan.codec]
        values = dict(zip(columns, key, strict=True))
        directory = hive_partition_dir(values)
        name = f"{stem}{infix}.parquet"
        self.relative = f"{directory}/{name}" if directory else name
        self.location = f"{root.rstrip('/')}/{self.relative}"
        self.values = values
        self.plan = plan
        self.store = store
        self.codec = codec
        self.rows = 0
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.writer: pq.ParquetWriter | None = None
        self.collected: list[pq.FileMetaData] = []
        local = store.local_path(self.location)
        if local is not None:
            os.makedirs(os.path.dirname(local), exist_ok=True)
            self.sink: BinaryIO = open(local, "xb")  # noqa: SIM115 - closed in close()
        else:
            self.sink = io.BytesIO()

    def room(self, available: int) -> int:
        """How many of ``available`` rows still fit in this file."""
        limit = self.plan.max_records_per_file
        return available if limit <= 0 else min(available, limit - self.rows)

    def write(self, rows: pa.RecordBatch) -> None:
        self.pending.append(rows)
        self.pending_rows += rows.num_rows
        self.pending_bytes += rows.nbytes
        self.rows += rows.num_rows
        if (
            self.pending_rows >= self.plan.row_group_rows
            or self.pending_bytes >= self.plan.row_group_bytes
        ):
            self._flush()

    def full(self) -> bool:
        limit = self.plan.max_records_per_file
        if limit > 0 and self.rows >= limit:
            return True
        return self.sink.tell() + self.pending_bytes >= self.plan.max_file_bytes

    def _flush(self) -> None:
        if not self.pending:
            return
        table = pa.Table.from_batches(self.pending)
        if self.writer is None:
            self.writer = pq.ParquetWriter(
                self.sink,
                table.schema,
                compression=self.codec,
                metadata_collector=self.collected,
            )
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.pending = []
        self.pending_rows = 0
        self.pending_bytes = 0

    def close(self) -> dict[str, Any]:
        """Finish the file (upload it, for object stores) and describe it."""
        self._flush()
        assert self.writer is not None
        schema = self.writer.schema
        if self.plan.spark_version:
            self.writer.add_key_value_metadata(
                {"org.apache.spark.version": self.plan.spark_version}
            )
        self.writer.close()
        if isinstance(self.sink, io.BytesIO):
            self.store.write(self.location, self.sink.getvalue(), overwrite=False)
        else:
            self.sink.close()
        status = self.store.stat(self.location)
        footer = FooterInfo(schema, self.collected[-1])
        return {
            "path": encode_path(self.relative),
            "partition_values": orjson.dumps(self.values).decode(),
            "size": status.size,
            "modification_time": status.modification_time,
            "stats": compute_stats(footer, self.plan.num_indexed_cols),
            "num_records": self.rows,
        }


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
    files of the same partition by :func:`write_task`, so stats come from the new footers. The
    plan's partition columns must be typed ``string``: partition values are copied as logged.

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

    # The rows are the table's already: no constraints to check again.
    yield from write_task(dataclasses.replace(plan, table_schema=_EMPTY_SCHEMA), rows())


_EMPTY_SCHEMA = '{"type":"struct","fields":[]}'


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
