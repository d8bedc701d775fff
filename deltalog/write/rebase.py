"""Moving a blind append past log cleanup: onto the head of the log as it is now.

A transaction whose snapshot the log was cleaned up past cannot be checked against the commits
after it: they are gone (:class:`~deltalog.errors.SnapshotExpiredError`). A blind append
needs no such check. It read nothing, so the only commits it can conflict with are those that
change the protocol or the metadata; when the head still has the protocol and metadata the
append was made for, committing it after the head is what committing it after the lost
commits would have been. The lost commits may also have held a vacuum, though: the transaction
checks the head against vacuums before it moves
(:meth:`~deltalog.write.vacuum_fence.WriterFence.check_moved`).
"""

from __future__ import annotations

from deltalog.errors import SnapshotExpiredError
from deltalog.log.log_tail import read_head
from deltalog.log.orphans import same_metadata, same_protocol
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage


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
    head = read_head(storage, expired)
    if not (
        same_protocol(head.protocol, snapshot.protocol)
        and same_metadata(head.metadata, snapshot.metadata)
    ):
        raise expired
    head.check_writable()
    return head
