"""Per-file statistics as typed Arrow columns, parsed in bulk from the ``stats`` JSON.

:func:`flatten_stats` turns the ``stats`` column of a files table into the columns delta-rs's
``get_add_actions(flatten=True)`` gives: ``num_records``, then ``null_count.<col>``,
``min.<col>`` and ``max.<col>`` for every leaf column (nested struct fields as ``min.a.b``),
typed from the Delta schema (dates, timestamps, decimals parsed), and ``partition.<col>`` typed
partition values. Names are logical; under column mapping the statistics are looked up by the
physical names the writer used (delta-rs 1.6 names those columns by physical name instead).

All rows are parsed in one pass by ``pyarrow.json`` against a schema derived from the table's;
statistics that pass does not accept (NaN, out-of-range values, a writer's odd encoding) fall back
to a row-by-row parse in which a value that does not fit its column becomes null. ``min``/``max``
columns exist for leaves that carry bounds (not binaries, lists or maps), ``null_count``
for every leaf down to lists and maps, as delta-rs has them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as arrow_values
from deltalog.checkpoints.arrow_pool import decode_pool
from deltalog.checkpoints.nulls import null_array
from deltalog.protocol.config import STATS_COLUMNS, num_indexed_cols
from deltalog.protocol.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructField,
    StructType,
    type_to_arrow,
)
from deltalog.stats.bulk_json import parse_objects
from deltalog.stats.predicates import partition_table

__all__ = [
    "Leaf",
    "UnusableParsedStats",
    "flatten_stats",
    "indexed_leaves",
    "stat_leaves",
    "typed_from_json",
]

PHYSICAL_NAME = "delta.columnMapping.physicalName"
_NO_BOUNDS = ("binary", "void", "variant")
_AS_TEXT = ("date", "timestamp", "timestamp_ntz", "string")
_INT_BITS = {"byte": 8, "short": 16, "integer": 32, "long": 64}


class UnusableParsedStats(Exception):
    """Typed statistics that do not cast to their columns' types: the JSON is used instead."""


@dataclass(frozen=True, slots=True)
class Leaf:
    """A column that statistics describe.

    Attributes:
        path: Logical names from the top-level column down.
        physical: The names the statistics use (column mapping's physical names).
        type: The Delta type.
        bounds: Whether ``minValues``/``maxValues`` can hold it.
    """

    path: tuple[str, ...]
    physical: tuple[str, ...]
    type: DataType
    bounds: bool

    @property
    def name(self) -> str:
        """Dotted logical name, as in ``min.<name>``."""
        return ".".join(self.path)

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type of its ``min``/``max`` columns."""
        return type_to_arrow(self.type)


def _physical(f: StructField) -> str:
    return str(f.metadata.get(PHYSICAL_NAME, f.name))


def stat_leaves(schema: StructType, partition_columns: Sequence[str]) -> list[Leaf]:
    """The leaves of the data columns (partition columns have no statistics), in schema order."""
    out: list[Leaf] = []

    def walk(struct: StructType, path: tuple[str, ...], physical: tuple[str, ...]) -> None:
        for f in struct.fields:
            if not path and f.name in partition_columns:
                continue
            p, q = (*path, f.name), (*physical, _physical(f))
            if isinstance(f.type, StructType):
                walk(f.type, p, q)
            elif isinstance(f.type, DecimalType):
                out.append(Leaf(p, q, f.type, True))
            elif isinstance(f.type, PrimitiveType):
                out.append(Leaf(p, q, f.type, f.type.name not in _NO_BOUNDS))
            else:  # array, map: a null count only
                out.append(Leaf(p, q, f.type, False))

    walk(schema, (), ())
    return out


def indexed_leaves(leaves: list[Leaf], configuration: Mapping[str, str | None]) -> list[Leaf]:
    """The leaves statistics are collected for, as delta-spark chooses them.

    ``delta.dataSkippingStatsColumns`` (comma-separated, dotted for nested fields) if set, else
    the first ``delta.dataSkippingNumIndexedCols`` leaves (``-1``: all).
    """
    named = configuration.get(STATS_COLUMNS)
    if named and named.strip():
        wanted = {n.strip().replace("`", "") for n in named.split(",") if n.strip()}
        return [
            leaf
            for leaf in leaves
            if any(leaf.name == w or leaf.name.startswith(w + ".") for w in wanted)
        ]
    count = num_indexed_cols(configuration)
    return list(leaves) if count < 0 else leaves[:count]


def _json_type(leaf: Leaf, exact_decimals: bool = True) -> pa.DataType:
    """How ``pyarrow.json`` reads a bound: dates/timestamps as text, decimals exact or double."""
    t = leaf.type
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale) if exact_decimals else pa.float64()
    assert isinstance(t, PrimitiveType)
    if t.name in _AS_TEXT:
        return pa.string()
    if t.name in ("float", "double"):
        return pa.float64()
    if t.name == "boolean":
        return pa.bool_()
    return pa.int64()


def _tree(leaves: Sequence[Leaf], value: Callable[[Leaf], Any]) -> dict[str, Any]:
    """``value(leaf)`` at each leaf's physical path, in nested dicts (called in leaf order)."""
    tree: dict[str, Any] = {}
    for leaf in leaves:
        node = tree
        for key in leaf.physical[:-1]:
            node = node.setdefault(key, {})
        node[leaf.physical[-1]] = value(leaf)
    return tree


def _nested(leaves: Sequence[Leaf], leaf_type: Callable[[Leaf], pa.DataType]) -> pa.DataType:
    """A struct type nesting ``leaf_type(leaf)`` at each leaf's physical path."""

    def build(node: dict[str, Any]) -> pa.DataType:
        return pa.struct(
            [pa.field(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()]
        )

    return build(_tree(leaves, leaf_type))


def _bulk_slices(
    stats: pa.ChunkedArray, bounded: list[Leaf], counted: list[Leaf], exact_decimals: bool
) -> pa.Table | None:
    """Parse every row in bulk (:mod:`.bulk_json`); ``None`` when pyarrow's reader refuses some.

    With ``exact_decimals=False`` decimal bounds are read as doubles and rounded to the column's
    scale (writers that log them as doubles, e.g. ``1.1300000000000001``).
    """
    json_type = functools.partial(_json_type, exact_decimals=exact_decimals)
    fields = [pa.field("numRecords", pa.int64())]
    if counted:
        fields.append(pa.field("nullCount", _nested(counted, lambda _: pa.int64())))
    if bounded:
        fields.append(pa.field("minValues", _nested(bounded, json_type)))
        fields.append(pa.field("maxValues", _nested(bounded, json_type)))
    return parse_objects(stats, pa.schema(fields))


def _one(column: pa.ChunkedArray) -> pa.Array:
    """``column.combine_chunks()`` from the decode pool (no copy for one chunk)."""
    if column.num_chunks == 1:
        return column.chunk(0)
    return pa.concat_arrays(column.chunks, memory_pool=decode_pool())


def _field(array: pa.ChunkedArray | None, path: tuple[str, ...]) -> pa.ChunkedArray | None:
    """The child at ``path``, null where any struct on the way is null (chunk by chunk)."""
    for key in path:
        if array is None or not pa.types.is_struct(array.type):
            return None
        index = array.type.get_field_index(key)
        if index < 0:
            return None
        # struct_field applies the parent's validity
        array = pc.struct_field(array, [index], memory_pool=decode_pool())
    return array


def _typed(values: pa.ChunkedArray, leaf: Leaf) -> pa.ChunkedArray | pa.Array:
    """Bounds as read (text for dates and timestamps) converted to the leaf's Arrow type."""
    target = leaf.arrow_type
    if values.type == target:
        return values
    try:
        return pc.cast(values, target, memory_pool=decode_pool())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([_convert(v, leaf) for v in values.to_pylist()], target)


def _convert(value: Any, leaf: Leaf) -> Any:
    """One bound as a Python value of the leaf's type, ``None`` if it does not fit."""
    t = leaf.type
    if value is None or isinstance(value, bool):
        return value if t == PrimitiveType("boolean") else None
    try:
        if isinstance(t, DecimalType):
            d = decimal.Decimal(str(value))
            quantum = decimal.Decimal(1).scaleb(-t.scale)
            if not d.is_finite() or d != d.quantize(quantum) or len(d.as_tuple().digits) > 38:
                return None
            return d
        assert isinstance(t, PrimitiveType)
        if t.name in ("float", "double"):
            return float(value)
        if t.name in _INT_BITS:
            bound = 1 << (_INT_BITS[t.name] - 1)
            return value if isinstance(value, int) and -bound <= value < bound else None
        if t.name == "string":
            return value if isinstance(value, str) else None
        if t.name == "date":
            return dt.date.fromisoformat(str(value)[:10])
        if t.name in ("timestamp", "timestamp_ntz"):
            parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            if t.name == "timestamp":
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=dt.UTC)
                return parsed.astimezone(dt.UTC)
            return parsed.replace(tzinfo=None)
    except (ValueError, TypeError, ArithmeticError):
        return None
    return None


def _slow(stats: pa.Array, bounded: list[Leaf], counted: list[Leaf]) -> pa.Table:
    """Row-by-row parse (accepts NaN and odd values); a value that does not fit is null."""
    rows: list[dict[str, Any]] = []
    for text in stats.to_pylist():
        try:
            obj = json.loads(text) if text else {}
        except ValueError:
            obj = {}
        rows.append(obj if isinstance(obj, dict) else {})

    def pick(obj: Any, path: tuple[str, ...]) -> Any:
        for key in path:
            if not isinstance(obj, dict):
                return None
            obj = obj.get(key)
        return obj

    columns: dict[str, pa.Array] = {
        "numRecords": pa.array([_int(r.get("numRecords")) for r in rows], pa.int64())
    }
    for leaf in counted:
        columns["nullCount." + leaf.name] = pa.array(
            [_int(pick(r.get("nullCount"), leaf.physical)) for r in rows], pa.int64()
        )
    for kind in ("minValues", "maxValues"):
        for leaf in bounded:
            columns[f"{kind}.{leaf.name}"] = pa.array(
                [_convert(pick(r.get(kind), leaf.physical), leaf) for r in rows], leaf.arrow_type
            )
    return pa.table(columns)


def _int(value: Any) -> int | None:
    """A count, ``None`` unless an integer that fits int64."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -(1 << 63) <= value < 1 << 63 else None


def _columns(
    stats: pa.ChunkedArray, leaves: list[Leaf], parsed: pa.ChunkedArray | None = None
) -> Iterator[tuple[str, pa.Array | pa.ChunkedArray]]:
    """The flattened columns; from ``parsed`` (typed statistics) where it has a row.

    Raises:
        UnusableParsedStats: ``parsed`` has a statistic its column's type cannot be cast from.
    """
    if parsed is None:
        yield from _json_columns(stats, leaves)
        return
    try:
        # A list: two leaves can share a dotted name (a column "a.b" and a struct a's b).
        typed = list(_from_parsed(parsed, leaves))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UnusableParsedStats(str(exc)) from exc
    no_json = null_array(pa.string(), 1)[0]  # pa.scalar(None) would import pandas
    pool = decode_pool()
    rest = pc.if_else(pc.is_valid(parsed, memory_pool=pool), no_json, stats, memory_pool=pool)
    if rest.null_count == len(rest):
        yield from typed
        return
    # Both yield the same columns in the same order.
    for (name, column), (_, from_json) in zip(typed, _json_columns(rest, leaves), strict=True):
        yield name, pc.coalesce(column, from_json, memory_pool=pool)


def _from_parsed(
    parsed: pa.ChunkedArray, leaves: list[Leaf]
) -> Iterator[tuple[str, pa.ChunkedArray]]:
    """The flattened columns from typed statistics, cast to each leaf's type."""
    n = len(parsed)
    pool = decode_pool()

    def at(path: tuple[str, ...], target: pa.DataType) -> pa.ChunkedArray:
        column = _field(parsed, path)
        if column is None:
            return pa.chunked_array([null_array(target, n)], type=target)
        return column if column.type == target else pc.cast(column, target, memory_pool=pool)

    yield "num_records", at(("numRecords",), pa.int64())
    for leaf in leaves:
        yield f"null_count.{leaf.name}", at(("nullCount", *leaf.physical), pa.int64())
    for kind, prefix in (("minValues", "min"), ("maxValues", "max")):
        for leaf in leaves:
            if leaf.bounds:
                yield f"{prefix}.{leaf.name}", at((kind, *leaf.physical), leaf.arrow_type)


def _json_columns(
    stats: pa.ChunkedArray, leaves: list[Leaf]
) -> Iterator[tuple[str, pa.Array | pa.ChunkedArray]]:
    bounded = [leaf for leaf in leaves if leaf.bounds]
    table = _bulk_slices(stats, bounded, leaves, exact_decimals=True)
    if table is None and any(isinstance(leaf.type, DecimalType) for leaf in bounded):
        table = _bulk_slices(stats, bounded, leaves, exact_decimals=False)
    if table is None:
        slow = _slow(stats, bounded, leaves)
        yield "num_records", slow.column("numRecords").combine_chunks()
        for leaf in leaves:
            yield f"null_count.{leaf.name}", slow.column(f"nullCount.{leaf.name}").combine_chunks()
        for kind, prefix in (("minValues", "min"), ("maxValues", "max")):
            for leaf in bounded:
                yield f"{prefix}.{leaf.name}", slow.column(f"{kind}.{leaf.name}").combine_chunks()
        return
    yield from _bulk_columns(table, leaves, len(stats))


def _bulk_columns(
    table: pa.Table, leaves: list[Leaf], n: int
) -> Iterator[tuple[str, pa.Array | pa.ChunkedArray]]:
    """The flattened columns of a :func:`_bulk` table: num_records, null counts, mins, maxes."""
    bounded = [leaf for leaf in leaves if leaf.bounds]
    yield "num_records", table.column("numRecords")
    counts = table.column("nullCount") if leaves else None
    for leaf in leaves:
        column = _field(counts, leaf.physical)
        yield (
            f"null_count.{leaf.name}",
            column if column is not None else null_array(pa.int64(), n),
        )
    for kind, prefix in (("minValues", "min"), ("maxValues", "max")):
        bounds = table.column(kind) if bounded else None
        for leaf in bounded:
            column = _field(bounds, leaf.physical)
            assert column is not None
            yield f"{prefix}.{leaf.name}", _typed(column, leaf)


def typed_stats_type(leaves: list[Leaf]) -> pa.StructType:
    """The struct type :func:`typed_from_json` returns for ``leaves``."""
    bounded = [leaf for leaf in leaves if leaf.bounds]
    fields = [pa.field("numRecords", pa.int64())]
    if leaves:
        fields.append(pa.field("nullCount", _nested(leaves, lambda _: pa.int64())))
    for name in ("minValues", "maxValues") if bounded else ():
        fields.append(pa.field(name, _nested(bounded, lambda leaf: leaf.arrow_type)))
    return pa.struct(fields)


def typed_from_json(stats: pa.ChunkedArray, leaves: list[Leaf]) -> pa.StructArray:
    """The ``stats`` JSON of each row as a ``stats_parsed``-shaped struct, typed by ``leaves``.

    ``numRecords``, ``nullCount``, ``minValues`` and ``maxValues`` nest by physical names, as
    a checkpoint's ``stats_parsed`` does, so :func:`flatten_stats` reads either alike. Every row
    is valid; a file without statistics has null fields.

    Raises:
        UnusableParsedStats: Some row needs one of the lossy fallbacks (decimals read as
            doubles, the row-by-row parse), which would apply to every column of the batch:
            the caller parses only the columns it needs instead, as before.
    """
    bounded = [leaf for leaf in leaves if leaf.bounds]
    try:
        table = _bulk_slices(stats, bounded, leaves, exact_decimals=True)
    except ArithmeticError as exc:  # an integer out of range
        raise UnusableParsedStats(str(exc)) from exc
    if table is None:
        raise UnusableParsedStats("statistics that only the lossy fallbacks parse")
    columns = iter(_bulk_columns(table, leaves, len(stats)))

    def array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
        if isinstance(column, pa.ChunkedArray):
            return _one(column) if column.num_chunks else null_array(column.type, 0)
        return column

    def nest(chosen: list[Leaf]) -> pa.StructArray:
        def build(node: dict[str, Any]) -> pa.StructArray:
            children = [build(v) if isinstance(v, dict) else v for v in node.values()]
            return pa.StructArray.from_arrays(children, names=list(node))

        # _tree calls in leaf order, the order _bulk_columns yields the columns in
        return build(_tree(chosen, lambda _: array(next(columns)[1])))

    try:
        children = [array(next(columns)[1])]
        for chosen in (leaves, bounded, bounded):  # nullCount, minValues, maxValues
            if chosen:
                children.append(nest(chosen))
        return pa.StructArray.from_arrays(children, fields=list(typed_stats_type(leaves)))
    except (ArithmeticError, pa.ArrowException) as exc:  # a bound its type cannot hold
        raise UnusableParsedStats(str(exc)) from exc


def flatten_stats(
    files: pa.Table,
    schema: StructType,
    partition_columns: Sequence[str],
    columns: Collection[str] | None = None,
    parsed: pa.ChunkedArray | None = None,
) -> pa.Table:
    """``files`` (with ``stats`` and ``partition_values``) plus the flattened statistics columns.

    Args:
        files: A files table (``Snapshot.files``).
        schema: The table schema, which types the columns.
        partition_columns: The partition columns (``partition.<col>``; no statistics).
        columns: Only these top-level columns (default: all); when they are all partition
            columns, the statistics are not parsed (nor needed: ``files`` may lack ``stats``)
            and ``num_records`` is left out.
        parsed: Typed statistics (a checkpoint's ``stats_parsed``) lined up with ``files``,
            null where a row has none; those rows' ``stats`` JSON is then not parsed (and may
            be null).

    Raises:
        UnusableParsedStats: A value of ``parsed`` does not cast to its column's type (the
            caller retries with the JSON statistics).

    Returns:
        ``files`` with ``num_records``, ``null_count.*``, ``min.*``, ``max.*`` and
        ``partition.*`` appended.
    """
    out = files
    leaves = stat_leaves(schema, partition_columns)
    if columns is not None:
        leaves = [leaf for leaf in leaves if leaf.path[0] in columns]
    if columns is None or leaves:  # only partition columns asked for: no stats to parse
        for name, column in _columns(files.column("stats"), leaves, parsed):
            out = out.append_column(name, column)
    wanted = [c for c in partition_columns if columns is None or c in columns]
    if wanted:
        typed = partition_table(
            _logical_partition_values(files.column("partition_values"), schema, wanted),
            schema,
            wanted,
        )
        for name in wanted:
            out = out.append_column(f"partition.{name}", typed.column(name))
    return out


def _logical_partition_values(
    values: pa.ChunkedArray, schema: StructType, partition_columns: Sequence[str]
) -> pa.ChunkedArray:
    """Partition values keyed by logical names (column mapping writes physical ones)."""
    renames = {
        _physical(schema.field(c)): c for c in partition_columns if _physical(schema.field(c)) != c
    }
    if not renames:
        return values
    chunks = []
    for array in values.chunks:
        if array.offset:  # a slice: rebuilt with its own offsets, validity and children
            array = pa.concat_arrays([array], memory_pool=decode_pool())
        keys = array.keys
        for physical, logical in renames.items():
            hit = pc.equal(keys, arrow_values.string(physical))
            keys = pc.if_else(hit, arrow_values.string(logical), keys)
        mask = array.is_null() if array.null_count else None
        chunks.append(pa.MapArray.from_arrays(array.offsets, keys, array.items, mask=mask))
    return pa.chunked_array(chunks, type=values.type)
