"""A new table: its ``metaData`` and ``protocol``, and version 0 when its first write creates it.

delta-spark (and delta-rs) create a table with its first write in one commit: ``commitInfo``,
``protocol``, ``metaData``, an optional ``txn``, and the ``add`` actions. In-commit timestamps
stamp it and row tracking numbers its rows from 0, as a later commit would be laid out
(:mod:`deltalog.write.commit_layout`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.log import in_commit_timestamps as ict
from deltalog.log.clock import now_ms
from deltalog.protocol.actions import Metadata, Protocol, serialize_actions
from deltalog.protocol.column_mapping import map_new_columns
from deltalog.protocol.features import protocol_for_new_table
from deltalog.protocol.partitions import check_partition_columns
from deltalog.protocol.properties import canonical_properties, check_properties
from deltalog.protocol.schema import StructType, as_struct
from deltalog.protocol.user_input import (
    check_mapping,
)
from deltalog.write.commit import make_commit_info
from deltalog.write.row_tracking import new_table_configuration

if TYPE_CHECKING:
    pass


from deltalog.protocol.actions import Action, AddFile, Txn
from deltalog.write import row_tracking
from deltalog.write.commit import write_metrics

__all__ = ["first_commit", "new_table_actions"]


def first_commit(
    metadata: Metadata,
    protocol: Protocol,
    adds: list[AddFile],
    *,
    parameters: Mapping[str, Any],
    is_blind_append: bool,
    txns: Mapping[str, int] | None = None,
    user_metadata: str | None = None,
    operation: str = "WRITE",
) -> bytes:
    """The bytes of version 0.

    Args:
        metadata: The new table's ``metaData``.
        protocol: Its ``protocol``.
        adds: The files of the first write.
        parameters: ``commitInfo.operationParameters``.
        is_blind_append: ``commitInfo.isBlindAppend``.
        txns: ``app_id -> version`` for idempotent writes.
        user_metadata: ``commitInfo.userMetadata``.
        operation: ``commitInfo.operation``.

    Raises:
        MissingRowCountError: The table tracks row ids and an add has no ``numRecords``.
    """
    info = make_commit_info(
        operation=operation,
        parameters=dict(parameters),
        read_version=None,
        is_blind_append=is_blind_append,
        metrics=write_metrics(adds),
        user_metadata=user_metadata,
    )
    if ict.enabled(metadata):
        info = ict.stamp(info, now_ms())
    first_adds: list[Action] = list(adds)
    row_domain = None
    if row_tracking.supported(protocol, metadata):  # fresh row ids from 0 at version 0
        assigned, row_domain = row_tracking.assign(adds, 0, -1)
        first_adds = list(assigned)
    actions: list[Action] = [info, protocol, metadata]
    for app_id, version in (txns or {}).items():
        actions.append(Txn(app_id=app_id, version=version, last_updated=now_ms()))
    if row_domain is not None:
        actions.append(row_domain)
    actions.extend(first_adds)
    return serialize_actions(actions)


def new_table_actions(
    schema: StructType | pa.Schema | Mapping[str, Any] | str,
    *,
    partition_by: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
) -> tuple[Metadata, Protocol]:
    """The ``metaData`` and ``protocol`` of a new table (see :meth:`DeltaTable.create`).

    Raises:
        InvalidSchemaError: The schema is invalid.
        InvalidInputError: A partition column is not in the schema, or has a complex type.
        InvalidPropertyError: An unknown ``delta.*`` property, or a value it cannot take.
        UnsupportedFeatureError: A property enables a feature deltalog cannot write.
    """
    struct = as_struct(schema)
    partition_columns = list(partition_by)
    check_partition_columns(struct, partition_columns)
    config = {str(k): str(v) for k, v in check_mapping(configuration, "configuration").items()}
    config = canonical_properties(config)
    check_properties(config)
    config = new_table_configuration(config)
    protocol = protocol_for_new_table(struct, config)
    struct, config = map_new_columns(struct, config)
    metadata = Metadata(
        id=str(uuid.uuid4()),
        name=name,
        description=description,
        schema_string=struct.to_json_string(),
        partition_columns=partition_columns,
        configuration=dict(config),
        created_time=now_ms(),
    )
    return metadata, protocol
