"""Encode row indexes as Delta's serialized 64-bit RoaringBitmap (the portable format).

The inverse of :mod:`deltalog.protocol.roaring`, laid out as delta-spark's
``RoaringBitmapArray`` serializes a deletion vector (``RoaringBitmapArrayFormat.Portable``):
the little-endian magic number 1681511377, the number of 32-bit buckets (8 bytes), then for
every bucket from 0 to the highest one (empty ones included, as delta-spark's array of bitmaps
writes them) its key (4 bytes) and a 32-bit RoaringBitmap in the standard serialization.

Each 16-bit container is written the way that takes the fewest bytes, as RoaringBitmap's
``runOptimize`` chooses: a run container when its runs are shorter than the alternative, else
an array container (at most 4,096 values) or a bitmap container (more). The standard format
tells array from bitmap containers by their cardinality alone, so that rule is not a choice.
Values are grouped and measured with Arrow kernels; Python only loops over containers (one per
65,536 rows of the data file), never over values.
"""

from __future__ import annotations

import functools
import sys
from array import array

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import DeletionVectorError
from deltalog.protocol.roaring import PORTABLE_MAGIC

__all__ = ["encode_bitmap"]

_SERIAL_COOKIE_NO_RUNS = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_CONTAINER_SPAN = 1 << 16
_BITMAP_BYTES = _CONTAINER_SPAN // 8
#: Delta requires bucket keys with a clear top bit (Java reads them signed).
_MAX_BUCKET = (1 << 31) - 1


def encode_bitmap(values: pa.Array | pa.ChunkedArray) -> bytes:
    """Serialize strictly ascending row indexes (magic number first) as delta-spark does.

    Args:
        values: Non-negative integers, strictly ascending (``uint64`` or any integer type).

    Raises:
        DeletionVectorError: A value is negative, out of Delta's range, or the values do not
            strictly ascend.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not pa.types.is_integer(values.type):
        raise DeletionVectorError(f"row indexes must be integers, not {values.type}")
    if values.null_count:
        raise DeletionVectorError("row indexes must not be null")
    signed = pa.types.is_signed_integer(values.type)
    if len(values) and signed and pc.min(values).as_py() < 0:
        raise DeletionVectorError("row indexes must not be negative")
    indexes = values.cast(pa.uint64())
    if len(indexes) > 1 and not pc.all(pc.greater(indexes[1:], indexes[:-1])).as_py():
        raise DeletionVectorError("row indexes must strictly ascend")
    out = bytearray(PORTABLE_MAGIC.to_bytes(4, "little"))
    if not len(indexes):
        out += (0).to_bytes(8, "little")
        return bytes(out)
    highs = pc.shift_right(indexes, av.scalar(32, pa.uint64()))
    top = highs[-1].as_py()
    if top > _MAX_BUCKET:
        raise DeletionVectorError(f"row index {indexes[-1].as_py()} is beyond Delta's range")
    out += (top + 1).to_bytes(8, "little")
    lows = pc.bit_wise_and(indexes, av.scalar(0xFFFFFFFF, pa.uint64())).cast(pa.uint32())
    ends, keys = _runs(highs)
    start = 0
    buckets = dict(zip(keys, ends, strict=True))
    for bucket in range(top + 1):
        out += bucket.to_bytes(4, "little")
        end = buckets.get(bucket)
        if end is None:  # an empty 32-bit bitmap: no containers
            out += _SERIAL_COOKIE_NO_RUNS.to_bytes(4, "little") + (0).to_bytes(4, "little")
            continue
        out += _bitmap32(lows.slice(start, end - start))
        start = end
    return bytes(out)


def _runs(values: pa.Array) -> tuple[list[int], list[int]]:
    """``(run ends, run values)`` of an ascending array: where each distinct value stops."""
    encoded = pc.run_end_encode(values, run_end_type=pa.int64())
    return encoded.run_ends.to_pylist(), encoded.values.to_pylist()


def _bitmap32(lows: pa.Array) -> bytes:
    """One bucket's values (ascending ``uint32``) as a 32-bit RoaringBitmap."""
    keys16 = pc.shift_right(lows, av.scalar(16, pa.uint32()))
    low16 = pc.bit_wise_and(lows, av.scalar(0xFFFF, pa.uint32())).cast(pa.int64())
    ends, keys = _runs(keys16)
    bodies: list[bytes] = []
    is_run: list[bool] = []
    cardinalities: list[int] = []
    start = 0
    for end in ends:
        body, run = _container(low16.slice(start, end - start))
        bodies.append(body)
        is_run.append(run)
        cardinalities.append(end - start)
        start = end
    count = len(bodies)
    header = bytearray()
    for key, cardinality in zip(keys, cardinalities, strict=True):
        header += int(key).to_bytes(2, "little") + (cardinality - 1).to_bytes(2, "little")
    if any(is_run):
        flags = bytearray((count + 7) // 8)
        for i, run in enumerate(is_run):
            if run:
                flags[i // 8] |= 1 << (i % 8)
        prefix = (_SERIAL_COOKIE | (count - 1) << 16).to_bytes(4, "little") + bytes(flags)
        with_offsets = count >= _NO_OFFSET_THRESHOLD
    else:
        prefix = _SERIAL_COOKIE_NO_RUNS.to_bytes(4, "little") + count.to_bytes(4, "little")
        with_offsets = True
    out = bytearray(prefix) + header
    if with_offsets:
        position = len(out) + 4 * count
        for body in bodies:
            out += position.to_bytes(4, "little")
            position += len(body)
    for body in bodies:
        out += body
    return bytes(out)


def _container(values: pa.Array) -> tuple[bytes, bool]:
    """One container's body and whether it is a run container.

    ``values`` are the container's ascending low 16 bits, as ``int64``.
    """
    cardinality = len(values)
    plain = 2 * cardinality if cardinality <= _ARRAY_MAX else _BITMAP_BYTES
    if cardinality > 1:
        gaps = pc.not_equal(pc.subtract(values[1:], values[:-1]), av.int64(1))
        starts = pc.indices_nonzero(gaps)
        runs = len(starts) + 1
    else:
        starts, runs = None, 1
    if 2 + 4 * runs < plain:
        return _run_container(values, starts, runs), True
    if cardinality <= _ARRAY_MAX:
        return _little_endian(values.cast(pa.uint16()), "H"), False
    mask = pc.is_in(_positions(), value_set=values)
    bits = mask.buffers()[1]
    return bits.to_pybytes()[:_BITMAP_BYTES], False


def _run_container(values: pa.Array, gaps: pa.Array | None, runs: int) -> bytes:
    """``runs`` as (start, length - 1) pairs after the run count."""
    last = len(values) - 1
    if gaps is None or not len(gaps):
        first_index = pa.array([0], pa.int64())
        last_index = pa.array([last], pa.int64())
    else:
        after = pc.add(gaps.cast(pa.int64()), av.int64(1))  # a new run starts after each gap
        first_index = pa.concat_arrays([pa.array([0], pa.int64()), after])
        last_index = pa.concat_arrays([gaps.cast(pa.int64()), pa.array([last], pa.int64())])
    starts = pc.take(values, first_index)
    lengths = pc.subtract(pc.take(values, last_index), starts)
    packed = pc.bit_wise_or(starts, pc.shift_left(lengths, av.int64(16))).cast(pa.uint32())
    return runs.to_bytes(2, "little") + _little_endian(packed, "I")


def _little_endian(values: pa.Array, code: str) -> bytes:
    """The values of a fixed-width array (offset 0) as little-endian bytes."""
    size = array(code).itemsize
    data = values.buffers()[1].to_pybytes()
    raw = data[values.offset * size : (values.offset + len(values)) * size]
    if sys.byteorder != "little":  # pragma: no cover - Arrow arrays are host-endian
        swapped = array(code, raw)
        swapped.byteswap()
        return swapped.tobytes()
    return bytes(raw)


@functools.cache
def _positions() -> pa.Array:
    """0, 1, ..., 65535 (``int64``): the values a bitmap container may hold."""
    return av.int_range(0, _CONTAINER_SPAN)
