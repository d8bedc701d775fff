"""Spark session time zones: how Spark SQL reads a timestamp literal without an offset.

A predicate such as ``ts >= '2024-01-01 00:00:00'`` means midnight in the session's
``spark.sql.session.timeZone``; :func:`in_session_time_zone` makes that explicit before deltalog
evaluates the predicate, and :func:`spark_zone` reads every zone spelling Spark accepts.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from deltalog.errors import (
    InvalidPredicateError,
)
from deltalog.protocol.schema import PrimitiveType, StructType
from deltalog.stats.predicates import (
    And,
    Comparison,
    In,
    Not,
    Or,
    Predicate,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def session_time_zone(df: DataFrame) -> str:
    """The DataFrame's session time zone (``spark.sql.session.timeZone``, default UTC)."""
    return str(df.sparkSession.conf.get("spark.sql.session.timeZone", "UTC") or "UTC")


def in_session_time_zone(predicate: Predicate, schema: StructType, zone: str) -> Predicate:
    """``predicate`` with zone-less timestamp literals read in ``zone``, as Spark SQL reads them.

    Text such as ``'2024-01-01 00:00:00'`` compared with a ``timestamp`` column means midnight
    in the Spark session's time zone; text with an offset keeps it. The zone is resolved only
    when such a literal needs it.

    Raises:
        InvalidPredicateError: A literal needs ``zone`` and it is not a zone deltalog knows.
    """

    def fix(column: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            field_type = schema.field(column).type
        except KeyError:
            return value
        if field_type != PrimitiveType("timestamp"):
            return value
        try:
            parsed = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return value  # left for validate() to refuse
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=spark_zone(zone))

    def walk(p: Predicate) -> Predicate:
        if isinstance(p, Comparison):
            return Comparison(p.column, p.op, fix(p.column, p.value))
        if isinstance(p, In):
            return In(p.column, tuple(fix(p.column, v) for v in p.values), negated=p.negated)
        if isinstance(p, And):
            return And(walk(p.left), walk(p.right))
        if isinstance(p, Or):
            return Or(walk(p.left), walk(p.right))
        if isinstance(p, Not):
            return Not(walk(p.operand))
        return p

    return walk(predicate)


_OFFSET = re.compile(r"^(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
#: Java's ZoneId.SHORT_IDS, which Spark accepts for spark.sql.session.timeZone.
_SHORT_IDS = {
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}


def spark_zone(name: str) -> dt.tzinfo:
    """A Spark session time zone (region id, offset such as ``+05:00``/``GMT+1``, short id).

    Raises:
        InvalidPredicateError: Not a zone this recognises.
    """
    text = _SHORT_IDS.get(name.strip().upper(), name.strip())
    if text.upper() in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    match = _OFFSET.match(text)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        offset = dt.timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0))
        return dt.timezone(sign * offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidPredicateError(f"unknown Spark session time zone {name!r}") from exc
