r"""Spark SQL text as a predicate to choose files by: only text deltalog reads as Spark does.

A Spark read chooses its files by the same text Spark then filters the rows by, so the two
readings must agree. :func:`spark_predicate` refuses (``InvalidPredicateError``, upon which the
caller reads every file and Spark filters alone) what deltalog's grammar reads another way:

* a string literal with a backslash or a doubled quote (Spark unescapes ``\t``, ``\\``, ...);
* an unquoted literal (number, ``TRUE``, ``DATE '...'``) compared with a string column: Spark
  casts the strings to the literal's type (``'05' = 5`` holds, ``'10' > 9`` too);
* ``NaN`` compared with a floating-point column: Spark's NaN equals itself and sorts above
  every number, Arrow's does neither.

Timestamps without an offset are read in the session's time zone
(:func:`deltalog.spark.time_zones.in_session_time_zone`).
"""

from __future__ import annotations

import math
from typing import Any

from deltalog.errors import InvalidPredicateError
from deltalog.protocol.schema import PrimitiveType, StructType
from deltalog.spark.time_zones import in_session_time_zone
from deltalog.stats.predicate_sql import Unquoted, parse_predicate
from deltalog.stats.predicates import And, Comparison, In, Not, Or, Predicate

_FLOATS = (PrimitiveType("float"), PrimitiveType("double"))


def spark_predicate(text: str, schema: StructType, zone: str) -> Predicate:
    """``text`` as a predicate that keeps every file Spark may find a matching row in.

    Args:
        text: Spark SQL predicate text.
        schema: The table's schema.
        zone: The session's ``spark.sql.session.timeZone``.

    Raises:
        InvalidPredicateError: deltalog cannot read ``text``, or reads it otherwise than Spark.
    """
    predicate = parse_predicate(text, spark=True)
    stack = [predicate]
    while stack:
        node = stack.pop()
        if isinstance(node, And | Or):
            stack += [node.left, node.right]
        elif isinstance(node, Not):
            stack.append(node.operand)
        elif isinstance(node, Comparison):
            _check(text, node.column, (node.value,), schema)
        elif isinstance(node, In):
            _check(text, node.column, node.values, schema)
    return in_session_time_zone(predicate, schema, zone)


def _check(text: str, column: str, values: tuple[Any, ...], schema: StructType) -> None:
    try:
        field_type = schema.field(column).type
    except KeyError:
        return  # the caller refuses an unknown column
    if field_type == PrimitiveType("string") and any(isinstance(v, Unquoted) for v in values):
        raise InvalidPredicateError(
            f"cannot judge predicate {text!r:.80}: Spark casts string column {column!r} to "
            "the type of an unquoted literal"
        )
    if field_type in _FLOATS and any(_is_nan(v) for v in values):
        raise InvalidPredicateError(
            f"cannot judge predicate {text!r:.80}: NaN compares otherwise in Spark"
        )


def _is_nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False
