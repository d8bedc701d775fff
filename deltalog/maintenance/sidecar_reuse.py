"""Sidecar reuse: a V2 checkpoint references the previous checkpoint's unchanged sidecars.

A sidecar is an immutable, uniquely named file that any number of checkpoints may reference
(the protocol's metadata cleanup keeps every sidecar a remaining checkpoint references). So a
checkpoint at version ``N`` may reference a sidecar of the previous checkpoint ``C`` as it is,
when that sidecar holds only ``add`` rows and no commit in ``(C, N]`` added or removed a file
with one of its paths: those adds are then live at ``N`` exactly as written. Only the adds no
reused sidecar covers (files added since, and the still-live rows of sidecars that cannot be
reused) are encoded again.

:func:`plan_reuse` decides, from storage alone (the previous checkpoint's top-level file, the
paths in its sidecars, the commits since), so it serves a writer that wrote ``C`` itself and
one that did not alike; the paths of sidecars this process wrote or read are kept in a small
cache, since sidecars never change.

Sidecar count stays bounded like a binary counter: new adds go into sidecars of at most
:data:`MAX_SIDECAR_ADDS`; a reusable sidecar smaller than that is merged into the new ones
when it has no more rows than they have (so every row is rewritten O(log n) times before its
sidecar is full); full sidecars are reused until a file of theirs is removed or added again.

Set ``DELTALOG_SIDECAR_REUSE=0`` to write every V2 checkpoint whole, as before.

Reuse and log cleanup
---------------------
Log cleanup (:func:`deltalog.maintenance.sidecars.cleanup_sidecars`, as the protocol describes it)
deletes a sidecar that no checkpoint *it listed* references, once the sidecar is
:data:`SIDECAR_GRACE_MS` (a day) old; delta-spark's waits ``delta.logRetentionDuration``,
which is longer unless set below a day. A writer reusing a sidecar of checkpoint ``C`` races
it: cleanup may delete ``C`` (behind a newer checkpoint), list the checkpoints before the new
one is published, and delete the sidecar after the writer last looked. Checking that the
sidecar exists after publishing cannot close that: the deletion may come later still. What
closes it is age, which the writer and the cleaner both read from the sidecar's modification
time (reuse never changes it), and which only grows:

1. A plan reuses only sidecars at most :data:`REUSE_MAX_AGE_MS` (12 hours) old by the
   writer's clock when it starts (:class:`PublishGuard`); older ones are written again.
2. Just before writing the top-level file, and again just after it is visible, the writer
   checks that every sidecar it references exists with its size and is at most
   :data:`PUBLISH_MAX_AGE_MS` (18 hours) old, the time elapsed since the start measured on
   the wall clock and the monotonic clock alike (the larger counts). ``_last_checkpoint``
   moves only after both checks pass.

Why no interleaving leaves a published checkpoint referencing a deleted sidecar: a cleaner
deletes sidecar ``S`` only if ``S`` was a day old when it started and no checkpoint it listed
(after starting) references ``S``. If it listed after the new checkpoint ``T`` was visible, it
saw ``T`` and keeps ``S``. Otherwise it started before ``T`` was visible, so before the second
check, when ``S`` was at most 18 hours old by the writer's clock: it cannot have found ``S`` a
day old unless the clocks (the writer's, the cleaner's, the store's) differ by more than the 6
hours of :data:`CLOCK_SKEW_MS`. So every deletion of a sidecar ``T`` references either happens
before the second check, which sees it missing, or is impossible. This holds for new sidecars
as for reused ones. The margin between the 12 and the 18 hours is time for the write itself; a
writer that takes longer (a paused process) fails a check instead of publishing a checkpoint
that may break. Neither the cleaner nor the reuse plan needs to know about the other.

What the writer does on a failed check
(:func:`deltalog.maintenance.checkpointing.write_snapshot_checkpoint`):

* a sidecar missing or too old before the top-level file is written: nothing was published;
  write the checkpoint again without reuse (new sidecars are young);
* a sidecar missing after: the top-level file is deleted again at once (it can never become
  readable) and the checkpoint written again without reuse. Until the deletion a reader may
  list it; deltalog's readers then use another checkpoint of the version or an older one
  (:func:`deltalog.log.segment.order_checkpoints`), and log cleanup deletes such a file if its
  writer died first. This needs a deletion after a pause, as said;
* a sidecar too old after: the top-level file is complete and may already be in use (a log
  cleanup may have chosen it as its boundary), so it stays until the checkpoint written again
  without reuse is published, and is deleted then.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.arrow import values as av
from deltalog.checkpoints.errors import CheckpointError
from deltalog.checkpoints.last_checkpoint import LastCheckpoint
from deltalog.checkpoints.schema import stats_parsed_type
from deltalog.checkpoints.v2 import ReusedSidecar
from deltalog.errors import DeltaLogError
from deltalog.log.file_actions import (
    arrow_keys,
    canonical_path,
    canonical_paths,
    file_key,
    scheme_prefix,
)
from deltalog.log.replay import read_commit
from deltalog.log.segment import Checkpoint, list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.logstores import LogStore
from deltalog.maintenance.sidecars import SIDECAR_GRACE_MS, sidecar_actions
from deltalog.protocol.actions import AddFile, RemoveFile
from deltalog.protocol.paths import SIDECAR_DIR

__all__ = [
    "CLOCK_SKEW_MS",
    "MAX_SIDECAR_ADDS",
    "PUBLISH_MAX_AGE_MS",
    "REUSE_ENV",
    "REUSE_MAX_AGE_MS",
    "PublishGuard",
    "ReusePlan",
    "forget_sidecars",
    "plan_reuse",
    "reuse_enabled",
]

#: Environment variable: ``0`` turns sidecar reuse off.
REUSE_ENV = "DELTALOG_SIDECAR_REUSE"
#: Most adds in one new sidecar (one Parquet row group's worth).
MAX_SIDECAR_ADDS = 128 * 1024
#: Rows of sidecar keys the process keeps (per row: a path, twice with deletion vectors).
_CACHE_ROWS = 4 * 1024 * 1024
#: How far the clocks of writers, cleaners and the store may disagree.
CLOCK_SKEW_MS = SIDECAR_GRACE_MS // 4
#: The oldest sidecar a checkpoint may still reference when it is published.
PUBLISH_MAX_AGE_MS = SIDECAR_GRACE_MS - CLOCK_SKEW_MS
#: The oldest sidecar a plan reuses (leaving the write the rest of ``PUBLISH_MAX_AGE_MS``).
REUSE_MAX_AGE_MS = SIDECAR_GRACE_MS // 2


def _clock() -> tuple[float, float]:
    """The wall clock and the monotonic clock, in seconds (tests override it)."""
    return time.time(), time.monotonic()


class PublishGuard:
    """Tells whether sidecars are young enough to be referenced by a checkpoint published now.

    Made when a checkpoint's writing starts; see the module docstring for the protocol. Time
    since then is the larger of what the wall clock and the monotonic clock say, so that
    neither a wall clock set back nor a suspended process (the monotonic clock stops) hides it.
    """

    def __init__(self) -> None:
        self._wall, self._mono = _clock()

    @property
    def reusable_since_ms(self) -> int:
        """Sidecars modified before this time (ms since the epoch) are not reused."""
        return int(self._wall * 1000) - REUSE_MAX_AGE_MS

    def now_ms(self) -> int:
        """The current time by this guard: its start plus the time elapsed since."""
        wall, mono = _clock()
        return int((self._wall + max(wall - self._wall, mono - self._mono)) * 1000)

    def young_enough(self, modification_times: Iterable[int]) -> bool:
        """Whether no sidecar with these modification times is older than allowed now."""
        oldest = self.now_ms() - PUBLISH_MAX_AGE_MS
        return all(t >= oldest for t in modification_times)


def reuse_enabled() -> bool:
    """Whether V2 checkpoints reuse sidecars (unless ``DELTALOG_SIDECAR_REUSE=0``)."""
    return os.environ.get(REUSE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class _Sidecar:
    """The adds of one sidecar, by file key (``keys``) and canonical path (``paths``).

    ``stats_type`` is the type of its ``add.stats_parsed`` as stored (``None``: it has none):
    a checkpoint reuses only sidecars whose typed statistics are what its new sidecars hold,
    since readers take the struct only when every file of a checkpoint has it alike.
    ``modification_time`` is the file's, as the store reports it.
    """

    size: int
    modification_time: int
    keys: pa.Array
    paths: pa.Array
    stats_type: pa.DataType | None = None


class _SidecarCache:
    """Least recently used sidecar keys by location, bounded by their total rows."""

    def __init__(self, max_rows: int) -> None:
        self._max_rows = max_rows
        self._rows = 0
        self._entries: OrderedDict[str, _Sidecar] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, location: str, size: int) -> _Sidecar | None:
        with self._lock:
            entry = self._entries.get(location)
            if entry is None or entry.size != size:
                return None
            self._entries.move_to_end(location)
            return entry

    def put(self, location: str, entry: _Sidecar) -> None:
        with self._lock:
            old = self._entries.pop(location, None)
            if old is not None:
                self._rows -= len(old.keys)
            self._entries[location] = entry
            self._rows += len(entry.keys)
            while self._rows > self._max_rows and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._rows -= len(dropped.keys)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._rows = 0


_cache = _SidecarCache(_CACHE_ROWS)


@dataclass(frozen=True, slots=True)
class ReusePlan:
    """How a V2 checkpoint of a snapshot reuses the previous checkpoint's sidecars.

    Attributes:
        reused: Sidecars to reference unchanged, in order.
        fresh: One flag per row of the snapshot's files: whether the row goes into a new
            sidecar (no reused sidecar holds it).
        fresh_keys: The file keys of the fresh rows, in order.
        base_version: The previous checkpoint's version, ``None`` when nothing was reusable.
    """

    reused: list[ReusedSidecar]
    fresh: pa.Array
    fresh_keys: pa.Array
    base_version: int | None = None

    def remember(
        self,
        storage: TableStorage,
        last: LastCheckpoint,
        max_adds: int,
        stats_type: pa.DataType | None = None,
    ) -> None:
        """Cache the keys of the add sidecars the checkpoint ``last`` describes just wrote.

        Args:
            storage: The table's storage.
            last: What :func:`~deltalog.checkpoints.v2.write_v2_checkpoint` returned.
            max_adds: The ``max_sidecar_adds`` it was given.
            stats_type: The type of the ``stats_parsed`` they hold (``None``: none).
        """
        written = (last.extra.get("v2Checkpoint") or {}).get("sidecarFiles") or []
        new = written[len(self.reused) :]
        for i, start in enumerate(range(0, len(self.fresh_keys), max_adds)):
            if i >= len(new):
                return
            keys = self.fresh_keys.slice(start, max_adds)
            size, mtime = int(new[i]["sizeInBytes"]), int(new[i]["modificationTime"])
            _cache.put(
                _location(storage, str(new[i]["path"])),
                _Sidecar(size, mtime, keys, _paths_of(keys), stats_type),
            )


def _paths_of(keys: pa.Array) -> pa.Array:
    """Canonical paths of file keys (a key is the path, then NUL and the DV id if any)."""
    if not pc.any(pc.match_substring(keys, "\x00")).as_py():
        return keys
    return pc.replace_substring_regex(keys, "\x00.*$", "")


def _location(storage: TableStorage, name: str) -> str:
    return LogStore.join(LogStore.join(storage.log_path, SIDECAR_DIR), name)


def _sidecar_actions(storage: TableStorage, checkpoint: Checkpoint) -> list[dict[str, Any]]:
    """The ``sidecar`` actions of a single-file checkpoint; empty when it has file rows.

    Raises:
        ValueError, StorageError: The checkpoint cannot be read.
    """
    if len(checkpoint.files) != 1:
        return []
    actions, has_files = sidecar_actions(storage, checkpoint.files[0])
    return [] if has_files else actions


def _read_sidecar(storage: TableStorage, location: str, prefix: str) -> _Sidecar | None:
    """The keys of a sidecar's adds; ``None`` when it holds anything but adds.

    Raises:
        OSError, pa.ArrowException, DeltaLogError: The sidecar cannot be read.
    """
    status = storage.store.stat(location)
    size, mtime = status.size, status.modification_time
    with storage.store.open_input(location) as fh:
        parquet = pq.ParquetFile(fh)
        top = parquet.schema_arrow
        if "add" not in top.names or not pa.types.is_struct(top.field("add").type):
            return None
        children = {f.name for f in top.field("add").type}
        columns = ["add.path", *(["add.deletionVector"] if "deletionVector" in children else [])]
        table = parquet.read(columns=columns)
    add = table.column("add").combine_chunks()
    if add.null_count or add.field("path").null_count:
        return None  # rows other than adds (tombstones): they change with every checkpoint
    dv = add.field("deletionVector") if "deletionVector" in children else None
    stats_type = stats_parsed_type(top.field("add").type)
    files = pa.table(
        {
            "path": add.field("path"),
            "deletion_vector": dv if dv is not None else pa.nulls(len(add), pa.null()),
        }
    )
    if dv is None or dv.null_count == len(dv):
        keys = canonical_paths(files.column("path"), prefix)
        return _Sidecar(size, mtime, keys, keys, stats_type)
    keys = arrow_keys(files, prefix)
    paths = canonical_paths(files.column("path"), prefix)
    return _Sidecar(size, mtime, keys, paths, stats_type)


@dataclass(frozen=True, slots=True)
class _Since:
    """The commits after the previous checkpoint, by the files they touched.

    Attributes:
        paths: Canonical path of every file they added or removed.
        added: File key of every file they added.
    """

    paths: pa.Array
    added: pa.Array


def _since(storage: TableStorage, commits: Iterable[tuple[int, str]], prefix: str) -> _Since:
    """What the given commits touched (read and parsed exactly)."""
    paths: set[str] = set()
    added: set[str] = set()
    for version, name in commits:
        for action in read_commit(storage, name, version):
            if isinstance(action, AddFile | RemoveFile):
                paths.add(canonical_path(action.path, prefix))
            if isinstance(action, AddFile):
                added.add(file_key(action.path, action.dv_id, prefix))
    return _Since(av.strings(list(paths)), av.strings(list(added)))


_UNREADABLE = (CheckpointError, DeltaLogError, OSError, ValueError, KeyError, TypeError)


@dataclass(frozen=True, slots=True)
class _Previous:
    """The previous checkpoint's add sidecars and the commits since.

    Attributes:
        version: Its version.
        sidecars: Its sidecars holding only adds, in the order it lists them, each with
            whether it can be reused (no commit since touched a file of it, young enough).
        since: What the commits since touched.
    """

    version: int
    sidecars: list[tuple[dict[str, Any], _Sidecar, bool]]
    since: _Since


def _previous(
    storage: TableStorage,
    version: int,
    prefix: str,
    stats_type: pa.DataType | None,
    not_before_ms: int,
) -> _Previous | None:
    """The newest checkpoint at or before ``version`` and its sidecars holding only adds.

    A sidecar counts as touched (written again) when its ``stats_parsed`` type is not
    ``stats_type``, or it was modified before ``not_before_ms``.

    Returns:
        ``None`` when there is no such checkpoint, it has no sidecars, or a commit between it
        and ``version`` is missing.
    """
    listing = list_log(storage)
    older = [v for v in listing.checkpoints if v <= version]
    if not older:
        return None
    base = max(older)
    if any(v not in listing.commits for v in range(base + 1, version + 1)):
        return None
    actions: list[dict[str, Any]] = []
    for checkpoint in listing.checkpoints[base]:
        with contextlib.suppress(*_UNREADABLE, pa.ArrowException):
            actions = _sidecar_actions(storage, checkpoint)
        if actions:
            break
    if not actions:
        return None
    commits = [(v, listing.commits[v].name) for v in range(base + 1, version + 1)]
    since = _since(storage, commits, prefix)
    out = []
    for action in actions:
        name = action.get("path")
        size = action.get("sizeInBytes")
        if not isinstance(name, str) or "/" in name or not isinstance(size, int):
            continue  # only plain names in _sidecars, as deltalog and delta-spark write them
        location = _location(storage, name)
        sidecar = _cache.get(location, size)
        if sidecar is None:
            try:
                sidecar = _read_sidecar(storage, location, prefix)
            except (*_UNREADABLE, pa.ArrowException):
                continue
            if sidecar is None:
                continue
            _cache.put(location, sidecar)
        if sidecar.size != size or not len(sidecar.keys):
            continue
        touched = bool(
            len(since.paths) and pc.any(pc.is_in(sidecar.paths, value_set=since.paths)).as_py()
        )
        young = sidecar.modification_time >= not_before_ms
        out.append((action, sidecar, not touched and young and sidecar.stats_type == stats_type))
    return _Previous(base, out, since)


def _merge_small(
    sidecars: list[tuple[dict[str, Any], _Sidecar]], pending: int, max_adds: int
) -> list[tuple[dict[str, Any], _Sidecar]]:
    """The sidecars kept: full ones first, then the smaller ones not merged into the new rows.

    Smaller sidecars are ordered largest first; from the smallest up, each one with no more
    rows than the rows to be written joins them (binary-counter merging).
    """
    full = [s for s in sidecars if len(s[1].keys) >= max_adds]
    small = sorted(
        (s for s in sidecars if len(s[1].keys) < max_adds), key=lambda s: -len(s[1].keys)
    )
    while small and len(small[-1][1].keys) <= pending:
        pending += len(small.pop()[1].keys)
    return [*full, *small]


def plan_reuse(
    storage: TableStorage,
    snapshot: Snapshot,
    *,
    max_adds: int = MAX_SIDECAR_ADDS,
    reuse: bool = True,
    stats_type: pa.DataType | None = None,
    not_before_ms: int | None = None,
) -> ReusePlan:
    """Which sidecars of the previous checkpoint a V2 checkpoint of ``snapshot`` can reuse.

    The rows written again are found without hashing the whole table: they are the live rows
    whose key is in a sidecar not kept or was added by a commit since. The live rows must then
    be exactly those plus the kept sidecars' rows (they are, when the previous checkpoint was
    right: no commit since touched a kept sidecar's paths, and a live file is either in the
    previous checkpoint or added since). Anything else (the previous checkpoint or a sidecar
    unreadable, a sidecar holding tombstones, a commit since missing, counts that do not add
    up) plans no reuse: every add is written again, in reusable sidecars.

    Args:
        storage: The table's storage.
        snapshot: The snapshot to checkpoint.
        max_adds: The most adds in one new sidecar.
        reuse: ``False`` plans no reuse (every add fresh), for a retry.
        stats_type: The type of the ``stats_parsed`` the new sidecars hold (``None``: none);
            only sidecars holding the same are reused.
        not_before_ms: Sidecars modified before this time are not reused
            (:attr:`PublishGuard.reusable_since_ms`; ``None``: :data:`REUSE_MAX_AGE_MS` ago).

    Returns:
        The plan; its ``fresh`` flags follow the rows of ``snapshot.files``.
    """
    prefix = scheme_prefix(storage.root)
    files, keys = snapshot.file_state.get()[0].with_keys(prefix)
    total = files.num_rows
    all_keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    everything = ReusePlan([], pa.repeat(av.true(), total), all_keys)
    if not reuse:
        return everything
    if not_before_ms is None:
        not_before_ms = PublishGuard().reusable_since_ms
    try:
        plan = _plan(storage, snapshot, all_keys, max_adds, prefix, stats_type, not_before_ms)
        return plan or everything
    except (*_UNREADABLE, pa.ArrowException):
        return everything


def _plan(
    storage: TableStorage,
    snapshot: Snapshot,
    all_keys: pa.Array,
    max_adds: int,
    prefix: str,
    stats_type: pa.DataType | None,
    not_before_ms: int,
) -> ReusePlan | None:
    """:func:`plan_reuse` when something can be reused, else ``None``."""
    previous = _previous(storage, snapshot.version, prefix, stats_type, not_before_ms)
    if previous is None:
        return None
    total = len(all_keys)
    candidates = [(a, s) for a, s, untouched in previous.sidecars if untouched]
    pending = total - sum(len(s.keys) for _, s in candidates)
    kept = _merge_small(candidates, pending, max_adds)
    if not kept:
        return None
    kept_names = {str(a["path"]) for a, _ in kept}
    rewritten = [s.keys for a, s, _ in previous.sidecars if str(a["path"]) not in kept_names]
    value_set = pa.chunked_array([*rewritten, previous.since.added], pa.string())
    fresh = pc.is_in(all_keys, value_set=value_set)
    fresh_count = int(pc.sum(fresh.cast(pa.int64())).as_py() or 0)
    if fresh_count + sum(len(s.keys) for _, s in kept) != total:
        return None  # live files outside the sidecars read, or a wrong checkpoint
    reused = [ReusedSidecar(action, len(s.keys)) for action, s in kept]
    return ReusePlan(reused, fresh, all_keys.filter(fresh), previous.version)


def forget_sidecars() -> None:
    """Drop the cached sidecar keys (tests use it to exercise reading them back)."""
    _cache.clear()
