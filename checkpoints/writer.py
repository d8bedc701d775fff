"""Write a classic V1 checkpoint and the ``_last_checkpoint`` pointer.

The Parquet file has delta-spark's top-level columns (``txn``, ``add``, ``remove``, ``metaData``,
``protocol``, ``domainMetadata``), one action per row. File actions arrive as Arrow tables and are
placed into their struct columns without a round trip through Python objects.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from checkpoints.checksum import json_checksum
from checkpoints.errors import CheckpointFormatError
from checkpoints.last_checkpoint import LastCheckpoint, parse_last_checkpoint
from checkpoints.schema import ADD, REMOVE, classic_schema
from logstores import FileAlreadyExistsError, LogFileNotFoundError, LogStore

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
    """

    version: int
    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    adds: pa.Table | None = None
    removes: pa.Table | None = None


def _struct_from_table(table: pa.Table | None, target: pa.StructType) -> pa.StructArray:
    if table is None or table.num_rows == 0:
        return pa.array([], type=target)
    n = table.num_rows
    children = []
    for f in target:
        if f.name in table.column_names:
            children.append(table.column(f.name).combine_chunks().cast(f.type))
        else:
            children.append(pa.nulls(n, f.type))
    return pa.StructArray.from_arrays(children, fields=list(target))


def _section(schema: pa.Schema, n: int, column: str | None, values: pa.Array | None) -> pa.Table:
    """``n`` rows where only ``column`` holds ``values`` and every other action column is null."""
    arrays = [
        values if f.name == column and values is not None else pa.nulls(n, f.type) for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def checkpoint_sections(content: CheckpointContent) -> list[pa.Table]:
    """The checkpoint's rows in delta-spark's classic schema, as three tables.

    Non-file actions, adds and removes are kept apart so that each lands in its own row groups
    and no table of a million adds is copied to be concatenated.
    """
    schema = classic_schema()
    small = content.actions
    columns = []
    for f in schema:
        values = [body if name == f.name else None for name, body in small]
        try:
            columns.append(pa.array(values, type=f.type))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise CheckpointFormatError(f"invalid {f.name} action: {exc}") from exc
    sections = [pa.Table.from_arrays(columns, schema=schema)]
    adds = _struct_from_table(content.adds, ADD)
    removes = _struct_from_table(content.removes, REMOVE)
    sections.append(_section(schema, len(adds), "add", adds))
    sections.append(_section(schema, len(removes), "remove", removes))
    return [t for t in sections if t.num_rows]


def build_checkpoint_table(content: CheckpointContent) -> pa.Table:
    """The whole checkpoint as one Arrow table (for inspection and tests)."""
    sections = checkpoint_sections(content)
    return pa.concat_tables(sections) if sections else classic_schema().empty_table()


ROW_GROUP_ROWS = 128 * 1024


def _to_parquet(sections: list[pa.Table]) -> bytes:
    """Parquet bytes with non-file actions, adds and removes in separate row groups.

    Readers then skip whole row groups by their statistics: listing files never touches the
    metadata columns, and loading metadata never touches a million ``add`` rows.
    """
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, classic_schema(), compression="snappy") as writer:
        for section in sections:
            writer.write_table(section, row_group_size=ROW_GROUP_ROWS)
    return sink.getvalue()


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
    sections = checkpoint_sections(content)
    num_rows = sum(t.num_rows for t in sections)
    data = _to_parquet(sections)
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
    pointer["checksum"] = json_checksum(pointer)
    last = LastCheckpoint(
        version=content.version,
        size=num_rows,
        size_in_bytes=data_size,
        num_of_add_files=n_add,
        extra={"checksum": pointer["checksum"]},
    )
    pointer_path = LogStore.join(log_path, LAST_CHECKPOINT)
    try:
        current = parse_last_checkpoint(store.read(pointer_path))
        if current.version >= content.version:
            return last
    except (LogFileNotFoundError, CheckpointFormatError):
        pass
    store.write(pointer_path, orjson.dumps(pointer), overwrite=True)
    return last


def checkpoint_file_names(version: int) -> Sequence[str]:
    """Names of the files :func:`write_checkpoint` creates for ``version``."""
    return (_checkpoint_name(version), LAST_CHECKPOINT)
