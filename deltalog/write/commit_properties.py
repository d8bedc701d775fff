"""What a write records in its commit besides the data: ``CommitProperties``.

Shared by ``deltalog.write_table`` and the row-level operations (``DeltaTable.delete``,
``update``, ``merge``, ``optimize``); delta-rs's own ``CommitProperties`` is accepted too (its
``custom_metadata["userMetadata"]``, ``app_transactions`` and ``max_commit_retries``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidInputError
from deltalog.write.commit import RetryPolicy

__all__ = ["CommitProperties", "CommitSettings", "commit_settings"]


@dataclass(frozen=True)
class CommitProperties:
    """What a write records in its commit, besides the data (delta-rs's ``CommitProperties``).

    Attributes:
        user_metadata: ``commitInfo.userMetadata`` (delta-spark's ``userMetadata`` option).
        app_id: With ``version``: an idempotent write (``txn``); if the table already records
            ``version`` or later for ``app_id``, nothing is written (a retried batch).
        version: The batch number for ``app_id``.
        max_commit_retries: Attempts at later versions after losing one to another writer.
        app_transactions: More ``(app_id, version)`` pairs, as delta-rs's
            ``app_transactions``; the write is skipped only when every one is committed.
    """

    user_metadata: str | None = None
    app_id: str | None = None
    version: int | None = None
    max_commit_retries: int | None = None
    app_transactions: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class CommitSettings:
    """Checked commit properties.

    Attributes:
        user_metadata: ``commitInfo.userMetadata``.
        txns: ``{app_id: version}`` to commit as ``txn`` actions.
        retries: Attempts after the first (``None``: the table's policy).
    """

    user_metadata: str | None = None
    txns: dict[str, int] | None = None
    retries: int | None = None

    @property
    def retry(self) -> RetryPolicy | None:
        """The retry policy asked for, if any."""
        return None if self.retries is None else RetryPolicy(max_attempts=self.retries + 1)


def commit_settings(given: Any) -> CommitSettings:
    """Check ``given`` (:class:`CommitProperties`, delta-rs's, or ``None``).

    Raises:
        InvalidInputError: Not commit properties, or a value of the wrong kind.
    """
    if given is None:
        return CommitSettings(txns={})
    txns: dict[str, int] = {}
    if isinstance(given, CommitProperties):
        user_metadata, retries = given.user_metadata, given.max_commit_retries
        if (given.app_id is None) != (given.version is None):
            raise InvalidInputError("app_id and version go together in CommitProperties")
        if given.app_id is not None and given.version is not None:
            txns[given.app_id] = given.version
        txns.update(dict(given.app_transactions))
    elif hasattr(given, "custom_metadata") or hasattr(given, "app_transactions"):
        custom = getattr(given, "custom_metadata", None) or {}  # delta-rs's CommitProperties
        user_metadata = custom.get("userMetadata")
        retries = getattr(given, "max_commit_retries", None)
        for txn in getattr(given, "app_transactions", None) or []:
            txns[txn.app_id] = txn.version
    else:
        raise InvalidInputError(
            f"commit_properties must be a deltalog.CommitProperties, not {type(given).__name__}"
        )
    if user_metadata is not None and not isinstance(user_metadata, str):
        raise InvalidInputError("userMetadata must be a string")
    for app_id, version in txns.items():
        if not isinstance(app_id, str) or not app_id:
            raise InvalidInputError("an app_id is a non-empty string")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise InvalidInputError(f"the version of app_id {app_id!r} must be an int >= 0")
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int)):
        raise InvalidInputError("max_commit_retries must be an int")
    return CommitSettings(user_metadata, txns, None if retries is None else max(0, retries))
