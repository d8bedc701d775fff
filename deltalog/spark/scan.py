"""The executor side of a Spark read: file descriptors in, the files' live rows out.

``deltalog.spark.read`` hands Spark a small DataFrame of the snapshot's live files, one row per
file (:data:`FILES_DDL`: its path, partition values and deletion-vector descriptor as JSON), and
maps it with ``mapInArrow`` through :func:`scan_task`: each task opens the table's store and
reads its files with deltalog's own per-file reader (:func:`deltalog.read.read_file`: column
mapping at every level, partition values typed, deletion vectors applied), then yields the rows
as record batches of the read's Arrow schema. Only descriptors travel from the driver; the rows
are read where they are used.

Nothing here imports Spark: the functions run inside Python workers and are testable alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from deltalog.log.storage import TableStorage
from deltalog.protocol.schema import StructType
from deltalog.read import read_file

#: Spark DDL of the file descriptors a read maps over.
FILES_DDL = "path string, partition_values string, deletion_vector string"


@dataclass(frozen=True)
class ScanPlan:
    """What a read task needs, shipped from the driver (picklable, no Spark objects).

    Attributes:
        uri: The table URI.
        storage_options: Options for the table's store (credentials, endpoints).
        table_schema: Delta schema JSON of the table at the version read.
        partition_columns: The table's partition columns (logical names).
        columns: The columns read (logical names, in table order).
        batch_rows: Most rows per record batch yielded.
    """

    uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)  # secrets
    table_schema: str = '{"type":"struct","fields":[]}'
    partition_columns: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    batch_rows: int = 10_000


def describe_files(files: pa.Table) -> list[tuple[str, str, str | None]]:
    """One :data:`FILES_DDL` row per file of ``files`` (rows of ``snapshot.files``)."""
    out: list[tuple[str, str, str | None]] = []
    for row in files.select(["path", "partition_values", "deletion_vector"]).to_pylist():
        values = dict(row["partition_values"] or [])
        dv = row["deletion_vector"]
        out.append(
            (
                row["path"],
                orjson.dumps(values).decode(),
                None if dv is None else orjson.dumps(dv).decode(),
            )
        )
    return out


def scan_task(plan: ScanPlan, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Read the files a task was given; yield their live rows in ``plan.columns``.

    Raises:
        MissingDataFileError: A data or deletion-vector file the log names is gone.
        DeletionVectorError: A deletion vector does not decode.
        StorageError: A file cannot be read.
    """
    storage = TableStorage.open(plan.uri, plan.storage_options)
    schema = StructType.from_json_string(plan.table_schema)
    partition_columns = list(plan.partition_columns)
    for batch in batches:
        for row in batch.to_pylist():
            rows = read_file(storage, schema, partition_columns, _file(row), columns=plan.columns)
            yield from rows.combine_chunks().to_batches(max_chunksize=plan.batch_rows)


def _file(row: dict[str, Any]) -> dict[str, Any]:
    dv = row["deletion_vector"]
    return {
        "path": row["path"],
        "partition_values": orjson.loads(row["partition_values"]),
        "deletion_vector": None if dv is None else orjson.loads(dv),
    }
