"""The per-file ``stats`` JSON as delta-spark writes it: value encoding and layout.

Shared by the two places statistics are made: from a Parquet footer
(:mod:`deltalog.stats.footers`) and from the rows while they are written
(:mod:`deltalog.write.batch_stats`), so both give the same JSON for the same data:
``{"numRecords": n, "minValues": {...}, "maxValues": {...}, "nullCount": {...}}``, nested
like the schema under physical names.

Strings are cut to a prefix (``delta.dataSkippingStringPrefixLength``, default 32; a column
whose maximum would be cut gets no bounds, since a prefix is not an upper bound), timestamps
are truncated to milliseconds (``Z``-suffixed for instants), and a column whose bounds JSON
cannot hold exactly (NaN, infinities, decimals a double would round; booleans and binaries,
which delta-spark gives no bounds either) gets none. A column has both ``minValues`` and
``maxValues`` or neither: some readers (delta-rs 1.6) mishandle a lone bound.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping
from typing import Any

import orjson
import pyarrow as pa

from deltalog.protocol.config import property_value

__all__ = ["STRING_PREFIX", "bounds", "json_value", "set_path", "stats_json", "string_prefix"]

#: Characters of a string bound kept by default (``delta.dataSkippingStringPrefixLength``).
STRING_PREFIX = 32
STRING_PREFIX_KEY = "delta.dataSkippingStringPrefixLength"


def string_prefix(configuration: Mapping[str, str | None]) -> int:
    """``delta.dataSkippingStringPrefixLength`` (default 32)."""
    text = (property_value(configuration, STRING_PREFIX_KEY) or "").strip()
    return int(text) if text.isdigit() else STRING_PREFIX


def json_value(value: Any, t: pa.DataType) -> Any:
    """A statistics value as JSON, or ``None`` when it cannot be represented exactly."""
    if value is None:
        return None
    if pa.types.is_boolean(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return None
    if pa.types.is_fixed_size_binary(t) or isinstance(value, bytes):
        return None
    if pa.types.is_integer(t):
        return int(value)
    if pa.types.is_floating(t):
        f = float(value)
        return f if math.isfinite(f) else None
    if pa.types.is_decimal(t):
        d = decimal.Decimal(value)
        f = float(d)
        return f if math.isfinite(f) and decimal.Decimal(repr(f)) == d else None
    if pa.types.is_date(t):
        return value.isoformat() if isinstance(value, dt.date) else None
    if pa.types.is_timestamp(t):
        if not isinstance(value, dt.datetime):
            return None
        if t.tz is not None or t.unit == "ns":
            utc = value.astimezone(dt.UTC) if value.tzinfo else value
            naive = utc.replace(tzinfo=None)
            return naive.isoformat(timespec="milliseconds") + "Z"  # zero-padded years < 1000
        return value.isoformat(timespec="milliseconds")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return value if isinstance(value, str) else None
    return None


def _is_time(t: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(t) or pa.types.is_date(t))


def bounds(lo: Any, hi: Any, t: pa.DataType, prefix: int = STRING_PREFIX) -> tuple[Any, Any] | None:
    """The JSON ``(min, max)`` of a column whose smallest and largest values are ``lo``, ``hi``.

    ``None`` when the column gets no bounds (see the module docstring).
    """
    low, high = json_value(lo, t), json_value(hi, t)
    if isinstance(low, str) and not _is_time(t):
        low = low[:prefix]
    if isinstance(high, str) and not _is_time(t) and len(high) > prefix:
        high = None
    if low is None or high is None:
        return None
    return low, high


def set_path(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Put ``value`` at ``path`` in nested dicts."""
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def stats_json(
    num_records: int,
    mins: dict[str, Any],
    maxs: dict[str, Any],
    nulls: dict[str, Any],
) -> str:
    """The ``stats`` string, keys in delta-spark's order."""
    return orjson.dumps(
        {"numRecords": num_records, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    ).decode()
