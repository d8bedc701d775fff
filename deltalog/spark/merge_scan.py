"""The executor side of a Spark MERGE's target scan: live rows with where they sit.

A MERGE must know, for every target row it joins, which data file holds it and at which
position (a deletion vector names rows by position; a copy-on-write rewrite names the files to
rewrite). :func:`positions_task` reads the files whose descriptors arrive (the rows of
:data:`deltalog.spark.scan.FILES_DDL`) with deltalog's per-file reader
(:func:`deltalog.read.read_file_positions` semantics: deletion vectors applied, partition values
typed, column mapping resolved) and yields each live row with three more columns:
:data:`FILE_COLUMN` (the file's path as logged), :data:`POSITION_COLUMN` (the row's index in
the data file) and :data:`PHYSICAL_COLUMN` (the data file's row count, which a new deletion
vector needs).

Nothing here imports Spark: the function runs inside Python workers and is testable alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson
import pyarrow as pa

from deltalog.log.storage import TableStorage
from deltalog.protocol.schema import StructType
from deltalog.spark.scan import ScanPlan

__all__ = [
    "FILE_COLUMN",
    "PHYSICAL_COLUMN",
    "POSITION_COLUMN",
    "PositionsPlan",
    "positions_task",
]

#: The data file a target row is in (its path as the log names it).
FILE_COLUMN = "__deltalog_merge_file"
#: The target row's index in its data file.
POSITION_COLUMN = "__deltalog_merge_pos"
#: The number of rows in the target row's data file.
PHYSICAL_COLUMN = "__deltalog_merge_rows"


#: What a positions task needs: the same as a read task's plan.
PositionsPlan = ScanPlan


def positions_task(
    plan: PositionsPlan, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Read the files a task was given; yield their live rows and where each sits.

    Raises:
        MissingDataFileError: A data or deletion-vector file the log names is gone.
        DeletionVectorError: A deletion vector does not decode.
        StorageError: A file cannot be read.
    """
    from deltalog.read import _read_positions

    storage = TableStorage.open(plan.uri, plan.storage_options or None)
    schema = StructType.from_json_string(plan.table_schema)
    wanted = set(plan.columns)
    target = pa.schema([f.remove_metadata() for f in schema.to_arrow() if f.name in wanted])
    partition_columns = list(plan.partition_columns)
    for batch in batches:
        for row in batch.to_pylist():
            found = _read_positions(storage, schema, partition_columns, target, _file(row))
            rows = found.rows
            count = rows.num_rows
            rows = rows.append_column(FILE_COLUMN, pa.array([row["path"]] * count, pa.string()))
            rows = rows.append_column(POSITION_COLUMN, found.positions.cast(pa.int64()))
            rows = rows.append_column(
                PHYSICAL_COLUMN, pa.array([found.physical_rows] * count, pa.int64())
            )
            yield from rows.combine_chunks().to_batches(max_chunksize=plan.batch_rows)


def _file(row: dict[str, Any]) -> dict[str, Any]:
    dv = row["deletion_vector"]
    return {
        "path": row["path"],
        "partition_values": orjson.loads(row["partition_values"]),
        "deletion_vector": None if dv is None else orjson.loads(dv),
    }
