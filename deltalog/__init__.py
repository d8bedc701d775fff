"""deltalog: write and read Delta Lake transaction logs, byte-compatible with delta-spark.

``import deltalog`` is cheap: the public names below are imported on first use (PEP 562).
Opening a table of JSON commits and reading its version, protocol, metadata or schema loads no
pyarrow (see :mod:`deltalog.lazy`); its files, a checkpoint or any data do. pandas, PySpark and
the cloud SDKs come only with the features that need them (``deltalog.spark``, the ``s3://``,
``gs://`` and ``az://`` stores).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

if TYPE_CHECKING:
    from deltalog.check import CheckReport, Finding, check_table
    from deltalog.errors import (
        AppendOnlyError,
        CannotVacuumLiteError,
        ClusteringChangeError,
        ColumnMappingError,
        CommitAttemptsExhaustedError,
        CommitFailedError,
        CommitStatusUnknownError,
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
        ConcurrentVacuumError,
        ConflictingOptionsError,
        ConstraintViolationError,
        CorruptCheckpointError,
        CorruptLogError,
        DataFileNotFoundError,
        DeletionVectorError,
        DeltaLogError,
        DuplicateFileError,
        EmptyCommitError,
        FileNotInTableError,
        IncompleteCommitError,
        InvalidExpressionError,
        InvalidInputError,
        InvalidMergeClausesError,
        InvalidOptionError,
        InvalidPathError,
        InvalidPredicateError,
        InvalidPropertyError,
        InvalidRetentionError,
        InvalidSchemaError,
        InvalidWriteModeError,
        LossyConversionError,
        MalformedCommitError,
        MetadataChangedError,
        MetadataChangedException,
        MissingDataFileError,
        MissingExtraError,
        MissingMetadataError,
        MissingProtocolError,
        MissingRowCountError,
        MultipleSourceRowMatchError,
        PartitioningMismatchError,
        PartitionValueError,
        ProtocolChangedError,
        ProtocolChangedException,
        ReplaceWhereMismatchError,
        RetentionTooShortError,
        RowTrackingRewriteError,
        SchemaEvolutionError,
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
        UnsupportedParquetTypeError,
        VacuumEndError,
        VersionGapError,
        VersionNotFoundError,
    )
    from deltalog.log.snapshot import Snapshot
    from deltalog.protocol.actions import (
        AddCDCFile,
        AddFile,
        CommitInfo,
        DomainMetadata,
        Metadata,
        Protocol,
        RemoveFile,
        Txn,
    )
    from deltalog.protocol.schema import StructType
    from deltalog.stats.predicates import Predicate, col
    from deltalog.table import DeltaTable
    from deltalog.write.commit import RetryPolicy
    from deltalog.write.transaction import Transaction
    from deltalog.writer.api import CommitProperties, write_table
    from deltalog.writer.staged import WriteResult

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "AddCDCFile": "deltalog.protocol.actions",
    "SchemaEvolutionError": "deltalog.errors",
    "PartitioningMismatchError": "deltalog.errors",
    "InvalidWriteModeError": "deltalog.errors",
    "LossyConversionError": "deltalog.errors",
    "InvalidOptionError": "deltalog.errors",
    "InvalidExpressionError": "deltalog.errors",
    "MultipleSourceRowMatchError": "deltalog.errors",
    "InvalidMergeClausesError": "deltalog.errors",
    "ConflictingOptionsError": "deltalog.errors",
    "AddFile": "deltalog.protocol.actions",
    "AppendOnlyError": "deltalog.errors",
    "DeletionVectorError": "deltalog.errors",
    "IncompleteCommitError": "deltalog.errors",
    "MissingDataFileError": "deltalog.errors",
    "InvalidPropertyError": "deltalog.errors",
    "DataFileNotFoundError": "deltalog.errors",
    "RetentionTooShortError": "deltalog.errors",
    "InvalidRetentionError": "deltalog.errors",
    "CannotVacuumLiteError": "deltalog.errors",
    "VacuumEndError": "deltalog.errors",
    "CheckReport": "deltalog.check",
    "CommitAttemptsExhaustedError": "deltalog.errors",
    "ClusteringChangeError": "deltalog.errors",
    "ColumnMappingError": "deltalog.errors",
    "CommitFailedError": "deltalog.errors",
    "CommitStatusUnknownError": "deltalog.errors",
    "CommitInfo": "deltalog.protocol.actions",
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
    "ConcurrentVacuumError": "deltalog.errors",
    "ConstraintViolationError": "deltalog.errors",
    "CorruptCheckpointError": "deltalog.errors",
    "CorruptLogError": "deltalog.errors",
    "DeltaLogError": "deltalog.errors",
    "DeltaTable": "deltalog.table",
    "DomainMetadata": "deltalog.protocol.actions",
    "DuplicateFileError": "deltalog.errors",
    "EmptyCommitError": "deltalog.errors",
    "FileNotInTableError": "deltalog.errors",
    "Finding": "deltalog.check",
    "InvalidInputError": "deltalog.errors",
    "InvalidPathError": "deltalog.errors",
    "InvalidPredicateError": "deltalog.errors",
    "InvalidSchemaError": "deltalog.errors",
    "MalformedCommitError": "deltalog.errors",
    "Metadata": "deltalog.protocol.actions",
    "MetadataChangedError": "deltalog.errors",
    "MetadataChangedException": "deltalog.errors",
    "MissingExtraError": "deltalog.errors",
    "MissingMetadataError": "deltalog.errors",
    "MissingProtocolError": "deltalog.errors",
    "PartitionValueError": "deltalog.errors",
    "Predicate": "deltalog.stats.predicates",
    "Protocol": "deltalog.protocol.actions",
    "ProtocolChangedError": "deltalog.errors",
    "ProtocolChangedException": "deltalog.errors",
    "RemoveFile": "deltalog.protocol.actions",
    "ReplaceWhereMismatchError": "deltalog.errors",
    "RetryPolicy": "deltalog.write.commit",
    "SchemaMismatchError": "deltalog.errors",
    "Snapshot": "deltalog.log.snapshot",
    "SnapshotExpiredError": "deltalog.errors",
    "SparkWriteError": "deltalog.errors",
    "StorageConfigurationError": "deltalog.errors",
    "StorageError": "deltalog.errors",
    "StructType": "deltalog.protocol.schema",
    "TableAlreadyExistsError": "deltalog.errors",
    "TableNotFoundError": "deltalog.errors",
    "TimestampOutOfRangeError": "deltalog.errors",
    "Transaction": "deltalog.write.transaction",
    "TransactionClosedError": "deltalog.errors",
    "Txn": "deltalog.protocol.actions",
    "UnsafeStorageError": "deltalog.errors",
    "UnsupportedFeatureError": "deltalog.errors",
    "UnsupportedParquetTypeError": "deltalog.errors",
    "RowTrackingRewriteError": "deltalog.errors",
    "MissingRowCountError": "deltalog.errors",
    "VersionGapError": "deltalog.errors",
    "VersionNotFoundError": "deltalog.errors",
    "check_table": "deltalog.check",
    "col": "deltalog.stats.predicates",
    "CommitProperties": "deltalog.writer.api",
    "WriteResult": "deltalog.writer.staged",
    "write_table": "deltalog.writer.api",
}

__all__ = [
    "AddCDCFile",
    "AddFile",
    "AppendOnlyError",
    "CannotVacuumLiteError",
    "CheckReport",
    "ClusteringChangeError",
    "ColumnMappingError",
    "CommitAttemptsExhaustedError",
    "CommitFailedError",
    "CommitInfo",
    "CommitProperties",
    "CommitStatusUnknownError",
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
    "ConcurrentVacuumError",
    "ConflictingOptionsError",
    "ConstraintViolationError",
    "CorruptCheckpointError",
    "CorruptLogError",
    "DataFileNotFoundError",
    "DeletionVectorError",
    "DeltaLogError",
    "DeltaTable",
    "DomainMetadata",
    "DuplicateFileError",
    "EmptyCommitError",
    "FileNotInTableError",
    "Finding",
    "IncompleteCommitError",
    "InvalidExpressionError",
    "InvalidInputError",
    "InvalidMergeClausesError",
    "InvalidOptionError",
    "InvalidPathError",
    "InvalidPredicateError",
    "InvalidPropertyError",
    "InvalidRetentionError",
    "InvalidSchemaError",
    "InvalidWriteModeError",
    "LossyConversionError",
    "MalformedCommitError",
    "Metadata",
    "MetadataChangedError",
    "MetadataChangedException",
    "MissingDataFileError",
    "MissingExtraError",
    "MissingMetadataError",
    "MissingProtocolError",
    "MissingRowCountError",
    "MultipleSourceRowMatchError",
    "PartitionValueError",
    "PartitioningMismatchError",
    "Predicate",
    "Protocol",
    "ProtocolChangedError",
    "ProtocolChangedException",
    "RemoveFile",
    "ReplaceWhereMismatchError",
    "RetentionTooShortError",
    "RetryPolicy",
    "RowTrackingRewriteError",
    "SchemaEvolutionError",
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
    "UnsupportedParquetTypeError",
    "VacuumEndError",
    "VersionGapError",
    "VersionNotFoundError",
    "WriteResult",
    "__version__",
    "check_table",
    "col",
    "write_table",
]


def __getattr__(name: str) -> object:
    """Import a public name's module on first use and cache the name in this module."""
    module = _EXPORTS.get(name)
    if module is None and name in _MOVED:  # deltalog.protocol.column_mapping etc. (deprecated)
        return importlib.import_module(f"deltalog.{name}")
    if module is None:
        raise AttributeError(f"module 'deltalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


#: Modules that moved into the concept packages (``protocol``, ``stats``, ``log``, ``write``,
#: ``maintenance``, ``arrow``) in 0.2: old name -> new. ``import deltalog.<old>`` still works,
#: with a DeprecationWarning, and gives the new module itself (one module object, not a copy).
_MOVED: dict[str, str] = {
    "actions": "protocol.actions",
    "arrow_columns": "arrow.columns",
    "arrow_values": "arrow.values",
    "checkpointing": "maintenance.checkpointing",
    "checksum": "log.checksum",
    "clustering": "write.clustering",
    "column_mapping": "protocol.column_mapping",
    "commit": "write.commit",
    "commit_layout": "write.commit_layout",
    "commit_parser": "log.commit_parser",
    "config": "protocol.config",
    "conflicts": "write.conflicts",
    "data_files": "write.data_files",
    "deletion_vectors": "protocol.deletion_vectors",
    "features": "protocol.features",
    "file_actions": "log.file_actions",
    "file_stats": "stats.file_stats",
    "history": "log.history",
    "in_commit_timestamps": "log.in_commit_timestamps",
    "info_commit": "write.info_commit",
    "log_temp": "maintenance.log_temp",
    "parsed_stats": "stats.parsed_stats",
    "partitions": "protocol.partitions",
    "paths": "protocol.paths",
    "predicate_sql": "stats.predicate_sql",
    "predicates": "stats.predicates",
    "properties": "protocol.properties",
    "replay": "log.replay",
    "retention": "maintenance.retention",
    "row_tracking": "write.row_tracking",
    "schema": "protocol.schema",
    "schema_merge": "write.schema_merge",
    "segment": "log.segment",
    "sidecar_reuse": "maintenance.sidecar_reuse",
    "sidecars": "maintenance.sidecars",
    "skipping": "stats.skipping",
    "snapshot": "log.snapshot",
    "staging": "write.staging",
    "stats_struct": "maintenance.stats_struct",
    "storage": "log.storage",
    "table_changes": "write.table_changes",
    "transaction": "write.transaction",
    "user_input": "protocol.user_input",
    "vacuum": "maintenance.vacuum",
    "vacuum_files": "maintenance.vacuum_files",
}


class _MovedModuleFinder:
    """Finds ``deltalog.<old name>`` for the modules in :data:`_MOVED` (a meta path finder)."""

    @classmethod
    def find_spec(cls, fullname: str, path: object = None, target: object = None) -> Any:
        prefix, _, leaf = fullname.partition(".")
        if prefix != "deltalog" or "." in leaf or leaf not in _MOVED:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, cls)  # type: ignore[arg-type]

    @staticmethod
    def create_module(spec: Any) -> Any:
        import warnings

        new = f"deltalog.{_MOVED[spec.name.rpartition('.')[2]]}"
        warnings.warn(
            f"{spec.name} moved to {new}; the old name will be removed in a later release",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        sys.modules[spec.name] = module
        return module

    @staticmethod
    def exec_module(module: Any) -> None:
        """Nothing to run: the module is the new one, already imported."""


sys.meta_path.append(_MovedModuleFinder)
