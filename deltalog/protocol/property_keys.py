"""The ``delta.*`` table property keys Delta defines, and their lookup in any case.

delta-spark matches ``delta.*`` keys without case: setting ``delta.appendonly`` stores
``delta.appendOnly`` (``DeltaConfigs.validateConfigurations``), and a ``delta.*`` key it does
not define is refused. :data:`KNOWN_KEYS` are delta-spark 4.4's ``DeltaConfigs``. A table
written by another engine may still spell a key its own way; :class:`TableProperties` (the
type of every ``metaData.configuration``) finds such a key under its proper name, so that
``delta.appendonly=true`` makes the table append-only for deltalog as well.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar, overload

#: Every table property delta-spark 4.4 defines (``DeltaConfigs``), as it spells them.
KNOWN_KEYS = tuple(
    f"delta.{name}"
    for name in (
        "minReaderVersion",
        "minWriterVersion",
        "ignoreProtocolDefaults",
        "logRetentionDuration",
        "sampleRetentionDuration",
        "checkpointRetentionDuration",
        "checkpointInterval",
        "redirectReaderWriter-preview",
        "redirectWriterOnly-preview",
        "autoOptimize.autoCompact",
        "enableExpiredLogCleanup",
        "enableFullRetentionRollback",
        "dropFeatureTruncateHistory.retentionDuration",
        "deletedFileRetentionDuration",
        "randomizeFilePrefixes",
        "randomPrefixLength",
        "appendOnly",
        "enableDeletionVectors",
        "parquet.format.version",
        "enableVariantShredding",
        "autoOptimize",
        "dataSkippingNumIndexedCols",
        "dataSkippingStatsColumns",
        "dataSkippingStringPrefixLength",
        "compatibility.symlinkFormatManifest.enabled",
        "checkpoint.writeStatsAsJson",
        "checkpoint.writeStatsAsStruct",
        "enableChangeDataCapture",
        "enableChangeDataFeed",
        "columnMapping.mode",
        "columnMapping.maxColumnId",
        "setTransactionRetentionDuration",
        "isolationLevel",
        "checkpointPolicy",
        "enableRowTracking",
        "rowTrackingSuspended",
        "universalFormat.enabledFormats",
        "enableIcebergCompatV1",
        "enableIcebergCompatV2",
        "enableIcebergCompatV3",
        "universalFormat.iceberg.atomicConversion.supported",
        "castIcebergTimeType",
        "ignoreIcebergBucketPartition",
        "autoOptimize.optimizeWrite",
        "enableTypeWidening",
        "coordinatedCommits.commitCoordinator-preview",
        "coordinatedCommits.commitCoordinatorConf-preview",
        "coordinatedCommits.tableConf-preview",
        "enableInCommitTimestamps",
        "inCommitTimestampEnablementVersion",
        "inCommitTimestampEnablementTimestamp",
        "requireCheckpointProtectionBeforeVersion",
        "enableMaterializePartitionColumnsFeature",
        "writePartitionColumnsToParquet",
    )
)
_CANONICAL = {key.lower(): key for key in KNOWN_KEYS}

#: Keys that set the protocol rather than the metadata (delta-spark moves them to the
#: ``protocol`` action): the versions, ``ignoreProtocolDefaults`` and ``delta.feature.*``.
PROTOCOL_KEYS = frozenset(
    {"delta.minReaderVersion", "delta.minWriterVersion", "delta.ignoreProtocolDefaults"}
)
FEATURE_PREFIX = "delta.feature."
#: Prefixes of ``delta.*`` keys delta-spark accepts without defining them.
CONSTRAINT_PREFIX = "delta.constraints."
UNIVERSAL_FORMAT_CONFIG_PREFIX = "delta.universalformat.config."


def canonical_key(key: str) -> str | None:
    """``key`` as Delta spells it when it is a known ``delta.*`` key in any case, else ``None``."""
    return _CANONICAL.get(key.lower())


def find_key(configuration: Mapping[str, object], key: str) -> str | None:
    """The key under which ``configuration`` holds ``key``, ``None`` when it is not there.

    That is ``key`` itself, or for a ``delta.*`` key the same key in another case.
    """
    if isinstance(configuration, dict):
        held = dict.__contains__(configuration, key)
    else:
        held = key in configuration
    return key if held else _other_case(configuration, key)


def _other_case(keys: Iterable[str], key: str) -> str | None:
    if key[:6].lower() != "delta.":
        return None
    lowered = key.lower()
    for present in keys:
        if present.lower() == lowered:
            return present
    return None


_D = TypeVar("_D")


class TableProperties(dict[str, str | None]):
    """A table's properties (``metaData.configuration``), its ``delta.*`` keys found in any case.

    It is a ``dict`` holding the keys as the log spells them (they are written back as they
    are); reading a ``delta.*`` key that is not there under its exact spelling falls back to the
    same key in another case.
    """

    __slots__ = ()

    def __missing__(self, key: str) -> str | None:
        present = _other_case(self, key) if isinstance(key, str) else None
        if present is None:
            raise KeyError(key)
        return dict.__getitem__(self, present)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        return isinstance(key, str) and _other_case(self, key) is not None

    @overload
    def get(self, key: str, default: None = None, /) -> str | None: ...
    @overload
    def get(self, key: str, default: str | None, /) -> str | None: ...
    @overload
    def get(self, key: str, default: _D, /) -> str | _D | None: ...
    def get(self, key: str, default: object = None, /) -> object:
        """The value of ``key`` (a ``delta.*`` key in any case), or ``default``."""
        present = find_key(self, key) if isinstance(key, str) else None
        return default if present is None else dict.__getitem__(self, present)
