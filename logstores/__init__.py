"""Log stores: atomic create-if-absent and ordered listing over local disk and object stores.

This package knows nothing of Delta; it moves bytes. See :class:`LogStore` for the contract.
"""

from logstores.base import FileStatus, LogStore
from logstores.errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    MissingDependencyError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreIOError,
    StoreThrottledError,
    StoreUnavailableError,
    UnknownSchemeError,
    UnsafeStoreConfigurationError,
)
from logstores.local import LocalLogStore
from logstores.memory import MemoryLogStore
from logstores.registry import open_store, scheme_of

__all__ = [
    "FileAlreadyExistsError",
    "FileStatus",
    "LocalLogStore",
    "LogFileNotFoundError",
    "LogStore",
    "LogStoreError",
    "MemoryLogStore",
    "MissingDependencyError",
    "StoreAccessDeniedError",
    "StoreConfigurationError",
    "StoreIOError",
    "StoreThrottledError",
    "StoreUnavailableError",
    "UnknownSchemeError",
    "UnsafeStoreConfigurationError",
    "open_store",
    "scheme_of",
]
