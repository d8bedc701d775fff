"""The table's view of its log store: locations inside ``_delta_log``, errors mapped."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from deltalog.errors import (
    StorageConfigurationError,
    StorageError,
    TableNotFoundError,
    UnsafeStorageError,
)
from deltalog.paths import LAST_CHECKPOINT, LOG_DIR
from logstores import (
    FileStatus,
    LogFileNotFoundError,
    LogStore,
    LogStoreError,
    StoreConfigurationError,
    UnsafeStoreConfigurationError,
    open_store,
)
from logstores.options import redact_uri


@contextlib.contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Re-raise any log store failure (other than not-found) as :class:`StorageError`."""
    try:
        yield
    except (LogFileNotFoundError, FileExistsError):
        raise
    except UnsafeStoreConfigurationError as exc:
        raise UnsafeStorageError(f"{what}: {exc}") from exc
    except StoreConfigurationError as exc:
        raise StorageConfigurationError(f"{what}: {exc}") from exc
    except LogStoreError as exc:
        raise StorageError(f"{what}: {exc}") from exc


class TableStorage:
    """A table root on a log store.

    Args:
        store: The log store.
        root: The table root in the store's notation (as returned by ``open_store``).
        uri: The table URI as the user gave it.
    """

    def __init__(self, store: LogStore, root: str, uri: str) -> None:
        self.store = store
        self.root = root.rstrip("/") if root != "/" else root
        self.uri = uri
        self.log_path = LogStore.join(self.root, LOG_DIR)

    @classmethod
    def open(cls, uri: str, options: Mapping[str, str] | None = None) -> TableStorage:
        """Resolve ``uri`` through the log store registry.

        Raises:
            StorageError: No store can serve the URI (unknown scheme, missing SDK, bad options).
        """
        with storage_errors(f"cannot open {redact_uri(uri)}"):
            store, root = open_store(uri, options)
        return cls(store, root, uri)

    def log_file(self, name: str) -> str:
        """Location of ``_delta_log/<name>``."""
        return f"{self.log_path}/{name}"

    def data_file(self, relative: str) -> str:
        """Location of a data file given relative to the table root (already decoded)."""
        return f"{self.root}/{relative}"

    def list_log(self, start_name: str = "") -> list[FileStatus]:
        """The ``_delta_log`` listing from ``start_name`` on.

        Raises:
            TableNotFoundError: There is no ``_delta_log`` directory.
        """
        try:
            with storage_errors(f"cannot list {self.log_path}"):
                return list(self.store.list_from(self.log_file(start_name)))
        except LogFileNotFoundError as exc:
            raise TableNotFoundError(f"no Delta table at {self.uri}: no {LOG_DIR}") from exc

    def read_log_file(self, name: str) -> bytes:
        """Read a file of ``_delta_log``; not-found errors pass through as FileNotFoundError."""
        with storage_errors(f"cannot read {name}"):
            return self.store.read(self.log_file(name))

    def read_last_checkpoint(self) -> bytes | None:
        """Content of ``_last_checkpoint``, or ``None`` when absent."""
        try:
            return self.read_log_file(LAST_CHECKPOINT)
        except LogFileNotFoundError:
            return None
