"""The bytes of one commit attempt, for tables whose commits depend on the version they land at.

Most commits are the same wherever they land, and are serialised once. With in-commit
timestamps (:mod:`deltalog.log.in_commit_timestamps`) the ``commitInfo`` carries a timestamp after
the previous commit's, and with row tracking (:mod:`deltalog.write.row_tracking`) the adds carry row
ids above the previous commit's high-water mark and the version itself: after a lost race, the
attempt at the next version is laid out again from what the winners committed, never reusing
the bytes meant for the version they took.
"""

from __future__ import annotations

from collections.abc import Sequence

from deltalog.log import in_commit_timestamps as ict
from deltalog.log.snapshot import Snapshot
from deltalog.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    serialize_actions,
)
from deltalog.write import row_tracking


class CommitLayout:
    """Lays out ``commitInfo`` + actions for a version, tracking the commits before it.

    Args:
        snapshot: The version the transaction read.
        info: The commit's ``commitInfo`` (without an in-commit timestamp).
        actions: The staged actions in commit order (without ``commitInfo``).

    Raises:
        MissingRowCountError: The table tracks row ids and an add has no ``numRecords``.
    """

    def __init__(self, snapshot: Snapshot, info: CommitInfo, actions: Sequence[Action]) -> None:
        self._info = info
        self._actions = list(actions)
        protocol = next((a for a in actions if isinstance(a, Protocol)), snapshot.protocol)
        metadata = next((a for a in actions if isinstance(a, Metadata)), snapshot.metadata)
        self._timestamps = ict.enabled(metadata)
        self._rows = row_tracking.supported(protocol, metadata)
        self._previous_time = snapshot.timestamp
        self._previous_metadata = snapshot.metadata
        self._high_water = row_tracking.high_water_mark(snapshot.domains)
        adds = [a for a in actions if isinstance(a, AddFile)]
        removes = [a for a in actions if isinstance(a, RemoveFile)]
        self._recommits = row_tracking.recommitted(removes)
        if self._rows:
            row_tracking.check_row_counts(adds, self._recommits)
        row_tracking.refuse_rewrite(protocol, metadata, adds, removes)
        self._fixed: tuple[CommitInfo, list[Action], bytes] | None = None
        if (
            not self._timestamps
            and not self._rows
            and not any(isinstance(a, Metadata) for a in actions)
        ):
            self._fixed = (info, self._actions, serialize_actions([info, *self._actions]))

    @property
    def depends_on_version(self) -> bool:
        """Whether attempts at different versions have different bytes."""
        return self._fixed is None

    def after(self, winners: Sequence[tuple[int, Sequence[Action], int]]) -> None:
        """Take note of commits that landed before this one (``(version, actions, time)``)."""
        for _, actions, seen in winners:
            self._previous_time = ict.latest_timestamp(actions, seen)
            self._high_water = row_tracking.high_water_mark_after(actions, self._high_water)
            for action in actions:
                if isinstance(action, Metadata):
                    self._previous_metadata = action

    def build(self, version: int) -> tuple[CommitInfo, list[Action], bytes]:
        """``commitInfo``, the other actions, and the bytes of an attempt at ``version``.

        Raises:
            MissingRowCountError: An add needing fresh row ids has no ``numRecords``.
        """
        if self._fixed is not None:
            return self._fixed
        info = self._info
        timestamp = info.timestamp or 0
        if self._timestamps:
            timestamp = ict.next_timestamp(self._previous_time)
            info = ict.stamp(info, timestamp)
        head: list[Action] = []
        files: list[Action] = []
        for action in self._actions:
            if isinstance(action, Metadata):
                action = ict.with_enablement(self._previous_metadata, action, version, timestamp)
            (files if isinstance(action, AddFile | RemoveFile | AddCDCFile) else head).append(
                action
            )
        if self._rows:
            adds = [a for a in files if isinstance(a, AddFile)]
            assigned, domain = row_tracking.assign(adds, version, self._high_water, self._recommits)
            by_id = {id(old): new for old, new in zip(adds, assigned, strict=True)}
            files = [by_id.get(id(a), a) for a in files]
            if domain is not None:
                head.append(domain)
        actions = [*head, *files]
        return info, actions, serialize_actions([info, *actions])
