"""Commits created below a checkpoint that does not hold them: "orphans" no reader sees.

A writer checks that version ``N`` is the next one (``N - 1`` exists, nothing at or after ``N``)
and then creates ``N.json``; the two steps are separate requests. In between, other writers can
commit ``N`` and more, write a checkpoint after it and let log cleanup delete ``N.json``: the
create then succeeds, below a checkpoint that does not contain it. Readers start at that
checkpoint, so the "successful" commit is lost.

Cleanup (deltalog's and delta-spark's ``MetadataCleanup``) deletes a commit only below a
checkpoint of a higher version that exists at that moment, and never deletes the newest such
checkpoint. So a commit just created can only be an orphan when a checkpoint above it is listed
right after the create, and then one such checkpoint decides: written before the create, it
cannot hold the commit; written after, it was built from a log that held it. :func:`judge`
tells which from the checkpoint's content: the commit's adds present (live, or as tombstones),
its removes as tombstones with their timestamps, its ``txn``, metadata, protocol or domains.
``deltalog check`` uses the same judgement for commit files it finds below a checkpoint.

A writer deletes its commit file again only on ``ORPHANED``, so that verdict must be certain:
a legitimate commit is never withdrawn. What the checkpoint lacks proves an orphan only when
nothing after the commit can explain it; the commits between it and the checkpoint may be
gone (cleanup), so a file the commit removes being live again, or an app id's ``txn`` being
lower, counts only when all of them were read. Anything short of certain is ``UNKNOWN``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deltalog.checkpoints.errors import CheckpointError
from deltalog.errors import DeltaLogError
from deltalog.lazy import lazy_module
from deltalog.log.file_actions import canonical_path, canonical_paths, file_key
from deltalog.log.segment import Checkpoint
from deltalog.logstores import LogStore, LogStoreError
from deltalog.protocol.actions import (
    Action,
    AddFile,
    DeletionVector,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    parse_action,
)
from deltalog.protocol.config import tombstone_retention_ms

if TYPE_CHECKING:  # committing needs no pyarrow; only a checkpoint's rows do
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")

#: Clock difference between writers allowed for when deciding that a tombstone cannot have
#: expired from a checkpoint (``delta.deletedFileRetentionDuration`` counts from the remover's
#: clock, the checkpoint writer's clock decides).
CLOCK_SKEW_MS = 5 * 60_000

_ADD_FIELDS = ("path", "deletionVector", "size", "modificationTime")
_REMOVE_FIELDS = ("path", "deletionVector", "deletionTimestamp")


class Verdict(enum.Enum):
    """Whether a commit is in the history a checkpoint stands for."""

    LANDED = "landed"
    ORPHANED = "orphaned"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class CheckpointView:
    """What one checkpoint holds of the files, txns, metadata and domains some commits touch.

    Attributes:
        version: The checkpoint's version.
        live: Live files among those asked for: key -> (size, modificationTime).
        tombstones: Tombstones among them: key -> deletionTimestamp.
        txns: Every app id's (version, lastUpdated).
        metadata: The checkpoint's metadata.
        protocol: Its protocol.
        domains: Live domains' configurations.
    """

    version: int
    live: Mapping[str, tuple[int | None, int | None]]
    tombstones: Mapping[str, int | None]
    txns: Mapping[str, tuple[int, int | None]]
    metadata: Metadata | None
    protocol: Protocol | None
    domains: Mapping[str, str]

    @property
    def tombstone_retention_ms(self) -> int:
        """The ``delta.deletedFileRetentionDuration`` the checkpoint was written under."""
        try:
            return tombstone_retention_ms(self.metadata.configuration if self.metadata else {})
        except DeltaLogError:
            return 0

    def keeps_tombstones(self, elapsed_ms: int) -> bool:
        """Whether the checkpoint still holds the tombstone of every file removed after a commit.

        ``elapsed_ms`` bounds the time from the commit to the checkpoint's writing. A removal
        after the commit is stamped (by the remover's clock) at most :data:`CLOCK_SKEW_MS`
        before the commit, and the checkpoint writer's clock is at most as far ahead: its
        tombstone cannot have expired while ``delta.deletedFileRetentionDuration`` covers
        ``elapsed_ms`` plus both. (This holds for removes that carry their
        ``deletionTimestamp``, as delta-spark's, delta-rs' and deltalog's all do.)
        """
        return self.tombstone_retention_ms >= elapsed_ms + 2 * CLOCK_SKEW_MS


@dataclass
class LaterCommits:
    """What the commits after the one judged (up to the checkpoint) did, as far as known.

    Attributes:
        removed: Canonical paths they removed.
        added: File keys they added.
        apps: App ids they wrote a ``txn`` for.
        complete: Whether every one of them was read. Log cleanup deletes commits below a
            checkpoint: one that is gone may have done anything.
    """

    removed: set[str] = field(default_factory=set)
    added: set[str] = field(default_factory=set)
    apps: set[str] = field(default_factory=set)
    complete: bool = False

    def note(self, actions: Iterable[Action], prefix: str) -> None:
        """Take one later commit's actions into account."""
        for a in actions:
            if isinstance(a, RemoveFile):
                self.removed.add(canonical_path(a.path, prefix))
            elif isinstance(a, AddFile):
                self.added.add(file_key(a.path, a.dv_id, prefix))
            elif isinstance(a, Txn):
                self.apps.add(a.app_id)


def identifiable(actions: Iterable[Action]) -> bool:
    """Whether a commit changes anything a checkpoint could show (not only ``commitInfo``)."""
    kinds = AddFile | RemoveFile | Txn | Metadata | Protocol | DomainMetadata
    return any(isinstance(a, kinds) for a in actions)


def touched_paths(actions: Iterable[Action], prefix: str) -> set[str]:
    """Canonical paths of the files ``actions`` add or remove."""
    return {canonical_path(a.path, prefix) for a in actions if isinstance(a, AddFile | RemoveFile)}


def read_view(
    store: LogStore, checkpoint: Checkpoint, paths: set[str], prefix: str
) -> CheckpointView:
    """Read ``checkpoint``, keeping of its file actions only those of ``paths``.

    Args:
        store: The log store.
        checkpoint: The checkpoint.
        paths: Canonical paths of interest.
        prefix: The table's scheme prefix (see ``file_actions.scheme_prefix``).

    Raises:
        CheckpointError: The checkpoint cannot be read (a part is gone, or does not parse).
        LogStoreError: The store failed.
    """
    from deltalog.checkpoints.reader import read_checkpoint

    data = read_checkpoint(
        store,
        [f.path for f in checkpoint.files],
        add_fields=_ADD_FIELDS,
        remove_fields=_REMOVE_FIELDS,
    )
    live = {
        _key(row, prefix): (_int(row.get("size")), _int(row.get("modificationTime")))
        for row in _rows(data.adds, paths, prefix)
    }
    tombstones = {
        _key(row, prefix): _int(row.get("deletionTimestamp"))
        for row in _rows(data.removes, paths, prefix)
    }
    txns: dict[str, tuple[int, int | None]] = {}
    domains: dict[str, str] = {}
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    for name, body in data.actions:
        if name not in ("txn", "metaData", "protocol", "domainMetadata"):
            continue
        try:
            action = parse_action({name: body})
        except DeltaLogError as exc:
            raise CheckpointError(f"checkpoint {checkpoint.version}: {exc}") from exc
        if isinstance(action, Txn):
            txns[action.app_id] = (action.version, action.last_updated)
        elif isinstance(action, Metadata):
            metadata = action
        elif isinstance(action, Protocol):
            protocol = action
        elif isinstance(action, DomainMetadata) and not action.removed:
            domains[action.domain] = action.configuration
    return CheckpointView(checkpoint.version, live, tombstones, txns, metadata, protocol, domains)


def _rows(tables: Sequence[pa.Table], paths: set[str], prefix: str) -> list[dict[str, object]]:
    if not paths:
        return []
    from deltalog.arrow import values as av

    wanted = av.strings(sorted(paths))
    out: list[dict[str, object]] = []
    for table in tables:
        if table.num_rows:
            keys = canonical_paths(table.column("path"), prefix)
            out += table.filter(pc.is_in(keys, value_set=wanted)).to_pylist()
    return out


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _key(row: Mapping[str, object], prefix: str) -> str:
    dv = row.get("deletionVector")
    dv_id = DeletionVector.unique_id(dv) if isinstance(dv, dict) else None
    return file_key(str(row["path"]), dv_id, prefix)


def judge(
    actions: Sequence[Action],
    view: CheckpointView,
    prefix: str,
    *,
    elapsed_ms: int,
    later: LaterCommits | None = None,
) -> Verdict:
    """Whether the commit of ``actions`` is in the history ``view``'s checkpoint stands for.

    ``LANDED`` when the checkpoint shows a trace only this commit leaves: one of its adds (with
    its size and modification time) live or as a tombstone, one of its removes as a tombstone
    of the same time, its ``txn`` (version and time). ``ORPHANED`` only when the checkpoint
    shows what no history holding the commit can give:

    * an add missing altogether, neither live nor a tombstone, while no tombstone of a later
      removal can have expired (:meth:`CheckpointView.keeps_tombstones`, or every later commit
      was read and none removed it);
    * a file the commit removes live, or an app id's ``txn`` below the commit's, when every
      later commit was read (``later.complete``) and none added the file again or wrote the
      app id's ``txn``. A later commit that is gone may have done either, so without all of
      them these tell nothing.

    Without either, metadata, a protocol or a domain as the commit set them count as
    ``LANDED`` (they may equal what the table had, so they never outweigh a file), and so
    does a commit that changes nothing a checkpoint shows. ``UNKNOWN`` otherwise.

    Args:
        actions: The commit's actions.
        view: The checkpoint (read for at least the commit's paths).
        prefix: The table's scheme prefix.
        elapsed_ms: At least the time from the commit to the checkpoint's writing.
        later: What the commits after this one up to the checkpoint did, when known.
    """
    present = absent = weak = False
    added = {file_key(a.path, a.dv_id, prefix) for a in actions if isinstance(a, AddFile)}
    later = later or LaterCommits()
    tombstones_kept = later.complete or view.keeps_tombstones(elapsed_ms)
    for action in actions:
        if isinstance(action, AddFile):
            key = file_key(action.path, action.dv_id, prefix)
            live = view.live.get(key)
            if live is not None:
                present |= live == (action.size, action.modification_time)
            elif key in view.tombstones or canonical_path(action.path, prefix) in later.removed:
                present = True
            elif tombstones_kept:
                absent = True
        elif isinstance(action, RemoveFile):
            key = file_key(action.path, action.dv_id, prefix)
            if key in added or key in later.added:
                continue
            if key in view.live:
                absent |= later.complete
            elif action.deletion_timestamp is not None:
                present |= view.tombstones.get(key) == action.deletion_timestamp
        elif isinstance(action, Txn):
            theirs = view.txns.get(action.app_id)
            if action.app_id in later.apps:
                continue
            if theirs is not None and theirs[0] < action.version:
                absent |= later.complete
            elif theirs is not None and theirs[0] == action.version:
                if None in (theirs[1], action.last_updated):
                    weak = True
                else:
                    present |= theirs[1] == action.last_updated
        elif isinstance(action, Metadata):
            weak |= view.metadata is not None and same_metadata(view.metadata, action)
        elif isinstance(action, Protocol):
            weak |= view.protocol is not None and same_protocol(view.protocol, action)
        elif isinstance(action, DomainMetadata) and not action.removed:
            weak |= view.domains.get(action.domain) == action.configuration
    if present:
        return Verdict.LANDED
    if absent:
        return Verdict.ORPHANED
    return Verdict.LANDED if weak or not identifiable(actions) else Verdict.UNKNOWN


def same_metadata(a: Metadata, b: Metadata) -> bool:
    """Whether two ``metaData`` actions set the same table metadata."""
    fields = ("id", "schema_string", "partition_columns", "configuration", "created_time")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def same_protocol(a: Protocol, b: Protocol) -> bool:
    """Whether two ``protocol`` actions require the same versions and features."""
    return (
        a.min_reader_version == b.min_reader_version
        and a.min_writer_version == b.min_writer_version
        and sorted(a.reader_features or ()) == sorted(b.reader_features or ())
        and sorted(a.writer_features or ()) == sorted(b.writer_features or ())
    )


def readable_view(
    store: LogStore, checkpoints: Iterable[Checkpoint], paths: set[str], prefix: str
) -> CheckpointView | None:
    """The first of ``checkpoints`` that can be read (``None`` if none can).

    A checkpoint listed a moment ago may be gone (log cleanup), or be unreadable: the next one
    is as good a witness.
    """
    for checkpoint in checkpoints:
        try:
            return read_view(store, checkpoint, paths, prefix)
        except (CheckpointError, LogStoreError, OSError):
            continue
    return None
