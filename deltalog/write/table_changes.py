"""Metadata and protocol changes a transaction stages, checked against the table they change.

Separate from :mod:`deltalog.write.transaction` (which stages files and commits): what a new
``metaData`` or ``protocol`` action may be, whether a metadata change makes existing files
unreadable, and whether a protocol change only upgrades.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from deltalog.errors import InvalidInputError
from deltalog.log.snapshot import Snapshot
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.column_mapping import is_mapped, map_new_columns, physical_name
from deltalog.protocol.features import (
    LEGACY_WRITER_FEATURES,
    active_writer_features,
    check_writable,
    protocol_for_new_table,
)
from deltalog.protocol.partitions import check_partition_columns
from deltalog.protocol.properties import canonical_properties, check_properties
from deltalog.protocol.schema import StructType, as_struct
from deltalog.protocol.user_input import as_items, check_action, check_mapping
from deltalog.write.clustering import check_clustering_change
from deltalog.write.row_tracking import check_enablement as check_row_tracking_enablement
from deltalog.write.schema_merge import keeps_data_readable, type_widening_enabled


def metadata_change(
    snapshot: Snapshot,
    staged: Metadata | None,
    staged_protocol: Protocol | None,
    metadata: Metadata | None = None,
    *,
    schema: StructType | pa.Schema | Mapping[str, Any] | str | None = None,
    partition_by: Iterable[str] | None = None,
    configuration: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
) -> tuple[Metadata, bool]:
    """The new metadata (``metadata``, or the changes applied to the one in force).

    Args:
        snapshot: The snapshot the transaction read.
        staged: Metadata the transaction staged before, if any.
        staged_protocol: Protocol the transaction staged, if any.
        metadata: A whole ``Metadata`` action.
        schema: A new schema.
        partition_by: New partition columns.
        configuration: New table properties (all of them).
        name: A new name.
        description: A new description.

    Returns:
        The metadata, and whether it makes existing files unreadable (a dropped or retyped
        column, other partition columns): then the transaction must remove every live file.

    Raises:
        InvalidSchemaError: The schema is invalid.
        InvalidInputError: The table id changes, partition columns are invalid, an argument
            has the wrong type, or the properties need writer features the protocol lacks.
        InvalidPropertyError: A new unknown ``delta.*`` property, or a value it cannot take.
        UnsupportedFeatureError: The properties need a feature deltalog cannot write.
    """
    current = staged or snapshot.metadata
    if metadata is None:
        changes: dict[str, Any] = {}
        if schema is not None:
            changes["schema_string"] = as_struct(schema).to_json_string()
        if partition_by is not None:
            changes["partition_columns"] = as_items(partition_by, (str,), "partition_by")
        if configuration is not None:
            given = check_mapping(configuration, "configuration")
            changes["configuration"] = {str(k): str(v) for k, v in given.items()}
        for field, value in (("name", name), ("description", description)):
            if value is not None:
                if not isinstance(value, str):
                    raise InvalidInputError(f"{field} must be a str, not {type(value).__name__}")
                changes[field] = value
        metadata = dataclasses.replace(current, **changes)
    check_action(metadata, Metadata)
    if metadata.id != snapshot.metadata.id:
        raise InvalidInputError(
            f"the table id is {snapshot.metadata.id}; metadata cannot change it"
        )
    struct = StructType.from_json_string(metadata.schema_string or "")
    check_partition_columns(struct, list(metadata.partition_columns))
    check_clustering_change(snapshot, metadata, struct)
    metadata, config = _canonical_configuration(metadata, current)
    check_properties(config)
    check_row_tracking_enablement(current, metadata)
    struct, config = map_new_columns(struct, config, previous=current.configuration)
    if is_mapped(config):  # new columns got ids and physical names
        metadata = dataclasses.replace(
            metadata, schema_string=struct.to_json_string(), configuration=dict(config)
        )
    needed = protocol_for_new_table(struct, config)
    protocol = staged_protocol or snapshot.protocol
    check_writable(protocol, metadata)
    missing = active_writer_features(needed, metadata) - active_writer_features(protocol, metadata)
    if missing:
        raise InvalidInputError(
            f"the new metadata needs writer features {sorted(missing)} that the table "
            "protocol lacks; stage a protocol upgrade with update_protocol() first"
        )
    old = snapshot.schema
    if is_mapped(config) and is_mapped(snapshot.configuration):
        # Files hold physical names: a rename or a drop changes no file; a retype does.
        new_types = {physical_name(f): f.type for f in struct.fields}
        changed = any(new_types.get(physical_name(f), f.type) != f.type for f in old.fields)
    else:
        # Added columns (nested ones too) and, on a type-widening table, widened types leave
        # the existing files readable; anything else needs them rewritten.
        widening = type_widening_enabled(protocol, snapshot.metadata) and type_widening_enabled(
            protocol, metadata
        )
        changed = not keeps_data_readable(old, struct, type_widening=widening)
    rewrites = list(metadata.partition_columns) != list(snapshot.partition_columns) or changed
    return metadata, rewrites


def _canonical_configuration(
    metadata: Metadata, current: Metadata
) -> tuple[Metadata, dict[str, str]]:
    """``metadata`` with its ``delta.*`` keys spelt as Delta does, and its non-null properties.

    Raises:
        InvalidPropertyError: A new unknown ``delta.*`` key or protocol property.
    """
    given = {k: v for k, v in metadata.configuration.items() if v is not None}
    config = canonical_properties(given, current.configuration)
    if list(config) != list(given):
        nulls = {k: v for k, v in metadata.configuration.items() if v is None}
        metadata = dataclasses.replace(metadata, configuration={**config, **nulls})
    return metadata, config


def protocol_upgrade(snapshot: Snapshot, protocol: Protocol, metadata: Metadata) -> None:
    """Refuse ``protocol`` unless it only upgrades the snapshot's and deltalog can write it.

    Raises:
        InvalidInputError: Not a valid ``Protocol``, or a downgrade.
        UnsupportedFeatureError: deltalog cannot write under the new protocol.
    """
    check_action(protocol, Protocol)
    old = snapshot.protocol
    if (
        protocol.min_reader_version < old.min_reader_version
        or protocol.min_writer_version < old.min_writer_version
        or not set(old.reader_features or ()) <= set(protocol.reader_features or ())
        or not set(old.writer_features or ()) <= set(protocol.writer_features or ())
    ):
        raise InvalidInputError(
            f"{protocol} would downgrade the table protocol {old}; deltalog only upgrades"
        )
    if protocol.min_writer_version >= 7 and old.min_writer_version < 7:
        implied = {
            feature
            for version, features in LEGACY_WRITER_FEATURES.items()
            if version <= old.min_writer_version
            for feature in features
        }
        missing = implied - set(protocol.writer_features or ())
        if missing:
            raise InvalidInputError(
                f"moving from writerVersion {old.min_writer_version} to table features must "
                f"keep the features it implies: add {sorted(missing)} to writer_features"
            )
    check_writable(protocol, metadata)


def protocol_for_schema(snapshot: Snapshot, schema: StructType) -> Protocol | None:
    """The protocol ``schema`` needs on this table, or ``None`` when the table's is enough.

    Schema evolution can bring a type that needs a table feature (a ``timestamp_ntz`` column
    needs ``timestampNtz``); delta-spark then upgrades the protocol in the same commit, and so
    does this: the current protocol plus the missing features (moving a legacy protocol to
    table features keeps the features its versions implied).

    Raises:
        UnsupportedFeatureError: The schema needs a feature deltalog cannot write.
    """
    metadata = snapshot.metadata
    config = {k: v for k, v in metadata.configuration.items() if v is not None}
    needed = protocol_for_new_table(schema, config)
    current = snapshot.protocol
    evolved = dataclasses.replace(metadata, schema_string=schema.to_json_string())
    missing = active_writer_features(needed, evolved) - active_writer_features(current, evolved)
    if not missing:
        return None
    if current.min_writer_version >= 7:
        writer = set(current.writer_features or ()) | missing
    else:
        writer = missing | {
            feature
            for version, features in LEGACY_WRITER_FEATURES.items()
            if version <= current.min_writer_version
            for feature in features
        }
    readers = missing & set(needed.reader_features or ())
    if not readers:
        return dataclasses.replace(current, min_writer_version=7, writer_features=sorted(writer))
    return dataclasses.replace(
        current,
        min_reader_version=3,
        min_writer_version=7,
        reader_features=sorted(
            set(current.reader_features or ())
            | readers
            | ({"columnMapping"} if current.min_reader_version == 2 else set())
        ),
        writer_features=sorted(writer),
    )
