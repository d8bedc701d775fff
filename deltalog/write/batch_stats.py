"""File statistics gathered from the rows while they are written (no footer is read back).

A :class:`StatsCollector` follows one data file: every row group the writer encodes is also
passed to :meth:`StatsCollector.update`, which keeps the running null counts and bounds of the
columns statistics cover (:func:`deltalog.stats.file_stats.indexed_leaves`:
``delta.dataSkippingStatsColumns``, else the first ``delta.dataSkippingNumIndexedCols`` leaves;
lists and maps count as one leaf with a null count only). :meth:`StatsCollector.to_json` gives
the ``stats`` string in the layout :mod:`deltalog.stats.stats_json` shares with the footer path.

A nested field is null wherever a struct above it is null, as Parquet stores it. A floating-point
column holding NaN gets no bounds: Spark orders NaN above every number, so no JSON number is an
upper bound.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.protocol.schema import StructType
from deltalog.stats.file_stats import Leaf, indexed_leaves, stat_leaves
from deltalog.stats.stats_json import bounds, set_path, stats_json, string_prefix

__all__ = ["StatsCollector"]


class StatsCollector:
    """Running statistics of one data file.

    Args:
        schema: The table schema (logical; leaves are found by their physical names).
        partition_columns: Left out (they are not in the files).
        configuration: The table properties (which columns, string prefix length).
    """

    def __init__(
        self,
        schema: StructType,
        partition_columns: Sequence[str],
        configuration: Mapping[str, str | None],
    ) -> None:
        self._leaves = indexed_leaves(stat_leaves(schema, partition_columns), configuration)
        self._prefix = string_prefix(configuration)
        self._reset()

    def fresh(self) -> StatsCollector:
        """A collector for another file of the same table (the leaves are worked out once)."""
        other = object.__new__(StatsCollector)
        other._leaves, other._prefix = self._leaves, self._prefix
        other._reset()
        return other

    def _reset(self) -> None:
        self._nulls = [0] * len(self._leaves)
        self._low: list[Any] = [None] * len(self._leaves)
        self._high: list[Any] = [None] * len(self._leaves)
        self._type: list[pa.DataType | None] = [None] * len(self._leaves)
        self._no_bounds = [not leaf.bounds for leaf in self._leaves]
        self.rows = 0

    def update(self, rows: pa.Table | pa.RecordBatch) -> None:
        """Take ``rows`` (physical column names) into account."""
        self.rows += rows.num_rows
        for i, leaf in enumerate(self._leaves):
            column = _leaf_column(rows, leaf)
            if column is None:  # not in the file: every value null
                self._nulls[i] += rows.num_rows
                continue
            self._nulls[i] += column.null_count
            if self._no_bounds[i] or column.null_count == len(column):
                continue
            t = column.type
            if pa.types.is_boolean(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
                self._no_bounds[i] = True
                continue
            if pa.types.is_floating(t) and pc.any(pc.is_nan(column)).as_py():
                self._no_bounds[i] = True
                continue
            extremes = pc.min_max(column)
            low, high = _python(extremes["min"]), _python(extremes["max"])
            self._type[i] = t
            if self._low[i] is None or low < self._low[i]:
                self._low[i] = low
            if self._high[i] is None or high > self._high[i]:
                self._high[i] = high

    def to_json(self) -> str:
        """The ``stats`` JSON of the rows seen so far."""
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for i, leaf in enumerate(self._leaves):
            set_path(nulls, leaf.physical, self._nulls[i])
            t = self._type[i]
            if self._no_bounds[i] or t is None:
                continue
            pair = bounds(self._low[i], self._high[i], t, self._prefix)
            if pair is not None:
                set_path(mins, leaf.physical, pair[0])
                set_path(maxs, leaf.physical, pair[1])
        return stats_json(self.rows, mins, maxs, nulls)


def _python(scalar: pa.Scalar) -> Any:
    """``scalar.as_py()``, but a timestamp built here.

    pyarrow's ``as_py`` of a timestamp with a time zone imports pandas when it is installed
    (~0.2 s in a fresh process); statistics need only the instant, to the microsecond.
    """
    t = scalar.type
    if not pa.types.is_timestamp(t) or not scalar.is_valid:
        return scalar.as_py()
    value = scalar.value
    micros = value // 1000 if t.unit == "ns" else value * _MICROS[t.unit]
    moment = _EPOCH + dt.timedelta(microseconds=micros)
    return moment.replace(tzinfo=dt.UTC) if t.tz is not None else moment


_EPOCH = dt.datetime(1970, 1, 1)
_MICROS = {"s": 1_000_000, "ms": 1000, "us": 1}


def _leaf_column(rows: pa.Table | pa.RecordBatch, leaf: Leaf) -> pa.Array | pa.ChunkedArray | None:
    """The values of ``leaf`` in ``rows``: null wherever a struct above it is null."""
    names = rows.schema.names
    if leaf.physical[0] not in names:
        return None
    column: pa.Array | pa.ChunkedArray = rows.column(names.index(leaf.physical[0]))
    for name in leaf.physical[1:]:
        if isinstance(column, pa.ChunkedArray):
            if not column.num_chunks:
                return None
            children = [_child(chunk, name) for chunk in column.chunks]
            if any(c is None for c in children):
                return None
            column = pa.chunked_array(children)
        else:
            child = _child(column, name)
            if child is None:
                return None
            column = child
    return column


def _child(array: pa.Array, name: str) -> pa.Array | None:
    t = array.type
    if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
        return None
    index = t.get_field_index(name)
    return array.flatten()[index]  # with the struct's nulls
