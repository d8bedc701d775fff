"""Rows grouped by partition value, for the data writer: one batch per partition of a batch.

Partition values are serialised as ``partitionValues`` holds them (the protocol's rules, see
:mod:`deltalog.protocol.partitions`); an empty string is written as null, as Spark does. Each
group is taken out of the batch into buffers of its own, so a partition's pending rows never
keep the whole input batch alive.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.protocol.partitions import serialize_partition_value
from deltalog.protocol.schema import StructType

__all__ = ["PartitionKey", "split_by_partition", "utc_timestamps"]

#: Serialised partition values, in partition-column order (``None``: null).
PartitionKey = tuple[str | None, ...]


def split_by_partition(
    batch: pa.RecordBatch,
    columns: list[str],
    schema: StructType,
    cache: dict[Any, str | None] | None = None,
    keep: list[str] | None = None,
) -> Iterator[tuple[PartitionKey, pa.RecordBatch]]:
    """The batch's rows grouped by partition value: ``(serialised values, rows)`` per partition.

    Args:
        batch: Rows holding the partition columns (named as in ``columns``).
        columns: The partition columns, in order.
        schema: Types of the partition columns (``schema.field(name)``).
        cache: Serialised values by ``(column, value)``, kept across calls.
        keep: The columns of the rows yielded (default: all): only these are copied.

    Raises:
        PartitionValueError: A value cannot be serialised (non-UTF-8 binary).
    """
    source = batch if keep is None else batch.select(keep)  # zero-copy
    if not columns:
        yield (), source
        return
    codes = []
    dictionaries = []
    for name in columns:
        encoded = pc.dictionary_encode(batch.column(name), null_encoding="encode")
        codes.append(encoded.indices.to_numpy(zero_copy_only=False))
        dictionaries.append(encoded.dictionary)
    if len(codes) == 1:
        inverse = codes[0]
        groups = np.arange(len(dictionaries[0])).reshape(-1, 1)
    else:
        stacked = np.stack([c.astype(np.int64) for c in codes], axis=1)
        groups, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(groups))
    if np.count_nonzero(counts) == 1:  # one partition: no copy
        g = int(np.flatnonzero(counts)[0])
        yield _key(groups[g], dictionaries, columns, schema, cache), source
        return
    # a stable radix sort when the group numbers fit 16 bits
    small = inverse.astype(np.int16) if len(groups) < 2**15 else inverse
    order = np.argsort(small, kind="stable")
    offsets = np.concatenate(([0], np.cumsum(counts)))
    for g, group in enumerate(groups):
        start, stop = int(offsets[g]), int(offsets[g + 1])
        if start == stop:
            continue
        rows = source.take(pa.array(order[start:stop]))
        yield _key(group, dictionaries, columns, schema, cache), rows


def _key(
    group: Any,
    dictionaries: list[pa.Array],
    columns: list[str],
    schema: StructType,
    cache: dict[Any, str | None] | None,
) -> PartitionKey:
    out = []
    for i, (name, code) in enumerate(zip(columns, group, strict=True)):
        value = dictionaries[i][int(code)].as_py()
        try:
            known = cache is not None and (name, value) in cache
        except TypeError:  # an unhashable value
            known, cache = False, None
        if known:
            assert cache is not None
            out.append(cache[(name, value)])
            continue
        text = _serialize(value, schema, name)
        if cache is not None and len(cache) < 100_000:
            cache[(name, value)] = text
        out.append(text)
    return tuple(out)


def _serialize(value: Any, schema: StructType, name: str) -> str | None:
    text = serialize_partition_value(value, schema.field(name).type)
    return None if text == "" else text  # Spark writes an empty partition value as null


def utc_timestamps(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with timestamps in another time zone relabelled UTC (the same instants)."""
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
