"""Typed access to the table properties deltalog acts on."""

from __future__ import annotations

import re
from collections.abc import Mapping

from deltalog.errors import InvalidInputError
from deltalog.protocol.property_keys import find_key

_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+)\s*([a-z]+)\s*$", re.IGNORECASE)
_UNIT_MS = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 7 * 86_400_000,
}

#: delta-spark's intervals count microseconds in a 64-bit integer.
_MAX_INTERVAL_MS = (2**63 - 1) // 1000

CHECKPOINT_INTERVAL = "delta.checkpointInterval"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
LOG_RETENTION = "delta.logRetentionDuration"
EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"

#: Leaf columns file statistics cover unless ``delta.dataSkippingNumIndexedCols`` says.
DEFAULT_INDEXED_COLS = 32


def property_value(config: Mapping[str, str | None], key: str) -> str | None:
    """The value of table property ``key``; a ``delta.*`` key is found in any case."""
    present = find_key(config, key)
    return None if present is None else config[present]


def parse_interval_ms(text: str) -> int:
    """Milliseconds in a Delta interval such as ``interval 1 week`` or ``30 days``.

    Raises:
        InvalidInputError: The text is not an interval, or one longer than delta-spark's
            intervals can be (2**63 - 1 microseconds, ~292,000 years).
    """
    m = _INTERVAL.match(text)
    if not m:
        raise InvalidInputError(f"not an interval: {text!r}")
    unit = m.group(2).lower().rstrip("s")
    if unit not in _UNIT_MS:
        raise InvalidInputError(f"unknown interval unit in {text!r}")
    ms = int(m.group(1)) * _UNIT_MS[unit]
    if ms > _MAX_INTERVAL_MS:
        raise InvalidInputError(f"interval too long: {text!r}")
    return ms


def checkpoint_interval(config: Mapping[str, str | None]) -> int:
    """``delta.checkpointInterval`` (default 10)."""
    raw = property_value(config, CHECKPOINT_INTERVAL)
    try:
        value = int(raw) if raw else 10
    except ValueError:
        raise InvalidInputError(f"{CHECKPOINT_INTERVAL} must be an integer: {raw!r}") from None
    if value <= 0:
        raise InvalidInputError(f"{CHECKPOINT_INTERVAL} must be positive: {raw!r}")
    return value


def duration_ms(config: Mapping[str, str | None], key: str, default: str) -> int:
    """A duration property in milliseconds."""
    return parse_interval_ms(property_value(config, key) or default)


def tombstone_retention_ms(config: Mapping[str, str | None]) -> int:
    """``delta.deletedFileRetentionDuration`` (default one week)."""
    return duration_ms(config, DELETED_FILE_RETENTION, "interval 1 week")


def log_retention_ms(config: Mapping[str, str | None]) -> int:
    """``delta.logRetentionDuration`` (default 30 days)."""
    return duration_ms(config, LOG_RETENTION, "interval 30 days")


def num_indexed_cols(config: Mapping[str, str | None]) -> int:
    """``delta.dataSkippingNumIndexedCols`` (default 32; ``-1``: every leaf column)."""
    text = (property_value(config, NUM_INDEXED_COLS) or "").strip()
    return int(text) if text.lstrip("-").isdigit() else DEFAULT_INDEXED_COLS


def write_stats_as_struct(config: Mapping[str, str | None]) -> bool | None:
    """``delta.checkpoint.writeStatsAsStruct``; ``None`` when unset."""
    text = property_value(config, WRITE_STATS_AS_STRUCT) or ""
    return {"true": True, "false": False}.get(text.lower())


def expired_log_cleanup(config: Mapping[str, str | None]) -> bool:
    """``delta.enableExpiredLogCleanup`` (default true, as in delta-spark)."""
    return (property_value(config, EXPIRED_LOG_CLEANUP) or "true").lower() == "true"
