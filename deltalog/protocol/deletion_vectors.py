"""Deletion vectors: find, read and decode the row indexes a DV invalidates.

A deletion vector descriptor (the ``deletionVector`` of an ``add``) names a set of row indexes
of its data file that readers must skip. Per the Delta protocol:

* ``storageType='i'``: the serialized bitmap is inline, Z85-encoded, in ``pathOrInlineDv``;
* ``storageType='u'``: it is in ``<table>/<prefix>/deletion_vector_<uuid>.bin`` where
  ``pathOrInlineDv`` is ``<prefix><uuid as 20 Z85 characters>``, at byte ``offset``;
* ``storageType='p'``: it is in the file ``pathOrInlineDv`` (an absolute, URI-encoded path).

A DV file is a version byte (1) followed by DVs, each a big-endian 4-byte size, the bitmap bytes
and a big-endian CRC-32 of them. The bitmap is decoded by :mod:`deltalog.protocol.roaring`.

A DV is bounded by its data file's row count before it is read or expanded: its declared
cardinality and size must be possible for that many rows, and the decoder checks every
container against both, so a malicious DV fails in milliseconds instead of expanding billions
of row indexes.
"""

from __future__ import annotations

import functools
import re
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from deltalog.errors import DeletionVectorError
from deltalog.protocol.roaring import (
    NATIVE_MAGIC,
    PORTABLE_MAGIC,
    decode_bitmap,
    decode_deleted_flags,
    max_serialized_size,
)

__all__ = [
    "NATIVE_MAGIC",
    "PORTABLE_MAGIC",
    "DeletionVectorError",
    "decode_bitmap",
    "dv_file_path",
    "is_dv_tombstone",
    "live_mask",
    "live_mask_of_flags",
    "live_ranges",
    "read_deleted_flags",
    "read_deletion_vector",
    "z85_decode",
]

Z85_ALPHABET = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
#: Each byte's Z85 digit value, 255 for bytes outside the alphabet (for ``bytes.translate``).
_Z85 = bytes(Z85_ALPHABET.find(chr(b)) % 256 if chr(b) in Z85_ALPHABET else 255 for b in range(256))


def z85_decode(text: str, size: int | None = None) -> bytes:
    """Decode Z85 text (groups of five characters to four bytes), truncated to ``size``.

    Vectorised: the characters become digits through one table lookup, the groups words
    through numpy.

    Raises:
        DeletionVectorError: A character outside the alphabet, or a length not a multiple of 5.
    """
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text of length {len(text)} is not a multiple of 5")
    try:
        digits = text.encode("ascii").translate(_Z85)
    except UnicodeEncodeError as exc:
        raise DeletionVectorError("deletion vector text is not valid Z85") from exc
    if b"\xff" in digits:
        raise DeletionVectorError("deletion vector text is not valid Z85")
    if not digits:
        return b""
    groups = np.frombuffer(digits, dtype=np.uint8).reshape(-1, 5).astype(np.uint64)
    words = groups[:, 0]
    for k in range(1, 5):
        words = words * np.uint64(85) + groups[:, k]
    if int(words.max()) >= 1 << 32:
        raise DeletionVectorError("deletion vector text is not valid Z85")
    out = words.astype(">u4").tobytes()  # Z85 words are big-endian
    return out if size is None else out[:size]


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
        name = _dv_file_name(encoded)
        return f"{prefix}/{name}" if prefix else name
    raise DeletionVectorError(f"unknown deletion vector storage type {kind!r}")


@functools.lru_cache(maxsize=1024)
def _dv_file_name(encoded: str) -> str:
    """``deletion_vector_<uuid>.bin`` of a Z85-encoded UUID.

    Cached: every DV of one delete usually lives in one file, named by every data file's DV.
    """
    return f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"


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
    descriptor: Mapping[str, Any], read_file: Callable[[str], bytes], *, num_rows: int
) -> pa.Array:
    """The row indexes the DV invalidates, ascending, as a ``uint64`` array.

    The descriptor's cardinality and size are checked against ``num_rows`` before the DV is
    read, and the bitmap against both while it is decoded (see :mod:`deltalog.protocol.roaring`).

    Args:
        descriptor: The ``deletionVector`` of an ``add`` (JSON field names).
        read_file: Reads a DV file given :func:`dv_file_path`'s path.
        num_rows: The data file's row count (its Parquet footer's): every index is below it.

    Raises:
        DeletionVectorError: The DV does not decode, names a row the file does not have, or
            its count differs from ``cardinality``.
    """
    data, cardinality = _serialized(descriptor, read_file, num_rows)
    return decode_bitmap(data, num_rows=num_rows, cardinality=cardinality)


def read_deleted_flags(
    descriptor: Mapping[str, Any], read_file: Callable[[str], bytes], *, num_rows: int
) -> np.ndarray:
    """One ``bool`` per row of the data file, true where the DV deletes it.

    As :func:`read_deletion_vector` (the same checks, the same errors), for a reader that
    wants a mask: bitmap containers become flags without making their row indexes.
    """
    data, cardinality = _serialized(descriptor, read_file, num_rows)
    return decode_deleted_flags(data, num_rows=num_rows, cardinality=cardinality)


def _serialized(
    descriptor: Mapping[str, Any], read_file: Callable[[str], bytes], num_rows: int
) -> tuple[bytes, int | None]:
    """The DV's serialized bitmap and its declared cardinality, bounded by ``num_rows``."""
    size = _field(descriptor, "sizeInBytes", 0)
    cardinality = _field(descriptor, "cardinality", None)
    if cardinality is not None and cardinality > num_rows:
        raise DeletionVectorError(
            f"deletion vector deletes {cardinality} rows of a data file that has {num_rows}"
        )
    if size > max_serialized_size(num_rows):
        raise DeletionVectorError(
            f"deletion vector of {size} bytes is larger than any bitmap of {num_rows} rows"
        )
    path = dv_file_path(descriptor)
    if path is None:
        text = str(descriptor.get("pathOrInlineDv") or "")
        if len(text) // 5 * 4 < size:
            raise DeletionVectorError(
                f"inline deletion vector of {len(text)} characters is shorter than {size} bytes"
            )
        data = z85_decode(text[: (size + 3) // 4 * 5], size)
    else:
        data = _from_file(read_file(path), _field(descriptor, "offset", 0), size)
    return data, cardinality


def _field(descriptor: Mapping[str, Any], name: str, default: int | None) -> Any:
    """A non-negative integer field of the descriptor, or ``default`` when it is absent."""
    value = descriptor.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DeletionVectorError(f"deletion vector {name} {value!r} is not a count")
    return value


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


def live_mask(
    deleted: pa.Array, num_rows: int, ranges: Sequence[tuple[int, int]] | None = None
) -> pa.BooleanArray:
    """A ``bool`` mask of ``num_rows`` rows, false at the ``deleted`` indexes.

    ``deleted`` must ascend strictly and lie below ``num_rows`` (as :func:`read_deletion_vector`
    returns it). With ``ranges`` (``(start, stop)`` row ranges of the file, ascending and
    disjoint, such as the row groups a filter keeps), the mask covers only those rows, one
    range after the other: what slicing the whole file's mask to each range and concatenating
    the slices gives, without making the whole mask. Vectorised (numpy): each range's deleted
    rows are found by binary search and cleared at once; no per-row Python work.
    """
    spans = [(0, num_rows)] if ranges is None else ranges
    total = sum(stop - start for start, stop in spans)
    keep = np.ones(total, dtype=np.bool_)
    if len(deleted):
        # a view of the values (to_numpy imports pandas: ~0.3 s)
        values = deleted.cast(pa.uint64()).buffers()[1]
        rows = np.frombuffer(values, np.uint64, len(deleted), 8 * deleted.offset)
        at = 0
        for start, stop in spans:
            low, high = np.searchsorted(rows, [start, stop])
            if high > low:
                keep[(rows[low:high] - np.uint64(start)).astype(np.int64) + at] = False
            at += stop - start
    # packed by numpy (pa.array of a numpy array imports pandas too)
    bits = np.packbits(keep, bitorder="little")
    return pa.BooleanArray.from_buffers(pa.bool_(), total, [None, pa.py_buffer(bits)])


def live_ranges(deleted: np.ndarray, ranges: Sequence[tuple[int, int]]) -> list[int]:
    """The indexes of the ``ranges`` (``(start, stop)`` row ranges) holding a row not deleted.

    ``deleted``: one flag per row of the file, true where it is deleted (as
    :func:`read_deleted_flags` gives them).
    """
    return [i for i, (start, stop) in enumerate(ranges) if not deleted[start:stop].all()]


def live_mask_of_flags(
    deleted: np.ndarray, ranges: Sequence[tuple[int, int]] | None = None
) -> pa.BooleanArray:
    """The live mask of the ``ranges`` (all rows without them) given per-row deleted flags.

    What :func:`live_mask` gives for the rows ``deleted`` flags (one per row of the file, true
    where deleted), one range after the other.
    """
    if ranges is None:
        keep = ~deleted
    else:
        keep = np.concatenate([~deleted[a:b] for a, b in ranges] or [np.zeros(0, np.bool_)])
    bits = np.packbits(keep, bitorder="little")
    return pa.BooleanArray.from_buffers(pa.bool_(), len(keep), [None, pa.py_buffer(bits)])
