"""In-memory log store, for tests and for ``memory://`` tables within one process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import ClassVar

from .base import FileStatus, LogStore
from .errors import FileAlreadyExistsError, LogFileNotFoundError


class MemoryLogStore(LogStore):
    """A dict of path to bytes behind a lock; create-if-absent is decided under the lock.

    ``memory://`` URIs resolve to one process-wide instance (like fsspec's memory filesystem), so
    two ``DeltaTable`` objects on the same URI see the same files.
    """

    _shared: ClassVar[MemoryLogStore | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._files: dict[str, tuple[bytes, int]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, str]) -> tuple[MemoryLogStore, str]:
        """Return the process-wide store and ``uri`` without a trailing slash."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared, uri.rstrip("/")

    def read(self, path: str) -> bytes:  # noqa: D102
        with self._lock:
            try:
                return self._files[path][0]
            except KeyError:
                raise LogFileNotFoundError(f"not found: {path}") from None

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:  # noqa: D102
        with self._lock:
            if not overwrite and path in self._files:
                raise FileAlreadyExistsError(f"already exists: {path}")
            self._files[path] = (bytes(data), time.time_ns() // 1_000_000)

    def list_from(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        directory, _, start = path.rpartition("/")
        prefix = directory + "/"
        with self._lock:
            in_dir = [(p, v) for p, v in self._files.items() if p.startswith(prefix)]
        if not in_dir:
            raise LogFileNotFoundError(f"not found: {directory}")
        entries = sorted((p[len(prefix) :], p, v) for p, v in in_dir if "/" not in p[len(prefix) :])
        for name, full, (data, mtime) in entries:
            if name >= start:
                yield FileStatus(full, len(data), mtime)

    def list_tree(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        prefix = path.rstrip("/") + "/"
        with self._lock:
            under = sorted((p, v) for p, v in self._files.items() if p.startswith(prefix))
        if not under:
            raise LogFileNotFoundError(f"not found: {path}")
        for full, (data, mtime) in under:
            yield FileStatus(full, len(data), mtime)

    def delete(self, path: str) -> None:  # noqa: D102
        with self._lock:
            self._files.pop(path, None)

    def stat(self, path: str) -> FileStatus:  # noqa: D102
        with self._lock:
            try:
                data, mtime = self._files[path]
            except KeyError:
                raise LogFileNotFoundError(f"not found: {path}") from None
        return FileStatus(path, len(data), mtime)
