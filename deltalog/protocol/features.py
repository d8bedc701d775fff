"""Which protocol features deltalog reads and writes, and the protocol a new table needs."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)

#: Reader features whose logs deltalog can replay (it reads logs, not data rows).
READABLE_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding-preview",
        "domainMetadata",
    }
)

#: Writer features deltalog honours when it commits.
WRITABLE_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "generatedColumns",
        "timestampNtz",
        "domainMetadata",
        "deletionVectors",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "changeDataFeed",
        "inCommitTimestamp",
        "rowTracking",
        "checkpointProtection",
        "identityColumns",
        "allowColumnDefaults",
        "columnMapping",
        "clustering",
        "v2Checkpoint",
    }
)

#: Features of tables whose commits a catalog ratifies: refused outright (read and write).
CATALOG_MANAGED_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})

#: Writer features Delta defines (delta-spark's TableFeature names; others are reported).
DELTA_WRITER_FEATURES = frozenset(
    {
        "adaptiveMetadata-preview",
        "allowColumnDefaults",
        "appendOnly",
        "catalogManaged",
        "catalogOwned-preview",
        "changeDataFeed",
        "checkConstraints",
        "checkpointProtection",
        "clustering",
        "collations",
        "collations-preview",
        "columnMapping",
        "coordinatedCommits-preview",
        "deletionVectors",
        "domainMetadata",
        "generatedColumns",
        "geospatial",
        "geospatial-dev",
        "icebergCompatV1",
        "icebergCompatV2",
        "icebergCompatV3",
        "icebergWriterCompatV1",
        "icebergWriterCompatV3",
        "identityColumns",
        "inCommitTimestamp",
        "invariants",
        "materializePartitionColumns",
        "redirectReaderWriter-preview",
        "redirectWriterOnly-preview",
        "rowTracking",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantShredding",
        "variantShredding-preview",
        "variantType",
        "variantType-preview",
    }
)

# Writer features that are only safe to honour while the table does not actually use them:
# deltalog cannot evaluate constraints or generation expressions on data it did not write.
_USE_CHECKS: dict[str, Callable[[Metadata], bool]] = {
    "invariants": lambda m: _has_field_metadata(m, "delta.invariants"),
    "checkConstraints": lambda m: any(k.startswith("delta.constraints.") for k in m.configuration),
    "generatedColumns": lambda m: _has_field_metadata(m, "delta.generationExpression"),
    "columnMapping": lambda m: m.configuration.get("delta.columnMapping.mode", "none") != "none",
    "identityColumns": lambda m: _has_field_metadata(m, "delta.identity.start"),
    "allowColumnDefaults": lambda m: _has_field_metadata(m, "CURRENT_DEFAULT"),
    "changeDataFeed": lambda m: m.configuration.get("delta.enableChangeDataFeed") == "true",
}

#: The writer features each legacy writer version implies.
LEGACY_WRITER_FEATURES = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}


# Features deltalog writes only while the table does not use them: it cannot evaluate constraints
# or generation expressions, generate identity values, or fill column defaults.
_REFUSED_WHEN_USED = frozenset(
    {"invariants", "checkConstraints", "generatedColumns", "identityColumns", "allowColumnDefaults"}
)


def _has_field_metadata(metadata: Metadata, key: str) -> bool:
    if not metadata.schema_string:
        return False
    return any(
        key in f.metadata for f in _walk(StructType.from_json_string(metadata.schema_string))
    )


def _has_not_null(struct: StructType) -> bool:
    """Whether a column is NOT NULL: delta-spark then needs ``invariants`` (a NOT NULL invariant).

    As delta-spark's ``Invariants.getFromSchema``: top-level and struct fields, not inside
    arrays or maps.
    """
    return any(
        not f.nullable or (isinstance(f.type, StructType) and _has_not_null(f.type))
        for f in struct.fields
    )


def _walk(struct: StructType) -> list[StructField]:
    out: list[StructField] = []
    for f in struct.fields:
        out.append(f)
        out += _walk_type(f.type)
    return out


def _walk_type(t: DataType) -> list[StructField]:
    if isinstance(t, StructType):
        return _walk(t)
    if isinstance(t, ArrayType):
        return _walk_type(t.element_type)
    if isinstance(t, MapType):
        return _walk_type(t.key_type) + _walk_type(t.value_type)
    return []


def check_readable(protocol: Protocol) -> None:
    """Refuse a table whose reader protocol deltalog does not understand.

    Raises:
        UnsupportedFeatureError: Reader version above 3, an unknown reader feature, or a
            catalog-managed table.
    """
    _refuse_catalog_managed(protocol, "read")
    if protocol.min_reader_version > 3:
        raise UnsupportedFeatureError(
            f"the table needs readerVersion={protocol.min_reader_version}; deltalog reads up to 3",
            feature=f"readerVersion={protocol.min_reader_version}",
            operation="read",
        )
    if protocol.min_reader_version == 3:
        for feature in protocol.reader_features or ():
            if feature not in READABLE_FEATURES:
                raise UnsupportedFeatureError(
                    f"the table needs reader feature {feature!r}, which deltalog does not support",
                    feature=feature,
                    operation="read",
                )


def _refuse_catalog_managed(protocol: Protocol, operation: str) -> None:
    features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    for feature in sorted(features & CATALOG_MANAGED_FEATURES):
        raise UnsupportedFeatureError(
            f"the table uses {feature!r}: filesystem-based access to catalog-managed tables is "
            "not supported (its catalog ratifies commits the log directory may not show yet)",
            feature=feature,
            operation=operation,
        )


def active_writer_features(protocol: Protocol, metadata: Metadata) -> set[str]:
    """Writer features a writer must honour on this table."""
    if protocol.min_writer_version >= 7:
        return set(protocol.writer_features or ())
    active: set[str] = set()
    for version, features in LEGACY_WRITER_FEATURES.items():
        if protocol.min_writer_version >= version:
            for feature in features:
                check = _USE_CHECKS.get(feature)
                if feature == "appendOnly" or check is None or check(metadata):
                    active.add(feature)
    return active


def check_writable(protocol: Protocol, metadata: Metadata, enforced: Collection[str] = ()) -> None:
    """Refuse to write a table that needs a feature deltalog does not implement.

    Args:
        protocol: The table's protocol.
        metadata: The table's metadata.
        enforced: Features the writer enforces itself although deltalog in general does not
            (``checkConstraints`` for a writer that evaluates the constraints on its rows).

    Raises:
        UnsupportedFeatureError: Naming the first such feature.
    """
    _refuse_catalog_managed(protocol, "write")
    check_readable(protocol)
    if protocol.min_writer_version > 7:
        raise UnsupportedFeatureError(
            f"the table needs writerVersion={protocol.min_writer_version}; deltalog writes up to 7",
            feature=f"writerVersion={protocol.min_writer_version}",
            operation="write",
        )
    for feature in sorted(active_writer_features(protocol, metadata)):
        check = _USE_CHECKS.get(feature)
        in_use = check(metadata) if check else False
        refused = in_use and feature in _REFUSED_WHEN_USED and feature not in enforced
        if feature not in WRITABLE_FEATURES or refused:
            raise UnsupportedFeatureError(
                f"the table uses writer feature {feature!r}, which deltalog cannot honour",
                feature=feature,
                operation="write",
            )


def _uses_type(t: DataType, name: str) -> bool:
    if isinstance(t, PrimitiveType):
        return t.name == name
    if isinstance(t, StructType):
        return any(_uses_type(f.type, name) for f in t.fields)
    if isinstance(t, ArrayType):
        return _uses_type(t.element_type, name)
    if isinstance(t, MapType):
        return _uses_type(t.key_type, name) or _uses_type(t.value_type, name)
    return False


# Table properties that enable a feature, and the legacy (reader, writer) versions it needs.
_PROPERTY_FEATURES: dict[str, tuple[str, tuple[int, int]]] = {
    "delta.appendOnly": ("appendOnly", (1, 2)),
    "delta.enableChangeDataFeed": ("changeDataFeed", (1, 4)),
    "delta.enableDeletionVectors": ("deletionVectors", (3, 7)),
    "delta.enableInCommitTimestamps": ("inCommitTimestamp", (1, 7)),
    "delta.enableRowTracking": ("rowTracking", (1, 7)),
    "delta.enableTypeWidening": ("typeWidening", (3, 7)),
}
_UNSUPPORTED_PROPERTIES = {
    "delta.enableIcebergCompatV1": "icebergCompatV1",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
}
_READER_WRITER = frozenset(
    {"deletionVectors", "timestampNtz", "columnMapping", "v2Checkpoint", "typeWidening"}
)


def protocol_for_new_table(schema: StructType, configuration: Mapping[str, str]) -> Protocol:
    """The lowest protocol that the schema and table properties need.

    Raises:
        UnsupportedFeatureError: A property enables a feature deltalog cannot write.
    """
    for key, feature in _UNSUPPORTED_PROPERTIES.items():
        value = configuration.get(key)
        if value is not None and value.lower() not in ("false", "none", "classic"):
            raise UnsupportedFeatureError(
                f"{key}={value} enables {feature!r}, which deltalog cannot write",
                feature=feature,
                operation="write",
            )
    features: set[str] = set()
    legacy = (1, 2)
    for key, (feature, versions) in _PROPERTY_FEATURES.items():
        if configuration.get(key, "false").lower() == "true":
            features.add(feature)
            legacy = (max(legacy[0], versions[0]), max(legacy[1], versions[1]))
    if configuration.get("delta.columnMapping.mode", "none").lower() in ("name", "id"):
        features.add("columnMapping")
        legacy = (max(legacy[0], 2), max(legacy[1], 5))
    if configuration.get("delta.checkpointPolicy", "classic").lower() == "v2":
        features.add("v2Checkpoint")
        legacy = (3, 7)
    if _uses_type(schema, "timestamp_ntz"):
        features.add("timestampNtz")
        legacy = (3, 7)
    if _uses_type(schema, "variant"):
        raise UnsupportedFeatureError(
            "the variant type is not supported for writing",
            feature="variantType",
            operation="write",
        )
    if "rowTracking" in features:
        features.add("domainMetadata")
    if legacy[1] == 7:
        writer = set(features)
        if "changeDataFeed" in features or "appendOnly" in features:
            writer |= {"appendOnly", "invariants"}
        if _has_not_null(schema):  # delta-spark refuses a NOT NULL column without it
            writer.add("invariants")
        reader = sorted(f for f in features if f in _READER_WRITER)
        if legacy[0] < 3:  # reader version 2 when column mapping needs it
            return Protocol(legacy[0], 7, writer_features=sorted(writer))
        return Protocol(3, 7, reader_features=reader, writer_features=sorted(writer))
    return Protocol(legacy[0], legacy[1])
