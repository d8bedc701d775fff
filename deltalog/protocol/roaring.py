"""Decode Delta's serialized 64-bit RoaringBitmap, bounded before anything is expanded.

The bitmap is a little-endian magic number and a 64-bit RoaringBitmap: in the protocol's
portable format (magic 1681511377) the number of 32-bit buckets (8 bytes), then per bucket its
high 32 bits (4 bytes) and a 32-bit RoaringBitmap in the standard serialization; delta-spark
also reads its older native format (magic 1681511376), which numbers the buckets by position
and gives each one's size.

A 32-bit RoaringBitmap names its containers (16-bit key, cardinality) in a header before their
bodies, and a run container of a few bytes can stand for 65,536 values, so a DV of a few
kilobytes can claim billions of rows. Every claim is therefore checked against the limits
before the values it stands for are made: keys must ascend and lie below the data file's row
count, the containers' cardinalities must add up to no more than the DV's declared
cardinality, and a run container's runs must stay inside it and add up to its cardinality.
Values are then made by Arrow kernels (a run container through run-end decoding), never row by
row in Python, so the work and memory are bounded by the cardinality (itself bounded by the
file's rows). Only pyarrow is used here, no numpy.
"""

from __future__ import annotations

import functools
import sys
from array import array
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import DeletionVectorError

__all__ = ["NATIVE_MAGIC", "PORTABLE_MAGIC", "decode_bitmap", "max_serialized_size"]

#: Magic numbers of delta-spark's two bitmap-array formats (little-endian, as it reads them).
PORTABLE_MAGIC = 1681511377  # the protocol's: 8-byte bucket count, then (key, bitmap) pairs
NATIVE_MAGIC = 1681511376  # 4-byte bitmap count, then (size, bitmap) pairs; key = position
_SERIAL_COOKIE_NO_RUNS = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_CONTAINER_SPAN = 1 << 16
_BUCKET_SPAN = 1 << 32
#: The largest container body: a run container of one run per value (2 + 4 bytes each).
_MAX_CONTAINER_BYTES = 2 + 4 * _CONTAINER_SPAN
_BITMAP_BYTES = _CONTAINER_SPAN // 8


def max_serialized_size(num_rows: int) -> int:
    """An upper bound on the serialized size of any valid bitmap of values below ``num_rows``.

    Values below ``num_rows`` fall in at most ``ceil(num_rows / 2**32)`` buckets and
    ``ceil(num_rows / 2**16)`` containers; each bucket takes a key and a cookie, each container
    a header entry, an offset, a run flag and at most a run container of 65,536 runs.
    """
    buckets = max(num_rows - 1, 0) // _BUCKET_SPAN + 1
    containers = max(num_rows - 1, 0) // _CONTAINER_SPAN + 1
    return 12 + buckets * 13 + containers * (9 + _MAX_CONTAINER_BYTES)


@dataclass
class _Budget:
    """What the bitmap may still hold: values below ``limit``, ``remaining`` more of them."""

    limit: int | None
    remaining: int | None

    def take(self, count: int) -> None:
        if self.remaining is None:
            return
        if count > self.remaining:
            raise DeletionVectorError(
                "deletion vector holds more rows than its declared cardinality (or than its "
                "data file has)"
            )
        self.remaining -= count

    def check_row(self, row: int, what: str) -> None:
        if self.limit is not None and row >= self.limit:
            raise DeletionVectorError(
                f"deletion vector names row {row}{what}, but its data file has {self.limit} rows"
            )


def decode_bitmap(
    data: bytes, *, num_rows: int | None = None, cardinality: int | None = None
) -> pa.Array:
    """Decode Delta's serialized 64-bit bitmap into ascending ``uint64`` row indexes.

    Args:
        data: The serialized bitmap (magic number first).
        num_rows: Every value must be below this (the data file's row count).
        cardinality: The bitmap must hold exactly this many values (the descriptor's).

    Raises:
        DeletionVectorError: A wrong magic number, truncated or malformed data, values that are
            not strictly ascending, a value at or past ``num_rows``, or a count that differs
            from ``cardinality``.
    """
    view = memoryview(data)
    budget = _Budget(num_rows, cardinality if cardinality is not None else num_rows)
    magic = _uint(view, 0, 4)
    if magic == PORTABLE_MAGIC:
        buckets, pos = _uint(view, 4, 8), 12
    elif magic == NATIVE_MAGIC:
        buckets, pos = _uint(view, 4, 4), 8
    else:
        raise DeletionVectorError(f"deletion vector has an unknown magic number {magic}")
    # Every bucket takes at least a 4-byte word and an 8-byte empty bitmap, and bucket keys
    # ascend (native: they are positions) below the row count.
    room = (len(view) - pos) // 12
    if num_rows is not None:
        room = min(room, max(num_rows - 1, 0) // _BUCKET_SPAN + 1)
    if buckets > room:
        raise DeletionVectorError(
            f"deletion vector claims {buckets} buckets in {len(view)} bytes"
            + (f" for {num_rows} rows" if num_rows is not None else "")
        )
    parts: list[pa.Array] = []
    previous = -1
    for index in range(buckets):
        # Portable: the bucket's key; native: the bitmap's size (the key is its position).
        word = _uint(view, pos, 4)
        high = word if magic == PORTABLE_MAGIC else index
        if high <= previous:
            raise DeletionVectorError("deletion vector buckets are not in ascending order")
        previous = high
        pos = _roaring32(view, pos + 4, high, budget, parts)
    if cardinality is not None and budget.remaining:
        raise DeletionVectorError(
            f"deletion vector holds {cardinality - budget.remaining} rows, its descriptor says "
            f"{cardinality}"
        )
    return pa.concat_arrays(parts) if parts else pa.Array.from_buffers(pa.uint64(), 0, [None, None])


def _uint(view: memoryview, pos: int, size: int) -> int:
    chunk = view[pos : pos + size]
    if len(chunk) != size:
        raise DeletionVectorError("deletion vector data is truncated")
    return int.from_bytes(chunk, "little")


def _words(view: memoryview, pos: int, count: int, code: str, arrow: pa.DataType) -> pa.Array:
    """``count`` little-endian unsigned words at ``pos`` as an Arrow array (one copy)."""
    size = array(code).itemsize
    if pos + size * count > len(view):
        raise DeletionVectorError("deletion vector data is truncated")
    raw = view[pos : pos + size * count]
    if sys.byteorder != "little":  # pragma: no cover - Arrow arrays are host-endian
        swapped = array(code, raw)
        swapped.byteswap()
        raw = memoryview(swapped).cast("B")
    return pa.Array.from_buffers(arrow, count, [None, pa.py_buffer(bytes(raw))])


def _pairs(view: memoryview, pos: int, count: int) -> tuple[pa.Array, pa.Array]:
    """``count`` pairs of little-endian 16-bit words at ``pos``: both halves, as ``int64``."""
    packed = _words(view, pos, count, "I", pa.uint32())
    first = pc.bit_wise_and(packed, av.scalar(0xFFFF, pa.uint32())).cast(pa.int64())
    second = pc.shift_right(packed, av.scalar(16, pa.uint32())).cast(pa.int64())
    return first, second


def _ascending(values: pa.Array) -> bool:
    """Whether ``values`` strictly ascend."""
    if len(values) < 2:
        return True
    return bool(pc.all(pc.greater(values[1:], values[:-1])).as_py())


@functools.cache
def _positions() -> pa.Array:
    """0, 1, ..., 65535 (``int64``): sliced for the positions within a container."""
    ones = pa.repeat(av.scalar(1, pa.int64()), _CONTAINER_SPAN)
    return pc.subtract(pc.cumulative_sum(ones), av.scalar(1, pa.int64()))


def _roaring32(view: memoryview, pos: int, high: int, budget: _Budget, out: list[pa.Array]) -> int:
    """Decode one 32-bit RoaringBitmap at ``pos`` into ``out``; where it ends."""
    cookie = _uint(view, pos, 4)
    run_flags = b""
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        count = (cookie >> 16) + 1
        pos += 4
        run_flags = bytes(view[pos : pos + (count + 7) // 8])
        if len(run_flags) != (count + 7) // 8:
            raise DeletionVectorError("deletion vector data is truncated")
        pos += len(run_flags)
        has_offsets = count >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUNS:
        count = _uint(view, pos + 4, 4)
        pos += 8
        has_offsets = True
    else:
        raise DeletionVectorError(f"deletion vector has an unknown RoaringBitmap cookie {cookie}")
    if count > _CONTAINER_SPAN:
        raise DeletionVectorError(f"deletion vector claims {count} containers in one bucket")
    keys, cardinalities = _pairs(view, pos, count)
    pos += 4 * count + (4 * count if has_offsets else 0)  # the containers follow in order
    if count:
        if not _ascending(keys):
            raise DeletionVectorError("deletion vector containers are not in ascending order")
        last = keys[-1].as_py()
        budget.check_row(high << 32 | last << 16, " or later")
        budget.take(pc.sum(cardinalities).as_py() + count)  # the header holds cardinality - 1
    for i, (key, size) in enumerate(zip(keys.to_pylist(), cardinalities.to_pylist(), strict=True)):
        size += 1
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            low, pos = _run_container(view, pos, size)
        elif size > _ARRAY_MAX:
            bits = bytes(view[pos : pos + _BITMAP_BYTES])
            if len(bits) != _BITMAP_BYTES:
                raise DeletionVectorError("deletion vector data is truncated")
            pos += _BITMAP_BYTES
            mask = pa.BooleanArray.from_buffers(
                pa.bool_(), _CONTAINER_SPAN, [None, pa.py_buffer(bits)]
            )
            low = pc.indices_nonzero(mask)
            if len(low) != size:
                raise DeletionVectorError(
                    f"deletion vector bitmap container holds {len(low)} values, its header {size}"
                )
        else:
            low = _words(view, pos, size, "H", pa.uint16())
            pos += 2 * size
            if not _ascending(low):
                raise DeletionVectorError("deletion vector array container is not ascending")
        values = pc.add(low.cast(pa.uint64()), av.scalar(high << 32 | key << 16, pa.uint64()))
        budget.check_row(values[-1].as_py(), "")
        out.append(values)
    return pos


def _run_container(view: memoryview, pos: int, size: int) -> tuple[pa.Array, int]:
    """A run container's values (checked to be ``size`` of them first); where it ends."""
    runs = _uint(view, pos, 2)
    starts, lengths = _pairs(view, pos + 2, runs)
    pos += 2 + 4 * runs
    lengths = pc.add(lengths, av.scalar(1, pa.int64()))  # stored as length - 1
    ends = pc.add(starts, lengths)  # exclusive
    if (
        runs == 0
        or ends[-1].as_py() > _CONTAINER_SPAN
        or (runs > 1 and not pc.all(pc.greater_equal(starts[1:], ends[:-1])).as_py())
    ):
        raise DeletionVectorError("deletion vector run container has overlapping or empty runs")
    covered = pc.sum(lengths).as_py()
    if covered != size:
        raise DeletionVectorError(
            f"deletion vector run container covers {covered} values, its header {size}"
        )
    # A value is its position in the container plus its run's offset: the run's start less
    # the values before it, spread over the run by run-end decoding.
    run_ends = pc.cumulative_sum(lengths)
    offsets = pc.subtract(starts, pc.subtract(run_ends, lengths))
    spread = pc.run_end_decode(
        pa.RunEndEncodedArray.from_arrays(run_ends.cast(pa.int32()), offsets)
    )
    return pc.add(_positions()[:size], spread), pos
