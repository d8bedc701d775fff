"""Log cleanup for V2 checkpoints: delete sidecar files no remaining checkpoint references.

Following the protocol's metadata cleanup (steps 4 and 5): after commits and checkpoints
before the cutoff checkpoint are deleted, every checkpoint still in ``_delta_log`` is read for
its ``sidecar`` actions; a file in ``_delta_log/_sidecars`` that none of them references is
deleted, unless it was modified less than a day before the last midnight UTC (it may belong to
a checkpoint being written). When any remaining checkpoint cannot be read, nothing is deleted:
its references are unknown. A sidecar several checkpoints share (see
:mod:`deltalog.maintenance.sidecar_reuse`) stays while any remaining checkpoint references it.

Cleanup also deletes a checkpoint that references a sidecar which no longer exists (its
writer died before taking it back, or something deleted the sidecar): no reader can use it,
and delta-spark and delta-rs pick the checkpoint with the greatest name among those of a
version and fail on it, or on the newest one, instead of using another (see
:func:`broken_checkpoints`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.errors import StorageError
from deltalog.log.segment import Checkpoint, classify
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import FileStatus, LogFileNotFoundError, LogStore
from deltalog.protocol.paths import SIDECAR_DIR

DAY_MS = 24 * 3600 * 1000
#: The least age at which log cleanup deletes an unreferenced sidecar (it keeps those modified
#: since the midnight UTC before last, so a day at least), as the protocol's cleanup does.
SIDECAR_GRACE_MS = DAY_MS

__all__ = [
    "SIDECAR_GRACE_MS",
    "broken_checkpoints",
    "cleanup_sidecars",
    "referenced_sidecars",
    "sidecar_actions",
    "sidecars_present",
]


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def sidecar_actions(storage: TableStorage, status: FileStatus) -> tuple[list[dict[str, Any]], bool]:
    """The ``sidecar`` actions of one checkpoint file, and whether it holds file actions too.

    Raises:
        ValueError: The file cannot be parsed.
        StorageError: The store failed.
    """
    found: list[dict[str, Any]] = []
    with storage_errors(f"cannot read {status.name}"):
        if status.name.endswith(".json"):
            has_files = False
            for line in storage.store.read(status.path).splitlines():
                action = orjson.loads(line) if line.strip() else {}
                if not isinstance(action, dict):
                    raise ValueError(f"{status.name}: a line is not a JSON object")
                has_files = has_files or "add" in action or "remove" in action
                if "sidecar" in action:
                    found.append(dict(action["sidecar"]))
            return found, has_files
        with storage.store.open_input(status.path) as fh:
            parquet = pq.ParquetFile(fh)
            names = parquet.schema_arrow.names
            if "sidecar" not in names:
                return [], True
            kinds = [n for n in ("add", "remove") if n in names]
            table = parquet.read(columns=["sidecar", *kinds])
    has_files = any(table.column(n).null_count < table.num_rows for n in kinds)
    for row in table.column("sidecar").to_pylist():
        if row:
            body = {k: v for k, v in row.items() if v is not None}
            if isinstance(body.get("tags"), list):  # a map comes back as key/value pairs
                body["tags"] = dict(body["tags"])
            found.append(body)
    return found, has_files


def referenced_sidecars(storage: TableStorage, checkpoints: Iterable[Checkpoint]) -> set[str]:
    """File names of the sidecars the given checkpoints reference.

    Raises:
        ValueError: A checkpoint file cannot be read or parsed.
        StorageError: The store failed.
    """
    names: set[str] = set()
    for checkpoint in checkpoints:
        for status in checkpoint.files:
            for action in sidecar_actions(storage, status)[0]:
                path = action.get("path")
                if not isinstance(path, str) or not path:
                    raise ValueError(f"{status.name}: a sidecar action without a path")
                names.add(_name(path))
    return names


def _step(point: str) -> None:
    """Called between the steps of :func:`cleanup_sidecars`; tests override it.

    Points: ``"decided"`` (the checkpoints are listed and read; deletions follow).
    """


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
    _step("decided")
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


def _sidecar_names(storage: TableStorage) -> set[str]:
    directory = LogStore.join(storage.log_path, SIDECAR_DIR)
    try:
        with storage_errors(f"cannot list {directory}"):
            return {_name(s.path) for s in storage.store.list_tree(directory)}
    except LogFileNotFoundError:
        return set()


def broken_checkpoints(
    storage: TableStorage, checkpoints: dict[int, list[Checkpoint]]
) -> list[Checkpoint]:
    """The checkpoints a reader may pick first that reference a sidecar which is gone.

    Those are the checkpoints of a version that has several, and those of the newest
    version. ``checkpoints`` must come from a listing taken before this call: the sidecars are
    listed after it, so any sidecar of a listed checkpoint was written before they were (a
    checkpoint is published after its sidecars). One found missing is checked once more. A
    table without sidecars (no V2 checkpoints) costs one listing.

    Raises:
        StorageError: The store failed.
    """
    present = _sidecar_names(storage)
    if not present:
        return []
    newest = max(checkpoints, default=None)
    candidates = [
        cp
        for version, cps in checkpoints.items()
        if len(cps) > 1 or version == newest
        for cp in cps
        if len(cp.files) == 1
    ]
    referenced: list[tuple[Checkpoint, list[str]]] = []
    for cp in candidates:
        try:
            actions = sidecar_actions(storage, cp.files[0])[0]
        except LogFileNotFoundError:
            continue  # deleted meanwhile
        except (ValueError, KeyError, TypeError, pa.ArrowException, OSError):
            continue  # unreadable: not for this function to judge
        paths = [a.get("path") for a in actions]
        names = [_name(p) for p in paths if isinstance(p, str) and p and "://" not in p]
        if names:
            referenced.append((cp, names))
    directory = LogStore.join(storage.log_path, SIDECAR_DIR)
    out = []
    for cp, names in referenced:
        for name in (n for n in names if n not in present):
            try:
                with storage_errors(f"cannot read sidecar {name}"):
                    storage.store.stat(LogStore.join(directory, name))
            except LogFileNotFoundError:
                out.append(cp)
                break
    return out
