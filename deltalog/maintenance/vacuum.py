"""VACUUM: delete data files the table no longer needs, with delta-spark's semantics.

A vacuum runs on the latest snapshot:

1. The table must be writable by deltalog (delta-spark's ``protocolWrite`` check, which also
   covers ``vacuumProtocolCheck``), else :class:`UnsupportedFeatureError`.
2. The retention is ``retention_hours`` (exactly, to the millisecond; delta-spark rounds to
   whole hours, which made 0.01 hours no retention at all) or the table's
   ``delta.deletedFileRetentionDuration`` (default one week). A negative one raises
   :class:`InvalidRetentionError`; one shorter than the table's raises
   :class:`RetentionTooShortError` unless ``enforce_retention_duration=False``.
3. Files last modified (full mode) or removed (lite mode) before the cutoff ``now - retention``
   that the snapshot does not need are the candidates (:mod:`deltalog.maintenance.vacuum_files`). A
   concurrent writer's files that are not committed yet are younger than the retention, so they
   stay.
4. Without ``dry_run``: a ``VACUUM START`` commit (``numFilesToDelete``,
   ``sizeOfDataToDelete``), batched deletes, a ``VACUUM END`` commit (``status`` ``COMPLETED``
   with ``numDeletedFiles``/``numVacuumedDirectories``, or ``FAILED``), then
   ``_delta_log/_last_vacuum_info`` for the next lite vacuum and the stale ``_delta_log`` temp
   files (:mod:`deltalog.maintenance.log_temp`).

Commits that land while a vacuum runs
-------------------------------------
No live file is ever deleted, including one a commit registers while the vacuum runs. Young
files are safe by age; the danger is a commit that makes an *old* file live (registering
existing Parquet files, restoring removed ones, re-adding a removed file's deletion vector):
with the snapshot the vacuum read it is a candidate. Let the vacuum read version ``v``, list,
commit ``VACUUM START`` at ``t``, and delete in batches. A commit ``w`` adding a candidate is
handled by where it lands:

(a) ``v < w`` and ``w`` exists when the vacuum last reads the log before a batch: before every
    batch the vacuum reads each commit after ``v`` up to the head
    (:meth:`~deltalog.maintenance.vacuum_lease.VacuumLease.sync`) and drops from the batch every
    file, and
    deletion-vector file, they added. The read is after the listing and right before the
    deletes, so it holds for commits from any engine. When log cleanup removed commits it has
    not read yet (a missing version with later log files: :mod:`deltalog.log.log_tail`), it reads
    the head instead and drops every file the head needs.
(b) ``w < t``, START losing races to ``w``: the same read covers every version after ``v``,
    the winners START skipped over included. START itself is never created below a checkpoint
    that cleanup left (:mod:`deltalog.write.info_commit` checks and confirms like any commit).
(c) ``w > t`` by a writer whose snapshot is older than ``t``: START is one of its winners. It
    carries the *fence* (:mod:`deltalog.write.vacuum_fence`), a ``txn`` of the reserved application
    ``deltalog.vacuum`` whose version encodes the cutoff; the writer fails with
    :class:`ConcurrentVacuumError`, nothing committed, if it adds a file last modified before
    the cutoff (or gone: the vacuum may have deleted it already). delta-spark's ``VACUUM START``
    (no fence) counts with its timestamp minus its retention as the cutoff. A winning lease
    renewal or ``VACUUM END`` counts the same, so a vacuum that ran entirely while the writer
    was in flight is seen too. A blind append moved past commits log cleanup removed cannot
    read them: it is refused when the head's fence changed, or when a file it adds is gone or
    older than the table's ``delta.deletedFileRetentionDuration``.
(d) ``w > t`` by a writer whose snapshot already holds ``t`` (but not END), after the vacuum's
    last read: the writer finds the running fence in its snapshot (``txn`` actions survive
    checkpoints, so a checkpoint written since START hides nothing) and fails the same way.
    The fence's ``lastUpdated`` starts a 15-minute lease: the vacuum renews it (a
    ``VACUUM LEASE`` commit) before a batch once 5 minutes have passed, and starts a batch only
    while 7.5 minutes are left (renewing again when its read of the log took long). A writer
    ignores a running fence whose lease ran out 5 minutes ago (a margin for clock skew: the
    vacuum died) once it has checked its old files still exist. END sets the fence to "ended";
    when END cannot be committed after the deletes, :class:`VacuumEndError` says so, and the
    fence holds until its lease runs out.

Only one deltalog vacuum holds the fence: another one refuses to start while its lease is live
(:class:`ConcurrentVacuumError`), and a vacuum that finds its fence taken over stops deleting.
The checks cost writers a dict lookup per commit; store look-ups happen only when a fence is
involved. The fence is a standard ``txn`` action, which delta-spark and delta-rs read as any
application's; deltalog refuses the reserved id in ``set_transaction``.

What remains outside: writers of other engines (and older deltalog) ignore the fence, so only
(a) protects against them, up to their commit landing between the vacuum's last read and its
delete; delta-spark's own VACUUM has no fence, so a deltalog writer whose snapshot already
holds its START is not stopped; a lite-mode candidate is chosen by its remove, not its age, so
a file rewritten at a removed path and re-added with a fresh modification time is only
protected by (a); a single batch of deletes that outlasts the rest of the lease (7.5 minutes
plus the clock margin) could meet a writer that took the vacuum for dead; a blind append moved
past removed commits that held a vacuum with a retention below the table's (the check
disabled) is stopped only if that vacuum's fence is the head's or the file is gone already.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import orjson

from deltalog.errors import (
    CannotVacuumLiteError,
    CommitStatusUnknownError,
    InvalidInputError,
    InvalidRetentionError,
    RetentionTooShortError,
    StorageError,
    VacuumEndError,
)
from deltalog.log.replay import read_commit
from deltalog.log.segment import LogListing, commit_times, list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.log.table_paths import TablePaths
from deltalog.logstores import LogFileNotFoundError
from deltalog.maintenance.log_temp import cleanup_log_temp_files, stale_log_temp_files
from deltalog.maintenance.vacuum_files import (
    Candidate,
    full_candidates,
    lite_candidates,
    needed_locations,
)
from deltalog.maintenance.vacuum_lease import VacuumLease, refuse_running
from deltalog.protocol.actions import AddCDCFile, RemoveFile
from deltalog.protocol.config import tombstone_retention_ms
from deltalog.protocol.paths import commit_name
from deltalog.write.commit import RetryPolicy
from deltalog.write.vacuum_fence import iso_time

VacuumMode = Literal["full", "lite"]
#: ``_delta_log/_last_vacuum_info``: delta-spark's record of the last vacuum's window.
LAST_VACUUM_INFO = "_last_vacuum_info"
_HOUR_MS = 3_600_000
_BATCH = 1000
_log = logging.getLogger(__name__)

#: ``progress(done, total)``: called after each batch of deletes.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class VacuumResult:
    """What a vacuum deleted, or with ``dry_run`` would delete.

    Attributes:
        dry_run: Nothing was deleted.
        mode: ``"full"`` or ``"lite"``.
        files: Locations of the files deleted (or to delete), in path order.
        size_in_bytes: Their total size.
        retention_ms: The retention applied.
        specified_retention_ms: The retention given by the caller, if any.
        default_retention_ms: The table's ``delta.deletedFileRetentionDuration``.
        delete_before_ms: Files older than this (ms since the epoch) were candidates.
        directories: Directories under the root (plus the root), as delta-spark counts them.
        version: The table version the vacuum read.
        start_version: The ``VACUUM START`` commit (``None`` for a dry run).
        end_version: The ``VACUUM END`` commit.
        log_temp_files: Stale ``_delta_log`` temp files deleted (or, dry, to delete).
        skipped: Candidates kept because a commit made while the vacuum ran added them.
    """

    dry_run: bool
    mode: VacuumMode
    files: list[str]
    size_in_bytes: int
    retention_ms: int
    specified_retention_ms: int | None
    default_retention_ms: int
    delete_before_ms: int
    directories: int
    version: int
    start_version: int | None = None
    end_version: int | None = None
    log_temp_files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def num_files(self) -> int:
        """How many files were (or would be) deleted."""
        return len(self.files)

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (camelCase keys)."""
        return {
            "dryRun": self.dry_run,
            "mode": self.mode,
            "version": self.version,
            "numFiles": self.num_files,
            "sizeInBytes": self.size_in_bytes,
            "retentionMillis": self.retention_ms,
            "specifiedRetentionMillis": self.specified_retention_ms,
            "defaultRetentionMillis": self.default_retention_ms,
            "deleteBeforeTimestamp": self.delete_before_ms,
            "directories": self.directories,
            "startVersion": self.start_version,
            "endVersion": self.end_version,
            "files": self.files,
            "logTempFiles": self.log_temp_files,
            "skippedFiles": self.skipped,
        }


def retention_millis(hours: float | None) -> int | None:
    """A vacuum retention in ms, exactly (to the nearest millisecond).

    delta-spark rounds ``RETAIN n HOURS`` to whole hours, so 0.4 hours keeps nothing: files of
    writers still in flight go when the check is off. The hours given are honoured instead.

    Raises:
        InvalidRetentionError: Negative or not a number.
    """
    if hours is None:
        return None
    if isinstance(hours, bool) or not isinstance(hours, int | float) or math.isnan(hours):
        raise InvalidRetentionError(f"retention must be a number of hours, not {hours!r}")
    if hours < 0:
        raise InvalidRetentionError("retention period for vacuum can't be less than 0 hours")
    if math.isinf(hours):
        raise InvalidRetentionError("retention period for vacuum must be finite")
    return round(Fraction(hours) * _HOUR_MS)  # exact: no float overflow for huge hours


def check_retention(specified_ms: int | None, table_ms: int, *, enforce: bool) -> None:
    """delta-spark's ``retentionDurationCheck``.

    Raises:
        RetentionTooShortError: ``specified_ms`` is below ``table_ms`` and ``enforce`` is set.
    """
    if not enforce or specified_ms is None or specified_ms >= table_ms:
        return
    hours = -(-table_ms // _HOUR_MS)
    raise RetentionTooShortError(
        f"the vacuum retention ({specified_ms / _HOUR_MS:g} hours) is shorter than the table's "
        f"delta.deletedFileRetentionDuration ({hours} hours): files of writers still in "
        "progress and files old snapshots read could be deleted. If no operation (write, "
        "delete, optimize) runs on this table, disable the check with "
        "enforce_retention_duration=False (CLI: --no-retention-check); otherwise use at least "
        f"{hours} hours. Nothing was deleted.",
        configured_hours=hours,
    )


def vacuum(
    storage: TableStorage,
    snapshot: Snapshot,
    *,
    retention_hours: float | None = None,
    dry_run: bool = True,
    mode: VacuumMode = "full",
    enforce_retention_duration: bool = True,
    now_ms: int | None = None,
    progress: Progress | None = None,
    retry: RetryPolicy | None = None,
    on_commit: Callable[[Snapshot], None] | None = None,
) -> VacuumResult:
    """Vacuum the table at ``snapshot`` (its latest version); see the module docstring.

    Args:
        storage: The table's storage.
        snapshot: The latest snapshot.
        retention_hours: Keep files younger than this; default the table's retention.
        dry_run: Only report what would be deleted.
        mode: ``"full"`` (list the directory) or ``"lite"`` (read removes from the log).
        enforce_retention_duration: Refuse a retention shorter than the table's.
        now_ms: The current time (default: the clock); tests and tools move it.
        progress: Called with ``(deleted, total)`` after each batch of deletes.
        retry: Retry policy of the ``VACUUM START``/``END`` commits.
        on_commit: Called with the snapshot after each of those commits.

    Returns:
        What was (or would be) deleted.

    Raises:
        UnsupportedFeatureError: deltalog cannot write this table's protocol.
        InvalidRetentionError: A negative retention.
        RetentionTooShortError: Shorter than the table's, with the check enforced.
        CannotVacuumLiteError: Lite mode needs commits log cleanup already deleted.
        ConcurrentVacuumError: Another vacuum is running (nothing deleted), or took this one's
            fence over after its lease ran out (deleting stopped).
        VacuumEndError: The deletes were done, but ``VACUUM END`` could not be committed.
        StorageError: The store failed (after ``VACUUM START``, ``VACUUM END`` records
            ``FAILED``).
    """
    if mode not in ("full", "lite"):
        raise InvalidInputError(f"vacuum mode must be 'full' or 'lite', not {mode!r}")
    snapshot.check_writable()
    if not dry_run:
        refuse_running(snapshot)
    specified = retention_millis(retention_hours)
    table_retention = tombstone_retention_ms(snapshot.configuration)
    check_retention(specified, table_retention, enforce=enforce_retention_duration)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    retention = table_retention if specified is None else specified
    delete_before = now - retention
    paths = TablePaths(storage, snapshot)
    needed = needed_locations(paths, snapshot, delete_before)
    listing = list_log(storage, use_hint=False)
    window_end = _latest_commit_before(listing, delete_before)
    if mode == "full":
        found = full_candidates(paths, needed, delete_before)
        candidates, directories = found.candidates, found.directories
    else:
        actions = _lite_actions(storage, snapshot, listing, window_end)
        candidates, directories = lite_candidates(paths, needed, delete_before, actions), 1
    result = VacuumResult(
        dry_run=dry_run,
        mode=mode,
        files=[c.location for c in candidates],
        size_in_bytes=sum(c.size for c in candidates),
        retention_ms=retention,
        specified_retention_ms=specified,
        default_retention_ms=table_retention,
        delete_before_ms=delete_before,
        directories=directories,
        version=snapshot.version,
    )
    if dry_run:
        temps = [s.path for s in stale_log_temp_files(storage, now_ms=now)]
        return _replace(result, log_temp_files=temps)
    return _execute(
        storage,
        snapshot,
        result,
        candidates,
        enforce=enforce_retention_duration,
        window_end=window_end,
        now=now,
        progress=progress,
        retry=retry,
        on_commit=on_commit,
    )


def _replace(result: VacuumResult, **changes: Any) -> VacuumResult:
    return VacuumResult(**{**result.__dict__, **changes})


def _execute(
    storage: TableStorage,
    snapshot: Snapshot,
    result: VacuumResult,
    candidates: list[Candidate],
    *,
    enforce: bool,
    window_end: int | None,
    now: int,
    progress: Progress | None,
    retry: RetryPolicy | None,
    on_commit: Callable[[Snapshot], None] | None,
) -> VacuumResult:
    parameters = {
        "retentionCheckEnabled": "true" if enforce else "false",
        "defaultRetentionMillis": str(result.default_retention_ms),
    }
    if result.specified_retention_ms is not None:
        parameters["specifiedRetentionMillis"] = str(result.specified_retention_ms)
    lease = VacuumLease(
        storage, snapshot, result.delete_before_ms, retry=retry, on_commit=on_commit
    )
    start = lease.start(
        parameters,
        {
            "numFilesToDelete": str(result.num_files),
            "sizeOfDataToDelete": str(result.size_in_bytes),
        },
    )
    try:
        deleted = _delete(storage, lease, candidates, progress)
    except BaseException as failure:
        try:
            lease.end({"status": "FAILED"}, {})
        except Exception as exc:
            _log.warning("cannot record the failed vacuum of %s", storage.uri, exc_info=True)
            failure.add_note(
                f"VACUUM END (FAILED) could not be committed either ({exc}): {_fence_left(lease)}"
            )
        raise
    try:
        end = lease.end(
            {"status": "COMPLETED"},
            {
                "numDeletedFiles": str(len(deleted)),
                "numVacuumedDirectories": str(result.directories),
            },
        )
    except Exception as exc:
        unknown = isinstance(exc, CommitStatusUnknownError)
        raise VacuumEndError(
            f"VACUUM deleted {len(deleted)} file(s) of {storage.uri} (VACUUM START at version "
            f"{start.version}), but could not commit VACUUM END: {exc}. "
            f"{'Unless it landed, ' if unknown else ''}{_fence_left(lease)}",
            files=[c.location for c in deleted],
            start_version=start.version,
            lease_until_ms=lease.lease_until_ms,
        ) from exc
    _write_last_vacuum_info(storage, window_end)
    temps = cleanup_log_temp_files(storage, now_ms=now)
    gone = {c.location for c in deleted}
    return _replace(
        result,
        files=[c.location for c in deleted],
        size_in_bytes=sum(c.size for c in deleted),
        skipped=[c.location for c in candidates if c.location not in gone],
        start_version=start.version,
        end_version=end.version,
        log_temp_files=temps,
    )


def _fence_left(lease: VacuumLease) -> str:
    return (
        "the log still shows this vacuum running: until its lease runs out at "
        f"{iso_time(lease.lease_until_ms)}, writers adding files last modified before "
        f"{iso_time(lease.cutoff_ms)} are refused (ConcurrentVacuumError) and other vacuums "
        "refuse to start; after that both go ahead, nothing needs repairing"
    )


def _delete(
    storage: TableStorage,
    lease: VacuumLease,
    candidates: list[Candidate],
    progress: Progress | None,
) -> list[Candidate]:
    """Delete in batches (one batched request or a parallel burst each on object stores).

    Right before each batch the lease is renewed when due and the log is read up to its head
    (:meth:`VacuumLease.prepare_batch`): files that commits made since the vacuum's snapshot
    added are not deleted.
    """
    store, total = storage.store, len(candidates)
    deleted: list[Candidate] = []
    for done in range(0, total, _BATCH):
        lease.prepare_batch()
        chunk = candidates[done : done + _BATCH]
        batch = [c for c in chunk if c.location not in lease.added]
        if batch:
            with storage_errors(f"cannot delete files of {storage.uri}"):
                store.delete_many([c.location for c in batch])
        deleted += batch
        if progress is not None:
            progress(done + len(chunk), total)
    root = store.local_path(storage.root)
    if root is not None:
        _remove_empty_directories(root.rstrip("/"), [c.location for c in deleted])
    return deleted


def _remove_empty_directories(root: str, locations: list[str]) -> None:
    """On a filesystem, remove the directories the deletes left empty (never the root)."""
    directories: set[str] = set()
    for location in {location.rpartition("/")[0] for location in locations}:
        directory = location
        while directory.startswith(root + "/") and directory not in directories:
            directories.add(directory)
            directory = os.path.dirname(directory)
    for directory in sorted(directories, key=lambda d: d.count("/"), reverse=True):
        with contextlib.suppress(OSError):  # not empty (or gone): that is the point
            os.rmdir(directory)


def _latest_commit_before(listing: LogListing, delete_before: int) -> int | None:
    """The newest commit made at or before the cutoff (``None`` when none is that old)."""
    eligible = [v for v, t in commit_times(listing).items() if t <= delete_before]
    return max(eligible, default=None)


def _read_last_vacuum_info(storage: TableStorage) -> int | None:
    try:
        raw = storage.read_log_file(LAST_VACUUM_INFO)
        value = orjson.loads(raw).get("latestCommitVersionOutsideOfRetentionWindow")
    except LogFileNotFoundError:
        return None
    except (orjson.JSONDecodeError, AttributeError, StorageError):
        _log.warning("ignoring an unreadable %s in %s", LAST_VACUUM_INFO, storage.uri)
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _write_last_vacuum_info(storage: TableStorage, window_end: int | None) -> None:
    """Record the window for the next lite vacuum (delta-spark's format); never fails."""
    doc = {} if window_end is None else {"latestCommitVersionOutsideOfRetentionWindow": window_end}
    try:
        with storage_errors(f"cannot write {LAST_VACUUM_INFO}"):
            storage.store.write(
                storage.log_file(LAST_VACUUM_INFO), orjson.dumps(doc), overwrite=True
            )
    except StorageError:
        _log.warning("cannot record the vacuum window of %s", storage.uri, exc_info=True)


def _lite_actions(
    storage: TableStorage, snapshot: Snapshot, listing: LogListing, window_end: int | None
) -> list[RemoveFile | AddCDCFile]:
    """The ``remove`` and ``cdc`` actions of the commits lite vacuum reads.

    Raises:
        CannotVacuumLiteError: Commits of the window were cleaned up since the last vacuum.
    """
    if window_end is None or not listing.commits:
        return []
    earliest = min(listing.commits)
    last = _read_last_vacuum_info(storage)
    if earliest != 0 and (last is None or last < earliest):
        raise CannotVacuumLiteError(
            f"lite vacuum of {storage.uri} needs the commits from "
            f"{0 if last is None else last + 1} on, but log cleanup kept only those from "
            f"{earliest} on (and no earlier vacuum covered the rest); run a full vacuum"
        )
    start = min(snapshot.version, earliest if last is None else last + 1)
    out: list[RemoveFile | AddCDCFile] = []
    for version in range(start, window_end + 1):
        if version not in listing.commits:
            raise CannotVacuumLiteError(
                f"lite vacuum of {storage.uri} needs commit {version}, which is gone; "
                "run a full vacuum"
            )
        try:
            actions = read_commit(storage, commit_name(version), version)
        except LogFileNotFoundError as exc:
            raise CannotVacuumLiteError(
                f"commit {version} was cleaned up during the vacuum; run a full vacuum"
            ) from exc
        out += [a for a in actions if isinstance(a, RemoveFile | AddCDCFile)]
    return out
