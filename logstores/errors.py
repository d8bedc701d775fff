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
    ├── OrphanedCommitEntryError    (an external store's incomplete entry cannot be finished)
    └── StoreIOError                (any other failure talking to the storage)
        ├── StoreUnavailableError   (a transient failure: 5xx, timeout, reset; retryable)
        └── WriteNotSentError       (a write stopped before the request that decides it:
            │                        it cannot land later)
            └── PreviousCommitMissingError (commit N refused: N-1 does not exist)
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


class WriteNotSentError(StoreIOError):
    """A write stopped before the request that makes it take effect was sent.

    A store that checks something first (an external commit store checks that the previous
    commit exists, and writes a temp file before its entry) refused the write, or failed while
    checking. Nothing that could still land was sent: the write did not happen. The cause, if
    the store failed, is the ``__cause__``.
    """


class PreviousCommitMissingError(WriteNotSentError):
    """An external commit store refused to write commit ``N``: commit ``N - 1`` does not exist.

    A commit must follow its predecessor (delta-spark's external log stores require it too).
    ``N - 1`` is missing when the log has moved on and log cleanup removed it, or when it was
    deleted by hand. Nothing was written.
    """


class OrphanedCommitEntryError(LogStoreError):
    """An external commit store (DynamoDB) holds an incomplete entry that cannot be finished.

    The entry claims a commit file that was never written, and the temp file it names, the
    commit's only copy, is gone (deleted by hand or by a lifecycle rule). Until the entry is
    repaired no reader can list the log and no writer can commit after it; the message says
    how to repair it. Nothing is retried: the state does not heal by itself.

    Attributes:
        table_path: The table root.
        file_name: The commit file the entry is for (``00000000000000000007.json``).
        version: Its version.
        commit_path: The full path of that commit file (absent).
        temp_path: The full path of the temp file the entry names (absent).
        entry: How the external store names the entry (table and key).
    """

    def __init__(
        self,
        message: str,
        *,
        table_path: str,
        file_name: str,
        version: int,
        commit_path: str,
        temp_path: str,
        entry: str,
    ) -> None:
        super().__init__(message)
        self.table_path = table_path
        self.file_name = file_name
        self.version = version
        self.commit_path = commit_path
        self.temp_path = temp_path
        self.entry = entry


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
