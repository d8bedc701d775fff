"""Writing the deletion vectors of one operation: packed into DV files, or inline in the log.

:class:`DeletionVectorWriter` takes each touched data file's deleted row indexes and returns the
``deletionVector`` descriptor its new ``add`` carries. As delta-spark does, the DVs are packed
into files of about :data:`PACKING_TARGET_BYTES` (``deletionVectors.packing.targetSize``) at the
table root, named ``deletion_vector_<uuid>.bin`` (under a random prefix of
``delta.randomPrefixLength`` characters when ``delta.randomizeFilePrefixes`` is on). A DV whose
bitmap is at most ``inline_max_bytes`` goes into the log instead (``storageType='i'``; off by
default, as in delta-spark, whose readers and delta-rs's read both forms).

A file is written with one create-if-absent write when it is full or at :meth:`close`; nothing
refers to it until the commit does. :meth:`abort` deletes every file written.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from deltalog.log.storage import TableStorage, storage_errors
from deltalog.protocol.deletion_vector_writer import (
    DeletionVectorFile,
    encode_bitmap,
    inline_descriptor,
    random_prefix,
)

__all__ = ["PACKING_TARGET_BYTES", "DeletionVectorWriter", "dv_prefix_length"]

#: delta-spark's ``spark.databricks.delta.deletionVectors.packing.targetSize``: 2 MiB.
PACKING_TARGET_BYTES = 2 << 20


def dv_prefix_length(configuration: Mapping[str, str | None]) -> int:
    """Random prefix length of new DV files (delta-spark's ``getRandomPrefixLength``)."""
    if str(configuration.get("delta.randomizeFilePrefixes", "false")).lower() != "true":
        return 0
    try:
        return max(0, int(configuration.get("delta.randomPrefixLength") or 2))
    except ValueError:
        return 2


class DeletionVectorWriter:
    """Writes the DVs of one operation; each :meth:`add` returns the DV's descriptor.

    Args:
        storage: The table's storage.
        prefix_length: Length of the random directory prefix of new DV files.
        inline_max_bytes: DVs of at most this many bytes go into the log (0: never).
        target_bytes: Start a new DV file once one holds this many bytes.
        file_ids: Makes the UUID of each new DV file (default random ones).
    """

    def __init__(
        self,
        storage: TableStorage,
        *,
        prefix_length: int = 0,
        inline_max_bytes: int = 0,
        target_bytes: int = PACKING_TARGET_BYTES,
        file_ids: Callable[[], uuid.UUID] | None = None,
    ) -> None:
        self._file_ids = file_ids
        self._storage = storage
        self._prefix_length = prefix_length
        self._inline = inline_max_bytes
        self._target = target_bytes
        self._current: DeletionVectorFile | None = None
        self._written: list[str] = []
        self.bytes_written = 0

    @property
    def locations(self) -> list[str]:
        """The DV files written so far, in the store's notation."""
        return list(self._written)

    def add(self, deleted: pa.Array) -> dict[str, Any]:
        """Store a DV deleting ``deleted`` (strictly ascending row indexes); its descriptor.

        Raises:
            StorageError: A full DV file could not be written.
        """
        bitmap = encode_bitmap(deleted)
        if len(bitmap) <= self._inline:
            return inline_descriptor(bitmap, len(deleted))
        if self._current is not None and self._current.size + len(bitmap) + 8 > self._target:
            self._flush()
        if self._current is None:
            self._current = DeletionVectorFile(
                random_prefix(self._prefix_length),
                None if self._file_ids is None else self._file_ids(),
            )
        return self._current.add(bitmap, len(deleted))

    def close(self) -> None:
        """Write the last DV file.

        Raises:
            StorageError: It could not be written.
        """
        self._flush()

    def _flush(self) -> None:
        current, self._current = self._current, None
        if current is None or not current.count:
            return
        location = self._storage.data_file(current.relative_path)
        data = current.to_bytes()
        self._written.append(location)  # deleted by abort even if the write half-happened
        with storage_errors(f"cannot write the deletion vector file {location}"):
            self._storage.store.write(location, data, overwrite=False)
        self.bytes_written += len(data)

    def abort(self) -> None:
        """Delete every DV file written (best effort; an orphan is harmless, VACUUM removes it)."""
        self._current = None
        for location in self._written:
            with contextlib.suppress(Exception):
                self._storage.store.delete(location)
        self._written.clear()
