"""Evaluate parsed SQL expressions (:mod:`deltalog.stats.sql_expression`) over Arrow columns.

:func:`evaluate` computes an expression for every row of a :class:`Scope` (the columns it may
name, under table aliases for a merge) with Arrow kernels and Spark SQL's semantics where they
matter to a change of rows:

* three-valued logic (``NULL AND FALSE`` is false, a comparison with NULL is NULL);
* a literal takes the type of what it meets: ``'2024-01-01'`` compared with a date column is
  a date, ``1`` added to a ``short`` column a ``short``, ``1.5`` a decimal (as in Spark), with
  an exponent a double;
* ``/`` divides integers as doubles, ``%`` keeps the dividend's sign (Java's), ``+ - *`` and
  ``/`` fail on overflow and division by zero rather than wrap (Spark's ANSI mode);
* ``||`` and ``concat`` give NULL when an argument is NULL.

Functions are in :mod:`deltalog.stats.expression_functions`. Every refusal (unknown column,
ambiguous name, unknown function, types that do not combine, a failure on a row) raises
:class:`~deltalog.errors.InvalidExpressionError` (or the error class the caller names) with the
expression's text.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import InvalidExpressionError, InvalidInputError, PartitionValueError
from deltalog.protocol.partitions import parse_partition_value
from deltalog.protocol.schema import StructType, match_name
from deltalog.stats.expression_functions import arrow_type_named, call_function
from deltalog.stats.sql_expression import (
    Binary,
    Case,
    Cast,
    Column,
    Expr,
    Function,
    InList,
    IsNull,
    Like,
    Literal,
    Unary,
)

__all__ = [
    "Scope",
    "Untyped",
    "Value",
    "evaluate",
    "evaluate_chunked",
    "evaluate_condition",
    "literal_as",
    "widest_type",
]


@dataclass(frozen=True, slots=True)
class Untyped:
    """A string or number literal whose type depends on what it meets."""

    kind: str  # "string" | "number"
    text: str


#: What a node evaluates to: a column, a scalar, or a literal not yet typed.
Value: TypeAlias = pa.Array | pa.ChunkedArray | pa.Scalar | Untyped


class Scope:
    """The columns an expression may name: tables of equal length, each under an alias.

    An unqualified name is looked up in every table and must be found in exactly one; a
    qualified one (``s.id``) in the table of that alias, or, when no table has that alias, as a
    field of a struct column. Names match exactly, else ignoring case.

    Args:
        tables: Alias (``""`` for none) -> table; all with the same number of rows.
        error: The error class raised for an unknown or ambiguous name.
    """

    def __init__(
        self,
        tables: Mapping[str, pa.Table],
        *,
        error: type[InvalidInputError] = InvalidExpressionError,
    ) -> None:
        self.tables = dict(tables)
        lengths = {t.num_rows for t in self.tables.values()}
        self.num_rows = lengths.pop() if lengths else 0
        self.error = error

    @classmethod
    def of(cls, table: pa.Table, **kwargs: Any) -> Scope:
        """A scope of one table without an alias."""
        return cls({"": table}, **kwargs)

    def resolve(self, ref: Column) -> pa.Array | pa.ChunkedArray:
        """The column ``ref`` names.

        Raises:
            InvalidExpressionError: (or the scope's error class) Unknown or ambiguous.
        """
        if ref.qualifier is not None:
            alias = match_name(list(self.tables), ref.qualifier)
            if alias is not None and alias != "":
                table = self.tables[alias]
                name = match_name(table.column_names, ref.name)
                if name is None:
                    raise self.error(
                        f"{alias!r} has no column {ref.name!r} (columns: {table.column_names})"
                    )
                return table.column(name)
            parent = self.resolve(Column(ref.qualifier))
            if not pa.types.is_struct(parent.type):
                raise self.error(f"no table alias or struct column {ref.qualifier!r}")
            fields = [parent.type.field(i).name for i in range(parent.type.num_fields)]
            name = match_name(fields, ref.name)
            if name is None:
                raise self.error(f"struct {ref.qualifier!r} has no field {ref.name!r}")
            return pc.struct_field(parent, name)
        found = [
            (alias, name)
            for alias, table in self.tables.items()
            if (name := match_name(table.column_names, ref.name)) is not None
        ]
        if not found:
            known = sorted({n for t in self.tables.values() for n in t.column_names})
            raise self.error(f"unknown column {ref.name!r} (columns: {known})")
        if len(found) > 1:
            aliases = [alias for alias, _ in found]
            raise self.error(
                f"column {ref.name!r} is ambiguous: it is in {aliases}; qualify it "
                f"({aliases[0]}.{ref.name})"
            )
        alias, name = found[0]
        return self.tables[alias].column(name)


def evaluate(expr: Expr, scope: Scope, *, text: str | None = None) -> pa.Array:
    """``expr`` for every row of ``scope``, as an array (untyped literals take their defaults).

    Raises:
        InvalidExpressionError: (or the scope's error class) See the module docstring.
    """
    return _Evaluator(scope, text or str(expr)).array(expr)


def evaluate_chunked(
    expr: Expr, scope: Scope, *, text: str | None = None
) -> pa.Array | pa.ChunkedArray:
    """As :func:`evaluate`, but a chunked result (a column of a chunked table) is not copied.

    Raises:
        InvalidExpressionError: (or the scope's error class) See the module docstring.
    """
    evaluator = _Evaluator(scope, text or str(expr))
    value = evaluator.value(expr)
    return value if isinstance(value, pa.ChunkedArray) else evaluator.broadcast(value)


def evaluate_condition(expr: Expr, scope: Scope, *, text: str | None = None) -> pa.Array:
    """``expr`` as a boolean per row (nulls kept).

    Raises:
        InvalidExpressionError: (or the scope's error class) It is not a boolean expression.
    """
    out = evaluate(expr, scope, text=text)
    if not (pa.types.is_boolean(out.type) or pa.types.is_null(out.type)):
        raise scope.error(f"{text or expr} gives {out.type}, not a boolean per row")
    return out.cast(pa.bool_())


def literal_as(value: Untyped, arrow_type: pa.DataType) -> pa.Scalar:
    """An untyped literal as a scalar of ``arrow_type``.

    Raises:
        InvalidExpressionError: It is not a value of that type.
    """
    try:
        if value.kind == "number" and (
            pa.types.is_integer(arrow_type)
            or pa.types.is_floating(arrow_type)
            or pa.types.is_decimal(arrow_type)
        ):
            number = _number(value.text)
            scalar = pa.scalar(number).cast(arrow_type, safe=True)
            if pa.types.is_integer(arrow_type) and scalar.as_py() != number:
                raise ValueError(value.text)
            return scalar
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return pa.scalar(value.text, arrow_type)
        delta = StructType.from_arrow(pa.schema([pa.field("v", arrow_type)])).field("v").type
        return av.scalar(parse_partition_value(value.text, delta), arrow_type)
    except (pa.ArrowException, PartitionValueError, ValueError, TypeError, ArithmeticError) as exc:
        raise InvalidExpressionError(f"{value.text!r} is not a value of type {arrow_type}") from exc


def _number(text: str) -> int | float | decimal.Decimal:
    if any(c in text for c in "eE"):
        return float(text)
    if "." in text:
        return decimal.Decimal(text)
    return int(text)


def default_scalar(value: Untyped) -> pa.Scalar:
    """An untyped literal with no context: a string, or Spark's type for the number."""
    if value.kind == "string":
        return pa.scalar(value.text, pa.string())
    number = _number(value.text)
    if isinstance(number, float):
        return pa.scalar(number, pa.float64())
    if isinstance(number, int):
        for t in (pa.int32(), pa.int64()):
            if -(1 << (t.bit_width - 1)) <= number < 1 << (t.bit_width - 1):
                return pa.scalar(number, t)
        number = decimal.Decimal(number)
    digits = number.as_tuple()
    exponent = digits.exponent if isinstance(digits.exponent, int) else 0
    scale = max(0, -exponent)
    precision = max(len(digits.digits), scale, 1)
    if precision > 38:
        return pa.scalar(float(number), pa.float64())
    return pa.scalar(number, pa.decimal128(precision, scale))


_ARITHMETIC = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}
_COMPARE = {
    "=": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}


class _Evaluator:
    def __init__(self, scope: Scope, text: str) -> None:
        self.scope = scope
        self.text = text
        self.error = scope.error

    def fail(self, why: str) -> InvalidInputError:
        return self.error(f"{why} (in {self.text!r})")

    def call(self, kernel: str, *args: Any, **options: Any) -> Any:
        """An Arrow kernel, its refusals named."""
        try:
            return getattr(pc, kernel)(*args, **options)
        except pa.ArrowNotImplementedError as exc:
            kinds = ", ".join(str(_type(a)) for a in args)
            raise self.fail(f"cannot apply {kernel} to ({kinds})") from exc
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise self.fail(str(exc).split("\n")[0]) from exc

    # ------------------------------------------------------------------ entry points
    def array(self, expr: Expr) -> pa.Array:
        return self.broadcast(self.value(expr))

    def broadcast(self, value: Value) -> pa.Array:
        if isinstance(value, Untyped):
            value = default_scalar(value)
        if isinstance(value, pa.Scalar):
            if not value.is_valid and pa.types.is_null(value.type):
                return pa.nulls(self.scope.num_rows)
            return pa.repeat(value, self.scope.num_rows)
        if isinstance(value, pa.ChunkedArray):
            return value.combine_chunks()
        return value

    def typed(self, value: Value) -> pa.Array | pa.ChunkedArray | pa.Scalar:
        return default_scalar(value) if isinstance(value, Untyped) else value

    # ------------------------------------------------------------------ nodes
    def value(self, expr: Expr) -> Value:
        if isinstance(expr, Literal):
            return self.literal(expr)
        if isinstance(expr, Column):
            return self.scope.resolve(expr)
        if isinstance(expr, Binary):
            return self.binary(expr)
        if isinstance(expr, Unary):
            operand = self.value(expr.operand)
            if expr.op == "NOT":
                return self.call("invert", self.boolean(operand, "NOT"))
            return self.call("negate_checked", self.typed(operand))
        if isinstance(expr, IsNull):
            operand = self.typed(self.value(expr.operand))
            return self.call("is_valid" if expr.negated else "is_null", operand)
        if isinstance(expr, InList):
            return self.in_list(expr)
        if isinstance(expr, Like):
            return self.like(expr)
        if isinstance(expr, Case):
            return self.case(expr)
        if isinstance(expr, Cast):
            return self.cast(expr)
        if isinstance(expr, Function):
            return call_function(self, expr)
        raise self.fail(f"cannot evaluate {type(expr).__name__}")

    def literal(self, expr: Literal) -> Value:
        if expr.kind in ("string", "number"):
            return Untyped(expr.kind, str(expr.value))
        if expr.kind == "boolean":
            return pa.scalar(bool(expr.value))
        if expr.kind == "null":
            return pa.scalar(None, pa.null())
        target = pa.date32() if expr.kind == "date" else pa.timestamp("us", tz="UTC")
        try:
            return literal_as(Untyped("string", str(expr.value)), target)
        except InvalidExpressionError as exc:
            raise self.fail(f"{expr} is not a valid {expr.kind}") from exc

    def boolean(self, value: Value, what: str) -> pa.Array | pa.Scalar:
        typed = self.typed(value)
        kind = _type(typed)
        if pa.types.is_null(kind):
            return pa.scalar(None, pa.bool_())
        if not pa.types.is_boolean(kind):
            raise self.fail(f"{what} needs a boolean, not {kind}")
        return typed

    def binary(self, expr: Binary) -> Value:
        op = expr.op
        left, right = self.value(expr.left), self.value(expr.right)
        if op in ("AND", "OR"):
            kernel = "and_kleene" if op == "AND" else "or_kleene"
            return self.call(kernel, self.boolean(left, op), self.boolean(right, op))
        left, right = self.coerce(left, right)
        if op in _COMPARE:
            return self.call(_COMPARE[op], left, right)
        if op == "<=>":
            equal = pc.fill_null(self.call("equal", left, right), False)
            both_null = pc.and_(pc.is_null(left), pc.is_null(right))
            return self.call("or_", equal, both_null)
        if op == "||":
            return self.call(
                "binary_join_element_wise", self.as_text(left), self.as_text(right), ""
            )
        self.check_numeric(left, right, op)
        if op in _ARITHMETIC:
            return self.call(_ARITHMETIC[op], left, right)
        if op == "/":
            left, right = self.for_division(left), self.for_division(right)
            return self.call("divide_checked", left, right)
        if op == "%":
            quotient = self.call("divide_checked", left, right)
            if not pa.types.is_integer(_type(quotient)):
                quotient = self.call("trunc", quotient)
            return self.call(
                "subtract_checked", left, self.call("multiply_checked", quotient, right)
            )
        raise self.fail(f"unknown operator {op}")

    def check_numeric(self, left: Any, right: Any, op: str) -> None:
        for side in (left, right):
            kind = _type(side)
            if not (_is_number(kind) or pa.types.is_null(kind)):
                raise self.fail(f"{op} needs numbers, not {kind}")

    def for_division(self, value: Any) -> Any:
        kind = _type(value)
        if pa.types.is_integer(kind):
            return value.cast(pa.float64())
        return value

    def as_text(self, value: Any) -> Any:
        kind = _type(value)
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return value
        if pa.types.is_null(kind):
            return pa.scalar(None, pa.string())
        return self.call("cast", value, target_type=pa.string())

    def coerce(self, left: Value, right: Value) -> tuple[Any, Any]:
        """Give untyped literals their partner's type; unify dates with timestamps."""
        if isinstance(left, Untyped) and isinstance(right, Untyped):
            return default_scalar(left), default_scalar(right)
        if isinstance(left, Untyped):
            return self.adapt(left, _type(right)), right
        if isinstance(right, Untyped):
            return left, self.adapt(right, _type(left))
        return _unify_temporal(left, right)

    def adapt(self, literal: Untyped, partner: pa.DataType) -> pa.Scalar:
        if pa.types.is_null(partner):
            return default_scalar(literal)
        if literal.kind == "number":
            if pa.types.is_floating(partner):
                return pa.scalar(float(literal.text), pa.float64())
            if pa.types.is_integer(partner):
                scalar = default_scalar(literal)
                if pa.types.is_integer(scalar.type):
                    try:
                        return literal_as(literal, partner)
                    except InvalidExpressionError:
                        return scalar  # out of the column's range: the wider type
                return scalar
            return default_scalar(literal)
        if pa.types.is_string(partner) or pa.types.is_large_string(partner):
            return pa.scalar(literal.text, partner)
        if pa.types.is_dictionary(partner):
            return self.adapt(literal, partner.value_type)
        try:
            return literal_as(literal, partner)
        except InvalidExpressionError as exc:
            raise self.fail(f"{literal.text!r} is not a value of type {partner}") from exc

    def in_list(self, expr: InList) -> Value:
        operand = self.value(expr.operand)
        out: Any = pa.scalar(False)
        for item in expr.items:
            left, right = self.coerce(operand, self.value(item))
            out = self.call("or_kleene", out, self.call("equal", left, right))
        return self.call("invert", out) if expr.negated else out

    def like(self, expr: Like) -> Value:
        pattern = self.value(expr.pattern)
        if not isinstance(pattern, Untyped) or pattern.kind != "string":
            raise self.fail("LIKE takes a string literal as its pattern")
        operand = self.typed(self.value(expr.operand))
        if not (pa.types.is_string(_type(operand)) or pa.types.is_large_string(_type(operand))):
            raise self.fail(f"LIKE needs a string, not {_type(operand)}")
        hit = self.call("match_like", operand, pattern=pattern.text)
        return self.call("invert", hit) if expr.negated else hit

    def case(self, expr: Case) -> Value:
        conditions = [
            pc.fill_null(self.broadcast(self.boolean(self.value(c), "WHEN")), False)
            for c, _ in expr.branches
        ]
        values = [self.value(v) for _, v in expr.branches]
        if expr.default is not None:
            values.append(self.value(expr.default))
        unified = self.common(values)
        arrays = [self.broadcast(v) for v in unified]
        condition = pa.StructArray.from_arrays(
            conditions, [f"c{i}" for i in range(len(conditions))]
        )
        return self.call("case_when", condition, *arrays)

    def common(self, values: list[Value]) -> list[Any]:
        """``values`` in one type (Spark's widening: ints -> decimal/double, date -> timestamp)."""
        typed = [v for v in values if not isinstance(v, Untyped)]
        kinds = [_type(v) for v in typed if not pa.types.is_null(_type(v))]
        if not kinds:
            base = [default_scalar(v) if isinstance(v, Untyped) else v for v in values]
            kinds = [_type(v) for v in base if not pa.types.is_null(_type(v))]
            if not kinds:
                return base
            values = list(base)
        target = widest_type(kinds)
        if target is None:
            raise self.fail(f"values of types {sorted({str(k) for k in kinds})} do not combine")
        out = []
        for v in values:
            if isinstance(v, Untyped):
                out.append(self.adapt(v, target))
            elif pa.types.is_null(_type(v)) or _type(v) != target:
                out.append(self.call("cast", v, target_type=target))
            else:
                out.append(v)
        return out

    def cast(self, expr: Cast) -> Value:
        target = arrow_type_named(expr.type_name)
        if target is None:
            raise self.fail(f"unknown type {expr.type_name!r}")
        value = self.value(expr.operand)
        if isinstance(value, Untyped):
            value = pa.scalar(value.text) if value.kind == "string" else default_scalar(value)
        kind = _type(value)
        if pa.types.is_timestamp(target) and (
            pa.types.is_string(kind) or pa.types.is_large_string(kind)
        ):
            naive = self.call("cast", value, target_type=pa.timestamp("us"))
            return naive.cast(target)
        return self.call("cast", value, target_type=target)

    # for the functions module
    def run(self, kernel: str, *args: Any, **options: Any) -> Any:
        """Call an Arrow kernel (named errors)."""
        return self.call(kernel, *args, **options)


def _type(value: Any) -> pa.DataType:
    return value.type


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _unify_temporal(left: Any, right: Any) -> tuple[Any, Any]:
    lt, rt = _type(left), _type(right)
    if pa.types.is_date(lt) and pa.types.is_timestamp(rt):
        return left.cast(rt), right
    if pa.types.is_timestamp(lt) and pa.types.is_date(rt):
        return left, right.cast(lt)
    if pa.types.is_timestamp(lt) and pa.types.is_timestamp(rt) and lt != rt:
        return left, right.cast(lt)
    return left, right


def widest_type(kinds: list[pa.DataType]) -> pa.DataType | None:
    """The type all of ``kinds`` widen to, or ``None``."""
    first = kinds[0]
    if all(k == first for k in kinds):
        return first
    if all(_is_number(k) for k in kinds):
        if any(pa.types.is_floating(k) for k in kinds):
            return pa.float64()
        decimals = [k for k in kinds if pa.types.is_decimal(k)]
        if decimals:
            scale = max(k.scale for k in decimals)
            whole = max(
                [k.precision - k.scale for k in decimals]
                + [19 if any(pa.types.is_integer(k) for k in kinds) else 0]
            )
            return pa.decimal128(min(38, whole + scale), scale)
        return max(kinds, key=lambda k: k.bit_width)
    if all(pa.types.is_date(k) or pa.types.is_timestamp(k) for k in kinds):
        stamps = [k for k in kinds if pa.types.is_timestamp(k)]
        return stamps[0] if stamps else first
    if all(pa.types.is_string(k) or pa.types.is_large_string(k) for k in kinds):
        return pa.large_string() if any(pa.types.is_large_string(k) for k in kinds) else pa.string()
    return None
