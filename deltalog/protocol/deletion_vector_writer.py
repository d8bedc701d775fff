"""Deletion vectors to write: bitmaps, descriptors, and the bytes of a deletion-vector file.

The inverse of :mod:`deltalog.protocol.deletion_vectors`, as delta-spark writes DVs:

* :func:`deleted_union` merges the rows a file's current DV deletes with newly deleted ones;
* :func:`encode_bitmap` (from :mod:`deltalog.protocol.roaring_writer`) serializes them;
* :class:`DeletionVectorFile` lays several serialized DVs out as one DV file (a version byte
  ``1``, then per DV its big-endian size, the bitmap and its big-endian CRC-32) and gives each
  one's descriptor (``storageType='u'``, ``pathOrInlineDv`` = random prefix + the file's UUID
  in Z85, ``offset`` of its size field);
* :func:`inline_descriptor` puts a small DV into the log instead (``storageType='i'``,
  the bitmap in Z85, zero-padded to whole 4-byte groups).

No I/O: :mod:`deltalog.write.deletion_vector_files` writes the files.
"""

from __future__ import annotations

import secrets
import string
import uuid
import zlib
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.protocol.deletion_vectors import Z85_ALPHABET
from deltalog.protocol.roaring_writer import encode_bitmap

__all__ = [
    "DeletionVectorFile",
    "deleted_union",
    "dv_file_relative_path",
    "encode_bitmap",
    "inline_descriptor",
    "random_prefix",
    "z85_encode",
]

#: Format version byte at the start of a deletion-vector file.
DV_FILE_VERSION = 1


def z85_encode(data: bytes) -> str:
    """Z85 text for ``data``, zero-padded to a multiple of 4 bytes (as delta-spark's codec)."""
    padded = data + b"\x00" * (-len(data) % 4)
    out = []
    for i in range(0, len(padded), 4):
        word = int.from_bytes(padded[i : i + 4], "big")
        digits = []
        for _ in range(5):
            word, digit = divmod(word, 85)
            digits.append(Z85_ALPHABET[digit])
        out.append("".join(reversed(digits)))
    return "".join(out)


def random_prefix(length: int) -> str:
    """A random prefix of ``length`` letters and digits for DV file paths (may be empty)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def dv_file_relative_path(file_id: uuid.UUID, prefix: str = "") -> str:
    """Where a DV file with this id lives, relative to the table root."""
    name = f"deletion_vector_{file_id}.bin"
    return f"{prefix}/{name}" if prefix else name


def deleted_union(current: pa.Array | None, new: pa.Array) -> pa.Array:
    """The row indexes ``current`` (a file's DV, ascending) and ``new`` delete, ascending.

    ``new`` holds rows ``current`` does not delete (rows read through it), in any order.
    """
    fresh = new.cast(pa.uint64())
    merged = (
        fresh
        if current is None or not len(current)
        else pa.concat_arrays([current.cast(pa.uint64()), fresh])
    )
    return pc.take(merged, pc.sort_indices(merged))


def inline_descriptor(bitmap: bytes, cardinality: int) -> dict[str, Any]:
    """The descriptor of a DV stored in the log (``storageType='i'``)."""
    return {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(bitmap),
        "sizeInBytes": len(bitmap),
        "cardinality": cardinality,
    }


class DeletionVectorFile:
    """One DV file being laid out: DVs appended, then :meth:`to_bytes`.

    Args:
        prefix: The random prefix of the file's directory (``""`` for the table root).
        file_id: The file's UUID (a new random one by default).
    """

    def __init__(self, prefix: str = "", file_id: uuid.UUID | None = None) -> None:
        self.file_id = file_id or uuid.uuid4()
        self.prefix = prefix
        self._parts: list[bytes] = [bytes([DV_FILE_VERSION])]
        self.size = 1
        self.count = 0

    @property
    def relative_path(self) -> str:
        """The file's path relative to the table root."""
        return dv_file_relative_path(self.file_id, self.prefix)

    def add(self, bitmap: bytes, cardinality: int) -> dict[str, Any]:
        """Append a serialized DV; returns its descriptor (``storageType='u'``)."""
        offset = self.size
        self._parts += [
            len(bitmap).to_bytes(4, "big"),
            bitmap,
            zlib.crc32(bitmap).to_bytes(4, "big"),
        ]
        self.size += 8 + len(bitmap)
        self.count += 1
        return {
            "storageType": "u",
            "pathOrInlineDv": self.prefix + z85_encode(self.file_id.bytes),
            "offset": offset,
            "sizeInBytes": len(bitmap),
            "cardinality": cardinality,
        }

    def to_bytes(self) -> bytes:
        """The file's content."""
        return b"".join(self._parts)
