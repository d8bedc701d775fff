"""Log stores: atomic create-if-absent and ordered listing over local disk and object stores.

This package knows nothing of Delta; it moves bytes. See :class:`LogStore` for the contract.
"""

from .base import FileStatus, LogStore
from .errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    MissingDependencyError,
    PreviousCommitMissingError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreIOError,
    StoreThrottledError,
    StoreUnavailableError,
    UnknownSchemeError,
    UnsafeStoreConfigurationError,
    WriteNotSentError,
)
from .local import LocalLogStore
from .memory import MemoryLogStore
from .registry import open_store, scheme_of

__all__ = [
    "FileAlreadyExistsError",
    "FileStatus",
    "LocalLogStore",
    "LogFileNotFoundError",
    "LogStore",
    "LogStoreError",
    "MemoryLogStore",
    "MissingDependencyError",
    "PreviousCommitMissingError",
    "StoreAccessDeniedError",
    "StoreConfigurationError",
    "StoreIOError",
    "StoreThrottledError",
    "StoreUnavailableError",
    "UnknownSchemeError",
    "UnsafeStoreConfigurationError",
    "WriteNotSentError",
    "open_store",
    "scheme_of",
]
