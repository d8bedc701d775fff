"""Checkpoints of a snapshot: what goes in (live files, unexpired tombstones) and when."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc

from checkpoints.last_checkpoint import LastCheckpoint
from checkpoints.schema import ADD, REMOVE
from checkpoints.writer import CheckpointContent, write_checkpoint
from deltalog.config import tombstone_retention_ms
from deltalog.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA
from deltalog.snapshot import Snapshot
from deltalog.storage import TableStorage, storage_errors

_ADD_NAMES = [f.name for f in ADD]
_REMOVE_NAMES = [REMOVE.field(_i).name for _i in range(REMOVE.num_fields)]


def checkpoint_content(snapshot: Snapshot, now_ms: int | None = None) -> CheckpointContent:
    """Lay out ``snapshot`` for a checkpoint.

    Tombstones whose ``deletionTimestamp`` is older than ``delta.deletedFileRetentionDuration``
    are dropped; ``commitInfo`` and ``cdc`` never appear in a snapshot, so never in a checkpoint.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    actions: list[tuple[str, dict[str, object]]] = [
        ("protocol", snapshot.protocol.to_json_dict()),
        ("metaData", snapshot.metadata.to_json_dict()),
    ]
    actions += [("txn", t.to_json_dict()) for t in snapshot.txns.values()]
    actions += [("domainMetadata", d.to_json_dict()) for d in snapshot.domains.values()]
    assert snapshot.files.schema.names == FILES_SCHEMA.names
    adds = snapshot.files.rename_columns(_ADD_NAMES)
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        cutoff = now - tombstone_retention_ms(snapshot.configuration)
        ts = tombstones.column("deletion_timestamp")
        tombstones = tombstones.filter(pc.fill_null(pc.greater(ts, cutoff), False))
    names = {
        TOMBSTONES_SCHEMA.field(i).name: _camel(TOMBSTONES_SCHEMA.field(i).name)
        for i in range(len(TOMBSTONES_SCHEMA))
    }
    removes = tombstones.rename_columns([names[n] for n in tombstones.column_names])
    return CheckpointContent(snapshot.version, actions, adds, _with_remove_fields(removes))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


def _with_remove_fields(table: pa.Table) -> pa.Table:
    return table.select([n for n in _REMOVE_NAMES if n in table.column_names])


def write_snapshot_checkpoint(storage: TableStorage, snapshot: Snapshot) -> LastCheckpoint:
    """Write a classic checkpoint of ``snapshot`` and move ``_last_checkpoint`` to it.

    Raises:
        StorageError: The log store failed.
        CheckpointError: The snapshot cannot be laid out as a checkpoint.
    """
    content = checkpoint_content(snapshot)
    with storage_errors(f"cannot write checkpoint {snapshot.version}"):
        return write_checkpoint(storage.store, storage.log_path, content)
