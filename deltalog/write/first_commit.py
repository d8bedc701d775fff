"""Version 0 of a table created by its first write: metadata, protocol and the files, at once.

delta-spark (and delta-rs) create a table with its first write in one commit: ``commitInfo``,
``protocol``, ``metaData``, an optional ``txn``, and the ``add`` actions. In-commit timestamps
stamp it and row tracking numbers its rows from 0, as a later commit would be laid out
(:mod:`deltalog.write.commit_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.log import in_commit_timestamps as ict
from deltalog.log.clock import now_ms
from deltalog.protocol.actions import Action, AddFile, Metadata, Protocol, Txn, serialize_actions
from deltalog.write import row_tracking
from deltalog.write.commit import make_commit_info, write_metrics

__all__ = ["first_commit"]


def first_commit(
    metadata: Metadata,
    protocol: Protocol,
    adds: list[AddFile],
    *,
    parameters: Mapping[str, Any],
    is_blind_append: bool,
    txns: Mapping[str, int] | None = None,
    user_metadata: str | None = None,
    operation: str = "WRITE",
) -> bytes:
    """The bytes of version 0.

    Args:
        metadata: The new table's ``metaData``.
        protocol: Its ``protocol``.
        adds: The files of the first write.
        parameters: ``commitInfo.operationParameters``.
        is_blind_append: ``commitInfo.isBlindAppend``.
        txns: ``app_id -> version`` for idempotent writes.
        user_metadata: ``commitInfo.userMetadata``.
        operation: ``commitInfo.operation``.

    Raises:
        MissingRowCountError: The table tracks row ids and an add has no ``numRecords``.
    """
    info = make_commit_info(
        operation=operation,
        parameters=dict(parameters),
        read_version=None,
        is_blind_append=is_blind_append,
        metrics=write_metrics(adds),
        user_metadata=user_metadata,
    )
    if ict.enabled(metadata):
        info = ict.stamp(info, now_ms())
    first_adds: list[Action] = list(adds)
    row_domain = None
    if row_tracking.supported(protocol, metadata):  # fresh row ids from 0 at version 0
        assigned, row_domain = row_tracking.assign(adds, 0, -1)
        first_adds = list(assigned)
    actions: list[Action] = [info, protocol, metadata]
    for app_id, version in (txns or {}).items():
        actions.append(Txn(app_id=app_id, version=version, last_updated=now_ms()))
    if row_domain is not None:
        actions.append(row_domain)
    actions.extend(first_adds)
    return serialize_actions(actions)
