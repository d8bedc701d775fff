"""deltalog: write and read Delta Lake transaction logs, byte-compatible with delta-spark.

``import deltalog`` is cheap: the public names below are imported on first use (PEP 562), so
pyarrow is loaded when a table is opened, and pandas, PySpark and the cloud SDKs only by the
features that need them (``deltalog.spark``, the ``s3://``, ``gs://`` and ``az://`` stores).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from deltalog.actions import (
        AddCDCFile,
        AddFile,
        CommitInfo,
        DomainMetadata,
        Metadata,
        Protocol,
        RemoveFile,
        Txn,
    )
    from deltalog.check import CheckReport, Finding, check_table
    from deltalog.commit import RetryPolicy
    from deltalog.errors import (
        AppendOnlyError,
        CannotVacuumLiteError,
        CommitAttemptsExhaustedError,
        CommitFailedError,
        ConcurrentAppendError,
        ConcurrentAppendException,
        ConcurrentDeleteDeleteError,
        ConcurrentDeleteDeleteException,
        ConcurrentDeleteReadError,
        ConcurrentDeleteReadException,
        ConcurrentModificationError,
        ConcurrentModificationException,
        ConcurrentTransactionError,
        ConcurrentTransactionException,
        ConstraintViolationError,
        CorruptCheckpointError,
        CorruptLogError,
        DeltaLogError,
        DuplicateFileError,
        FileNotInTableError,
        InvalidInputError,
        InvalidPathError,
        InvalidPredicateError,
        InvalidRetentionError,
        InvalidSchemaError,
        MalformedCommitError,
        MetadataChangedError,
        MetadataChangedException,
        MissingExtraError,
        MissingMetadataError,
        MissingProtocolError,
        PartitionValueError,
        ProtocolChangedError,
        ProtocolChangedException,
        ReplaceWhereMismatchError,
        RetentionTooShortError,
        SchemaMismatchError,
        SnapshotExpiredError,
        SparkWriteError,
        StorageConfigurationError,
        StorageError,
        TableAlreadyExistsError,
        TableNotFoundError,
        TimestampOutOfRangeError,
        TransactionClosedError,
        UnsafeStorageError,
        UnsupportedFeatureError,
        VersionGapError,
        VersionNotFoundError,
    )
    from deltalog.predicates import Predicate, col
    from deltalog.schema import StructType
    from deltalog.snapshot import Snapshot
    from deltalog.table import DeltaTable
    from deltalog.transaction import Transaction

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "AddCDCFile": "deltalog.actions",
    "AddFile": "deltalog.actions",
    "AppendOnlyError": "deltalog.errors",
    "RetentionTooShortError": "deltalog.errors",
    "InvalidRetentionError": "deltalog.errors",
    "CannotVacuumLiteError": "deltalog.errors",
    "CheckReport": "deltalog.check",
    "CommitAttemptsExhaustedError": "deltalog.errors",
    "CommitFailedError": "deltalog.errors",
    "CommitInfo": "deltalog.actions",
    "ConcurrentAppendError": "deltalog.errors",
    "ConcurrentAppendException": "deltalog.errors",
    "ConcurrentDeleteDeleteError": "deltalog.errors",
    "ConcurrentDeleteDeleteException": "deltalog.errors",
    "ConcurrentDeleteReadError": "deltalog.errors",
    "ConcurrentDeleteReadException": "deltalog.errors",
    "ConcurrentModificationError": "deltalog.errors",
    "ConcurrentModificationException": "deltalog.errors",
    "ConcurrentTransactionError": "deltalog.errors",
    "ConcurrentTransactionException": "deltalog.errors",
    "ConstraintViolationError": "deltalog.errors",
    "CorruptCheckpointError": "deltalog.errors",
    "CorruptLogError": "deltalog.errors",
    "DeltaLogError": "deltalog.errors",
    "DeltaTable": "deltalog.table",
    "DomainMetadata": "deltalog.actions",
    "DuplicateFileError": "deltalog.errors",
    "FileNotInTableError": "deltalog.errors",
    "Finding": "deltalog.check",
    "InvalidInputError": "deltalog.errors",
    "InvalidPathError": "deltalog.errors",
    "InvalidPredicateError": "deltalog.errors",
    "InvalidSchemaError": "deltalog.errors",
    "MalformedCommitError": "deltalog.errors",
    "Metadata": "deltalog.actions",
    "MetadataChangedError": "deltalog.errors",
    "MetadataChangedException": "deltalog.errors",
    "MissingExtraError": "deltalog.errors",
    "MissingMetadataError": "deltalog.errors",
    "MissingProtocolError": "deltalog.errors",
    "PartitionValueError": "deltalog.errors",
    "Predicate": "deltalog.predicates",
    "Protocol": "deltalog.actions",
    "ProtocolChangedError": "deltalog.errors",
    "ProtocolChangedException": "deltalog.errors",
    "RemoveFile": "deltalog.actions",
    "ReplaceWhereMismatchError": "deltalog.errors",
    "RetryPolicy": "deltalog.commit",
    "SchemaMismatchError": "deltalog.errors",
    "Snapshot": "deltalog.snapshot",
    "SnapshotExpiredError": "deltalog.errors",
    "SparkWriteError": "deltalog.errors",
    "StorageConfigurationError": "deltalog.errors",
    "StorageError": "deltalog.errors",
    "StructType": "deltalog.schema",
    "TableAlreadyExistsError": "deltalog.errors",
    "TableNotFoundError": "deltalog.errors",
    "TimestampOutOfRangeError": "deltalog.errors",
    "Transaction": "deltalog.transaction",
    "TransactionClosedError": "deltalog.errors",
    "Txn": "deltalog.actions",
    "UnsafeStorageError": "deltalog.errors",
    "UnsupportedFeatureError": "deltalog.errors",
    "VersionGapError": "deltalog.errors",
    "VersionNotFoundError": "deltalog.errors",
    "check_table": "deltalog.check",
    "col": "deltalog.predicates",
}

__all__ = [
    "AddCDCFile",
    "AddFile",
    "AppendOnlyError",
    "CannotVacuumLiteError",
    "CheckReport",
    "CommitAttemptsExhaustedError",
    "CommitFailedError",
    "CommitInfo",
    "ConcurrentAppendError",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadError",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationError",
    "ConcurrentModificationException",
    "ConcurrentTransactionError",
    "ConcurrentTransactionException",
    "ConstraintViolationError",
    "CorruptCheckpointError",
    "CorruptLogError",
    "DeltaLogError",
    "DeltaTable",
    "DomainMetadata",
    "DuplicateFileError",
    "FileNotInTableError",
    "Finding",
    "InvalidInputError",
    "InvalidPathError",
    "InvalidPredicateError",
    "InvalidRetentionError",
    "InvalidSchemaError",
    "MalformedCommitError",
    "Metadata",
    "MetadataChangedError",
    "MetadataChangedException",
    "MissingExtraError",
    "MissingMetadataError",
    "MissingProtocolError",
    "PartitionValueError",
    "Predicate",
    "Protocol",
    "ProtocolChangedError",
    "ProtocolChangedException",
    "RemoveFile",
    "ReplaceWhereMismatchError",
    "RetentionTooShortError",
    "RetryPolicy",
    "SchemaMismatchError",
    "Snapshot",
    "SnapshotExpiredError",
    "SparkWriteError",
    "StorageConfigurationError",
    "StorageError",
    "StructType",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TimestampOutOfRangeError",
    "Transaction",
    "TransactionClosedError",
    "Txn",
    "UnsafeStorageError",
    "UnsupportedFeatureError",
    "VersionGapError",
    "VersionNotFoundError",
    "__version__",
    "check_table",
    "col",
]


def __getattr__(name: str) -> object:
    """Import a public name's module on first use and cache the name in this module."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deltalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
