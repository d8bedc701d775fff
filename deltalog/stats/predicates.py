"""Predicates on partition columns: what a transaction read, evaluated on files' partition values.

A transaction that reads part of a table records the predicate it read with; the conflict checker
later evaluates that predicate on the partition values of files other writers added. Both sides
use :func:`matches`, so "what I read" and "what conflicts with what I read" cannot disagree.

Build predicates with :func:`col`::

    col("date") == "2024-01-01"
    col("region").isin(["eu", "us"]) & (col("day") >= 10)
    (col("y") < 2020) | col("y").is_null()

or pass the shorthand forms :func:`deltalog.stats.predicate_input.as_predicate` accepts: SQL text
such as
``"date = '2024-01-01' AND region IN ('eu', 'us')"`` (see :mod:`deltalog.stats.predicate_sql`),
``{"date": "2024-01-01"}`` (AND of equalities, ``None`` meaning IS NULL), a list of
``(column, op, value)`` tuples (AND), or a list of such lists (OR of ANDs), as in pyarrow's and
delta-rs's filters.

Comparisons follow SQL: values are compared as the column's type (a date as a date, ``10 > 9``
for an int column), and a null partition value makes a comparison unknown, which does not match.
"""

from __future__ import annotations

import abc
import contextlib
import datetime as dt
import decimal
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import columns as arrow_columns
from deltalog.arrow import values as arrow_values
from deltalog.arrow.values import int_range
from deltalog.checkpoints.arrow_pool import decode_pool
from deltalog.checkpoints.nulls import null_array
from deltalog.errors import InvalidPredicateError, PartitionValueError
from deltalog.protocol.column_mapping import physical_name
from deltalog.protocol.partitions import parse_partition_value
from deltalog.protocol.schema import StructType

COMPARE_KERNELS = {
    "=": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}
OPERATOR_ALIASES = {"==": "=", "<>": "!="}


class Predicate(abc.ABC):
    """A boolean expression over partition columns. Combine with ``&``, ``|`` and ``~``."""

    def columns(self) -> set[str]:
        """The column names the predicate refers to."""
        return self._columns()

    @abc.abstractmethod
    def _columns(self) -> set[str]:
        """Implementation of :meth:`columns`."""

    @abc.abstractmethod
    def _mask(self, table: pa.Table) -> pa.Array:
        """Three-valued result per row of a table of typed partition columns."""

    def __and__(self, other: Predicate) -> Predicate:
        return And(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return Or(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)


@dataclass(frozen=True, eq=False)
class _TruePredicate(Predicate):
    def _columns(self) -> set[str]:
        return set()

    def _mask(self, table: pa.Table) -> pa.Array:
        return arrow_values.bools(True, table.num_rows)

    def __str__(self) -> str:
        return "TRUE"


#: The predicate of a whole-table read.
TRUE: Predicate = _TruePredicate()


@dataclass(frozen=True, eq=False)
class Comparison(Predicate):
    """``column <op> value`` with ``op`` one of ``= != < <= > >=``."""

    column: str
    op: str
    value: Any

    def _columns(self) -> set[str]:
        return {self.column}

    def _mask(self, table: pa.Table) -> pa.Array:
        values = table.column(self.column)
        literal = _literal(self.value, values.type, self.column)
        if literal is None:  # comparing with NULL is unknown
            return pa.nulls(table.num_rows, pa.bool_())
        return pc.call_function(COMPARE_KERNELS[self.op], [values, literal])

    def __str__(self) -> str:
        return f"{_name(self.column)} {self.op} {_sql(self.value)}"


@dataclass(frozen=True, eq=False)
class In(Predicate):
    """``column IN (values...)`` (``negated``: ``NOT IN``)."""

    column: str
    values: tuple[Any, ...]
    negated: bool = False

    def _columns(self) -> set[str]:
        return {self.column}

    def _mask(self, table: pa.Table) -> pa.Array:
        values = table.column(self.column)
        literals = [_literal(v, values.type, self.column) for v in self.values]
        present = [v for v in literals if v is not None]
        value_set = (
            pa.concat_arrays([pa.repeat(v, 1) for v in present])
            if present
            else null_array(values.type, 0)
        )
        hit = pc.is_in(values, value_set=value_set)
        # SQL: NULL IN (...) is unknown, and so is "x IN (..., NULL)" when x matched nothing.
        unknown = pc.is_null(values)
        if len(present) < len(literals):
            unknown = pc.or_(unknown, pc.invert(hit))
        hit = pc.if_else(unknown, arrow_values.null(pa.bool_()), hit)
        return pc.invert(hit) if self.negated else hit

    def __str__(self) -> str:
        inner = ", ".join(_sql(v) for v in self.values)
        return f"{_name(self.column)} {'NOT IN' if self.negated else 'IN'} ({inner})"


@dataclass(frozen=True, eq=False)
class IsNull(Predicate):
    """``column IS NULL`` (``negated``: ``IS NOT NULL``)."""

    column: str
    negated: bool = False

    def _columns(self) -> set[str]:
        return {self.column}

    def _mask(self, table: pa.Table) -> pa.Array:
        values = table.column(self.column)
        return pc.is_valid(values) if self.negated else pc.is_null(values)

    def __str__(self) -> str:
        return f"{_name(self.column)} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True, eq=False)
class Like(Predicate):
    """``column LIKE 'pattern'`` (``negated``: ``NOT LIKE``), as in SQL.

    ``%`` matches any characters, ``_`` one, a backslash escapes the next; case-sensitive.
    """

    column: str
    pattern: str
    negated: bool = False

    def _columns(self) -> set[str]:
        return {self.column}

    def _mask(self, table: pa.Table) -> pa.Array:
        values = table.column(self.column)
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            raise InvalidPredicateError(
                f"LIKE needs a string column; {self.column!r} is {values.type}"
            )
        hit = pc.match_like(values, self.pattern)
        return pc.invert(hit) if self.negated else hit

    def __str__(self) -> str:
        return f"{_name(self.column)} {'NOT LIKE' if self.negated else 'LIKE'} {_sql(self.pattern)}"


@dataclass(frozen=True, eq=False)
class And(Predicate):
    """Both sides hold."""

    left: Predicate
    right: Predicate

    def _columns(self) -> set[str]:
        return self.left._columns() | self.right._columns()

    def _mask(self, table: pa.Table) -> pa.Array:
        return pc.and_kleene(self.left._mask(table), self.right._mask(table))

    def __str__(self) -> str:
        return f"({self.left} AND {self.right})"


@dataclass(frozen=True, eq=False)
class Or(Predicate):
    """Either side holds."""

    left: Predicate
    right: Predicate

    def _columns(self) -> set[str]:
        return self.left._columns() | self.right._columns()

    def _mask(self, table: pa.Table) -> pa.Array:
        return pc.or_kleene(self.left._mask(table), self.right._mask(table))

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


@dataclass(frozen=True, eq=False)
class Not(Predicate):
    """The operand does not hold (unknown stays unknown)."""

    operand: Predicate

    def _columns(self) -> set[str]:
        return self.operand._columns()

    def _mask(self, table: pa.Table) -> pa.Array:
        return pc.invert(self.operand._mask(table))

    def __str__(self) -> str:
        return f"NOT {self.operand}"


@dataclass(frozen=True)
class Column:
    """A partition column, to build predicates from: ``col("date") >= "2024-01-01"``."""

    name: str

    def __eq__(self, value: object) -> Predicate:  # type: ignore[override]
        return IsNull(self.name) if value is None else Comparison(self.name, "=", value)

    def __ne__(self, value: object) -> Predicate:  # type: ignore[override]
        return IsNull(self.name, True) if value is None else Comparison(self.name, "!=", value)

    def __lt__(self, value: Any) -> Predicate:
        return Comparison(self.name, "<", value)

    def __le__(self, value: Any) -> Predicate:
        return Comparison(self.name, "<=", value)

    def __gt__(self, value: Any) -> Predicate:
        return Comparison(self.name, ">", value)

    def __ge__(self, value: Any) -> Predicate:
        return Comparison(self.name, ">=", value)

    def __hash__(self) -> int:
        return hash(self.name)

    def isin(self, values: Iterable[Any]) -> Predicate:
        """``column IN (values)``."""
        return In(self.name, tuple(values))

    def not_in(self, values: Iterable[Any]) -> Predicate:
        """``column NOT IN (values)``."""
        return In(self.name, tuple(values), negated=True)

    def between(self, low: Any, high: Any) -> Predicate:
        """``low <= column <= high``."""
        return And(Comparison(self.name, ">=", low), Comparison(self.name, "<=", high))

    def like(self, pattern: str) -> Predicate:
        """``column LIKE pattern`` (``%`` any characters, ``_`` one)."""
        return Like(self.name, pattern)

    def is_null(self) -> Predicate:
        """``column IS NULL``."""
        return IsNull(self.name)

    def is_not_null(self) -> Predicate:
        """``column IS NOT NULL``."""
        return IsNull(self.name, negated=True)


def col(name: str) -> Column:
    """The partition column ``name``, to build a :class:`Predicate` from."""
    return Column(name)


def validate(predicate: Predicate, schema: StructType, partition_columns: Sequence[str]) -> None:
    """Check that the predicate names only partition columns and its literals fit their types.

    Raises:
        InvalidPredicateError: Naming the offending column or value.
    """
    for name in sorted(predicate.columns()):
        if name not in partition_columns:
            raise InvalidPredicateError(
                f"{name!r} is not a partition column (partition columns: "
                f"{list(partition_columns)}); read predicates are evaluated on partition values"
            )
    empty = partition_table([], schema, partition_columns)
    predicate._mask(empty)  # raises on a literal that does not fit its column


def partition_table(
    partition_values: pa.Array | pa.ChunkedArray | Sequence[Mapping[str, str | None]],
    schema: StructType,
    partition_columns: Sequence[str],
) -> pa.Table:
    """A table with one typed column per partition column, one row per file.

    Args:
        partition_values: The files' ``partitionValues``, as an Arrow map column or as dicts.
        schema: The table schema (gives each partition column's type).
        partition_columns: The partition column names.

    Raises:
        PartitionValueError: A value does not parse as its column's type.
    """
    if not isinstance(partition_values, pa.Array | pa.ChunkedArray):
        partition_values = arrow_columns.column(  # (pa.array would import pandas)
            [dict(pv) for pv in partition_values], pa.map_(pa.string(), pa.string())
        )
    # Chunk by chunk, from the decode pool: a million files' values are never copied whole.
    chunks = [
        c
        for c in (
            partition_values.chunks
            if isinstance(partition_values, pa.ChunkedArray)
            else [partition_values]
        )
        if len(c)
    ]
    rows = sum(len(c) for c in chunks)
    pool = decode_pool()
    arrow_schema = schema.to_arrow()
    columns: dict[str, pa.ChunkedArray] = {}
    for name in partition_columns:
        delta_type = schema.field(name).type
        arrow_type = arrow_schema.field(name).type
        key = physical_name(schema.field(name))
        texts = []
        for chunk in chunks:
            text = map_value(chunk, key)
            if key != name:  # column mapping: physical key, or the logical one (already mapped)
                text = pc.coalesce(text, map_value(chunk, name), memory_pool=pool)
            texts.append(text)
        text_column = pa.chunked_array(texts, type=pa.string())
        distinct = pc.unique(text_column, memory_pool=pool)
        parsed = [parse_partition_value(v, delta_type) for v in distinct.to_pylist()]
        positions = pc.index_in(text_column, value_set=distinct, memory_pool=pool)
        columns[name] = pc.take(_array(parsed, arrow_type), positions, memory_pool=pool)
    if not columns:
        return pa.table({"_": null_array(pa.bool_(), rows)})
    return pa.table(columns)


def _array(values: list[Any], t: pa.DataType) -> pa.Array:
    """``pa.array(values, t)``, buffer-built for the types that can be (no pandas import)."""
    if pa.types.is_string(t) or pa.types.is_int64(t) or pa.types.is_int32(t):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            return arrow_columns.column(values, t)
    return pa.array(values, t)


#: Most keys per map :func:`map_value` reads by position.
_FIXED_KEYS = 8


def map_value(values: pa.MapArray, key: str) -> pa.Array:
    """The value of ``key`` in each map (its first occurrence; null where it has none).

    ``pc.map_lookup`` searches every map: 0.3 s for a million. Partition values usually hold
    the same keys in the same order in every row; then the values are read by position.
    """
    by_position = _fixed_keys(values)
    if by_position is not None:
        keys, items, width = by_position
        found = [i for i in range(width) if keys[i].as_py() == key]
        if not found:
            return null_array(pa.string(), len(values))
        if width == 1:
            return items
        return pc.take(items, int_range(found[0], len(items), width), memory_pool=decode_pool())
    return pc.map_lookup(values, arrow_values.string(key), "first", memory_pool=decode_pool())


def _fixed_keys(values: pa.MapArray) -> tuple[pa.Array, pa.Array, int] | None:
    """``(keys, items, width)`` when every map holds ``width`` keys, the same in each row."""
    n = len(values)
    if not n or values.null_count or not pa.types.is_string(values.type.key_type):
        return None
    offsets = values.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    width, rest = divmod(end - start, n)
    if rest or not 0 < width <= _FIXED_KEYS:
        return None
    keys, items = values.keys, values.items
    if len(keys) != end - start:  # the children of a sliced map array are not sliced
        keys, items = keys.slice(start, end - start), items.slice(start, end - start)
    steps = pc.subtract(offsets.slice(1), offsets.slice(0, n))
    if not pc.all(pc.equal(steps, arrow_values.int64(width))).as_py():
        return None
    names = [keys[i] for i in range(width)]
    if len({k.as_py() for k in names}) != width:
        return None  # a key twice: "first" occurrence semantics, left to map_lookup
    for i, name in enumerate(names):
        column = keys if width == 1 else keys.take(int_range(i, len(keys), width))
        if not pc.all(pc.equal(column, name)).as_py():
            return None
    return keys, items, width


def matches(predicate: Predicate, table: pa.Table) -> pa.Array:
    """Which rows of a :func:`partition_table` the predicate is true for (unknown is false)."""
    if predicate is TRUE:
        return arrow_values.bools(True, table.num_rows)
    mask = predicate._mask(table)
    if isinstance(mask, pa.ChunkedArray):
        # (combine_chunks of no chunks builds an array from a Python list: imports pandas)
        mask = mask.combine_chunks() if mask.num_chunks else arrow_values.bools(False, 0)
    return pc.fill_null(mask, arrow_values.false())


def literal_for(value: Any, arrow_type: pa.DataType, column: str) -> pa.Scalar | None:
    """``value`` as a scalar of ``arrow_type`` (``None`` for NULL), parsed as :func:`matches` does.

    Raises:
        InvalidPredicateError: The value does not fit the column's type.
    """
    return _literal(value, arrow_type, column)


def _literal(value: Any, arrow_type: pa.DataType, column: str) -> pa.Scalar | None:
    """``value`` as a scalar of the column's type; strings parse as serialised partition values."""
    if value is None:
        return None
    try:
        if isinstance(value, str) and not pa.types.is_string(arrow_type):
            return arrow_values.scalar(_parse_text(value, arrow_type), arrow_type)
        scalar = arrow_values.scalar(value, arrow_type)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        PartitionValueError,
        TypeError,
        OverflowError,
    ) as exc:
        raise InvalidPredicateError(
            f"{value!r} cannot be compared with partition column {column!r} of type {arrow_type}"
        ) from exc
    if not _same(scalar.as_py(), value):  # e.g. 1.5 on an int column, a datetime on a date
        raise InvalidPredicateError(
            f"{value!r} is not a value of partition column {column!r} ({arrow_type}); "
            "converting it would change it"
        )
    return scalar


def _same(converted: Any, given: Any) -> bool:
    if type(given) is dt.datetime and type(converted) is dt.datetime:
        if given.tzinfo is None and converted.tzinfo is not None:
            given = given.replace(tzinfo=dt.UTC)
        return bool(converted == given)
    if isinstance(given, dt.datetime) != isinstance(converted, dt.datetime):
        return False
    return bool(converted == given)


def _parse_text(text: str, arrow_type: pa.DataType) -> Any:
    """Parse a literal given as text with the same rules as partition values."""
    delta = StructType.from_arrow(pa.schema([pa.field("v", arrow_type)])).field("v").type
    return parse_partition_value(text, delta)


_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = {"and", "or", "not", "in", "is", "null", "between", "like", "true", "false"}


def _name(column: str) -> str:
    """A column name as SQL: backquoted unless it is a plain identifier."""
    if _PLAIN_NAME.match(column) and column.lower() not in _RESERVED:
        return column
    return "`" + column.replace("`", "``") + "`"


def _sql(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date):
        return f"'{value.isoformat()}'"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    text = str(value).replace("'", "''")
    return f"'{text}'"
