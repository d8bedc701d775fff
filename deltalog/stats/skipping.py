"""Which files may hold rows matching a predicate: partition values and min/max/null counts.

:func:`may_match` keeps a file unless what the log says about it proves that no row can satisfy
the predicate: its partition values, or the ``minValues``/``maxValues``/``nullCount`` of its
statistics (flattened by :mod:`deltalog.stats.file_stats`). A file without statistics, or a column
without bounds, is kept. The answer is conservative (a kept file may hold no matching row) and
three-valued logic is respected: for every predicate node both "some row may make it true" and
"some row may make it false" are derived, so ``NOT`` and ``NOT IN`` are pruned soundly.

Bounds are widened where writers lose precision: a timestamp maximum is truncated to
milliseconds, so it stands for anything up to 999 µs later; a string maximum of 32 or more
characters may be a truncated prefix and is not used; floating-point maxima are not used
(NaN sorts above every number in Spark and is not in the bounds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.protocol.schema import PrimitiveType, StructType
from deltalog.stats.file_stats import flatten_stats
from deltalog.stats.predicates import (
    TRUE,
    And,
    Comparison,
    In,
    IsNull,
    Not,
    Or,
    Predicate,
    literal_for,
)

__all__ = ["may_match", "prune_files", "prune_mask"]

_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True, slots=True)
class _Bounds:
    """What is known about one column in every file; a null entry means "not known"."""

    low: pa.Array  # every non-null value is >= low
    high: pa.Array  # every non-null value is <= high
    all_null: pa.Array  # every value is null
    any_null: pa.Array  # some value is null


def _unknown(n: int) -> pa.Array:
    return pa.nulls(n, pa.bool_())


def _known_true(mask: pa.Array) -> pa.Array:
    return pc.fill_null(mask, False)


def _maybe(mask: pa.Array) -> pa.Array:
    """Unknown counts as "may"."""
    return pc.fill_null(mask, av.true())


class _Evaluator:
    def __init__(self, flat: pa.Table, schema: StructType, partition_columns: Sequence[str]):
        self.flat = flat
        self.schema = schema
        self.partition_columns = list(partition_columns)
        self.n = flat.num_rows
        self._cache: dict[str, _Bounds | None] = {}

    def bounds(self, column: str) -> _Bounds | None:
        if column not in self._cache:
            self._cache[column] = self._bounds(column)
        return self._cache[column]

    def _bounds(self, column: str) -> _Bounds | None:
        flat = self.flat
        if column in self.partition_columns:
            value = flat.column(f"partition.{column}").combine_chunks()
            null = pc.is_null(value)
            return _Bounds(value, value, null, null)
        if f"min.{column}" not in flat.column_names:
            return None  # a struct, list, map or boolean column: no usable bounds
        t = self.schema.field(column).type
        low = flat.column(f"min.{column}").combine_chunks()
        high = flat.column(f"max.{column}").combine_chunks()
        if pa.types.is_floating(high.type):
            # compared in double, as Spark compares a float column with a decimal literal
            high = pa.nulls(self.n, pa.float64())
            low = pc.cast(pc.if_else(pc.is_nan(low), av.null(low.type), low), pa.float64())
        elif pa.types.is_string(high.type):
            high = pc.if_else(
                pc.greater_equal(pc.utf8_length(high), av.int64(32)), av.null(high.type), high
            )
        elif t in (PrimitiveType("timestamp"), PrimitiveType("timestamp_ntz")):
            high = pc.add(high, av.duration_us(999))
        records = flat.column("num_records").combine_chunks()
        nulls = flat.column(f"null_count.{column}").combine_chunks()
        all_null = pc.equal(nulls, records)
        any_null = pc.greater(nulls, av.int64(0))
        return _Bounds(low, high, all_null, any_null)

    # ------------------------------------------------------------------ three-valued pruning
    def may(self, p: Predicate, want: bool) -> pa.Array:
        """Per file: some row may make ``p`` evaluate to ``want`` (never null)."""
        if p is TRUE:
            return av.bools(want, self.n)
        if isinstance(p, Not):
            return self.may(p.operand, not want)
        if isinstance(p, And):
            left, right = self.may(p.left, want), self.may(p.right, want)
            return pc.and_(left, right) if want else pc.or_(left, right)
        if isinstance(p, Or):
            left, right = self.may(p.left, want), self.may(p.right, want)
            return pc.or_(left, right) if want else pc.and_(left, right)
        if isinstance(p, IsNull):
            b = self.bounds(p.column)
            if b is None:
                return av.bools(True, self.n)
            is_null_wanted = want != p.negated
            if is_null_wanted:
                return _maybe(b.any_null)
            return _maybe(pc.invert(b.all_null))
        if isinstance(p, Comparison):
            return self.compare(p.column, p.op if want else _NEGATED[p.op], p.value)
        if isinstance(p, In):
            true_side = want != p.negated  # want "column IN values" to be true
            if true_side:
                return self._any([self.compare(p.column, "=", v) for v in p.values], self.n)
            if any(v is None for v in p.values):  # x NOT IN (..., NULL) is never true
                return av.bools(False, self.n)
            return self._all([self.compare(p.column, "!=", v) for v in p.values], self.n)
        names = p.columns()
        if names and names <= set(self.partition_columns):  # exact on partition values
            values = pa.table({c: self.flat.column(f"partition.{c}") for c in sorted(names)})
            mask = p._mask(values)
            return pc.fill_null(mask if want else pc.invert(mask), av.false())
        implied = getattr(
            p, "implied", None
        )  # a pyarrow expression: the plain predicate it implies
        if implied is not None:
            form = implied(self.schema)
            if form is not None and (want or form[1]):
                return self.may(form[0], want)
        return av.bools(True, self.n)  # another node on data columns: keep

    @staticmethod
    def _any(masks: list[pa.Array], n: int) -> pa.Array:
        out = av.bools(False, n)
        for m in masks:
            out = pc.or_(out, m)
        return out

    @staticmethod
    def _all(masks: list[pa.Array], n: int) -> pa.Array:
        out = av.bools(True, n)
        for m in masks:
            out = pc.and_(out, m)
        return out

    def compare(self, column: str, op: str, value: object) -> pa.Array:
        """Some non-null value of ``column`` may satisfy ``column <op> value``."""
        if value is None:  # a comparison with NULL is never true nor false
            return av.bools(False, self.n)
        b = self.bounds(column)
        field_type = (
            self.flat.schema.field(
                f"partition.{column}" if column in self.partition_columns else f"min.{column}"
            ).type
            if b is not None
            else None
        )
        if b is None or field_type is None:
            return av.bools(True, self.n)
        if pa.types.is_floating(field_type):
            field_type = pa.float64()  # the bounds are doubles (see _bounds)
        literal = literal_for(value, field_type, column)
        if literal is None:
            return av.bools(False, self.n)
        if pa.types.is_floating(field_type) and math.isnan(literal.as_py()):
            return av.bools(True, self.n)  # NaN is above every number, and in no bound
        if op == "=":
            hit = pc.and_kleene(pc.less_equal(b.low, literal), pc.greater_equal(b.high, literal))
        elif op == "!=":
            hit = pc.invert(pc.and_kleene(pc.equal(b.low, literal), pc.equal(b.high, literal)))
        elif op == "<":
            hit = pc.less(b.low, literal)
        elif op == "<=":
            hit = pc.less_equal(b.low, literal)
        elif op == ">":
            hit = pc.greater(b.high, literal)
        else:
            hit = pc.greater_equal(b.high, literal)
        # no non-null value at all: nothing can compare true or false
        return pc.and_(_maybe(hit), _maybe(pc.invert(b.all_null)))


def may_match(
    flat: pa.Table, predicate: Predicate, schema: StructType, partition_columns: Sequence[str]
) -> pa.Array:
    """Per row of a :func:`~deltalog.stats.file_stats.flatten_stats` table: may the file match?

    Raises:
        InvalidPredicateError: A literal does not fit its column's type.
    """
    return _Evaluator(flat, schema, partition_columns).may(predicate, True)


def prune_files(
    files: pa.Table,
    predicate: Predicate,
    schema: StructType,
    partition_columns: Sequence[str],
    parsed: pa.ChunkedArray | None = None,
) -> pa.Table:
    """The rows of ``files`` (with ``stats``) that may hold rows matching ``predicate``.

    ``parsed``, typed statistics lined up with ``files`` (see
    :func:`deltalog.stats.file_stats.flatten_stats`), stands in for the JSON of the rows it has.

    Raises:
        InvalidPredicateError: A literal does not fit its column's type.
    """
    if predicate is TRUE or not files.num_rows:
        return files
    return files.filter(prune_mask(files, predicate, schema, partition_columns, parsed))


def prune_mask(
    files: pa.Table,
    predicate: Predicate,
    schema: StructType,
    partition_columns: Sequence[str],
    parsed: pa.ChunkedArray | None = None,
) -> pa.Array:
    """Which rows :func:`prune_files` keeps (``files.filter`` of it).

    Raises:
        InvalidPredicateError: A literal does not fit its column's type.
    """
    if predicate is TRUE or not files.num_rows:
        return pc.is_valid(files.column("path"))  # every row
    flat = flatten_stats(files, schema, partition_columns, predicate.columns(), parsed)
    return may_match(flat, predicate, schema, partition_columns)
