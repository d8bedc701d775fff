"""Deletion vectors: find, read and decode the row indexes a DV invalidates.

A deletion vector descriptor (the ``deletionVector`` of an ``add``) names a set of row indexes
of its data file that readers must skip. Per the Delta protocol:

* ``storageType='i'``: the serialized bitmap is inline, Z85-encoded, in ``pathOrInlineDv``;
* ``storageType='u'``: it is in ``<table>/<prefix>/deletion_vector_<uuid>.bin`` where
  ``pathOrInlineDv`` is ``<prefix><uuid as 20 Z85 characters>``, at byte ``offset``;
* ``storageType='p'``: it is in the file ``pathOrInlineDv`` (an absolute, URI-encoded path).

A DV file is a version byte (1) followed by DVs, each a big-endian 4-byte size, the bitmap bytes
and a big-endian CRC-32 of them. The bitmap is a little-endian magic number and a 64-bit
RoaringBitmap: in the protocol's portable format (magic 1681511377) the number of 32-bit buckets
(8 bytes), then per bucket its high 32 bits (4 bytes) and a 32-bit RoaringBitmap in the standard
serialization; delta-spark also reads its older native format (magic 1681511376), which
numbers the buckets by position and gives each one's size.
"""

from __future__ import annotations

import re
import sys
import uuid
import zlib
from array import array
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import DeletionVectorError

__all__ = [
    "DeletionVectorError",
    "dv_file_path",
    "is_dv_tombstone",
    "read_deletion_vector",
    "z85_decode",
]

Z85_ALPHABET = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
_Z85 = {c: i for i, c in enumerate(Z85_ALPHABET)}
#: Magic numbers of delta-spark's two bitmap-array formats (little-endian, as it reads them).
PORTABLE_MAGIC = 1681511377  # the protocol's: 8-byte bucket count, then (key, bitmap) pairs
NATIVE_MAGIC = 1681511376  # 4-byte bitmap count, then (size, bitmap) pairs; key = position
_SERIAL_COOKIE_NO_RUNS = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096


def z85_decode(text: str, size: int | None = None) -> bytes:
    """Decode Z85 text (groups of five characters to four bytes), truncated to ``size``.

    Raises:
        DeletionVectorError: A character outside the alphabet, or a length not a multiple of 5.
    """
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text of length {len(text)} is not a multiple of 5")
    out = bytearray()
    try:
        for start in range(0, len(text), 5):
            value = 0
            for ch in text[start : start + 5]:
                value = value * 85 + _Z85[ch]
            out += value.to_bytes(4, "big")
    except (KeyError, OverflowError) as exc:
        raise DeletionVectorError("deletion vector text is not valid Z85") from exc
    return bytes(out if size is None else out[:size])


def dv_file_path(descriptor: Mapping[str, Any]) -> str | None:
    """The DV file's path (relative to the table root for ``'u'``), or ``None`` when inline.

    Raises:
        DeletionVectorError: An unknown storage type or a malformed UUID.
    """
    kind = descriptor.get("storageType")
    text = str(descriptor.get("pathOrInlineDv") or "")
    if kind == "i":
        return None
    if kind == "p":
        return text
    if kind == "u":
        if len(text) < 20:
            raise DeletionVectorError(f"deletion vector id {text!r} is shorter than a UUID")
        prefix, encoded = text[:-20], text[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    raise DeletionVectorError(f"unknown deletion vector storage type {kind!r}")


#: A DV file's name, as delta-spark matches it (``DeletionVectorDescriptor``).
_DV_FILE_NAME = re.compile(r"deletion_vector_[^.]+\.bin")


def is_dv_tombstone(path: str, descriptor: Mapping[str, Any] | None) -> bool:
    """Whether a ``remove`` of ``path`` (with ``descriptor``) is a deletion-vector tombstone.

    Dropping the ``deletionVectors`` feature, delta-spark (4.x) commits a ``remove`` of each
    DV file the table's tombstones still point to (operation "Deletion Vector Tombstones", no
    ``deletionVector``, ``dataChange=false``) so that vacuum deletes those files in time. Such a
    remove names a file that was never added, and is recognised, as delta-spark does, by the
    file name ``deletion_vector_<id>.bin``.
    """
    return descriptor is None and _DV_FILE_NAME.fullmatch(path.rsplit("/", 1)[-1]) is not None


def read_deletion_vector(
    descriptor: Mapping[str, Any], read_file: Callable[[str], bytes]
) -> pa.Array:
    """The row indexes the DV invalidates, ascending, as a ``uint64`` array.

    Args:
        descriptor: The ``deletionVector`` of an ``add`` (JSON field names).
        read_file: Reads a DV file given :func:`dv_file_path`'s path.

    Raises:
        DeletionVectorError: The DV does not decode, or its count differs from ``cardinality``.
    """
    size = int(descriptor.get("sizeInBytes") or 0)
    path = dv_file_path(descriptor)
    if path is None:
        data = z85_decode(str(descriptor.get("pathOrInlineDv") or ""), size)
    else:
        data = _from_file(read_file(path), int(descriptor.get("offset") or 0), size)
    rows = decode_bitmap(data)
    cardinality = descriptor.get("cardinality")
    if cardinality is not None and len(rows) != int(cardinality):
        raise DeletionVectorError(
            f"deletion vector holds {len(rows)} rows, its descriptor says {cardinality}"
        )
    return rows


def _from_file(blob: bytes, offset: int, size: int) -> bytes:
    if offset < 1 or offset + 4 + size + 4 > len(blob) or blob[0] != 1:
        raise DeletionVectorError("deletion vector lies outside its file, or the file is not v1")
    stored = int.from_bytes(blob[offset : offset + 4], "big")
    if stored != size:
        raise DeletionVectorError(f"deletion vector size {stored} differs from {size}")
    data = blob[offset + 4 : offset + 4 + size]
    checksum = int.from_bytes(blob[offset + 4 + size : offset + 8 + size], "big")
    if zlib.crc32(data) != checksum:
        raise DeletionVectorError("deletion vector checksum mismatch")
    return data


def decode_bitmap(data: bytes) -> pa.Array:
    """Decode Delta's serialized 64-bit bitmap (magic number + portable RoaringBitmap).

    Raises:
        DeletionVectorError: A wrong magic number or truncated data.
    """
    try:
        magic = int.from_bytes(data[0:4], "little")
        if magic == PORTABLE_MAGIC:
            buckets, pos = int.from_bytes(data[4:12], "little"), 12
        elif magic == NATIVE_MAGIC:
            buckets, pos = int.from_bytes(data[4:8], "little"), 8
        else:
            raise DeletionVectorError(f"deletion vector has an unknown magic number {magic}")
        parts: list[pa.Array] = []
        for index in range(buckets):
            # Portable: the bucket's key; native: the bitmap's size (the key is its position).
            word = int.from_bytes(data[pos : pos + 4], "little")
            high = word if magic == PORTABLE_MAGIC else index
            low, pos = _roaring32(data, pos + 4)
            values = pc.cast(low, pa.uint64())
            parts.append(pc.add(values, pa.scalar(high << 32, pa.uint64())) if high else values)
    except (IndexError, ValueError) as exc:
        raise DeletionVectorError("deletion vector data is truncated or malformed") from exc
    if not parts:
        return pa.array([], pa.uint64())
    return pa.concat_arrays(parts)


def _u16(data: bytes, pos: int, count: int) -> array[int]:
    out = array("H")
    out.frombytes(data[pos : pos + 2 * count])
    if len(out) != count:
        raise ValueError("truncated")
    if sys.byteorder != "little":
        out.byteswap()
    return out


def _roaring32(data: bytes, pos: int) -> tuple[pa.Array, int]:
    """One 32-bit RoaringBitmap (standard serialization) at ``pos``; values and the end."""
    cookie = int.from_bytes(data[pos : pos + 4], "little")
    run_flags = b""
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        count = (cookie >> 16) + 1
        pos += 4
        run_flags = data[pos : pos + (count + 7) // 8]
        pos += (count + 7) // 8
        has_offsets = count >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUNS:
        count = int.from_bytes(data[pos + 4 : pos + 8], "little")
        pos += 8
        has_offsets = True
    else:
        raise ValueError(f"unknown RoaringBitmap cookie {cookie}")
    header = _u16(data, pos, 2 * count)
    pos += 4 * count
    if has_offsets:
        pos += 4 * count  # container offsets: the containers follow in order anyway
    parts: list[pa.Array] = []
    for i in range(count):
        key, cardinality = header[2 * i], header[2 * i + 1] + 1
        base = pa.scalar(key << 16, pa.uint32())
        if run_flags and run_flags[i // 8] >> (i % 8) & 1:
            runs = int.from_bytes(data[pos : pos + 2], "little")
            pairs = _u16(data, pos + 2, 2 * runs)
            pos += 2 + 4 * runs
            low = pa.array(
                [
                    v
                    for j in range(runs)
                    for v in range(pairs[2 * j], pairs[2 * j] + pairs[2 * j + 1] + 1)
                ],
                pa.uint32(),
            )
        elif cardinality > _ARRAY_MAX:
            bits = data[pos : pos + 8192]
            if len(bits) != 8192:
                raise ValueError("truncated")
            pos += 8192
            mask = pa.BooleanArray.from_buffers(pa.bool_(), 65536, [None, pa.py_buffer(bits)])
            low = pc.cast(pc.indices_nonzero(mask), pa.uint32())
        else:
            low = pa.array(_u16(data, pos, cardinality), pa.uint32())
            pos += 2 * cardinality
        parts.append(pc.add(low, base) if key else low)
    values = pa.concat_arrays(parts) if parts else pa.array([], pa.uint32())
    return values, pos
