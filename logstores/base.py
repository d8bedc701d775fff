"""The log store contract: bytes in, bytes out, atomic create-if-absent, ordered listing."""

from __future__ import annotations

import io
import mmap
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from .errors import LogStoreError


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One entry of a listing.

    Attributes:
        path: The full location of the file, in the store's own notation.
        size: Size in bytes.
        modification_time: Last modification time, milliseconds since the Unix epoch.
    """

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        """The last path segment."""
        return self.path.rsplit("/", 1)[-1]


class LogStore(ABC):
    """Reads and writes the files of a Delta log.

    Locations are full paths in the store's own notation: an absolute filesystem path for the
    local store, ``scheme://bucket/key`` for object stores. A store never interprets file
    contents.

    The contract every implementation keeps (the model is delta-io/delta's ``LogStore.java``):

    * ``write(path, data, overwrite=False)`` is an **atomic create-if-absent**: when N writers
      race for the same path, exactly one succeeds and the others get
      :class:`~logstores.errors.FileAlreadyExistsError`. It is never built as
      "check existence, then write". A reader never observes a partially written file unless
      :attr:`is_partial_write_visible` says so.
    * ``list_from(path)`` yields the entries of ``path``'s directory whose names sort at or after
      ``path``'s name, in lexicographic order, and reflects every write that has returned.
    * Errors are :class:`~logstores.errors.LogStoreError` subclasses; no SDK exception escapes.
    * Methods may be called from several threads at once (readers fetch commits side by side,
      maintenance lists and deletes in parallel).
    """

    #: Whether a reader can observe a file before its writer finished writing it.
    is_partial_write_visible: bool = False

    @abstractmethod
    def read(self, path: str) -> bytes:
        """Return the whole content of a file.

        Raises:
            LogFileNotFoundError: The file does not exist.
            LogStoreError: Any other storage failure.
        """

    def read_view(self, path: str) -> bytes | mmap.mmap:
        """The whole content of a file, as a read-only memory map where the store can.

        A local store maps the file instead of copying it: no memory is allocated for the
        content, and pages are shared with the page cache. Only for files that are never
        rewritten in place (a map of a file truncated meanwhile faults on access); replacing
        the file by renaming another over it is harmless. Other stores read it.

        Raises:
            LogFileNotFoundError: The file does not exist.
            LogStoreError: Any other storage failure.
        """
        return self.read(path)

    @abstractmethod
    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write a file.

        Args:
            path: Where to write.
            data: The complete content.
            overwrite: When false (the default, and the only mode used for commits) the write
                is an atomic create-if-absent. When true the file is replaced; used only for
                files that are hints, such as ``_last_checkpoint``.

        Raises:
            FileAlreadyExistsError: ``overwrite`` is false and the file exists.
            LogStoreError: Any other storage failure.
        """

    def create_hint(self, path: str, data: bytes) -> None:
        """Create a file that only speeds readers up, such as a version checksum.

        Like :meth:`write` without ``overwrite`` (an atomic create-if-absent: readers see the
        whole content or no file), except that it need not be durable: after a crash the file
        may be missing or unreadable, and readers must then ignore it. The default is
        :meth:`write`; the local store skips its ``fsync`` calls.

        Raises:
            FileAlreadyExistsError: The file exists.
            LogStoreError: Any other storage failure.
        """
        self.write(path, data, overwrite=False)

    @abstractmethod
    def list_from(self, path: str) -> Iterator[FileStatus]:
        """List the directory of ``path`` from ``path``'s name onwards, sorted by name.

        Raises:
            LogFileNotFoundError: The directory does not exist.
            LogStoreError: Any other storage failure.
        """

    @abstractmethod
    def list_tree(self, path: str) -> Iterator[FileStatus]:
        """List every file under the directory ``path``, subdirectories included, sorted by path.

        Used to find data files (a Spark output directory), never for the log itself.

        Raises:
            LogFileNotFoundError: Nothing exists under ``path``.
            LogStoreError: Any other storage failure.
        """

    def list_tree_where(self, path: str, keep: Callable[[str], bool]) -> Iterator[FileStatus]:
        """List the files under ``path`` whose location ``keep`` accepts, sorted by path.

        ``keep`` is called once for every file under ``path``, from any thread, before its
        size and modification time are known; stores whose listings do not carry them (a
        filesystem needs a ``stat`` per file) only fetch them for the files kept. The default
        filters :meth:`list_tree`.

        Raises:
            LogFileNotFoundError: Nothing exists under ``path``.
            LogStoreError: Any other storage failure.
        """
        return (status for status in self.list_tree(path) if keep(status.path))

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file; deleting a missing file is not an error.

        Raises:
            LogStoreError: The storage refused the deletion.
        """

    def delete_many(self, paths: Sequence[str]) -> None:
        """Delete several files; missing files are not an error.

        The default deletes one by one; object stores override it with batched or parallel
        requests. Every path is attempted even when some fail.

        Raises:
            LogStoreError: The storage refused at least one deletion (the first failure; the
                other paths were still attempted).
        """
        first: Exception | None = None
        for path in paths:
            try:
                self.delete(path)
            except LogStoreError as exc:  # re-raised below, after the other paths
                first = first or exc
        if first is not None:
            raise first

    @abstractmethod
    def stat(self, path: str) -> FileStatus:
        """Return size and modification time of a file.

        Raises:
            LogFileNotFoundError: The file does not exist.
        """

    def exists(self, path: str) -> bool:
        """Whether a file exists (for maintenance and reporting, never for commit decisions)."""
        try:
            self.stat(path)
        except FileNotFoundError:
            return False
        return True

    def open_input(self, path: str, *, size: int | None = None) -> BinaryIO:
        """Open a file for random-access reading (Parquet footers, checkpoints).

        The default reads the whole file; stores with ranged reads override it.

        Args:
            path: The file.
            size: Its size when the caller knows it (from a listing): a store that needs the
                size for ranged reads then sends no request for it.

        Raises:
            LogFileNotFoundError: The file does not exist.
        """
        return io.BytesIO(self.read(path))

    def local_path(self, path: str) -> str | None:
        """The filesystem path of ``path`` when the store is a local filesystem, else ``None``.

        Readers use it to hand files to native I/O (memory mapping, parallel column reads).
        """
        return None

    @staticmethod
    def join(base: str, *parts: str) -> str:
        """Join path segments with ``/``."""
        out = base.rstrip("/")
        for part in parts:
            out = f"{out}/{part.strip('/')}"
        return out
