"""deltalog: write and read Delta Lake transaction logs, byte-compatible with delta-spark."""

__version__ = "0.1.0"

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
from deltalog.errors import (
    CommitFailedError,
    CorruptCheckpointError,
    CorruptLogError,
    DeltaLogError,
    InvalidInputError,
    InvalidPathError,
    InvalidSchemaError,
    MalformedCommitError,
    MissingMetadataError,
    MissingProtocolError,
    PartitionValueError,
    SchemaMismatchError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TimestampOutOfRangeError,
    UnsupportedFeatureError,
    VersionGapError,
    VersionNotFoundError,
)
from deltalog.schema import StructType
from deltalog.snapshot import Snapshot
from deltalog.table import DeltaTable

__all__ = [
    "AddCDCFile",
    "AddFile",
    "CommitFailedError",
    "CommitInfo",
    "CorruptCheckpointError",
    "CorruptLogError",
    "DeltaLogError",
    "DeltaTable",
    "DomainMetadata",
    "InvalidInputError",
    "InvalidPathError",
    "InvalidSchemaError",
    "MalformedCommitError",
    "Metadata",
    "MissingMetadataError",
    "MissingProtocolError",
    "PartitionValueError",
    "Protocol",
    "RemoveFile",
    "SchemaMismatchError",
    "Snapshot",
    "StorageError",
    "StructType",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TimestampOutOfRangeError",
    "Txn",
    "UnsupportedFeatureError",
    "VersionGapError",
    "VersionNotFoundError",
    "__version__",
]
