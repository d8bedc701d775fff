"""Write a V2 checkpoint: a UUID-named JSON checkpoint whose file actions live in a sidecar.

Layout (the protocol's "V2 spec" with "UUID-named" file naming, as delta-spark writes it):

* ``_delta_log/_sidecars/<version>.checkpoint.<part>.<parts>.<uuid>.parquet`` (named as
  delta-spark names its sidecars, see :func:`sidecar_name`): the ``add`` and ``remove`` rows,
  columns ``add`` and ``remove`` with the classic checkpoint's struct types (omitted when the
  table has no file actions);
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

With ``reused`` sidecars (see :mod:`deltalog.maintenance.sidecar_reuse`), the checkpoint references
sidecars of an earlier checkpoint unchanged, first, and writes only the other adds, in
sidecars of at most ``max_sidecar_adds`` adds each, then the tombstones in a sidecar of their
own, so that its add sidecars can be reused in turn.

Every sidecar the checkpoint references is checked to exist with its recorded size, and (with
``young_enough``) to be young enough that log cleanup cannot have decided to delete it, just
before the top-level file is written and again just after; ``_last_checkpoint`` moves only
after both passed. A sidecar missing afterwards makes the top-level file useless: it is
deleted again (:class:`~.errors.IncompleteCheckpointError`). One grown too old is left, complete
and not pointed at, for the caller to replace (:class:`~.errors.LateCheckpointError`).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from deltalog.logstores import LogFileNotFoundError, LogStore, LogStoreError

from .errors import IncompleteCheckpointError, LateCheckpointError
from .last_checkpoint import LastCheckpoint
from .schema import ADD, REMOVE
from .writer import CheckpointContent, _batches, _to_parquet, publish_pointer

SIDECAR_DIR = "_sidecars"


def sidecar_schema(add_type: pa.StructType = ADD) -> pa.Schema:
    """A sidecar's columns: ``add`` (of ``add_type``) and ``remove``."""
    return pa.schema([pa.field("add", add_type), pa.field("remove", REMOVE)])


def v2_checkpoint_name(version: int, unique: str) -> str:
    """``<version>.checkpoint.<uuid>.json``."""
    return f"{version:020d}.checkpoint.{unique}.json"


def sidecar_name(version: int, part: int, parts: int, unique: str) -> str:
    """``<version>.checkpoint.<part + 1>.<parts>.<uuid>.parquet``, as delta-spark names sidecars.

    ``part`` counts from 0 among the ``parts`` sidecars the checkpoint writes (the name counts
    from 1, as delta-spark's does).

    The protocol asks only for a unique name, and deltalog 0.1 wrote ``<uuid>.parquet``
    (still read: a sidecar is found by the path its ``sidecar`` action gives). delta-spark
    writes ``<version:020>.checkpoint.<part:010>.<parts:010>.<uuid>.parquet`` (``part`` from
    1), and Delta Kernel (Java) 3.2 to 4.1 parse the version out of that name, failing on any
    other (delta-io/delta#4807). A sidecar reused by a later checkpoint keeps its name, so it
    carries the version of the checkpoint that wrote it.
    """
    return f"{version:020d}.checkpoint.{part + 1:010d}.{parts:010d}.{unique}.parquet"


@dataclass(frozen=True, slots=True)
class ReusedSidecar:
    """A sidecar of an earlier checkpoint, referenced again unchanged.

    Attributes:
        action: Its ``sidecar`` action body as the earlier checkpoint wrote it (``path``,
            ``sizeInBytes``, ``modificationTime``, optional ``tags``).
        adds: Its rows, all ``add`` actions (a sidecar holding tombstones is never reused).
    """

    action: Mapping[str, Any]
    adds: int


def _publish_sidecar(
    store: LogStore,
    log_path: str,
    sections: list[pa.Table],
    schema: pa.Schema,
    name: str,
) -> dict[str, Any]:
    """Write one sidecar named ``name`` (create-if-absent); its ``sidecar`` action body."""
    data, _ = _to_parquet(sections, schema)
    location = LogStore.join(LogStore.join(log_path, SIDECAR_DIR), name)
    store.write(location, data, overwrite=False)
    status = store.stat(location)
    return {"path": name, "sizeInBytes": status.size, "modificationTime": status.modification_time}


def _step(point: str) -> None:
    """Called between the steps of :func:`write_v2_checkpoint`; tests override it.

    Points: ``"sidecars_written"``, ``"checked"`` (about to write the top-level file),
    ``"published"`` (it is written), ``"verified"`` (about to move ``_last_checkpoint``).
    """


def _check_present(
    store: LogStore, log_path: str, sidecars: Sequence[Mapping[str, Any]]
) -> list[int]:
    """The modification times of the sidecars, each checked to exist with its recorded size.

    Raises:
        IncompleteCheckpointError: One is gone or changed size.
    """
    directory = LogStore.join(log_path, SIDECAR_DIR)
    times = []
    for sidecar in sidecars:
        name = str(sidecar["path"])
        try:
            status = store.stat(LogStore.join(directory, name))
        except (LogFileNotFoundError, FileNotFoundError) as exc:
            raise IncompleteCheckpointError(f"sidecar {name} is gone") from exc
        if status.size != sidecar.get("sizeInBytes"):
            raise IncompleteCheckpointError(f"sidecar {name} changed size")
        times.append(status.modification_time)
    return times


def _sidecar_actions(
    store: LogStore,
    log_path: str,
    content: CheckpointContent,
    reused: Sequence[ReusedSidecar] | None,
    max_sidecar_adds: int,
) -> tuple[list[dict[str, Any]], int]:
    """Write the checkpoint's new sidecars; every sidecar action in order, and their rows."""
    n_add = content.adds.num_rows if content.adds is not None else 0
    n_remove = content.removes.num_rows if content.removes is not None else 0
    schema = sidecar_schema(content.add_type)
    if reused is None:  # one sidecar for every file action
        if not (n_add or n_remove):
            return [], 0
        sections = [
            *_batches(schema, "add", content.adds, content.add_type),
            *_batches(schema, "remove", content.removes, REMOVE),
        ]
        name = sidecar_name(content.version, 0, 1, str(uuid.uuid4()))
        return [_publish_sidecar(store, log_path, sections, schema, name)], n_add + n_remove
    sidecars = [dict(s.action) for s in reused]
    rows = sum(s.adds for s in reused)
    parts = -(-n_add // max_sidecar_adds) + (1 if n_remove else 0)
    names = [sidecar_name(content.version, i, parts, str(uuid.uuid4())) for i in range(parts)]
    if n_add:
        assert content.adds is not None
        for start in range(0, n_add, max_sidecar_adds):
            part = content.adds.slice(start, max_sidecar_adds)
            sections = [*_batches(schema, "add", part, content.add_type)]
            sidecars.append(_publish_sidecar(store, log_path, sections, schema, names.pop(0)))
    if n_remove:
        sections = [*_batches(schema, "remove", content.removes, REMOVE)]
        sidecars.append(_publish_sidecar(store, log_path, sections, schema, names.pop(0)))
    return sidecars, rows + n_add + n_remove


def write_v2_checkpoint(
    store: LogStore,
    log_path: str,
    content: CheckpointContent,
    *,
    reused: Sequence[ReusedSidecar] | None = None,
    max_sidecar_adds: int = 1 << 62,
    young_enough: Callable[[Sequence[int]], bool] | None = None,
) -> LastCheckpoint:
    """Write a V2 checkpoint of ``content`` and point ``_last_checkpoint`` at it.

    Args:
        store: Where the log lives.
        log_path: The ``_delta_log`` directory.
        content: The checkpoint's actions; with ``reused``, ``adds`` holds only the adds the
            reused sidecars do not.
        reused: Sidecars of an earlier checkpoint to reference unchanged (ahead of the new
            ones); ``None`` writes every file action into one sidecar, as before reuse.
        max_sidecar_adds: With ``reused`` (even empty), the most adds in one new sidecar.
        young_enough: Given the modification times of every sidecar referenced, whether
            log cleanup cannot have decided to delete any of them yet (see
            :mod:`deltalog.maintenance.sidecar_reuse`); asked before and after the top-level file is
            written. ``None``: not asked.

    Returns:
        What was written to ``_last_checkpoint`` (or would have been, if it was newer already).

    Raises:
        CheckpointFormatError: The content cannot be laid out in the checkpoint schema.
        IncompleteCheckpointError: A sidecar is gone (``_last_checkpoint`` is not moved, the
            top-level file is deleted again; the caller writes the checkpoint again without
            reuse).
        LateCheckpointError: ``young_enough`` said no (``_last_checkpoint`` is not moved; the
            exception names the top-level file if it was written).
        LogStoreError: The store failed.
    """
    sidecars, sidecar_rows = _sidecar_actions(store, log_path, content, reused, max_sidecar_adds)
    _step("sidecars_written")
    n_add = content.adds.num_rows if content.adds is not None else 0
    n_add += sum(s.adds for s in reused or ())
    sidecar_bytes = sum(int(s["sizeInBytes"]) for s in sidecars)
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
    times = _check_present(store, log_path, sidecars)
    if young_enough is not None and not young_enough(times):
        raise LateCheckpointError(f"checkpoint {content.version}: its sidecars grew too old")
    _step("checked")
    store.write(location, top, overwrite=False)
    status = store.stat(location)
    _step("published")
    # A sidecar deleted while the top-level file was written (log cleanup deciding from a
    # listing without this checkpoint) leaves it incomplete: it is taken back (nothing points
    # at it yet, and a reader that picked it falls back to another checkpoint).
    try:
        times = _check_present(store, log_path, sidecars)
    except IncompleteCheckpointError:
        with contextlib.suppress(LogStoreError):
            store.delete(location)
        raise
    if young_enough is not None and not young_enough(times):
        raise LateCheckpointError(
            f"checkpoint {content.version}: its sidecars grew too old while {name} was written",
            location,
        )
    _step("verified")
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
