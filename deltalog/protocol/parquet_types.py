"""Which physical types of a data file every Delta reader can read, and how to fix the others.

A table must stay readable by delta-spark, delta-rs and deltalog alike, so a file is refused
when one of them cannot read a column, even where another could. Tried with each reader (Spark
4.2 + delta-spark 4.4, delta-rs 1.6.6, deltalog; pyarrow-written files registered in a table of
the matching Delta type):

* **Readable by all, accepted**: timestamps in seconds, milliseconds and microseconds (any time
  zone, or none), INT96 timestamps as Spark writes them, ``date64`` (stored as ``DATE``),
  ``large_string``/``string_view``/``large_binary``/``binary_view``/``fixed_size_binary``
  (stored as plain byte arrays), dictionary-encoded columns, ``fixed_size_list`` and
  ``large_list`` (stored as lists), decimals of any Arrow width up to 38 digits (stored as
  ``INT32``/``INT64``/fixed bytes), ``null`` columns (``void``).
* **Refused**: ``INT64`` timestamps in nanoseconds (pandas' default): delta-spark cannot read
  them at all, and delta-rs and deltalog fail on any value with sub-microsecond digits.
  Unsigned integers, ``float16``, time of day, durations, intervals and ``list_view`` have no
  Delta type.

Each refusal is an :class:`~deltalog.errors.UnsupportedParquetTypeError` naming the column and
saying how to write the file instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from deltalog.errors import UnsupportedParquetTypeError
from deltalog.lazy import lazy_module

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")

__all__ = ["check_data_types", "check_file_types", "check_schema_types"]

_TIMESTAMP_ADVICE = (
    "Delta timestamps are microseconds: write the file with "
    "pq.write_table(table, where, coerce_timestamps='us', allow_truncated_timestamps=False) "
    "(which raises rather than drop sub-microsecond digits; pass True to drop them on "
    "purpose), or cast the column to pa.timestamp('us', tz=...) first"
)


#: pyarrow's list-view predicates (pyarrow 16 and later).
_LIST_VIEWS = ("is_list_view", "is_large_list_view")


def check_file_types(metadata: pq.FileMetaData, schema: pa.Schema, location: str) -> None:
    """Refuse a data file with a column some Delta reader cannot read.

    Args:
        metadata: The file's Parquet footer (physical and logical types).
        schema: The file's Arrow schema (as pyarrow reads it).
        location: The file, for the message.

    Raises:
        UnsupportedParquetTypeError: Naming the column and how to write it instead.
    """
    parquet = metadata.schema
    for i in range(len(parquet)):
        column = parquet.column(i)
        logical = column.logical_type
        if logical.type == "TIMESTAMP" and _unit(logical.to_json()) == "nanoseconds":
            raise UnsupportedParquetTypeError(
                f"{location}: column {column.path!r} holds nanosecond timestamps (INT64 "
                f"TIMESTAMP(NANOS)), which delta-spark cannot read; {_TIMESTAMP_ADVICE}",
                path=location,
                column=column.path,
            )
    for field in schema:
        _check_arrow(field.type, field.name, location, nanos=False)


def _unit(logical_json: str) -> object:
    try:
        parsed = orjson.loads(logical_json)
    except orjson.JSONDecodeError:
        return None
    return parsed.get("timeUnit") if isinstance(parsed, dict) else None


def check_schema_types(schema: pa.Schema) -> None:
    """Refuse an Arrow schema for a table with a type its files could not be written in.

    Nanosecond timestamps are refused too: a Delta timestamp holds microseconds, and files
    written with this schema would be refused.

    Raises:
        UnsupportedParquetTypeError: Naming the column and what to use instead.
    """
    for field in schema:
        _check_arrow(field.type, field.name, None, nanos=True)


def check_data_types(schema: pa.Schema) -> None:
    """Refuse data of an Arrow schema with a type Delta has no type for.

    Unlike :func:`check_schema_types`, nanosecond timestamps pass: a writer converts them to
    microseconds, checking that no value changes.

    Raises:
        UnsupportedParquetTypeError: Naming the column and what to use instead.
    """
    for field in schema:
        _check_arrow(field.type, field.name, None, nanos=False)


def _check_arrow(t: pa.DataType, column: str, location: str | None, *, nanos: bool) -> None:
    """Refuse ``t`` (at ``column``) or a type nested in it; ``nanos``: refuse ns timestamps."""
    advice = _advice(t, nanos=nanos)
    if advice is not None:
        where = f"{location}: column" if location is not None else "column"
        raise UnsupportedParquetTypeError(
            f"{where} {column!r} has type {t}, which Delta readers cannot read: {advice}",
            path=location,
            column=column,
        )
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _check_arrow(t.field(i).type, f"{column}.{t.field(i).name}", location, nanos=nanos)
    elif pa.types.is_map(t):
        _check_arrow(t.key_type, f"{column}.key", location, nanos=nanos)
        _check_arrow(t.item_type, f"{column}.value", location, nanos=nanos)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _check_arrow(t.value_type, f"{column}.element", location, nanos=nanos)
    elif pa.types.is_dictionary(t):
        _check_arrow(t.value_type, column, location, nanos=nanos)


def _advice(t: pa.DataType, *, nanos: bool) -> str | None:
    """How to write a column of type ``t`` instead, or ``None`` when ``t`` is fine."""
    if pa.types.is_unsigned_integer(t):
        wider = {8: "int16", 16: "int32", 32: "int64"}.get(t.bit_width)
        target = (
            f"pa.{wider}()" if wider else "pa.int64() if the values fit, else pa.decimal128(20, 0)"
        )
        return f"Delta has no unsigned integers; cast the column to {target}"
    if pa.types.is_float16(t):
        return "Delta has no 16-bit floats; cast the column to pa.float32()"
    if pa.types.is_time(t):
        return (
            "Delta has no time-of-day type; store it as pa.int64() (e.g. microseconds since "
            "midnight) or as a string"
        )
    if pa.types.is_duration(t) or pa.types.is_interval(t):
        return "Delta has no duration or interval type; store it as pa.int64() (e.g. microseconds)"
    if any(getattr(pa.types, kind, lambda _: False)(t) for kind in _LIST_VIEWS):
        return "cast the column to pa.list_(...)"
    if pa.types.is_decimal(t) and t.precision > 38:
        return "Delta decimals have at most 38 digits; cast to pa.decimal128(38, scale) or less"
    if nanos and pa.types.is_timestamp(t) and t.unit == "ns":
        return (
            "Delta timestamps are microseconds; use pa.timestamp('us', tz=...) in the schema "
            "(and write files with coerce_timestamps='us')"
        )
    return None
