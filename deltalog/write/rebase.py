"""Moving a blind append past log cleanup: onto the head of the log as it is now.

A transaction whose snapshot the log was cleaned up past cannot be checked against the commits
after it: they are gone (:class:`~deltalog.errors.SnapshotExpiredError`). A blind append
needs no such check. It read nothing, so the only commits it can conflict with are those that
change the protocol or the metadata; when the head still has the protocol and metadata the
append was made for, committing it after the head is what committing it after the lost
commits would have been.
"""

from __future__ import annotations

from deltalog.errors import SnapshotExpiredError, VersionNotFoundError
from deltalog.log.orphans import same_metadata, same_protocol
from deltalog.log.replay import replay
from deltalog.log.segment import list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage

#: Reads of the head tried while log cleanup deletes files under them.
READ_ATTEMPTS = 3


def head_for_blind_append(
    storage: TableStorage, snapshot: Snapshot, expired: SnapshotExpiredError
) -> Snapshot:
    """The latest snapshot, if a blind append made on ``snapshot`` can be committed after it.

    Args:
        storage: The table's storage.
        snapshot: The snapshot the append was made on.
        expired: Why the append cannot be committed after ``snapshot``.

    Raises:
        SnapshotExpiredError: ``expired``, when the head has another protocol or metadata, or
            cannot be read because log cleanup keeps deleting what is being read.
        UnsupportedFeatureError: deltalog cannot write the table at the head.
    """
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            head = replay(storage, list_log(storage))
            break
        except VersionNotFoundError as exc:  # cleanup deleted what was being read
            if attempt == READ_ATTEMPTS:
                raise expired from exc
    if not (
        same_protocol(head.protocol, snapshot.protocol)
        and same_metadata(head.metadata, snapshot.metadata)
    ):
        raise expired
    head.check_writable()
    return head
