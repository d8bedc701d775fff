"""Every error deltalog raises, under one root.

::

    DeltaLogError
    ├── TableNotFoundError            no _delta_log, or it holds no commit
    ├── TableAlreadyExistsError       create() on a location that already has a log
    ├── VersionNotFoundError          the version cannot be rebuilt (too new, or cleaned up)
    ├── TimestampOutOfRangeError      time travel to before the first commit
    ├── CorruptLogError               the log on storage breaks the protocol
    │   ├── VersionGapError           commit versions are not contiguous
    │   ├── MalformedCommitError      a line is not UTF-8, not JSON, or not a valid action
    │   ├── MissingProtocolError      no protocol action at the start of the replayed history
    │   ├── MissingMetadataError      no metaData action at the start of the replayed history
    │   └── CorruptCheckpointError    a checkpoint or _last_checkpoint cannot be used
    ├── UnsupportedFeatureError       the table needs a protocol feature deltalog lacks
    ├── InvalidInputError             the caller's input is refused; nothing was written
    │   ├── InvalidSchemaError        a schema that cannot be represented or parsed
    │   ├── SchemaMismatchError       a data file's schema does not match the table
    │   ├── PartitionValueError       a partition value that does not parse or match the schema
    │   └── InvalidPathError          a file path that escapes the table or cannot be encoded
    ├── StorageError                  the log store failed (wraps logstores.LogStoreError)
    └── CommitFailedError             a commit did not land (``retryable``, ``conflict``)

Errors that stand for a problem with one file or version carry it as attributes, so scripts can
act on them without parsing messages.
"""

from __future__ import annotations


class DeltaLogError(Exception):
    """Root of every error raised by deltalog."""


class TableNotFoundError(DeltaLogError):
    """There is no Delta table at the location (no ``_delta_log``, or no commit in it)."""


class TableAlreadyExistsError(DeltaLogError):
    """A table already exists where one was to be created."""


class VersionNotFoundError(DeltaLogError):
    """The requested version does not exist or can no longer be reconstructed."""

    def __init__(self, message: str, *, version: int | None = None) -> None:
        super().__init__(message)
        self.version = version


class TimestampOutOfRangeError(DeltaLogError):
    """Time travel to a timestamp before the table's first commit."""


class CorruptLogError(DeltaLogError):
    """The transaction log on storage violates the Delta protocol."""

    def __init__(self, message: str, *, version: int | None = None, path: str | None = None):
        super().__init__(message)
        self.version = version
        self.path = path


class VersionGapError(CorruptLogError):
    """Commit files are not contiguous: a version is missing."""


class MalformedCommitError(CorruptLogError):
    """A commit file has a line that is not UTF-8, not JSON, or not a valid action."""


class MissingProtocolError(CorruptLogError):
    """The replayed history has no ``protocol`` action."""


class MissingMetadataError(CorruptLogError):
    """The replayed history has no ``metaData`` action."""


class CorruptCheckpointError(CorruptLogError):
    """A checkpoint or ``_last_checkpoint`` is unreadable or inconsistent."""


class UnsupportedFeatureError(DeltaLogError):
    """The table's protocol requires a feature deltalog does not implement.

    Attributes:
        feature: The feature name (or ``readerVersion=N`` / ``writerVersion=N``).
        operation: ``"read"`` or ``"write"``.
    """

    def __init__(self, message: str, *, feature: str, operation: str) -> None:
        super().__init__(message)
        self.feature = feature
        self.operation = operation


class InvalidInputError(DeltaLogError, ValueError):
    """Input from the caller was refused; nothing was written."""


class InvalidSchemaError(InvalidInputError):
    """A schema cannot be parsed or has no Delta equivalent."""


class SchemaMismatchError(InvalidInputError):
    """A data file's schema does not match the table's schema.

    Attributes:
        path: The offending data file.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class PartitionValueError(InvalidInputError):
    """A partition value does not parse as its column's type, or names an unknown column."""


class InvalidPathError(InvalidInputError):
    """A file path escapes the table root or is otherwise unusable."""


class StorageError(DeltaLogError):
    """The log store failed; the store's own error is the ``__cause__``."""


class CommitFailedError(DeltaLogError):
    """A commit did not land.

    Attributes:
        retryable: Whether running the same transaction again may succeed.
        conflict: Whether another writer's commit caused the failure.
    """

    def __init__(self, message: str, *, retryable: bool = False, conflict: bool = False):
        super().__init__(message)
        self.retryable = retryable
        self.conflict = conflict
