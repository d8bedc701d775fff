"""Commit files below a checkpoint that does not hold their changes (lost commits).

Replay starts at the oldest readable checkpoint, so a commit file below it is never read. Most
such files are old commits log cleanup has not deleted yet, and the checkpoint holds their
changes. But a writer that created its commit after cleanup had removed the commits before it
left an orphan: acknowledged, and in no reader's table (see :mod:`deltalog.log.orphans`). Each
commit the walk reaches without a state to apply it to is therefore compared with the next
checkpoint, as the writer now does right after its create, and reported as ``orphaned-commit``
when that checkpoint shows it never held it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltalog.check.findings import Findings
from deltalog.log.orphans import (
    LaterCommits,
    Verdict,
    identifiable,
    judge,
    readable_view,
    touched_paths,
)
from deltalog.log.segment import Checkpoint
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileStatus
from deltalog.protocol.actions import Action


@dataclass
class _Pending:
    version: int
    status: FileStatus
    actions: list[Action]
    #: What the commits read after this one did.
    later: LaterCommits = field(default_factory=LaterCommits)
    #: The last version read after it, while no version was missing.
    last: int = -1
    contiguous: bool = True

    def __post_init__(self) -> None:
        self.last = self.version


class OrphanChecks:
    """Collects commits replay could not apply, and judges them at the next checkpoint.

    Args:
        storage: The table's storage.
        prefix: The table's scheme prefix.
        findings: Where ``orphaned-commit`` goes.
    """

    def __init__(self, storage: TableStorage, prefix: str, findings: Findings) -> None:
        self.storage = storage
        self.prefix = prefix
        self.findings = findings
        self._pending: list[_Pending] = []

    def commit_read(
        self, version: int, status: FileStatus, actions: list[Action], *, applied: bool
    ) -> None:
        """Note a commit the walk read; ``applied``: replayed onto a state."""
        for pending in self._pending:
            pending.later.note(actions, self.prefix)
            pending.contiguous &= version == pending.last + 1
            pending.last = version
        if not applied and identifiable(actions):
            self._pending.append(_Pending(version, status, actions))

    def checkpoint_loaded(self, version: int, checkpoints: list[Checkpoint]) -> None:
        """Judge the pending commits at or below ``version`` against its checkpoint."""
        judged = [p for p in self._pending if p.version <= version]
        if not judged:
            return
        self._pending = [p for p in self._pending if p.version > version]
        paths = set().union(*(touched_paths(p.actions, self.prefix) for p in judged))
        view = readable_view(self.storage.store, checkpoints, paths, self.prefix)
        if view is None:
            return
        written = max(f.modification_time for f in checkpoints[0].files)
        for pending in judged:
            # Every commit up to the checkpoint was read: nothing after it went unseen.
            pending.later.complete = pending.contiguous and pending.last == version
            verdict = judge(
                pending.actions,
                view,
                self.prefix,
                elapsed_ms=written - pending.status.modification_time,
                later=pending.later,
            )
            if verdict is Verdict.ORPHANED:
                self.findings.report(
                    "orphaned-commit",
                    f"commit {pending.version} lies below checkpoint {version}, which does not "
                    "hold its changes: it was created after log cleanup had removed the "
                    "commits before it, and no reader sees it (it was acknowledged, but is "
                    "lost; its data files are orphans)",
                    pending.version,
                    pending.status.path,
                )
