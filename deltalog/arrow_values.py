"""Arrow constants built from raw buffers, never by converting Python values.

The first time pyarrow converts a Python value (``pa.scalar``, ``pa.array`` of a list, a
Python number handed to a compute function), it imports pandas when pandas is installed: about
0.15 s, more than opening a million-file table from its checkpoint takes. Paths every open
or CLI command runs build their constants here instead, so pandas is only imported by code
that really converts Python objects.
"""

from __future__ import annotations

import array
import struct

import pyarrow as pa
import pyarrow.compute as pc

from deltalog import arrow_columns
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
    """A ``string`` array of ``values`` (none null; see :func:`deltalog.arrow_columns.column`)."""
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
