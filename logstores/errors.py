"""Errors raised by log stores.

``logstores`` has its own root because it knows nothing of Delta. Every error a store raises is
a :class:`LogStoreError`; SDK exceptions are mapped at the store boundary with ``raise ... from``::

    LogStoreError
    ├── FileAlreadyExistsError      (also a FileExistsError: create-if-absent lost the race)
    ├── LogFileNotFoundError        (also a FileNotFoundError)
    ├── StoreAccessDeniedError      (credentials or permissions refused)
    ├── StoreThrottledError         (the service asked us to slow down; retryable)
    ├── StoreConfigurationError     (the store cannot be set up as asked)
    │   ├── UnknownSchemeError      (no store is registered for a URL scheme)
    │   ├── MissingDependencyError  (the SDK for a store is not installed; names the extra)
    │   └── UnsafeStoreConfigurationError (no real compare-and-swap is available)
    └── StoreIOError                (any other failure talking to the storage)
        └── StoreUnavailableError   (a transient failure: 5xx, timeout, reset; retryable)
"""

from __future__ import annotations


class LogStoreError(Exception):
    """Root of every error raised by a log store."""


class FileAlreadyExistsError(LogStoreError, FileExistsError):
    """A create-if-absent write found the file already present: another writer won."""


class LogFileNotFoundError(LogStoreError, FileNotFoundError):
    """The file or directory asked for does not exist."""


class StoreAccessDeniedError(LogStoreError, PermissionError):
    """The storage service refused the request for lack of permission."""


class StoreThrottledError(LogStoreError):
    """The storage service throttled the request; retrying later may succeed."""


class StoreIOError(LogStoreError, OSError):
    """Any other failure while talking to the storage."""


class StoreConfigurationError(LogStoreError, ValueError):
    """The store cannot be configured as requested."""


class UnknownSchemeError(StoreConfigurationError):
    """No log store is registered for the URL scheme."""


class MissingDependencyError(StoreConfigurationError, ImportError):
    """The SDK a store needs is not installed.

    The message names the ``pip install 'deltalog[extra]'`` command that fixes it.
    """


class UnsafeStoreConfigurationError(StoreConfigurationError):
    """The configuration would let two writers both 'win' the same commit."""


class StoreUnavailableError(StoreIOError):
    """A transient failure (server error, timeout, dropped connection); retrying may succeed.

    After such a failure the request may or may not have taken effect.
    """


def is_store_failure(exc: BaseException) -> bool:
    """Whether an exception raised while decoding a file read from a store is the store's.

    Decoders that read through a file object (pyarrow's Parquet reader) re-raise that object's
    own exceptions, so a store failing mid-read surfaces from the decoder. It is the store's
    failure when it is a :class:`LogStoreError`, or an ``OSError`` that carries an ``errno``
    (an I/O error of a local file, raised by Python or by Arrow's native files). A decoder's
    own complaints about the bytes (``ArrowInvalid``, ``ValueError``, and the ``OSError``
    without ``errno`` Parquet raises for a corrupt footer) are not.
    """
    return isinstance(exc, LogStoreError) or (isinstance(exc, OSError) and exc.errno is not None)
