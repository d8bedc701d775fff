"""Arrow constants built from raw buffers, never by converting Python values.

The first time pyarrow converts a Python value (``pa.scalar``, ``pa.array`` of a list, a
Python number handed to a compute function), it imports pandas when pandas is installed: about
0.15 s, more than opening a million-file table from its checkpoint takes. Paths every open
or CLI command runs build their constants here instead, so pandas is only imported by code
that really converts Python objects.
"""

from __future__ import annotations

import array
import datetime as dt
import decimal
import struct

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import columns as arrow_columns
from deltalog.checkpoints.arrow_pool import decode_pool


def int_range(start: int, stop: int, step: int = 1, *, width: int = 64) -> pa.Array:
    """``range(start, stop, step)`` as an ``int64`` (or ``int32``, ``width=32``) array.

    Built by Arrow kernels (a running sum of ``step``), not from a Python sequence, from the
    pool deltalog decodes into: a replay numbers a million checkpoint rows this way, and the
    default pool would keep the pages of its temporaries.
    """
    n = len(range(start, stop, step))
    pool = decode_pool()
    steps = pa.repeat(int64(step), n, memory_pool=pool)
    values = pc.cumulative_sum(steps, start=int64(start - step), memory_pool=pool)
    return values if width == 64 else values.cast(pa.int32(), memory_pool=pool)


def zeros(count: int, *, width: int = 64) -> pa.Array:
    """``count`` zeros as an ``int64`` (or ``int32``, ``width=32``) array."""
    values = pa.repeat(int64(0), count)
    return values if width == 64 else values.cast(pa.int32())


def int64(value: int) -> pa.Int64Scalar:
    """An ``int64`` scalar."""
    array = pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(struct.pack("<q", value))])
    scalar = array[0]
    assert isinstance(scalar, pa.Int64Scalar)
    return scalar


def string(value: str) -> pa.StringScalar:
    """A ``string`` scalar."""
    data = value.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    array = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])
    scalar = array[0]
    assert isinstance(scalar, pa.StringScalar)
    return scalar


def int32s(values: list[int]) -> pa.Array:
    """An ``int32`` array of ``values`` (few: offsets, bounds)."""
    return pa.Array.from_buffers(
        pa.int32(), len(values), [None, pa.py_buffer(array.array("i", values))]
    )


def strings(values: list[str]) -> pa.StringArray:
    """A ``string`` array of ``values`` (none null; see :func:`deltalog.arrow.columns.column`)."""
    result = arrow_columns.column(values, pa.string())
    assert isinstance(result, pa.StringArray)
    return result


def true() -> pa.BooleanScalar:
    """The ``bool`` scalar ``True``."""
    array = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(b"\x01")])
    scalar = array[0]
    assert isinstance(scalar, pa.BooleanScalar)
    return scalar


def false() -> pa.BooleanScalar:
    """The ``bool`` scalar ``False``."""
    array = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(b"\x00")])
    scalar = array[0]
    assert isinstance(scalar, pa.BooleanScalar)
    return scalar


def bools(value: bool, count: int) -> pa.BooleanArray:
    """``count`` copies of ``value`` as a ``bool`` array."""
    result = pa.repeat(true() if value else false(), count)
    assert isinstance(result, pa.BooleanArray)
    return result


def null(arrow_type: pa.DataType) -> pa.Scalar:
    """The null scalar of ``arrow_type``."""
    return pa.nulls(1, arrow_type)[0]


_INT_FORMATS = {8: "<b", 16: "<h", 32: "<i", 64: "<q"}
_UINT_FORMATS = {8: "<B", 16: "<H", 32: "<I", 64: "<Q"}


def scalar(value: object, arrow_type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, arrow_type)``, buffer-built where that is simple (no pandas import).

    Booleans, integers, floating point values (rounded as ``pa.scalar`` rounds them to
    ``float32``), strings, dates, microsecond timestamps and ``decimal128`` values are built
    from their bytes; other values are converted by ``pa.scalar``. A value that does not fit
    raises ``pa.ArrowInvalid``. Where ``pa.scalar`` refuses a value the type holds exactly
    (an integer above 2**53 for a double, a time zone offset with microseconds) this gives
    that exact value.
    """
    data: bytes | None = None
    if isinstance(value, bool):
        if pa.types.is_boolean(arrow_type):
            return true() if value else false()
    elif isinstance(value, int) and pa.types.is_integer(arrow_type):
        formats = _INT_FORMATS if pa.types.is_signed_integer(arrow_type) else _UINT_FORMATS
        try:
            data = struct.pack(formats[arrow_type.bit_width], value)
        except struct.error as exc:
            raise pa.ArrowInvalid(f"integer value {value} out of bounds for {arrow_type}") from exc
    elif isinstance(value, int | float) and pa.types.is_floating(arrow_type):
        width = arrow_type.bit_width
        if isinstance(value, int) and not -(1 << 63) <= value < 1 << 63:
            raise pa.ArrowInvalid(f"integer value {value} does not fit a 64-bit integer")
        if width in (32, 64):
            try:
                data = struct.pack("<f" if width == 32 else "<d", value)
            except OverflowError as exc:
                raise pa.ArrowInvalid(f"{value} out of range for {arrow_type}") from exc
    elif isinstance(value, str) and pa.types.is_string(arrow_type):
        return string(value)
    elif isinstance(value, dt.datetime):
        if pa.types.is_timestamp(arrow_type) and arrow_type.unit == "us":
            # an aware value is the instant it names, a naive one is taken as UTC (pa.scalar's
            # rules, for zoned and zone-less columns alike)
            naive = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
            data = struct.pack("<q", (naive - _EPOCH) // dt.timedelta(microseconds=1))
    elif isinstance(value, dt.date):
        if pa.types.is_date32(arrow_type):
            data = struct.pack("<i", (value - _EPOCH_DAY).days)
    elif isinstance(value, decimal.Decimal | int) and pa.types.is_decimal128(arrow_type):
        data = _decimal128(decimal.Decimal(value), arrow_type.precision, arrow_type.scale)
    if data is None:
        return pa.scalar(value, arrow_type)
    return pa.Array.from_buffers(arrow_type, 1, [None, pa.py_buffer(data)])[0]


_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


#: Wide enough that scaling a decimal128's digits never rounds.
_EXACT = decimal.Context(prec=100)


def _decimal128(value: decimal.Decimal, precision: int, scale: int) -> bytes:
    """The 16 bytes of ``value`` as a ``decimal128(precision, scale)`` (exact, or raises)."""
    if not value.is_finite():
        raise pa.ArrowInvalid(f"{value} is not a finite decimal")
    if value and value.adjusted() >= precision - scale:  # before scaling: 1E+999999 is cheap
        raise pa.ArrowInvalid(f"{value} has more than {precision} digits")
    try:
        scaled = value.scaleb(scale, context=_EXACT)
    except ArithmeticError as exc:  # an exponent beyond the context's limits
        raise pa.ArrowInvalid(f"{value} does not fit decimal128({precision}, {scale})") from exc
    unscaled = int(scaled)
    if scaled != unscaled:
        raise pa.ArrowInvalid(f"{value} has more than {scale} digits after the point")
    if abs(unscaled) >= 10**precision:
        raise pa.ArrowInvalid(f"{value} has more than {precision} digits")
    return unscaled.to_bytes(16, "little", signed=True)


def duration_us(microseconds: int) -> pa.Scalar:
    """A ``duration[us]`` scalar."""
    data = pa.py_buffer(struct.pack("<q", microseconds))
    return pa.Array.from_buffers(pa.duration("us"), 1, [None, data])[0]
