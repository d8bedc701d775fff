"""Which row groups of a Parquet file may hold rows matching a predicate, from their footer.

The same conservative evaluation as for files (:func:`deltalog.stats.skipping.may_match`), on a
table of per-row-group bounds built from the Parquet footer's statistics: ``min.<col>``,
``max.<col>`` and ``null_count.<col>`` of the top-level primitive columns the predicate names
(found by physical name, so column mapping works), ``num_records``, and the file's partition
values as ``partition.<col>``. A row group is kept unless its statistics prove that no row can
match. A column without statistics, absent from the file, of a type whose statistics are not
used (booleans, nested types, INT96 timestamps), or whose statistics do not convert to the
table's type exactly, is unknown, and the row groups are kept.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.arrow import columns as arrow_columns
from deltalog.arrow import values as av
from deltalog.protocol.column_mapping import physical_name
from deltalog.protocol.schema import PrimitiveType, StructType
from deltalog.stats.predicates import Predicate, partition_table
from deltalog.stats.skipping import may_match

__all__ = ["row_groups_to_read"]

#: Python type a statistic must have to be used, by Delta type name.
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "byte": (int,),
    "short": (int,),
    "integer": (int,),
    "long": (int,),
    "float": (float,),
    "double": (float,),
    "string": (str,),
    "date": (dt.date,),
    "timestamp": (dt.datetime,),
    "timestamp_ntz": (dt.datetime,),
}


def row_groups_to_read(
    metadata: pq.FileMetaData,
    predicate: Predicate,
    schema: StructType,
    partition_columns: Sequence[str],
    partition_values: Mapping[str, str | None],
) -> list[int]:
    """The indexes of the row groups that may hold rows matching ``predicate``, ascending.

    Args:
        metadata: The data file's footer.
        predicate: What the rows must match (any columns of the table).
        schema: The table schema.
        partition_columns: The table's partition columns.
        partition_values: The file's partition values (physical or logical names as keys).

    Raises:
        InvalidPredicateError: A literal does not fit its column's type.
    """
    n = metadata.num_row_groups
    if n == 0:
        return []
    leaf = {metadata.schema.column(j).path: j for j in range(metadata.num_columns)}
    groups = [metadata.row_group(i) for i in range(n)]
    arrow = schema.to_arrow()
    columns: dict[str, pa.Array] = {
        "num_records": arrow_columns.column([g.num_rows for g in groups], pa.int64())
    }
    for name in sorted(predicate.columns()):
        field = schema.field(name)
        if name in partition_columns:
            value = partition_values.get(physical_name(field), partition_values.get(name))
            typed = partition_table([{name: value}], schema, [name]).column(name)
            columns[f"partition.{name}"] = pa.repeat(typed[0], n)
            continue
        if not isinstance(field.type, PrimitiveType):
            continue
        wanted = _wanted_type(field.type)
        j = leaf.get(physical_name(field))
        if wanted is None or j is None:
            continue
        arrow_type = arrow.field(name).type
        low, high, nulls = _column_bounds(groups, j, wanted)
        try:
            columns[f"min.{name}"] = _array(low, arrow_type)
            columns[f"max.{name}"] = _array(high, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            continue  # a statistic that does not fit the table's type: unknown
        columns[f"null_count.{name}"] = arrow_columns.column(nulls, pa.int64())
    flat = pa.table(columns)
    keep = may_match(flat, predicate, schema, partition_columns).to_pylist()
    return [i for i in range(n) if keep[i]]


def _array(values: list[Any], t: pa.DataType) -> pa.Array:
    """``pa.array(values, t)`` from scalars built without pyarrow's pandas import."""
    parts = [pa.nulls(1, t) if v is None else pa.repeat(av.scalar(v, t), 1) for v in values]
    return pa.concat_arrays(parts)


def _wanted_type(t: PrimitiveType) -> tuple[type, ...] | None:
    if t.name.startswith("decimal"):
        return (decimal.Decimal,)
    return _PYTHON_TYPES.get(t.name)


def _column_bounds(
    groups: list[Any], j: int, wanted: tuple[type, ...]
) -> tuple[list[Any], list[Any], list[int | None]]:
    """Minimum, maximum and null count of leaf ``j`` in each row group (``None``: unknown)."""
    low: list[Any] = []
    high: list[Any] = []
    nulls: list[int | None] = []
    for group in groups:
        stats = group.column(j).statistics
        if stats is None:
            low.append(None)
            high.append(None)
            nulls.append(None)
            continue
        nulls.append(stats.null_count if stats.has_null_count else None)
        lo = hi = None
        if stats.has_min_max and stats.physical_type != "INT96":
            lo, hi = stats.min, stats.max
            # a date must not be a datetime (a subclass) and a datetime must be one
            if not (_is(lo, wanted) and _is(hi, wanted)):
                lo = hi = None
        low.append(lo)
        high.append(hi)
    return low, high, nulls


def _is(value: object, wanted: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return False
    if wanted == (dt.date,):
        return type(value) is dt.date
    return isinstance(value, wanted)
