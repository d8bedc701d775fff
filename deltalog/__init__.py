"""deltalog: write and read Delta Lake transaction logs, byte-compatible with delta-spark."""

__version__ = "0.1.0"

from deltalog.actions import (  # noqa: E402
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from deltalog.errors import (  # noqa: E402
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
from deltalog.schema import StructType  # noqa: E402
from deltalog.snapshot import Snapshot  # noqa: E402
from deltalog.table import DeltaTable  # noqa: E402

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
