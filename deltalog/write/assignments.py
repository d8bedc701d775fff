"""The ``SET column = value`` of an UPDATE or MERGE: parsed once, evaluated per batch, stored.

:func:`parse_assignments` checks the target columns (they must exist, once each; names match
exactly, else ignoring case) and parses each value: text is an SQL expression
(:mod:`deltalog.stats.sql_expression`), anything else a literal of the column's type.
:meth:`Assignment.values` evaluates one for the rows of a scope
(:class:`~deltalog.stats.expression_eval.Scope`) and stores the result in the column's type
with Spark's ANSI store-assignment rules (:func:`store_cast`): numbers convert to any numeric
type when the value fits (decimals are rounded half away from zero to the column's scale,
fractions truncated toward an integer column), anything converts to a string, dates and
timestamps to each other; a string is not taken by a number, date or boolean column (a string
*literal* is: it is parsed as the column's type, as the predicate literals are).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidExpressionError
from deltalog.protocol.schema import StructType, match_name
from deltalog.stats.expression_eval import Scope, Untyped, evaluate, literal_as
from deltalog.stats.sql_expression import Expr, Literal, parse_expression

__all__ = ["Assignment", "parse_assignments", "store_cast"]


@dataclass(frozen=True)
class Assignment:
    """One ``column = value``.

    Attributes:
        column: The target column, as the table names it.
        expression: The parsed SQL expression, or ``None`` for a Python constant.
        constant: The constant (when ``expression`` is ``None``).
        text: The value as given, for messages and ``operationParameters``.
    """

    column: str
    expression: Expr | None
    constant: Any
    text: str

    def values(self, scope: Scope, target: pa.DataType) -> pa.Array:
        """The value for every row of ``scope``, as ``target`` (the column's Arrow type).

        Raises:
            InvalidExpressionError: The expression fails, or its values do not fit the column.
        """
        expr = self.expression
        if expr is None:
            try:
                scalar = pa.scalar(self.constant, target)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                raise InvalidExpressionError(
                    f"{self.constant!r} is not a value of column {self.column!r} ({target})"
                ) from exc
            return pa.repeat(scalar, scope.num_rows)
        if isinstance(expr, Literal) and expr.kind in ("string", "number"):
            try:
                scalar = literal_as(Untyped(expr.kind, str(expr.value)), target)
            except InvalidExpressionError as exc:
                raise InvalidExpressionError(
                    f"{self.text} is not a value of column {self.column!r} ({target})"
                ) from exc
            return pa.repeat(scalar, scope.num_rows)
        return store_cast(evaluate(expr, scope, text=self.text), target, self.column, self.text)


def parse_assignments(
    given: Mapping[str, Any], schema: StructType, *, alias: str | None = None
) -> list[Assignment]:
    """Check and parse ``{column: value}``.

    Args:
        given: Target column -> SQL expression text, or a Python value (a literal).
        schema: The table schema.
        alias: The target's alias, which may qualify a column (``t.x``).

    Raises:
        InvalidExpressionError: A column the table lacks, a column given twice, a value that
            does not parse.
    """
    if not isinstance(given, Mapping):
        raise InvalidExpressionError(
            f"assignments are a mapping of column to value, not {type(given).__name__}"
        )
    names = schema.names
    out: list[Assignment] = []
    seen: set[str] = set()
    for key, value in given.items():
        if not isinstance(key, str):
            raise InvalidExpressionError(f"a column to set is named by a string, not {key!r}")
        name = key
        if alias and key.lower().startswith(alias.lower() + ".") and key not in names:
            name = key[len(alias) + 1 :]
        column = match_name(names, name)
        if column is None:
            raise InvalidExpressionError(
                f"cannot set {key!r}: the table has no such column (columns: {names})"
            )
        if column in seen:
            raise InvalidExpressionError(f"column {column!r} is set twice")
        seen.add(column)
        if isinstance(value, str):
            out.append(Assignment(column, parse_expression(value), None, value))
        else:
            out.append(Assignment(column, None, value, repr(value)))
    return out


def store_cast(values: pa.Array, target: pa.DataType, column: str, text: str = "") -> pa.Array:
    """``values`` stored into a column of type ``target`` (see the module docstring).

    Raises:
        InvalidExpressionError: The types do not convert, or a value does not fit.
    """
    source = values.type
    if pa.types.is_dictionary(source):
        values = values.dictionary_decode()
        source = values.type
    if source == target:
        return values
    where = f" (in {text!r})" if text else ""
    if pa.types.is_null(source):
        return pa.nulls(len(values), target)
    if not _allowed(source, target):
        raise InvalidExpressionError(
            f"cannot store {source} values in column {column!r} of type {target}{where}"
        )
    try:
        if pa.types.is_decimal(target) and (
            pa.types.is_floating(source)
            or (pa.types.is_decimal(source) and source.scale > target.scale)
        ):
            values = pc.round(values, ndigits=target.scale, round_mode="half_towards_infinity")
        elif pa.types.is_integer(target) and (
            pa.types.is_floating(source) or pa.types.is_decimal(source)
        ):
            values = pc.round(values, ndigits=0, round_mode="towards_zero")
        return values.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidExpressionError(
            f"a value does not fit column {column!r} of type {target}{where}: "
            f"{str(exc).splitlines()[0]}"
        ) from exc


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "datetime"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    return "nested"


def _allowed(source: pa.DataType, target: pa.DataType) -> bool:
    """Spark's ANSI store assignment (``Cast.canANSIStoreAssign``), for Arrow types."""
    s, t = _kind(source), _kind(target)
    if t == "string":
        return s != "nested"
    if s == "nested" or t == "nested":
        return bool(source.equals(target, check_metadata=False))
    return s == t
