"""The Arrow schema of a classic checkpoint, column for column as delta-spark writes it."""

from __future__ import annotations

import pyarrow as pa

_STR_MAP = pa.map_(pa.string(), pa.string())

DELETION_VECTOR = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)

TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])

ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("tags", _STR_MAP),
        ("deletionVector", DELETION_VECTOR),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
        ("stats", pa.string()),
    ]
)

REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", DELETION_VECTOR),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)

METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _STR_MAP),
        ("createdTime", pa.int64()),
    ]
)

PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)

DOMAIN_METADATA = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)

CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", _STR_MAP)])

SIDECAR = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", _STR_MAP),
    ]
)

#: Column types by action name, for every action a checkpoint may hold.
ACTION_TYPES: dict[str, pa.DataType] = {
    "txn": TXN,
    "add": ADD,
    "remove": REMOVE,
    "metaData": METADATA,
    "protocol": PROTOCOL,
    "domainMetadata": DOMAIN_METADATA,
    "checkpointMetadata": CHECKPOINT_METADATA,
    "sidecar": SIDECAR,
}

#: Actions that are not file actions: few rows, read whole.
NON_FILE_ACTIONS = (
    "protocol",
    "metaData",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)


#: The ``add`` field delta-spark writes typed statistics to.
STATS_PARSED = "stats_parsed"


def with_stats_parsed(stats_type: pa.DataType | None) -> pa.StructType:
    """The ``add`` struct type, with typed statistics in ``stats_parsed`` when given."""
    if stats_type is None:
        return ADD
    return pa.struct([*ADD, pa.field(STATS_PARSED, stats_type)])


def stats_parsed_type(add_type: pa.DataType) -> pa.DataType | None:
    """The type of ``stats_parsed`` in an ``add`` struct type, ``None`` when it has none."""
    if not pa.types.is_struct(add_type):
        return None
    at = add_type.get_field_index(STATS_PARSED)
    return add_type.field(at).type if at >= 0 else None


def classic_schema(add_type: pa.StructType = ADD) -> pa.Schema:
    """The top-level schema of a V1 classic checkpoint, in delta-spark's column order.

    Args:
        add_type: The ``add`` column's type (:func:`with_stats_parsed`).
    """
    return pa.schema(
        [
            pa.field(name, add_type if name == "add" else ACTION_TYPES[name])
            for name in ("txn", "add", "remove", "metaData", "protocol", "domainMetadata")
        ]
    )


#: A leaf that is non-null whenever its action is present, per action column. Writers keep
#: statistics for these leaves; readers skip row groups whose null count says "all null".
PRESENCE_LEAVES = {
    "add": "add.path",
    "remove": "remove.path",
    "metaData": "metaData.id",
    "protocol": "protocol.minReaderVersion",
    "txn": "txn.appId",
    "domainMetadata": "domainMetadata.domain",
    "checkpointMetadata": "checkpointMetadata.version",
    "sidecar": "sidecar.path",
}


#: Optional scalar fields of file actions that most tables never set. Writers keep statistics
#: for their leaves too: without a null count a reader cannot tell that such a column is null
#: in every row, and decodes (and allocates) a column of nulls per row (~55 MiB for 1M adds).
OPTIONAL_FILE_FIELDS = (
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
    "clusteringProvider",
)


def statistics_leaves(schema: pa.Schema) -> list[str]:
    """Leaf columns a checkpoint of ``schema`` keeps statistics for.

    Those are the :data:`PRESENCE_LEAVES` of its actions and the leaves of the
    :data:`OPTIONAL_FILE_FIELDS` of its ``add`` and ``remove`` columns. Statistics of every
    other leaf (min/max of a million paths or stats strings) would cost much of the write and
    serve no reader.
    """
    leaves = [leaf for action, leaf in PRESENCE_LEAVES.items() if action in schema.names]
    for action in ("add", "remove"):
        if action not in schema.names:
            continue
        fields = schema.field(action).type
        for name in OPTIONAL_FILE_FIELDS:
            index = fields.get_field_index(name)
            if index < 0:
                continue
            kind = fields.field(index).type
            if pa.types.is_struct(kind):
                leaves += [f"{action}.{name}.{kid.name}" for kid in kind]
            else:
                leaves.append(f"{action}.{name}")
    return leaves
