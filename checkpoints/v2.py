"""Write a V2 checkpoint: a UUID-named JSON checkpoint whose file actions live in a sidecar.

Layout (the protocol's "V2 spec" with "UUID-named" file naming, as delta-spark writes it):

* ``_delta_log/_sidecars/<uuid>.parquet``: the ``add`` and ``remove`` rows, columns ``add``
  and ``remove`` with the classic checkpoint's struct types (omitted when the table has no
  file actions);
* ``_delta_log/<version>.checkpoint.<uuid>.json``: one ``checkpointMetadata`` action, one
  ``sidecar`` action per sidecar, then ``protocol``, ``metaData``, ``txn`` and
  ``domainMetadata``;
* ``_last_checkpoint``: ``version``, ``size`` (every action, sidecars' included),
  ``sizeInBytes`` (checkpoint and sidecars), ``numOfAddFiles``, and ``v2Checkpoint`` (the
  top-level file's name, size and time, its non-file actions and its sidecars, which spare
  delta-spark a read), with the protocol's ``checksum``.

Every file is published with create-if-absent under a fresh UUID, so a checkpoint is complete
before its top-level file exists and never overwritten. Sidecars are written before the
top-level file that references them.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pyarrow as pa

from deltalog.logstores import LogStore

from .last_checkpoint import LastCheckpoint
from .schema import ADD, REMOVE
from .writer import CheckpointContent, _batches, _to_parquet, publish_pointer

SIDECAR_DIR = "_sidecars"
SIDECAR_SCHEMA = pa.schema([pa.field("add", ADD), pa.field("remove", REMOVE)])


def v2_checkpoint_name(version: int, unique: str) -> str:
    """``<version>.checkpoint.<uuid>.json``."""
    return f"{version:020d}.checkpoint.{unique}.json"


def write_v2_checkpoint(
    store: LogStore, log_path: str, content: CheckpointContent
) -> LastCheckpoint:
    """Write a V2 checkpoint of ``content`` and point ``_last_checkpoint`` at it.

    Returns:
        What was written to ``_last_checkpoint`` (or would have been, if it was newer already).

    Raises:
        CheckpointFormatError: The content cannot be laid out in the checkpoint schema.
        LogStoreError: The store failed.
    """
    n_add = content.adds.num_rows if content.adds is not None else 0
    n_remove = content.removes.num_rows if content.removes is not None else 0
    sidecars: list[dict[str, Any]] = []
    sidecar_rows = sidecar_bytes = 0
    if n_add or n_remove:
        sections = [
            *_batches(SIDECAR_SCHEMA, "add", content.adds, ADD),
            *_batches(SIDECAR_SCHEMA, "remove", content.removes, REMOVE),
        ]
        data, sidecar_rows = _to_parquet(sections, SIDECAR_SCHEMA)
        name = f"{uuid.uuid4()}.parquet"
        location = LogStore.join(LogStore.join(log_path, SIDECAR_DIR), name)
        store.write(location, data, overwrite=False)
        status = store.stat(location)
        sidecar_bytes = status.size
        sidecars.append(
            {
                "path": name,
                "sizeInBytes": status.size,
                "modificationTime": status.modification_time,
            }
        )
    tags = {
        "sidecarNumActions": str(sidecar_rows),
        "sidecarSizeInBytes": str(sidecar_bytes),
        "numOfAddFiles": str(n_add),
    }
    metadata = {"checkpointMetadata": {"version": content.version, "tags": tags}}
    non_file = [metadata, *({name: body} for name, body in content.actions)]
    lines = [metadata, *({"sidecar": s} for s in sidecars), *non_file[1:]]
    top = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    name = v2_checkpoint_name(content.version, str(uuid.uuid4()))
    location = LogStore.join(log_path, name)
    store.write(location, top, overwrite=False)
    status = store.stat(location)
    pointer: dict[str, Any] = {
        "version": content.version,
        "size": len(lines) + sidecar_rows,
        "sizeInBytes": status.size + sidecar_bytes,
        "numOfAddFiles": n_add,
        "v2Checkpoint": {
            "path": name,
            "sizeInBytes": status.size,
            "modificationTime": status.modification_time,
            "nonFileActions": non_file,
            "sidecarFiles": sidecars,
        },
    }
    return publish_pointer(store, log_path, pointer)
