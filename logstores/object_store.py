"""What every object-store log store shares: paths, retries, listing, ranged reads.

A backend (S3, GCS, Azure) implements a handful of primitives over its SDK, each mapping the
SDK's exceptions to the :mod:`logstores.errors` tree:

* ``_put(key, data, if_absent)``: one upload; with ``if_absent`` the **server** must refuse it
  when the key exists (``If-None-Match: *``, ``ifGenerationMatch=0``), raising
  :class:`~logstores.errors.FileAlreadyExistsError`.
* ``_get(key, start, stop)``, ``_head(key)``, ``_delete(key)``,
* ``_list(prefix, start_key, recursive)``: objects directly under ``prefix`` (with
  ``recursive``, also those in "subdirectories")
  whose keys sort at or after ``start_key``, in key order;
* ``_any_under(prefix)``: whether any object exists under ``prefix``, at any depth.

This class adds retries with backoff, and one subtle case: when an upload failed in transit
(it may have landed) and its retry is refused because the key exists, the stored object is
read back; if it holds exactly our bytes, the first attempt won and the write succeeded.
Commits carry a unique ``txnId``, so equal bytes mean the same writer.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from .base import FileStatus, LogStore
from .errors import (
    LogFileNotFoundError,
    LogStoreError,
    StoreConfigurationError,
)
from .ranged_reader import open_ranged
from .retry import StoreRetryPolicy, call_with_retries, create_with_retries


class ObjectLogStore(LogStore):
    """Base of the log stores over one bucket or container.

    Paths are ``<prefix><key>``, where ``prefix`` is the URL of the bucket as the user wrote it
    (``s3://bucket/``, ``gs://bucket/``, ``abfss://container@account.dfs.core.windows.net/``).

    Args:
        prefix: The bucket's URL, ending in ``/``.
        retry: Backoff for throttled and transient requests.
    """

    is_partial_write_visible = False

    def __init__(self, prefix: str, retry: StoreRetryPolicy | None = None) -> None:
        if not prefix.endswith("/"):
            prefix += "/"
        self.prefix = prefix
        self.retry = retry or StoreRetryPolicy()

    def __repr__(self) -> str:  # the bucket only: never the client, its config or credentials
        return f"{type(self).__name__}({self.prefix!r})"

    # ------------------------------------------------------------------ backend primitives

    @abstractmethod
    def _put(self, key: str, data: bytes, *, if_absent: bool) -> None: ...

    @abstractmethod
    def _get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes: ...

    @abstractmethod
    def _head(self, key: str) -> FileStatus: ...

    @abstractmethod
    def _delete(self, key: str) -> None: ...

    @abstractmethod
    def _list(
        self, prefix: str, start_key: str, *, recursive: bool = False
    ) -> Iterator[FileStatus]: ...

    @abstractmethod
    def _any_under(self, prefix: str) -> bool: ...

    # ------------------------------------------------------------------ paths

    def key_of(self, path: str) -> str:
        """The object key of ``path``.

        Raises:
            StoreConfigurationError: ``path`` is not in this store's bucket.
        """
        if not path.startswith(self.prefix):
            raise StoreConfigurationError(f"{path!r} is outside {self.prefix!r}")
        return path[len(self.prefix) :]

    def path_of(self, key: str) -> str:
        """The full path of object ``key``."""
        return self.prefix + key

    # ------------------------------------------------------------------ LogStore

    def read(self, path: str) -> bytes:  # noqa: D102
        key = self.key_of(path)
        return call_with_retries(lambda: self._get(key), self.retry)

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:  # noqa: D102
        key = self.key_of(path)
        create_with_retries(
            lambda: self._put(key, data, if_absent=not overwrite),
            self.retry,
            landed=lambda: self._holds(key, data),
        )

    def _holds(self, key: str, data: bytes) -> bool:
        try:
            return call_with_retries(lambda: self._get(key), self.retry) == data
        except LogFileNotFoundError:
            return False

    def list_from(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        directory, _, start = self.key_of(path).rpartition("/")
        prefix = f"{directory}/" if directory else ""
        entries = call_with_retries(lambda: list(self._list(prefix, prefix + start)), self.retry)
        if not entries and not self._has_any(prefix):
            raise LogFileNotFoundError(f"not found: {self.path_of(prefix)}")
        yield from entries

    def list_tree(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        directory = self.key_of(path).rstrip("/")
        prefix = f"{directory}/" if directory else ""
        entries = call_with_retries(
            lambda: list(self._list(prefix, prefix, recursive=True)), self.retry
        )
        # A key ending in "/" is a directory marker some tools create, not a file.
        entries = [e for e in entries if not e.path.endswith("/")]
        if not entries:
            raise LogFileNotFoundError(f"not found: {self.path_of(prefix)}")
        yield from sorted(entries, key=lambda s: s.path)

    def _has_any(self, prefix: str) -> bool:
        """Whether anything at all lies under ``prefix`` (object stores have no directories)."""
        return call_with_retries(lambda: self._any_under(prefix), self.retry)

    def delete(self, path: str) -> None:  # noqa: D102
        key = self.key_of(path)
        call_with_retries(lambda: self._delete(key), self.retry)

    def delete_many(self, paths: Sequence[str]) -> None:
        """Delete several objects with up to :attr:`delete_parallelism` requests in flight.

        Raises:
            LogStoreError: At least one deletion failed (the first failure; the others were
                still attempted).
        """
        keys = [self.key_of(path) for path in paths]
        if len(keys) == 1:
            call_with_retries(lambda: self._delete(keys[0]), self.retry)
        elif keys:
            self._delete_keys(keys)

    #: Concurrent single-object deletes of :meth:`delete_many` (stores without a batch API).
    delete_parallelism = 16

    def _delete_keys(self, keys: list[str]) -> None:
        """Delete ``keys``; the default runs :meth:`_delete` on a thread pool."""

        def one(key: str) -> Exception | None:
            try:
                call_with_retries(lambda: self._delete(key), self.retry)
            except LogStoreError as exc:  # re-raised below, after the other keys
                return exc
            return None

        workers = min(self.delete_parallelism, len(keys))
        with ThreadPoolExecutor(workers, thread_name_prefix="logstore-delete") as pool:
            failures = [exc for exc in pool.map(one, keys) if exc is not None]
        if failures:
            raise failures[0]

    def stat(self, path: str) -> FileStatus:  # noqa: D102
        key = self.key_of(path)
        return call_with_retries(lambda: self._head(key), self.retry)

    def open_input(self, path: str, *, size: int | None = None) -> BinaryIO:  # noqa: D102
        key = self.key_of(path)
        if size is None:
            size = self.stat(path).size

        def fetch(start: int, stop: int) -> bytes:
            return call_with_retries(lambda: self._get(key, start, stop), self.retry)

        return open_ranged(size, fetch)
