"""Partition values: the protocol's string serialisation, and Hive-style directory names."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from deltalog.errors import InvalidInputError, PartitionValueError
from deltalog.protocol.schema import PRIMITIVES, DataType, DecimalType, PrimitiveType, StructType

#: Hive's directory name for a null partition value.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

#: Range of each Delta integer type, inclusive.
INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_TS = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$"
)
_UTC = dt.UTC
# Characters Spark escapes in partition directory names (as %XX), plus control characters.
_HIVE_SPECIAL = set("\"#%'*/:=?\\\x7f{[]^")


def _type_name(t: DataType) -> str:
    if isinstance(t, PrimitiveType) and t.name in PRIMITIVES:
        return t.name
    if isinstance(t, DecimalType):
        return "decimal"
    raise PartitionValueError(f"type {t.to_json()!r} cannot be a partition column")


def parse_partition_value(text: str | None, t: DataType) -> Any:
    """Parse a serialised partition value into a Python value.

    ``None`` and the empty string are null. Integers become ``int``, decimals
    ``decimal.Decimal``, dates ``datetime.date``, ``timestamp`` an aware UTC ``datetime``,
    ``timestamp_ntz`` a naive one, binary ``bytes``.

    Raises:
        PartitionValueError: The text does not parse as ``t``.
    """
    if text is None or text == "":
        return None
    name = _type_name(t)
    try:
        if name == "string":
            text.encode("utf-8")  # a lone surrogate could never be written to the log
            return text
        if name in INT_RANGES:
            value = int(text)
            lo, hi = INT_RANGES[name]
            if not lo <= value <= hi:
                raise ValueError("out of range")
            return value
        if name in ("float", "double"):
            return float(text)
        if name == "boolean":
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError("not a boolean")
            return lowered == "true"
        if name == "date":
            return dt.date.fromisoformat(text)
        if name in ("timestamp", "timestamp_ntz"):
            return _parse_timestamp(text, aware=name == "timestamp")
        if name == "binary":
            return text.encode("utf-8")
        if name == "decimal":
            assert isinstance(t, DecimalType)
            d = decimal.Decimal(text)
            if not d.is_finite():
                raise ValueError("not finite")
            exponent = d.as_tuple().exponent
            assert isinstance(exponent, int)
            integer_digits = len(d.as_tuple().digits) + exponent if d else 0  # 1E+5: 6 digits
            if -exponent > t.scale or integer_digits > t.precision - t.scale:
                raise ValueError(f"does not fit decimal({t.precision},{t.scale})")
            return d
    except (ValueError, ArithmeticError, UnicodeError) as exc:
        raise PartitionValueError(f"{text!r} is not a valid {name} partition value: {exc}") from exc
    raise PartitionValueError(f"type {name!r} cannot be a partition column")


def _parse_timestamp(text: str, *, aware: bool) -> dt.datetime:
    m = _TS.match(text)
    if not m:
        raise ValueError("expected YYYY-MM-DD HH:MM:SS[.ffffff]")
    day, hh, mm, ss, frac, zone = m.groups()
    micros = int((frac or "0").ljust(6, "0")[:6])
    value = dt.datetime.combine(
        dt.date.fromisoformat(day), dt.time(int(hh), int(mm), int(ss), micros)
    )
    if zone:
        if not aware:
            raise ValueError("timestamp_ntz partition values carry no time zone")
        offset = dt.UTC if zone == "Z" else _offset(zone)
        return value.replace(tzinfo=offset).astimezone(_UTC)
    return value.replace(tzinfo=_UTC) if aware else value


def _offset(zone: str) -> dt.timezone:
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def serialize_partition_value(value: Any, t: DataType) -> str | None:
    """Serialise a Python value (or an already serialised string) for ``partitionValues``.

    Strings given for non-string columns are validated and kept as written.

    Raises:
        PartitionValueError: The value does not fit the type.
    """
    if value is None:
        return None
    name = _type_name(t)
    if isinstance(value, str) and name != "binary":
        if value == "" and name != "string":
            return None
        parse_partition_value(value, t)
        return value
    if name == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if name in INT_RANGES and isinstance(value, int) and not isinstance(value, bool):
        return serialize_partition_value(str(value), t)
    if name in ("float", "double") and isinstance(value, (int, float)):
        f = float(value)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return repr(f)
    if name == "decimal" and isinstance(value, (decimal.Decimal, int)):
        assert isinstance(t, DecimalType)
        with decimal.localcontext() as ctx:
            ctx.prec = 80
            try:
                quantized = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-t.scale))
            except decimal.InvalidOperation as exc:
                raise PartitionValueError(f"{value!r} does not fit {t.to_json()}") from exc
        return serialize_partition_value(format(quantized, "f"), t)
    if name == "date" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if name == "timestamp" and isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise PartitionValueError("timestamp partition values must be time-zone aware")
        utc = value.astimezone(_UTC).replace(tzinfo=None)
        return utc.isoformat(sep="T", timespec="microseconds") + "Z"  # years < 1000 zero-padded
    if name == "timestamp_ntz" and isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise PartitionValueError("timestamp_ntz partition values must be naive")
        return value.isoformat(sep=" ", timespec="microseconds")  # zero-padded years < 1000
    if name == "binary" and isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PartitionValueError(
                "binary partition values are stored as UTF-8 text; these bytes are not UTF-8"
            ) from exc
    if name == "binary" and isinstance(value, str):
        parse_partition_value(value, t)
        return value
    raise PartitionValueError(f"{value!r} is not a valid {name} partition value")


def check_partition_values(
    values: Mapping[str, str | None], schema: StructType, partition_columns: list[str]
) -> dict[str, str | None]:
    """Validate a ``partitionValues`` map against the table: same columns, parseable values.

    Returns:
        The map in partition-column order.

    Raises:
        PartitionValueError: A column is missing or unknown, or a value does not parse.
    """
    if set(values) != set(partition_columns):
        raise PartitionValueError(
            f"partition values for {sorted(values)} do not match the table's partition "
            f"columns {partition_columns}"
        )
    out: dict[str, str | None] = {}
    for col in partition_columns:
        try:
            t = schema.field(col).type
        except KeyError:
            raise PartitionValueError(f"partition column {col!r} is not in the schema") from None
        out[col] = serialize_partition_value(values[col], t)
    return out


def hive_escape(value: str) -> str:
    """Escape a partition value for use in a ``col=value`` directory name, as Spark does."""
    return "".join(f"%{ord(c):02X}" if c in _HIVE_SPECIAL or ord(c) < 0x20 else c for c in value)


def hive_unescape(text: str) -> str:
    """Undo :func:`hive_escape` (``%XX`` sequences).

    Raises:
        PartitionValueError: The escapes do not decode as UTF-8 (``%FF``).
    """
    if "%" not in text:
        return text
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError as exc:
        raise PartitionValueError(f"{text!r} has %-escapes that are not UTF-8") from exc


def hive_partition_dir(values: Mapping[str, str | None]) -> str:
    """The relative directory ``a=1/b=x`` for a partition, null as Hive's default name."""
    return "/".join(
        f"{hive_escape(k)}={HIVE_NULL if v is None else hive_escape(v)}" for k, v in values.items()
    )


def parse_hive_path(relative_path: str) -> dict[str, str | None]:
    """The ``col=value`` segments of a relative file path (decoded, file name excluded).

    Raises:
        PartitionValueError: A segment's %-escapes do not decode as UTF-8.
    """
    out: dict[str, str | None] = {}
    for segment in relative_path.split("/")[:-1]:
        key, sep, raw = segment.partition("=")
        if not sep:
            continue
        value = hive_unescape(raw)
        out[hive_unescape(key)] = None if value == HIVE_NULL else value
    return out


def check_partition_columns(schema: StructType, partition_columns: list[str]) -> None:
    """Refuse partition columns that repeat, are missing from the schema, or are not primitive.

    Raises:
        InvalidInputError: Naming the offending column.
    """
    if len(set(partition_columns)) != len(partition_columns):
        raise InvalidInputError(f"partition columns repeat: {partition_columns}")
    for col in partition_columns:
        try:
            f = schema.field(col)
        except KeyError:
            raise InvalidInputError(f"partition column {col!r} is not in the schema") from None
        if f.type.to_json() in ("void", "variant") or not isinstance(f.type.to_json(), str):
            raise InvalidInputError(f"partition column {col!r} must have a primitive type")
    if partition_columns and len(partition_columns) == len(schema.fields):
        raise InvalidInputError("a table needs at least one column that is not a partition column")
