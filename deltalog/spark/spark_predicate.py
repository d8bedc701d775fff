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

import dataclasses
import datetime as dt
import decimal
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltalog.errors import InvalidPredicateError
from deltalog.protocol.schema import PrimitiveType, StructType, match_name
from deltalog.spark.time_zones import in_session_time_zone
from deltalog.stats.expression_predicate import ExpressionPredicate
from deltalog.stats.predicate_sql import Unquoted, parse_predicate
from deltalog.stats.predicates import (
    TRUE,
    And,
    Comparison,
    In,
    IsNull,
    Like,
    Not,
    Or,
    Predicate,
)
from deltalog.stats.sql_expression import Column, map_columns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_FLOATS = (PrimitiveType("float"), PrimitiveType("double"))


def spark_predicate(
    text: str, schema: StructType, zone: str, *, case_sensitive: bool = False
) -> Predicate:
    """``text`` as a predicate that keeps every file Spark may find a matching row in.

    Args:
        text: Spark SQL predicate text.
        schema: The table's schema.
        zone: The session's ``spark.sql.session.timeZone``.
        case_sensitive: The session's ``spark.sql.caseSensitive``; when off (Spark's default)
            ``ID`` names the column ``id``, as Spark resolves it.

    Raises:
        InvalidPredicateError: deltalog cannot read ``text``, or reads it otherwise than Spark.
    """
    predicate = parse_predicate(text, spark=True)
    if not case_sensitive:
        predicate = with_schema_names(predicate, schema.names)
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


def case_sensitive(spark: SparkSession) -> bool:
    """The session's ``spark.sql.caseSensitive`` (off unless set, as in Spark)."""
    return str(spark.conf.get("spark.sql.caseSensitive", "false")).strip().lower() == "true"


def schema_name(name: str, names: Sequence[str]) -> str:
    """The column of ``names`` Spark resolves ``name`` to without case sensitivity.

    ``name`` itself when nothing matches (the caller reports an unknown column).
    """
    return match_name(names, name) or name


def with_schema_names(predicate: Predicate, names: Sequence[str]) -> Predicate:
    """``predicate`` with each column named as in ``names`` (see :func:`schema_name`)."""
    if predicate.columns() <= set(names):
        return predicate
    if isinstance(predicate, And | Or):
        left = with_schema_names(predicate.left, names)
        return type(predicate)(left, with_schema_names(predicate.right, names))
    if isinstance(predicate, Not):
        return Not(with_schema_names(predicate.operand, names))
    if isinstance(predicate, Comparison | In | IsNull | Like):
        return dataclasses.replace(predicate, column=schema_name(predicate.column, names))
    if isinstance(predicate, ExpressionPredicate):

        def named(ref: Column) -> Column:
            if ref.qualifier is not None:
                return ref  # a struct field or an alias: resolved where it is evaluated
            return Column(schema_name(ref.name, names))

        return ExpressionPredicate(map_columns(predicate.expression, named))
    return predicate


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


def spark_text(predicate: Predicate) -> str:
    r"""``predicate`` as Spark SQL text that Spark reads back as the same predicate.

    The generic SQL rendering (``str(predicate)``) doubles a quote inside a string, which Spark
    reads as two adjacent literals joined (``'it''s'`` is ``its``); here quotes and backslashes
    are escaped with a backslash, as Spark's parser unescapes them, names are backquoted, and
    infinite or NaN floats are cast from text.

    Args:
        predicate: A predicate built in Python (``col("x") == "it's"``, DNF tuples).

    Raises:
        InvalidPredicateError: A value Spark SQL has no literal for.
    """
    if predicate is TRUE:
        return "TRUE"
    if isinstance(predicate, And | Or):
        word = "AND" if isinstance(predicate, And) else "OR"
        return f"({spark_text(predicate.left)} {word} {spark_text(predicate.right)})"
    if isinstance(predicate, Not):
        return f"(NOT {spark_text(predicate.operand)})"
    if isinstance(predicate, Comparison):
        return f"{_name(predicate.column)} {predicate.op} {_literal(predicate.value)}"
    if isinstance(predicate, In):
        inner = ", ".join(_literal(v) for v in predicate.values)
        word = "NOT IN" if predicate.negated else "IN"
        return f"{_name(predicate.column)} {word} ({inner})"
    if isinstance(predicate, IsNull):
        return f"{_name(predicate.column)} IS {'NOT ' if predicate.negated else ''}NULL"
    if isinstance(predicate, Like):
        word = "NOT LIKE" if predicate.negated else "LIKE"
        return f"{_name(predicate.column)} {word} {_literal(predicate.pattern)}"
    raise InvalidPredicateError(f"no Spark SQL for predicate {predicate}")


def _name(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and not math.isfinite(value):
        word = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return f"CAST('{word}' AS DOUBLE)"
    if isinstance(value, decimal.Decimal) and not value.is_finite():
        raise InvalidPredicateError(f"Spark SQL has no decimal {value}")
    if isinstance(value, int | float | decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date):
        return _string(value.isoformat())
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    return _string(str(value))


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
