"""Whether an ``add`` action's ``stats`` string agrees with the table schema.

Readers skip files by these statistics, so a wrong bound silently drops rows from query
results. The rules follow the protocol's "Per-file Statistics": ``numRecords`` a non-negative
integer, ``tightBounds`` a boolean, and ``minValues``/``maxValues``/``nullCount`` shaped like
the data schema (physical column names under column mapping), with values of the column's
type and ``min <= max``. Partition columns carry no statistics; any column the schema lacks is
reported separately, since readers ignore it (under column mapping only a logical name is: an
unknown physical name is a dropped column's, which old files' statistics keep).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from deltalog.protocol.partitions import INT_RANGES
from deltalog.protocol.schema import DataType, DecimalType, PrimitiveType, StructField, StructType

#: ``(code, message)``: ``bad-stats`` or ``stats-unknown-column``.
Problem = tuple[str, str]

_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _timestamp(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("timestamp statistics carry a time zone offset")
    return parsed


def _timestamp_ntz(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is not None:
        raise ValueError("timestamp_ntz statistics carry no time zone")
    return parsed


_STRING_PARSERS: dict[str, Callable[[str], Any]] = {
    "string": str,
    "binary": str,
    "date": dt.date.fromisoformat,
    "timestamp": _timestamp,
    "timestamp_ntz": _timestamp_ntz,
}


def _bound(value: Any, t: DataType) -> tuple[bool, Any]:
    """``(valid, comparable value or None)`` of one min/max value of a leaf column."""
    if isinstance(t, DecimalType):
        return _number(value), value if _number(value) else None
    if not isinstance(t, PrimitiveType):
        return True, None  # arrays, maps: no bounds are defined; readers ignore them
    name = t.name
    if name in INT_RANGES:
        low, high = INT_RANGES[name]
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return ok, value if ok else None
    if name in ("float", "double"):
        if isinstance(value, str):
            return value in _FLOAT_WORDS, None
        return _number(value), value if _number(value) and not math.isnan(value) else None
    if name == "boolean":
        return isinstance(value, bool), None
    parser = _STRING_PARSERS.get(name)
    if parser is None:
        return True, None
    if not isinstance(value, str):
        return False, None
    try:
        return True, parser(value)
    except ValueError:
        return False, None


def physical_fields(struct: StructType, physical: bool) -> dict[str, StructField]:
    """Fields by the name statistics and partition values use (physical under column mapping)."""
    out: dict[str, StructField] = {}
    for f in struct.fields:
        name = f.metadata.get("delta.columnMapping.physicalName") if physical else None
        out[name if isinstance(name, str) else f.name] = f
    return out


class _Walker:
    def __init__(self, physical: bool, num_records: int | None) -> None:
        self.physical = physical
        self.num_records = num_records
        self.problems: list[Problem] = []
        self.bounds: dict[tuple[str, ...], dict[str, Any]] = {}

    def bad(self, message: str) -> None:
        self.problems.append(("bad-stats", message))

    def walk(self, kind: str, values: Any, struct: StructType, prefix: tuple[str, ...]) -> None:
        where = ".".join(prefix) if prefix else kind
        if not isinstance(values, Mapping):
            self.bad(f"{kind} of {where!r} must be an object, not {type(values).__name__}")
            return
        fields = physical_fields(struct, self.physical)
        for name, value in values.items():
            path = (*prefix, name)
            column = ".".join(path)
            f = fields.get(name)
            if f is None:
                if not self.physical:
                    message = f"{kind} names {column!r}, which is not a column"
                elif name in struct.names:
                    message = f"{kind} names {column!r} by its logical name, not its physical one"
                else:
                    # Under column mapping, files added before a column was dropped keep stats
                    # under its physical name (checkpoints copy them): readers ignore them.
                    continue
                self.problems.append(("stats-unknown-column", message))
                continue
            if isinstance(f.type, StructType):
                self.walk(kind, value, f.type, path)
            elif kind == "nullCount":
                self._null_count(column, value)
            elif value is not None:
                ok, comparable = _bound(value, f.type)
                if not ok:
                    self.bad(f"{kind} of {column!r} is {value!r}, not a {f.type.to_json()} value")
                elif comparable is not None:
                    self.bounds.setdefault(path, {})[kind] = comparable

    def _null_count(self, column: str, value: Any) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.bad(f"nullCount of {column!r} is {value!r}, not a non-negative integer")
        elif self.num_records is not None and value > self.num_records:
            self.bad(f"nullCount of {column!r} is {value}, more than numRecords")


def stats_problems(
    stats: str, schema: StructType, partition_columns: Sequence[str], *, physical: bool = False
) -> list[Problem]:
    """What is wrong with one ``stats`` string; empty when nothing is.

    Args:
        stats: The ``add.stats`` JSON text.
        schema: The table schema.
        partition_columns: Partition columns (they have no statistics).
        physical: Column mapping is on: statistics use physical column names.
    """
    try:
        doc = orjson.loads(stats)
    except orjson.JSONDecodeError as exc:
        return [("bad-stats", f"stats are not JSON: {exc}")]
    if not isinstance(doc, dict):
        return [("bad-stats", "stats must be a JSON object")]
    num_records = doc.get("numRecords")
    walker = _Walker(physical, None)
    if num_records is not None and (
        not isinstance(num_records, int) or isinstance(num_records, bool) or num_records < 0
    ):
        walker.bad(f"numRecords is {num_records!r}, not a non-negative integer")
    elif isinstance(num_records, int):
        walker.num_records = num_records
    tight = doc.get("tightBounds")
    if tight is not None and not isinstance(tight, bool):
        walker.bad(f"tightBounds is {tight!r}, not a boolean")
    data = StructType(tuple(f for f in schema.fields if f.name not in partition_columns))
    for kind in ("minValues", "maxValues", "nullCount"):
        if doc.get(kind) is not None:
            walker.walk(kind, doc[kind], data, ())
    for path, found in walker.bounds.items():
        low, high = found.get("minValues"), found.get("maxValues")
        if low is None or high is None:
            continue
        try:
            inverted = low > high
        except TypeError:  # e.g. naive vs aware timestamps: the type check reported it
            continue
        if inverted:
            walker.bad(f"minValues of {'.'.join(path)!r} ({low}) is above maxValues ({high})")
    return walker.problems
