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
Values are then made by numpy on views of the bytes (a run container through a cumulative sum),
never row by row in Python, so the work and memory are bounded by the cardinality (itself
bounded by the file's rows). numpy rather than Arrow kernels: a DV on every data file decodes
a few containers per file, where the per-call cost of Arrow's kernels dominated (0.7 ms a file).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from deltalog.errors import DeletionVectorError

__all__ = [
    "NATIVE_MAGIC",
    "PORTABLE_MAGIC",
    "decode_bitmap",
    "decode_deleted_flags",
    "max_serialized_size",
]

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
    parts: list[np.ndarray] = []
    _decode(data, num_rows, cardinality, parts, None)
    values = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    # the values' buffer as it is (pa.array of a numpy array imports pandas: ~0.3 s)
    return pa.Array.from_buffers(pa.uint64(), len(values), [None, pa.py_buffer(values)])


def decode_deleted_flags(
    data: bytes, *, num_rows: int, cardinality: int | None = None
) -> np.ndarray:
    """Decode Delta's serialized bitmap into one ``bool`` per row, true where it is deleted.

    What :func:`decode_bitmap` checks, checked the same way; but a bitmap container's 8 KiB
    are unpacked in place (its bits are the flags of its 65,536 rows), never turned into
    row indexes and back: the read path wants a mask, not the indexes.

    Args:
        data: The serialized bitmap (magic number first).
        num_rows: The data file's row count: the flags' length; every value must be below it.
        cardinality: The bitmap must hold exactly this many values (the descriptor's).

    Raises:
        DeletionVectorError: As :func:`decode_bitmap`.
    """
    flags = np.zeros(num_rows, np.bool_)
    _decode(data, num_rows, cardinality, [], flags)
    return flags


def _decode(
    data: bytes,
    num_rows: int | None,
    cardinality: int | None,
    parts: list[np.ndarray],
    flags: np.ndarray | None,
) -> None:
    """Decode into ``parts`` (arrays of row indexes), or into ``flags`` when it is given."""
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
    previous = -1
    for index in range(buckets):
        # Portable: the bucket's key; native: the bitmap's size (the key is its position).
        word = _uint(view, pos, 4)
        high = word if magic == PORTABLE_MAGIC else index
        if high <= previous:
            raise DeletionVectorError("deletion vector buckets are not in ascending order")
        previous = high
        pos = _roaring32(view, pos + 4, high, budget, parts, flags)
    if cardinality is not None and budget.remaining:
        raise DeletionVectorError(
            f"deletion vector holds {cardinality - budget.remaining} rows, its descriptor says "
            f"{cardinality}"
        )


def _uint(view: memoryview, pos: int, size: int) -> int:
    chunk = view[pos : pos + size]
    if len(chunk) != size:
        raise DeletionVectorError("deletion vector data is truncated")
    return int.from_bytes(chunk, "little")


def _words(view: memoryview, pos: int, count: int, dtype: str) -> np.ndarray:
    """``count`` little-endian unsigned words (numpy ``dtype``, e.g. ``"<u2"``) at ``pos``."""
    size = np.dtype(dtype).itemsize
    if count < 0 or pos + size * count > len(view):
        raise DeletionVectorError("deletion vector data is truncated")
    return np.frombuffer(view, dtype, count, pos)


def _pairs(view: memoryview, pos: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` pairs of little-endian 16-bit words at ``pos``: both halves, as ``int64``."""
    packed = _words(view, pos, 2 * count, "<u2").reshape(count, 2).astype(np.int64)
    return packed[:, 0], packed[:, 1]


def _ascending(values: np.ndarray) -> bool:
    """Whether ``values`` strictly ascend."""
    return len(values) < 2 or bool(np.all(values[1:] > values[:-1]))


def _roaring32(
    view: memoryview,
    pos: int,
    high: int,
    budget: _Budget,
    out: list[np.ndarray],
    flags: np.ndarray | None = None,
) -> int:
    """Decode one 32-bit RoaringBitmap at ``pos`` into ``out`` (or ``flags``); where it ends."""
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
        last = int(keys[-1])
        budget.check_row(high << 32 | last << 16, " or later")
        budget.take(int(cardinalities.sum()) + count)  # the header holds cardinality - 1
    for i, (key, size) in enumerate(zip(keys.tolist(), cardinalities.tolist(), strict=True)):
        size += 1
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            low, pos = _run_container(view, pos, size)
        elif size > _ARRAY_MAX and flags is not None:
            bits = _words(view, pos, _BITMAP_BYTES, "u1")
            pos += _BITMAP_BYTES
            _bitmap_flags(bits, size, high << 32 | key << 16, budget, flags)
            continue
        elif size > _ARRAY_MAX:
            bits = _words(view, pos, _BITMAP_BYTES, "u1")
            pos += _BITMAP_BYTES
            low = np.flatnonzero(np.unpackbits(bits, bitorder="little"))
            if len(low) != size:
                raise DeletionVectorError(
                    f"deletion vector bitmap container holds {len(low)} values, its header {size}"
                )
        else:
            low = _words(view, pos, size, "<u2")
            pos += 2 * size
            if not _ascending(low):
                raise DeletionVectorError("deletion vector array container is not ascending")
        values = low.astype(np.uint64) + np.uint64(high << 32 | key << 16)
        budget.check_row(int(values[-1]), "")
        if flags is None:
            out.append(values)
        else:
            flags[values.astype(np.int64)] = True
    return pos


def _bitmap_flags(
    bits: np.ndarray, size: int, base: int, budget: _Budget, flags: np.ndarray
) -> None:
    """A bitmap container's bits (rows ``base`` on) set in ``flags``, checked as values are."""
    unpacked = np.unpackbits(bits, bitorder="little").view(np.bool_)
    count = int(np.count_nonzero(unpacked))
    if count != size:
        raise DeletionVectorError(
            f"deletion vector bitmap container holds {count} values, its header {size}"
        )
    last = _CONTAINER_SPAN - 1 - int(np.argmax(unpacked[::-1]))
    budget.check_row(base + last, "")  # below the row count: the flags reach that far
    span = flags[base : base + _CONTAINER_SPAN]
    span |= unpacked[: len(span)]


def _run_container(view: memoryview, pos: int, size: int) -> tuple[np.ndarray, int]:
    """A run container's values (checked to be ``size`` of them first); where it ends."""
    runs = _uint(view, pos, 2)
    starts, lengths = _pairs(view, pos + 2, runs)
    pos += 2 + 4 * runs
    lengths = lengths + 1  # stored as length - 1
    ends = starts + lengths  # exclusive
    if runs == 0 or int(ends[-1]) > _CONTAINER_SPAN or bool(np.any(starts[1:] < ends[:-1])):
        raise DeletionVectorError("deletion vector run container has overlapping or empty runs")
    covered = int(lengths.sum())
    if covered != size:
        raise DeletionVectorError(
            f"deletion vector run container covers {covered} values, its header {size}"
        )
    # Every value is one more than the one before, except at the start of a run, which jumps
    # to that run's start: a cumulative sum of those steps.
    steps = np.ones(size, np.int64)
    firsts = np.cumsum(lengths) - lengths  # where each run begins among the values
    steps[firsts] = starts - np.concatenate(([0], ends[:-1])) + 1
    steps[0] = starts[0]
    return np.cumsum(steps), pos
