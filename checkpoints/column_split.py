"""Read one action's columns of a single-row-group checkpoint side by side, one thread each.

delta-rs and delta-spark write a checkpoint as one row group: the row-group split
(:func:`.reader._read_columns`) leaves a single reader, which decodes its columns one after the
other. Here each requested column (``add.path``, ``add.size``, ...) is decoded by its own
thread through the one open file (positional reads, the footer parsed once), batch by batch as
the serial reader would, and the batches are put back together: the same rows, the same
batches, the fields in the file's order.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.logstores.thread_pool import shared_pool

from .arrow_pool import open_parquet

__all__ = ["by_column"]


def by_column(
    pf: pq.ParquetFile,
    groups: list[int],
    columns: list[str],
    action: str,
    shared: pa.NativeFile,
    *,
    batch_rows: int,
    readers: int,
    buffer_size: int,
    valid_rows: Callable[[pa.Array], pa.Array],
) -> list[pa.Table] | None:
    """The rows holding ``action``, one table per batch that has some, as the serial read.

    Args:
        pf: The open checkpoint file.
        groups: The row groups to read.
        columns: ``action.field`` columns to read, two or more.
        action: The action's top-level column.
        shared: The local file ``pf`` reads.
        batch_rows: Rows per batch (the serial read's).
        readers: Threads of the pool.
        buffer_size: Bytes each column is read by (see :func:`.arrow_pool.open_parquet`).
        valid_rows: The rows of a batch that hold the action.

    Returns:
        The tables, or ``None`` when the columns do not line up (the caller reads them serially).
    """
    meta = pf.metadata

    def read(column: str) -> list[pa.Array]:
        own = open_parquet(shared, metadata=meta, pre_buffer=False, buffer_size=buffer_size)
        batches = own.iter_batches(
            batch_size=batch_rows, row_groups=groups, columns=[column], use_threads=False
        )
        return [valid_rows(batch.column(action)) for batch in batches]

    try:
        parts = list(shared_pool("checkpoint-read", readers).map(read, columns))
    except RuntimeError:  # no new threads at interpreter exit
        return None
    order = [f.name for f in pf.schema_arrow.field(action).type]
    parts.sort(key=lambda batches: order.index(_child(batches)) if batches else 0)
    counts = {len(batches) for batches in parts}
    if len(counts) != 1:
        return None
    kept = []
    for pieces in zip(*parts, strict=True):
        if len({len(p) for p in pieces}) != 1:
            return None
        if not len(pieces[0]):
            continue
        fields = [p.type.field(0) for p in pieces]
        rows = pa.StructArray.from_arrays([p.field(0) for p in pieces], fields=fields)
        kept.append(pa.Table.from_arrays([rows], names=[action]))
    return kept


def _child(batches: list[pa.Array]) -> str:
    """The one field a column's struct batches hold."""
    name: str = batches[0].type.field(0).name
    return name
