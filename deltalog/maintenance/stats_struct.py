"""The typed statistics (``add.stats_parsed``) a checkpoint writes beside the JSON ``stats``.

delta-spark 4.x writes every checkpoint's statistics twice by default: as JSON and, typed, as
the ``stats_parsed`` struct (``delta.checkpoint.writeStatsAsStruct``). Readers that have the
struct skip parsing a million JSON strings (deltalog's typed statistics and data skipping
among them, :mod:`deltalog.stats.parsed_stats`). deltalog always writes the JSON, and writes the
struct too when

* the table sets ``delta.checkpoint.writeStatsAsStruct=true``, or
* the property is unset and the checkpoint the snapshot was replayed from carries a struct (a
  table delta-spark 4.x checkpoints keeps it when deltalog checkpoints it).

The struct of a file the previous checkpoint had is carried over; only the statistics logged
since are parsed. Asked for on a table whose checkpoint has no struct, that checkpoint's JSON
is parsed once, batch by batch, and kept with the checkpoint's other lazily read columns, so a
writer's later checkpoints parse only what was committed since the checkpoint it replayed from.
A table with the property ``false``, or unset without such a checkpoint (deltalog's own,
delta-rs's, delta-spark 3.x's), keeps JSON-only checkpoints: parsing every file's JSON (~0.7 s
a million files) would add a cost their checkpoints never had. A V2 checkpoint reuses only
sidecars whose struct is stored as its new ones hold it (:mod:`deltalog.maintenance.sidecar_reuse`).

The struct covers the columns statistics are collected for: ``delta.dataSkippingStatsColumns``
if set, else the first ``delta.dataSkippingNumIndexedCols`` (default 32) leaf columns, by
their physical names. No struct is written where some file's statistics would need a lossy
conversion (:class:`~deltalog.stats.file_stats.UnusableParsedStats`): the JSON alone is always
exact.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.checkpoints.arrow_pool import decode_pool
from deltalog.errors import InvalidSchemaError
from deltalog.log.snapshot import Snapshot
from deltalog.protocol.config import write_stats_as_struct
from deltalog.stats.file_stats import (
    UnusableParsedStats,
    indexed_leaves,
    stat_leaves,
    typed_from_json,
    typed_stats_type,
)

__all__ = ["checkpoint_stats_struct", "indexed_leaves"]


def checkpoint_stats_struct(snapshot: Snapshot, files: pa.Table) -> pa.ChunkedArray | None:
    """The ``stats_parsed`` column for a checkpoint of ``snapshot``, or ``None`` for none.

    Args:
        snapshot: The snapshot being checkpointed.
        files: Its live files with their JSON ``stats`` (``Snapshot.files``).

    Returns:
        One struct per row of ``files`` (null for a file without statistics).
    """
    setting = write_stats_as_struct(snapshot.configuration)
    if setting is False or files.num_rows == 0:
        return None
    # Asked for: the checkpoint's typed statistics, built from its JSON if need be (once per
    # checkpoint a writer replayed from, so a long-lived writer parses only what it added).
    carried = snapshot.parsed_stats() if setting is None else snapshot.typed_stats()
    if carried is None and setting is None:
        return None
    try:
        leaves = indexed_leaves(
            stat_leaves(snapshot.schema, snapshot.partition_columns), snapshot.configuration
        )
        target = typed_stats_type(leaves)
    except (InvalidSchemaError, pa.ArrowException):
        return None
    kept = None if carried is None else _conform_chunked(carried, target)
    stats = files.column("stats")
    n = files.num_rows
    have = pc.is_valid(kept) if kept is not None else None
    missing = av.int_range(0, n) if have is None else pc.indices_nonzero(pc.invert(have))
    tail = _tail_start(missing, n)
    try:
        # Usually the files to parse are the newest, last: a slice, not a take (which copies
        # every chunk of a million statistics strings)
        texts = stats.slice(tail) if tail is not None else stats.take(missing)
        fresh = typed_from_json(texts, leaves) if len(texts) else None
    except (UnusableParsedStats, ArithmeticError, ValueError, pa.ArrowException):
        return None
    if fresh is not None and texts.null_count:
        fresh = _with_nulls(fresh, pc.is_null(texts).combine_chunks())
    return _merge(kept, have, fresh, tail, target)


def _tail_start(missing: pa.Array, n: int) -> int | None:
    """Where ``missing`` (ascending row numbers) starts, when it is every row from there on."""
    start = n - len(missing)
    if not len(missing) or pc.min(missing).as_py() == start:
        return start
    return None


def _with_nulls(array: pa.Array, mask: pa.BooleanArray) -> pa.StructArray:
    """``array`` with the rows ``mask`` marks null (files logged without statistics)."""
    assert isinstance(array, pa.StructArray)
    children = [array.field(i) for i in range(array.type.num_fields)]
    return pa.StructArray.from_arrays(children, fields=list(array.type), mask=mask)


def _merge(
    kept: pa.ChunkedArray | None,
    have: pa.ChunkedArray | None,
    fresh: pa.Array | None,
    tail: int | None,
    target: pa.DataType,
) -> pa.ChunkedArray:
    """``kept`` with its null rows (``have`` false) taken from ``fresh`` in order.

    ``tail``: where those rows start when they are every row from there on.
    """
    if kept is None or have is None:
        return pa.chunked_array([] if fresh is None else [fresh], type=target)
    if fresh is None:
        return kept
    if tail is not None:  # the usual layout: carried rows first, then new files
        return pa.chunked_array([*kept.slice(0, tail).chunks, fresh], type=target)
    n = len(kept)
    # Row i is kept[i] where it has a struct, else the next row of fresh (at n + its rank).
    rank = pc.subtract(pc.cumulative_sum(pc.cast(pc.invert(have), pa.int64())), av.int64(1))
    positions = pc.if_else(have, av.int_range(0, n), pc.add(rank, av.int64(n)))
    both = pa.chunked_array([*kept.chunks, fresh], type=target)
    return both.take(positions)


def _conform_chunked(array: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray | None:
    """``array`` in the ``target`` struct type, field by field by name; ``None`` if it cannot be.

    Fields ``target`` lacks are dropped (``tightBounds``, columns no longer indexed), fields
    ``array`` lacks are null (columns indexed since): unknown statistics, never wrong ones.
    """
    if array.type == target:
        return array
    try:
        chunks = [_conform(chunk, target) for chunk in array.chunks]
    except (pa.ArrowException, TypeError):
        return None
    return pa.chunked_array(chunks, type=target)


def _conform(array: pa.Array, target: pa.DataType) -> pa.Array:
    if array.type == target:
        return array
    if not pa.types.is_struct(target):
        return pc.cast(array, target, memory_pool=decode_pool())
    if not isinstance(array, pa.StructArray):
        raise TypeError(f"{array.type} is not a struct")
    children = []
    for f in target:
        index = array.type.get_field_index(f.name)
        child = array.field(index) if index >= 0 else pa.nulls(len(array), f.type)
        children.append(_conform(child, f.type))
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
