"""The SQL functions expressions may call, and the types ``CAST`` names, as Spark spells them.

``coalesce``, ``ifnull``/``nvl``, ``nullif``, ``if``, ``upper``/``ucase``, ``lower``/``lcase``,
``length``/``char_length``, ``trim``/``ltrim``/``rtrim``, ``concat``, ``substring``/``substr``
(1-based, a negative start counts from the end), ``abs``, ``round`` (half away from zero),
``floor``, ``ceil``/``ceiling``, ``greatest``/``least`` (nulls skipped), ``current_date`` and
``current_timestamp``/``now``. Names are case-insensitive.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any, Protocol

import pyarrow as pa

from deltalog.errors import InvalidInputError
from deltalog.protocol.schema import PrimitiveType, type_to_arrow
from deltalog.stats.sql_expression import Expr, Function, Literal

__all__ = ["FUNCTIONS", "NOW", "Evaluator", "arrow_type_named", "call_function"]

#: A value an expression node gives (an Arrow array or scalar, or an untyped literal).
Value = Any


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


#: The clock of ``current_date()``/``current_timestamp()`` (a seam for tests).
NOW: list[Callable[[], dt.datetime]] = [_utc_now]


class Evaluator(Protocol):
    """What a function needs of the expression evaluator."""

    def fail(self, why: str) -> InvalidInputError:
        """The error to raise, naming the expression."""
        ...

    def value(self, expr: Expr) -> Value:
        """Evaluate a sub-expression."""
        ...

    def typed(self, value: Value) -> Any:
        """An untyped literal given its default type."""
        ...

    def common(self, values: list[Value]) -> list[Any]:
        """Values cast to the type they all widen to."""
        ...

    def coerce(self, left: Value, right: Value) -> tuple[Any, Any]:
        """Two values made comparable."""
        ...

    def boolean(self, value: Value, what: str) -> Any:
        """A value that must be boolean."""
        ...

    def as_text(self, value: Any) -> Any:
        """A value cast to string."""
        ...

    def run(self, kernel: str, *args: Any, **options: Any) -> Any:
        """An Arrow kernel, its refusals named."""
        ...


_TYPE_ALIASES = {
    "int": "integer",
    "integer": "integer",
    "bigint": "long",
    "long": "long",
    "smallint": "short",
    "short": "short",
    "tinyint": "byte",
    "byte": "byte",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "varchar": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
}


def arrow_type_named(name: str) -> pa.DataType | None:
    """The Arrow type of a Spark SQL type name (``int``, ``decimal(10,2)``, ...), or ``None``."""
    text = name.strip().lower()
    match = re.fullmatch(r"(?:decimal|numeric|dec)(?:\((\d+)(?:,(\d+))?\))?", text)
    if match:
        precision = int(match.group(1) or 10)
        scale = int(match.group(2) or 0)
        if not 0 < precision <= 38 or scale > precision:
            return None
        return pa.decimal128(precision, scale)
    base = re.sub(r"\(\d+\)$", "", text)  # varchar(10), char(3)
    delta = _TYPE_ALIASES.get(base)
    return None if delta is None else type_to_arrow(PrimitiveType(delta))


def call_function(ev: Evaluator, expr: Function) -> Value:
    """Evaluate a function call.

    Raises:
        InvalidExpressionError: An unknown function, or arguments it does not take.
    """
    spec = FUNCTIONS.get(expr.name)
    if spec is None:
        raise ev.fail(f"unknown function {expr.name}() (known: {', '.join(sorted(FUNCTIONS))})")
    low, high, run = spec
    if not low <= len(expr.args) <= (high if high >= 0 else len(expr.args)):
        raise ev.fail(f"{expr.name}() takes {_arity(low, high)} argument(s), not {len(expr.args)}")
    return run(ev, expr)


def _arity(low: int, high: int) -> str:
    if high < 0:
        return f"at least {low}"
    return str(low) if low == high else f"{low} to {high}"


def _args(ev: Evaluator, expr: Function) -> list[Any]:
    return [ev.typed(ev.value(a)) for a in expr.args]


def _coalesce(ev: Evaluator, expr: Function) -> Value:
    values = ev.common([ev.value(a) for a in expr.args])
    return values[0] if len(values) == 1 else ev.run("coalesce", *values)


def _nullif(ev: Evaluator, expr: Function) -> Value:
    left, right = ev.coerce(ev.value(expr.args[0]), ev.value(expr.args[1]))
    same = ev.run("fill_null", ev.run("equal", left, right), False)
    return ev.run("if_else", same, pa.scalar(None, left.type), left)


def _if(ev: Evaluator, expr: Function) -> Value:
    condition = ev.boolean(ev.value(expr.args[0]), "if()")
    then, otherwise = ev.common([ev.value(expr.args[1]), ev.value(expr.args[2])])
    return ev.run("if_else", ev.run("fill_null", condition, False), then, otherwise)


def _string_function(kernel: str) -> Callable[[Evaluator, Function], Value]:
    def run(ev: Evaluator, expr: Function) -> Value:
        (value,) = _args(ev, expr)
        return ev.run(kernel, ev.as_text(value))

    return run


def _concat(ev: Evaluator, expr: Function) -> Value:
    texts = [ev.as_text(v) for v in _args(ev, expr)]
    return ev.run("binary_join_element_wise", *texts, "")


def _integer_literal(ev: Evaluator, expr: Function, index: int) -> int:
    arg = expr.args[index]
    if (
        not isinstance(arg, Literal)
        or arg.kind != "number"
        or not re.fullmatch(r"-?\d+", arg.value)
    ):
        raise ev.fail(f"{expr.name}() takes an integer literal as argument {index + 1}")
    return int(str(arg.value))


def _substring(ev: Evaluator, expr: Function) -> Value:
    text = ev.as_text(ev.typed(ev.value(expr.args[0])))
    start = _integer_literal(ev, expr, 1)
    length = _integer_literal(ev, expr, 2) if len(expr.args) > 2 else None
    if length is not None and length <= 0:
        return ev.run("utf8_slice_codeunits", text, start=0, stop=0)
    if start > 0:
        begin = start - 1
    elif start == 0:
        begin = 0
    else:
        begin = start  # from the end
    stop = None if length is None else begin + length
    if begin < 0 and stop is not None and stop >= 0:
        stop = None
    return ev.run("utf8_slice_codeunits", text, start=begin, stop=stop)


def _abs(ev: Evaluator, expr: Function) -> Value:
    (value,) = _args(ev, expr)
    return ev.run("abs_checked", value)


def _round(ev: Evaluator, expr: Function) -> Value:
    value = ev.typed(ev.value(expr.args[0]))
    digits = _integer_literal(ev, expr, 1) if len(expr.args) > 1 else 0
    return ev.run("round", value, ndigits=digits, round_mode="half_towards_infinity")


def _rounding(kernel: str) -> Callable[[Evaluator, Function], Value]:
    def run(ev: Evaluator, expr: Function) -> Value:
        (value,) = _args(ev, expr)
        out = ev.run(kernel, value)
        if pa.types.is_floating(out.type):  # Spark: floor/ceil of a double is a bigint
            return ev.run("cast", out, target_type=pa.int64())
        return out

    return run


def _extreme(kernel: str) -> Callable[[Evaluator, Function], Value]:
    def run(ev: Evaluator, expr: Function) -> Value:
        values = ev.common([ev.value(a) for a in expr.args])
        return ev.run(kernel, *values, skip_nulls=True)

    return run


def _current_date(ev: Evaluator, expr: Function) -> Value:
    return pa.scalar(NOW[0]().date(), pa.date32())


def _current_timestamp(ev: Evaluator, expr: Function) -> Value:
    return pa.scalar(NOW[0](), pa.timestamp("us", tz="UTC"))


#: Function name -> (fewest arguments, most (-1: any), implementation).
FUNCTIONS: dict[str, tuple[int, int, Callable[[Evaluator, Function], Value]]] = {
    "coalesce": (1, -1, _coalesce),
    "ifnull": (2, 2, _coalesce),
    "nvl": (2, 2, _coalesce),
    "nullif": (2, 2, _nullif),
    "if": (3, 3, _if),
    "upper": (1, 1, _string_function("utf8_upper")),
    "ucase": (1, 1, _string_function("utf8_upper")),
    "lower": (1, 1, _string_function("utf8_lower")),
    "lcase": (1, 1, _string_function("utf8_lower")),
    "length": (1, 1, _string_function("utf8_length")),
    "char_length": (1, 1, _string_function("utf8_length")),
    "character_length": (1, 1, _string_function("utf8_length")),
    "trim": (1, 1, _string_function("utf8_trim_whitespace")),
    "ltrim": (1, 1, _string_function("utf8_ltrim_whitespace")),
    "rtrim": (1, 1, _string_function("utf8_rtrim_whitespace")),
    "concat": (1, -1, _concat),
    "substring": (2, 3, _substring),
    "substr": (2, 3, _substring),
    "abs": (1, 1, _abs),
    "round": (1, 2, _round),
    "floor": (1, 1, _rounding("floor")),
    "ceil": (1, 1, _rounding("ceil")),
    "ceiling": (1, 1, _rounding("ceil")),
    "greatest": (2, -1, _extreme("max_element_wise")),
    "least": (2, -1, _extreme("min_element_wise")),
    "current_date": (0, 0, _current_date),
    "current_timestamp": (0, 0, _current_timestamp),
    "now": (0, 0, _current_timestamp),
}
