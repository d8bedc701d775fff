"""Time travel by timestamp: which version a table was at, at a given time."""

from __future__ import annotations

import datetime as dt

from deltalog.errors import InvalidInputError, TimestampOutOfRangeError, VersionNotFoundError
from deltalog.log import in_commit_timestamps as ict
from deltalog.log.replay import replay
from deltalog.log.segment import LogListing, commit_times
from deltalog.log.storage import TableStorage
from deltalog.protocol.user_input import is_long

__all__ = ["TimestampLike", "to_millis", "version_at"]

TimestampLike = dt.datetime | int | str


def to_millis(ts: TimestampLike) -> int:
    """``ts`` (a datetime, an ISO-8601 string or ms since the epoch) in ms since the epoch.

    Raises:
        InvalidInputError: Not a timestamp, or out of range.
    """
    if isinstance(ts, int) and not isinstance(ts, bool):
        if not is_long(ts):
            raise InvalidInputError(f"timestamp {ts} ms is out of range")
        return ts
    if isinstance(ts, str):
        try:
            ts = dt.datetime.fromisoformat(ts)
        except ValueError as exc:
            raise InvalidInputError(f"not an ISO-8601 timestamp: {ts!r}") from exc
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        try:
            return int(ts.timestamp() * 1000)
        except (ValueError, OverflowError, OSError) as exc:
            raise InvalidInputError(f"timestamp {ts!r} is out of range") from exc
    raise InvalidInputError(f"not a timestamp: {ts!r}")


def _iso(ts: int) -> str:
    """``ts`` (ms since the epoch) for a message."""
    try:
        return dt.datetime.fromtimestamp(ts / 1000, dt.UTC).isoformat()
    except (ValueError, OverflowError, OSError):
        return f"{ts} ms since the epoch"


def version_at(storage: TableStorage, listing: LogListing, ts: int) -> int:
    """Latest version committed at or before ``ts``.

    Commit times are in-commit timestamps from the version that enabled them on (found in the
    latest metadata when the latest commit has one), file modification times made monotonic
    before it. As in delta-spark, a time before the first available commit or after the latest
    commit is refused: the table's state at a time it has not reached yet is not known.
    """
    from deltalog.log.history import commit_ict  # with its report helpers: only when used

    if not listing.commits:
        raise VersionNotFoundError("no commit files to time travel with")
    times = commit_times(listing)
    latest = max(times)
    ict_from = None
    latest_ict = commit_ict(storage, listing, latest)
    if latest_ict is not None:
        ict_from = ict.commit_time_source(replay(storage, listing).metadata)
        if ict_from is not None:
            times[latest] = latest_ict
    found = ict.version_at(ts, times, ict_from, lambda v: commit_ict(storage, listing, v))
    if found is None:
        first = min(listing.commits)
        raise TimestampOutOfRangeError(
            f"{_iso(ts)} is before the first available commit (version {first})"
        )
    if ts > times[latest]:
        raise TimestampOutOfRangeError(
            f"{_iso(ts)} is after the latest commit (version {latest}, at "
            f"{_iso(times[latest])}); use a timestamp at or before it, or open the latest version"
        )
    return found
