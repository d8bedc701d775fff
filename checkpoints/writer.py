"""Write a classic V1 checkpoint and the ``_last_checkpoint`` pointer.

The Parquet file has delta-spark's top-level columns (``txn``, ``add``, ``remove``, ``metaData``,
``protocol``, ``domainMetadata``), one action per row. File actions arrive as Arrow tables and are
placed into their struct columns without a round trip through Python objects.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.logstores import FileAlreadyExistsError, LogFileNotFoundError, LogStore

from .checksum import json_checksum
from .errors import CheckpointFormatError
from .json_rows import action_rows
from .last_checkpoint import LastCheckpoint, parse_last_checkpoint
from .schema import (
    REMOVE,
    STATS_PARSED,
    classic_schema,
    statistics_leaves,
    with_stats_parsed,
)

LAST_CHECKPOINT = "_last_checkpoint"


@dataclass(slots=True)
class CheckpointContent:
    """Everything a checkpoint of ``version`` holds.

    Attributes:
        version: The table version it represents.
        actions: Non-file actions as ``(name, JSON body)``: protocol, metaData, txn,
            domainMetadata.
        adds: ``add`` rows with camelCase columns from :data:`checkpoints.schema.ADD`.
        removes: Unexpired ``remove`` tombstones, columns from :data:`checkpoints.schema.REMOVE`.
            ``adds`` may also hold typed statistics in a ``stats_parsed`` column.
    """

    version: int
    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    adds: pa.Table | None = None
    removes: pa.Table | None = None

    @property
    def stats_type(self) -> pa.DataType | None:
        """The type of the adds' ``stats_parsed`` column, ``None`` when they have none."""
        if self.adds is None or STATS_PARSED not in self.adds.column_names:
            return None
        return self.adds.schema.field(STATS_PARSED).type

    @property
    def add_type(self) -> pa.StructType:
        """The ``add`` column's struct type (:func:`checkpoints.schema.with_stats_parsed`)."""
        return with_stats_parsed(self.stats_type)


def _struct_column(table: pa.Table, target: pa.StructType) -> pa.ChunkedArray:
    """The rows of ``table`` as a ``target`` struct column, without copying them.

    ``table.to_batches()`` cuts its columns at common boundaries by slicing, so each batch
    becomes a struct chunk of views; fields ``table`` lacks are null.
    """
    chunks = []
    for batch in table.to_batches():
        n = batch.num_rows
        children = [
            batch.column(f.name).cast(f.type)
            if f.name in batch.schema.names
            else pa.nulls(n, f.type)
            for f in target
        ]
        chunks.append(pa.StructArray.from_arrays(children, fields=list(target)))
    return pa.chunked_array(chunks, type=target)


ROW_GROUP_ROWS = 128 * 1024


def _batches(
    schema: pa.Schema, column: str, rows: pa.Table | None, target: pa.StructType
) -> Iterator[pa.Table]:
    """Row-group-sized tables where only ``column`` holds ``rows``, other columns null.

    The null columns are allocated once and shared by every batch, and each batch's ``column``
    is made of views of ``rows`` (see :func:`_struct_column`).
    """
    if rows is None or rows.num_rows == 0:
        return
    n = rows.num_rows
    size = min(n, ROW_GROUP_ROWS)
    nulls = {f.name: pa.nulls(size, f.type) for f in schema if f.name != column}
    for start in range(0, n, ROW_GROUP_ROWS):
        part = _struct_column(rows.slice(start, ROW_GROUP_ROWS), target)
        length = len(part)
        arrays = [part if f.name == column else nulls[f.name].slice(0, length) for f in schema]
        yield pa.Table.from_arrays(arrays, schema=schema)


def checkpoint_sections(content: CheckpointContent) -> Iterator[pa.Table]:
    """The checkpoint's rows in delta-spark's classic schema, one row group's worth at a time.

    Non-file actions come first, then adds, then removes, each in their own row groups, so
    that a reader can skip what it does not need and no table of a million adds is copied.
    """
    schema = classic_schema(content.add_type)
    small = content.actions
    if small:
        try:
            yield action_rows(schema, small)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise CheckpointFormatError(f"invalid action in checkpoint: {exc}") from exc
    yield from _batches(schema, "add", content.adds, content.add_type)
    yield from _batches(schema, "remove", content.removes, REMOVE)


def _to_parquet(sections: Iterable[pa.Table], schema: pa.Schema | None = None) -> tuple[bytes, int]:
    """Parquet bytes (and row count) with each section written as its own row group.

    Readers then skip whole row groups by their statistics: listing files never touches the
    metadata columns, and loading metadata never touches a million ``add`` rows.
    """
    sink = io.BytesIO()
    rows = 0
    schema = classic_schema() if schema is None else schema
    with pq.ParquetWriter(
        sink,
        schema,
        compression="snappy",
        # Readers prune row groups, and skip columns null throughout, by these null counts.
        write_statistics=statistics_leaves(schema),
        # Only partition keys and values repeat enough for dictionaries to pay off.
        use_dictionary=["add.partitionValues.key_value.key", "add.partitionValues.key_value.value"],
    ) as writer:
        for section in sections:
            writer.write_table(section, row_group_size=ROW_GROUP_ROWS)
            rows += section.num_rows
    return sink.getvalue(), rows


def _checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


def write_checkpoint(store: LogStore, log_path: str, content: CheckpointContent) -> LastCheckpoint:
    """Write ``<version>.checkpoint.parquet`` and then point ``_last_checkpoint`` at it.

    The Parquet file is published with create-if-absent: if another writer already wrote the
    same checkpoint, theirs is kept. ``_last_checkpoint`` is only ever moved forward.

    Returns:
        What was written to ``_last_checkpoint`` (or would have been, if it was newer already).

    Raises:
        CheckpointFormatError: The content cannot be laid out in the checkpoint schema.
        LogStoreError: The store failed.
    """
    data, num_rows = _to_parquet(checkpoint_sections(content), classic_schema(content.add_type))
    path = LogStore.join(log_path, _checkpoint_name(content.version))
    try:
        store.write(path, data, overwrite=False)
    except FileAlreadyExistsError:
        data_size = store.stat(path).size
    else:
        data_size = len(data)
    n_add = content.adds.num_rows if content.adds is not None else 0
    pointer: dict[str, Any] = {
        "version": content.version,
        "size": num_rows,
        "sizeInBytes": data_size,
        "numOfAddFiles": n_add,
    }
    return publish_pointer(store, log_path, pointer)


def publish_pointer(store: LogStore, log_path: str, pointer: dict[str, Any]) -> LastCheckpoint:
    """Write ``pointer`` (with its checksum) to ``_last_checkpoint`` unless that is newer.

    Returns:
        ``pointer`` as a :class:`LastCheckpoint`, whether or not it was written.

    Raises:
        LogStoreError: The store failed.
    """
    pointer["checksum"] = json_checksum(pointer)
    known = {"version", "size", "sizeInBytes", "numOfAddFiles"}
    last = LastCheckpoint(
        version=pointer["version"],
        size=pointer.get("size"),
        size_in_bytes=pointer.get("sizeInBytes"),
        num_of_add_files=pointer.get("numOfAddFiles"),
        extra={k: v for k, v in pointer.items() if k not in known},
    )
    pointer_path = LogStore.join(log_path, LAST_CHECKPOINT)
    try:
        current = parse_last_checkpoint(store.read(pointer_path))
        if current.version >= last.version:
            return last
    except (LogFileNotFoundError, CheckpointFormatError):
        pass
    store.write(pointer_path, orjson.dumps(pointer), overwrite=True)
    return last
