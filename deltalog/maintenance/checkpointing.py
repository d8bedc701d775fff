"""Checkpoints of a snapshot: what goes in (live files, unexpired tombstones) and when."""

from __future__ import annotations

import contextlib
import time

import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.checkpoints.errors import (
    CheckpointError,
    IncompleteCheckpointError,
    LateCheckpointError,
)
from deltalog.checkpoints.last_checkpoint import LastCheckpoint
from deltalog.checkpoints.schema import STATS_PARSED
from deltalog.checkpoints.v2 import write_v2_checkpoint
from deltalog.checkpoints.writer import CheckpointContent, write_checkpoint
from deltalog.log.file_actions import ADD_FIELDS, FILES_SCHEMA, TOMBSTONE_FIELDS, TOMBSTONES_SCHEMA
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import LogStoreError
from deltalog.maintenance.sidecar_reuse import (
    MAX_SIDECAR_ADDS,
    PublishGuard,
    plan_reuse,
    reuse_enabled,
)
from deltalog.maintenance.stats_struct import checkpoint_stats_struct
from deltalog.protocol.config import tombstone_retention_ms


def checkpoint_content(snapshot: Snapshot, now_ms: int | None = None) -> CheckpointContent:
    """Lay out ``snapshot`` for a checkpoint.

    Tombstones whose ``deletionTimestamp`` is older than ``delta.deletedFileRetentionDuration``
    are dropped; ``commitInfo`` and ``cdc`` never appear in a snapshot, so never in a checkpoint.
    The adds carry typed statistics in ``stats_parsed`` where
    :mod:`deltalog.maintenance.stats_struct`
    says so.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    actions: list[tuple[str, dict[str, object]]] = [
        ("protocol", snapshot.protocol.to_json_dict()),
        ("metaData", snapshot.metadata.to_json_dict()),
    ]
    actions += [("txn", t.to_json_dict()) for t in snapshot.txns.values()]
    actions += [("domainMetadata", d.to_json_dict()) for d in snapshot.domains.values()]
    # FILES_SCHEMA and TOMBSTONES_SCHEMA are the checkpoint fields in snake_case, in order.
    files = snapshot.files
    assert files.schema.names == FILES_SCHEMA.names
    adds = files.rename_columns(list(ADD_FIELDS))
    struct = checkpoint_stats_struct(snapshot, files)
    if struct is not None:
        adds = adds.append_column(STATS_PARSED, struct)
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        cutoff = now - tombstone_retention_ms(snapshot.configuration)
        ts = tombstones.column("deletion_timestamp")
        tombstones = tombstones.filter(pc.fill_null(pc.greater(ts, av.int64(cutoff)), av.false()))
    assert tombstones.schema.names == TOMBSTONES_SCHEMA.names
    removes = tombstones.rename_columns(list(TOMBSTONE_FIELDS))
    return CheckpointContent(snapshot.version, actions, adds, removes)


def uses_v2_checkpoints(snapshot: Snapshot) -> bool:
    """Whether checkpoints of ``snapshot`` are V2 ones.

    That is when the protocol supports ``v2Checkpoint`` and ``delta.checkpointPolicy`` is
    ``v2``; with the feature and the ``classic`` policy a classic V1 checkpoint is valid too.
    """
    policy = str(snapshot.configuration.get("delta.checkpointPolicy") or "classic").lower()
    return policy == "v2" and "v2Checkpoint" in (snapshot.protocol.writer_features or ())


def write_snapshot_checkpoint(
    storage: TableStorage, snapshot: Snapshot, *, reuse: bool | None = None
) -> LastCheckpoint:
    """Write a checkpoint of ``snapshot`` and move ``_last_checkpoint`` to it.

    The checkpoint is a V2 one (UUID-named, file actions in sidecars) where
    :func:`uses_v2_checkpoints` says so, else a classic one. A V2 checkpoint references the
    previous checkpoint's sidecars that are still valid and writes only the other adds (see
    :mod:`deltalog.maintenance.sidecar_reuse`).

    Args:
        storage: The table's storage.
        snapshot: The snapshot to checkpoint.
        reuse: Whether a V2 checkpoint reuses sidecars; ``None``: unless
            ``DELTALOG_SIDECAR_REUSE=0``.

    Raises:
        StorageError: The log store failed.
        CheckpointError: The snapshot cannot be laid out as a checkpoint, or a V2 checkpoint's
            sidecars kept vanishing or growing too old while it was written.
    """
    content = checkpoint_content(snapshot)
    if not uses_v2_checkpoints(snapshot):
        with storage_errors(f"cannot write checkpoint {snapshot.version}"):
            return write_checkpoint(storage.store, storage.log_path, content)
    return _write_v2(storage, snapshot, content, reuse_enabled() if reuse is None else reuse)


#: V2 checkpoint writes tried (the first with reuse, the others without).
_V2_ATTEMPTS = 3


def _write_v2(
    storage: TableStorage, snapshot: Snapshot, content: CheckpointContent, reuse: bool
) -> LastCheckpoint:
    """Write a V2 checkpoint under the protocol :mod:`deltalog.maintenance.sidecar_reuse` describes.

    A write whose sidecars vanished or grew too old is done again without reuse (with fresh
    sidecars); a complete top-level file left by a late write is deleted once another
    checkpoint of the version is published.
    """
    # Only sidecars whose stats_parsed (or its absence) matches the new ones are reused:
    # readers take the struct only when every file of a checkpoint has it alike.
    stats_type = content.stats_type
    whole = content.adds
    late: list[str] = []
    failure: CheckpointError | None = None
    with storage_errors(f"cannot write checkpoint {snapshot.version}"):
        for attempt in range(_V2_ATTEMPTS):
            guard = PublishGuard()
            plan = None
            if reuse:  # also without reusing anything: the plan's keys are remembered
                plan = plan_reuse(
                    storage,
                    snapshot,
                    max_adds=MAX_SIDECAR_ADDS,
                    reuse=attempt == 0,
                    stats_type=stats_type,
                    not_before_ms=guard.reusable_since_ms,
                )
            content.adds = whole
            if plan is not None and plan.reused and whole is not None:
                content.adds = whole.filter(plan.fresh)
            try:
                last = write_v2_checkpoint(
                    storage.store,
                    storage.log_path,
                    content,
                    reused=plan.reused if plan is not None else None,
                    max_sidecar_adds=MAX_SIDECAR_ADDS,
                    young_enough=guard.young_enough,
                )
            except LateCheckpointError as exc:
                failure = exc
                if exc.location is not None:
                    late.append(exc.location)
                continue
            except IncompleteCheckpointError as exc:
                failure = exc
                continue
            for location in late:  # complete, maybe in use: deleted once replaced
                with contextlib.suppress(LogStoreError):
                    storage.store.delete(location)
            if plan is not None:
                plan.remember(storage, last, MAX_SIDECAR_ADDS, stats_type)
            return last
    assert failure is not None
    raise failure
