"""Canonical forms, so that engines that read equal data report equal observations.

A value's canonical text (:func:`canon`): booleans ``true``/``false``; integers in decimal;
floating point numbers by the 64-bit IEEE pattern of the double, as a signed integer (so
``-0.0``, ``NaN`` and the last bit count, and no engine's float formatting does); strings as
they are; binary as lower-case hex; dates as days since 1970-01-01; timestamps (with or
without time zone) as microseconds since the epoch in UTC; decimals as their unscaled integer
(the scale is in the schema); structs ``{a,b}``, arrays ``[a,b]`` and maps ``{k:v,...}`` of
their members' texts, nulls inside them as ``null``.

A column's checksum (:func:`column_checksums`) is order-independent: the number of non-null
values, the number of nulls, and the sum of the CRC-32 of each non-null value's canonical text
in UTF-8. It is the definition Delta Kernel's probe (``CompatKernelProbe.java``) computes too.

Partition values are compared as the protocol's strings, normalised (:func:`partition_values`):
each engine's value is parsed with the column's type and serialised again the way deltalog
writes it, and keys are logical column names (column mapping's physical names are mapped back).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import MAX_PREC, Context, Decimal
from typing import Any

import pyarrow as pa

from deltalog.protocol.partitions import parse_partition_value, serialize_partition_value
from deltalog.protocol.schema import StructType, as_struct

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PHYSICAL = "delta.columnMapping.physicalName"

#: A decimal context that never rounds (decimals have up to 38 digits).
_EXACT = Context(prec=MAX_PREC)


def _bits(value: float) -> str:
    return str(struct.unpack(">q", struct.pack(">d", value))[0])


def _is(t: pa.DataType, *names: str) -> bool:
    return any(getattr(pa.types, f"is_{n}", lambda _t: False)(t) for n in names)


def canon(value: Any, t: pa.DataType) -> str:
    """A value's canonical text (see the module docstring).

    Raises:
        TypeError: A type without a canonical text.
    """
    if value is None:
        return "null"
    if pa.types.is_dictionary(t):
        return canon(value, t.value_type)
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_integer(t):
        return str(int(value))
    if pa.types.is_floating(t):
        return _bits(float(value))
    if _is(t, "string", "large_string", "string_view"):
        return str(value)
    if _is(t, "binary", "large_binary", "binary_view", "fixed_size_binary"):
        return bytes(value).hex()
    if pa.types.is_date(t):
        if isinstance(value, datetime):
            value = value.date()
        return str((value - date(1970, 1, 1)).days)
    if pa.types.is_timestamp(t):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return str((aware - _EPOCH) // timedelta(microseconds=1))
    if pa.types.is_decimal(t):
        # Exact: the default context's 28 digits would round a 38-digit decimal.
        return str(int(Decimal(value).scaleb(t.scale, _EXACT)))
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return "{" + ",".join(canon(value.get(f.name), f.type) for f in fields) + "}"
    if _is(t, "list", "large_list", "list_view", "large_list_view", "fixed_size_list"):
        return "[" + ",".join(canon(v, t.value_type) for v in value) + "]"
    if pa.types.is_map(t):
        pairs = [f"{canon(k, t.key_type)}:{canon(v, t.item_type)}" for k, v in value]
        return "{" + ",".join(pairs) + "}"
    raise TypeError(f"no canonical text for {t}")


def column_checksums(data: pa.Table) -> dict[str, dict[str, int]]:
    """Per top-level column: ``count`` (non-null), ``nulls`` and ``crc`` (see module docs)."""
    out: dict[str, dict[str, int]] = {}
    for name, column in zip(data.column_names, data.columns, strict=True):
        crc = 0
        for chunk in column.chunks:
            for value in chunk.to_pylist():
                if value is not None:
                    crc += zlib.crc32(canon(value, column.type).encode())
        nulls = column.null_count
        out[name] = {"count": len(column) - nulls, "nulls": nulls, "crc": crc}
    return out


def _logical_names(schema: StructType) -> dict[str, str]:
    """Physical name -> logical name of the top-level fields (column mapping)."""
    out = {}
    for f in schema.fields:
        physical = (f.metadata or {}).get(_PHYSICAL)
        if isinstance(physical, str):
            out[physical] = f.name
    return out


def partition_values(
    values: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> dict[str, str | None]:
    """An engine's partition values as normalised protocol strings, keyed by logical name.

    ``values`` holds strings (as in the log) or typed values (as delta-rs reports them);
    a value that does not parse is kept as its text, so the difference shows.
    """
    if schema is None:
        return {str(k): None if v is None else str(v) for k, v in sorted(values.items())}
    struct_type = as_struct(dict(schema))
    types = {f.name: f.type for f in struct_type.fields}
    logical = _logical_names(struct_type)
    out: dict[str, str | None] = {}
    for key, value in values.items():
        name = key if key in types else logical.get(key, key)
        t = types.get(name)
        try:
            if t is None:
                raise ValueError(name)
            parsed = parse_partition_value(value, t) if isinstance(value, str) else value
            out[name] = serialize_partition_value(parsed, t)
        except Exception:
            out[name] = None if value is None else str(value)
    return dict(sorted(out.items()))
