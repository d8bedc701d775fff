"""Checkpoints as the checker reads them, and ``_last_checkpoint`` against them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.check.actions import ActionChecks
from deltalog.check.state import NULL, Layout, LiveFile, TableState, fingerprint
from deltalog.checkpoints.errors import (
    CheckpointError,
    CheckpointFormatError,
    IncompleteCheckpointError,
)
from deltalog.checkpoints.last_checkpoint import (
    LastCheckpoint,
    count_problems,
    parse_last_checkpoint,
)
from deltalog.checkpoints.reader import CheckpointData, read_checkpoint
from deltalog.errors import MalformedCommitError
from deltalog.log.file_actions import arrow_keys, canonical_paths, file_key
from deltalog.log.segment import Checkpoint, classify
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import FileStatus
from deltalog.protocol.actions import (
    DeletionVector,
    DomainMetadata,
    Metadata,
    Protocol,
    Txn,
    parse_action,
)
from deltalog.protocol.paths import LAST_CHECKPOINT, commit_name, parse_log_name

_ADD_FIELDS = ("path", "size", "partitionValues", "deletionVector", "stats")
_REMOVE_FIELDS = ("path",)


class CheckpointChecks:
    """Loads checkpoints into states (checking their rows) and checks ``_last_checkpoint``.

    Args:
        storage: The table's storage.
        checks: The action rules, shared with the commit walk.
    """

    def __init__(self, storage: TableStorage, checks: ActionChecks) -> None:
        self.storage = storage
        self.checks = checks
        self.findings = checks.findings
        # What _last_checkpoint is compared with, by the first file of each readable checkpoint.
        self._counts: dict[str, _Counts] = {}
        #: Add rows checked one by one (those not known to agree with replay).
        self.rows_checked = 0

    def load(self, checkpoint: Checkpoint, replayed: TableState | None = None) -> Loaded | None:
        """The state checkpoint holds; ``None`` (reported) when it cannot be read.

        Args:
            checkpoint: The checkpoint.
            replayed: The state replay of the commits gives at its version, if known. When the
                checkpoint's add rows are exactly that state's files (fingerprints compared in
                Arrow), its rows are not checked again one by one: each file was checked when
                its commit was. Rows are checked one by one only otherwise, so the rows checked
                over a whole log grow with its commits, not with the sum of checkpoint sizes.
        """
        version = checkpoint.version
        where = checkpoint.files[0].path
        try:
            with storage_errors(f"cannot read checkpoint {version}"):
                data = read_checkpoint(
                    self.storage.store,
                    [f.path for f in checkpoint.files],
                    add_fields=_ADD_FIELDS,
                    remove_fields=_REMOVE_FIELDS,
                )
            actions = [parse_action({name: body}) for name, body in data.actions]
        except (CheckpointError, MalformedCommitError) as exc:
            if isinstance(exc, IncompleteCheckpointError) and self._vanished(checkpoint):
                return None  # deleted by log cleanup after the listing: nothing is wrong
            self.findings.report(
                "corrupt-checkpoint", f"checkpoint {version}: {exc}", version, where
            )
            return None
        protocols = [a for a in actions if isinstance(a, Protocol)]
        metadatas = [a for a in actions if isinstance(a, Metadata)]
        if len(protocols) != 1 or len(metadatas) != 1:
            self.findings.report(
                "corrupt-checkpoint",
                f"checkpoint {version} has {len(protocols)} protocol and {len(metadatas)} "
                "metaData actions; it needs exactly one of each",
                version,
                where,
            )
            return None
        self._counts[checkpoint.files[0].path] = _Counts.of(data)
        state = TableState()
        self.checks.apply(state, version, [*protocols, *metadatas], where)
        for action in actions:
            if isinstance(action, Txn):
                state.txns[action.app_id] = action.version
            elif isinstance(action, DomainMetadata) and not action.removed:
                state.domains[action.domain] = action.configuration
        prefix = self.checks.prefix
        for table in data.removes:
            paths = canonical_paths(table.column("path").drop_null(), prefix)
            state.removed.update(paths.to_pylist())
        if replayed is not None and _same_files(data.adds, replayed, prefix):
            state.files = dict(replayed.files)
            state.fingerprints = dict(replayed.fingerprints)
            return Loaded(state, same_files=True)
        layout = self.checks.layouts.of(metadatas[0], version, where)
        for table in data.adds:
            self.rows_checked += table.num_rows
            for row in table.to_pylist():
                self._add(state, row, layout, version, where)
        return Loaded(state, same_files=False)

    def _listed_now(self, version: int) -> tuple[bool, bool]:
        """What a listing shows of ``version`` now: (a complete checkpoint, any log file)."""
        entries = self.storage.list_log(commit_name(version)[:20])
        at_version = any(
            (parsed := parse_log_name(e.name)) is not None and parsed.version == version
            for e in entries
        )
        return version in classify(entries).checkpoints, at_version

    def _vanished(self, checkpoint: Checkpoint) -> bool:
        """Whether a file of the listed checkpoint is gone (a sidecar missing is corruption)."""
        with storage_errors(f"cannot stat checkpoint {checkpoint.version}"):
            return not all(self.storage.store.exists(f.path) for f in checkpoint.files)

    def _add(
        self,
        state: TableState,
        row: dict[str, Any],
        layout: Layout | None,
        version: int,
        where: str,
    ) -> None:
        path, size = row["path"], row["size"]
        if not isinstance(path, str) or not isinstance(size, int):
            self.findings.report(
                "corrupt-checkpoint", f"an add row lacks its path or size: {row}", version, where
            )
            return
        self.checks.path(path, version, where)
        values = dict(row["partitionValues"] or [])
        self.checks.file(path, values, row["stats"], layout, version)
        dv = row["deletionVector"]
        key = file_key(path, DeletionVector.unique_id(dv) if dv else None, self.checks.prefix)
        if key in state.files:
            self.findings.report(
                "duplicate-add", f"checkpoint {version} adds {path!r} twice", version, where
            )
        state.files[key] = LiveFile(path, size, tuple(sorted(values.items())), version)
        state.fingerprints[key] = fingerprint(key, size, values, row["stats"])

    def last_checkpoint(self, checkpoints: Mapping[int, list[Checkpoint]], latest: int) -> None:
        """``_last_checkpoint`` parses, names a complete checkpoint, and agrees with it.

        A hint below the newest checkpoint whose version log cleanup has removed altogether is
        stale, not wrong (``stale-last-checkpoint``, info).
        """
        path = self.storage.log_file(LAST_CHECKPOINT)
        raw = self.storage.read_last_checkpoint()
        if raw is None:
            return
        report = self.findings.report
        try:
            hint = parse_last_checkpoint(raw)
        except CheckpointFormatError as exc:
            report("bad-last-checkpoint", f"{exc}; readers list the whole log", None, path)
            return
        found = checkpoints.get(hint.version)
        if not found:
            written, present = self._listed_now(hint.version)
            if written:
                return  # a writer checkpointed after the listing: not what this check covers
            newest = max(checkpoints, default=-1)
            if hint.version < newest and not present:
                # Its only-forward update reads, then writes: a writer can move it back to its
                # own checkpoint after another wrote a newer one, and cleanup then deletes it.
                report(
                    "stale-last-checkpoint",
                    f"_last_checkpoint names version {hint.version}, which log cleanup has "
                    f"removed (the newest checkpoint is {newest}): readers list on from it and "
                    "use the newest checkpoint, so it only costs a longer listing until the "
                    "next checkpoint moves it",
                    hint.version,
                    path,
                )
                return
        if hint.version > latest or not found:
            report(
                "last-checkpoint-mismatch",
                f"_last_checkpoint names version {hint.version}, which has no complete checkpoint",
                hint.version,
                path,
            )
            return
        # A version may have several checkpoints (classic, multi-part, V2): the hint must agree
        # with one of those that could be read (the others are reported as corrupt).
        readable = [
            (cp.files, self._counts[cp.files[0].path])
            for cp in found
            if cp.files[0].path in self._counts
        ]
        if not readable:
            return
        candidates = [_hint_problems(hint, files, counts) for files, counts in readable]
        if all(candidates):
            for problem in candidates[0]:
                report(
                    "last-checkpoint-mismatch", f"_last_checkpoint: {problem}", hint.version, path
                )


@dataclass(frozen=True, slots=True)
class Loaded:
    """A checkpoint's state, and whether its files are known to be replay's exactly."""

    state: TableState
    same_files: bool


def _same_files(adds: list[pa.Table], replayed: TableState, prefix: str) -> bool:
    """Whether the add rows are exactly ``replayed``'s files (key, size, values, stats)."""
    rows = sum(t.num_rows for t in adds)
    if rows != len(replayed.fingerprints):
        return False
    if not rows:
        return True
    ours = pa.array(list(replayed.fingerprints.values()), type=pa.string())
    theirs = pa.chunked_array(
        [arrow_fingerprints(t, prefix) for t in adds if t.num_rows], type=pa.string()
    )
    return bool(
        pc.all(pc.is_in(theirs, value_set=ours)).as_py()
        and pc.count_distinct(theirs).as_py() == rows
    )


def arrow_fingerprints(adds: pa.Table, prefix: str) -> pa.Array:
    """:func:`~deltalog.check.state.fingerprint` of each add row of a checkpoint, in Arrow.

    ``adds`` must have rows (its columns are combined into one chunk each).
    """
    adds = adds.combine_chunks()
    keys = arrow_keys(
        pa.table({"path": adds.column("path"), "deletion_vector": adds.column("deletionVector")}),
        prefix,
    )
    values = adds.column("partitionValues").chunk(0)
    # keys/items are the whole child arrays and offsets absolute, also for a slice.
    pairs = pc.binary_join_element_wise(values.keys, pc.fill_null(values.items, NULL), "\x03")
    offsets = values.offsets
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, pairs), "\x04")
    size = pc.cast(adds.column("size").chunk(0), pa.string())
    stats = pc.fill_null(adds.column("stats").chunk(0), NULL)
    fingerprints: pa.Array = pc.binary_join_element_wise(keys, size, joined, stats, "\x01")
    return fingerprints


@dataclass(frozen=True, slots=True)
class _Counts:
    """What ``_last_checkpoint`` records about a checkpoint's content."""

    adds: int
    rows: int
    v2: bool

    @classmethod
    def of(cls, data: CheckpointData) -> _Counts:
        return cls(data.num_adds, data.num_rows, data.has_sidecars)


def _hint_problems(hint: LastCheckpoint, files: tuple[FileStatus, ...], c: _Counts) -> list[str]:
    """How ``_last_checkpoint`` disagrees with one checkpoint's files and content."""
    on_disk = sum(f.size for f in files)
    problems = count_problems(hint, adds=c.adds, rows=c.rows, v2=c.v2)
    if hint.parts is not None and hint.parts != len(files):
        problems.append(f"parts is {hint.parts}, the checkpoint has {len(files)}")
    if not c.v2 and hint.size_in_bytes is not None and hint.size_in_bytes != on_disk:
        problems.append(f"sizeInBytes is {hint.size_in_bytes}, the files hold {on_disk}")
    return problems
