"""Log cleanup for V2 checkpoints: delete sidecar files no remaining checkpoint references.

Following the protocol's metadata cleanup (steps 4 and 5): after commits and checkpoints
before the cutoff checkpoint are deleted, every checkpoint still in ``_delta_log`` is read for
its ``sidecar`` actions; a file in ``_delta_log/_sidecars`` that none of them references is
deleted, unless it was modified less than a day before the last midnight UTC (it may belong to
a checkpoint being written). When any remaining checkpoint cannot be read, nothing is deleted:
its references are unknown. A sidecar several checkpoints share (see
:mod:`deltalog.sidecar_reuse`) stays while any remaining checkpoint references it.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.errors import StorageError
from deltalog.logstores import FileStatus, LogFileNotFoundError, LogStore
from deltalog.paths import SIDECAR_DIR
from deltalog.segment import Checkpoint, classify
from deltalog.storage import TableStorage, storage_errors

DAY_MS = 24 * 3600 * 1000

__all__ = ["cleanup_sidecars", "referenced_sidecars", "sidecars_present"]


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def referenced_sidecars(storage: TableStorage, checkpoints: Iterable[Checkpoint]) -> set[str]:
    """File names of the sidecars the given checkpoints reference.

    Raises:
        ValueError: A checkpoint file cannot be read or parsed.
        StorageError: The store failed.
    """
    names: set[str] = set()
    for checkpoint in checkpoints:
        for status in checkpoint.files:
            with storage_errors(f"cannot read {status.name}"):
                if status.name.endswith(".json"):
                    for line in storage.store.read(status.path).splitlines():
                        action = orjson.loads(line) if line.strip() else {}
                        if isinstance(action, dict) and "sidecar" in action:
                            names.add(_name(str(action["sidecar"]["path"])))
                    continue
                with storage.store.open_input(status.path) as fh:
                    parquet = pq.ParquetFile(fh)
                    if "sidecar" not in parquet.schema_arrow.names:
                        continue
                    column = parquet.read(columns=["sidecar.path"]).column("sidecar")
            for row in column.to_pylist():
                if row and row.get("path"):
                    names.add(_name(str(row["path"])))
    return names


def cleanup_sidecars(storage: TableStorage, *, now_ms: int) -> list[str]:
    """Delete unreferenced sidecar files (see the module docstring).

    Returns:
        The names deleted, relative to ``_delta_log`` (``_sidecars/<name>``).

    Raises:
        StorageError: The store failed to list or delete.
    """
    directory = LogStore.join(storage.log_path, SIDECAR_DIR)
    try:
        with storage_errors(f"cannot list {directory}"):
            listed: list[FileStatus] = list(storage.store.list_tree(directory))
    except LogFileNotFoundError:
        return []
    if not listed:
        return []
    keep_after = now_ms - now_ms % DAY_MS - DAY_MS
    old = [s for s in listed if s.modification_time < keep_after]
    if not old:
        return []
    checkpoints = [cp for cps in classify(storage.list_log()).checkpoints.values() for cp in cps]
    try:
        referenced = referenced_sidecars(storage, checkpoints)
    except (StorageError, ValueError, KeyError, TypeError, pa.ArrowException, OSError):
        return []  # a checkpoint we cannot read may reference any of them
    deleted = []
    for status in old:
        name = _name(status.path)
        owner = name[1:-4] if name.startswith(".") and name.endswith(".crc") else name
        if owner in referenced:  # a referenced sidecar, or Hadoop's checksum of one
            continue
        with storage_errors(f"cannot delete {status.path}"):
            storage.store.delete(status.path)
        deleted.append(f"{SIDECAR_DIR}/{_name(status.path)}")
    return deleted


def sidecars_present(storage: TableStorage, checkpoint: Checkpoint) -> bool:
    """Whether every sidecar ``checkpoint`` references exists (``False`` if it is unreadable)."""
    try:
        names = referenced_sidecars(storage, [checkpoint])
        directory = LogStore.join(storage.log_path, SIDECAR_DIR)
        for name in names:
            with storage_errors(f"cannot read sidecar {name}"):
                storage.store.stat(LogStore.join(directory, name))
    except (StorageError, LogFileNotFoundError, ValueError, KeyError, TypeError, OSError):
        return False
    except pa.ArrowException:
        return False
    return True
