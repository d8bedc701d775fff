"""Commits coordinated by an external store: delta-spark's ``BaseExternalLogStore`` algorithm.

For object stores without a server-side create-if-absent, an external key-value store with
conditional writes (DynamoDB) decides who owns version N. A commit of ``N.json`` goes:

1. Refuse if ``N.json`` already exists. If version N-1's entry is incomplete, repair it first
   (copy its temp file to ``N-1.json`` and mark it complete). A writer that knows both already
   (it saw N-1 complete as the newest commit less than half an entry lifetime ago, through its
   own commit or a listing: :mod:`logstores.known_heads`) skips these requests: the entry's
   conditional put refuses N then exactly as the checks would.
2. **Prepare**: write the actions to a temp file ``_delta_log/.tmp/N.json.<uuid>``, then
   create the entry E(N, temp, complete=false) with a conditional put. This is the commit
   point: losing here means another writer owns N.
3. **Commit**: copy the temp file to ``N.json``.
4. **Acknowledge**: overwrite E with complete=true and an ``expireTime`` (TTL).

Until the entry is written nothing can land: a check in step 1 that refuses the commit (no
``N-1.json``: :class:`~logstores.errors.PreviousCommitMissingError`) or fails, and a failed
temp file write, raise :class:`~logstores.errors.WriteNotSentError`. A writer that dies after
step 2 leaves an incomplete entry; any reader or writer that lists the log first repairs the
latest entry, so the commit is never lost. A writer that loses the entry
race, or a reader that finds ``N.json`` missing, repairs that entry too. A writer that dies
before step 2 leaves only an orphan temp file. An incomplete entry whose temp file is gone
(deleted by hand or by a lifecycle rule) and whose ``N.json`` was never written cannot be
repaired: readers and writers stop at once with
:class:`~logstores.errors.OrphanedCommitEntryError`, which says how to repair it by hand
(delta-spark fails there too, after retries, and leaves the entry alone as well).

Subclasses implement the three entry operations; the
``_write_temp_file``/``_copy_temp_file``/``_put_complete_entry``/``_fix_*`` methods and
:meth:`ExternalCoordinatedLogStore._fault` are seams for fault-injection tests.

Only ``N.json`` files go through the external store. Other create-if-absent writes
(checkpoints) use the object store's own create, as in delta-spark.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO

from .base import FileStatus, LogStore
from .errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    OrphanedCommitEntryError,
    PreviousCommitMissingError,
    StoreIOError,
    WriteNotSentError,
)
from .known_heads import KnownHeads

log = logging.getLogger(__name__)

LOG_DIR = "_delta_log"
TEMP_DIR = ".tmp"
_DELTA_FILE = re.compile(r"^(\d{20})\.json$")
_TEMP_FILE = re.compile(r"^(\d{20})\.json\.[0-9A-Za-z-]+$")
#: One day, as in delta-spark: long enough that an expired entry can never be mistaken for
#: free while its N.json is not yet visible to an existence check.
DEFAULT_TTL_SECONDS = 86_400
_FIX_ATTEMPTS = 4


class ForeignCommitError(StoreIOError):
    """``N.json`` appeared with other bytes: a writer bypassing the external store took N."""


@dataclass(frozen=True, slots=True)
class ExternalCommitEntry:
    """One commit's entry in the external store (delta-spark's ``ExternalCommitEntry``).

    Attributes:
        table_path: The table root, e.g. ``s3://bucket/table`` (no trailing slash).
        file_name: The commit file name, e.g. ``00000000000000000007.json``.
        temp_path: The temp file, relative to ``_delta_log`` (``.tmp/<file_name>.<uuid>``).
        complete: Whether the temp file has been copied to ``file_name``.
        expire_time: For complete entries, the epoch second after which the entry may be
            deleted (the DynamoDB TTL attribute); ``None`` while incomplete.
    """

    table_path: str
    file_name: str
    temp_path: str
    complete: bool
    expire_time: int | None = None

    @property
    def file_path(self) -> str:
        """Full path of the commit file."""
        return f"{self.table_path}/{LOG_DIR}/{self.file_name}"

    @property
    def absolute_temp_path(self) -> str:
        """Full path of the temp file."""
        return f"{self.table_path}/{LOG_DIR}/{self.temp_path}"

    def as_complete(self, ttl_seconds: int, now: float | None = None) -> ExternalCommitEntry:
        """This entry marked complete, expiring ``ttl_seconds`` from now."""
        stamp = int(time.time() if now is None else now)
        return replace(self, complete=True, expire_time=stamp + ttl_seconds)


def split_log_path(path: str) -> tuple[str, str, str] | None:
    """``(table_path, directory, file name)`` when ``path`` is directly in a ``_delta_log``."""
    directory, _, name = path.rpartition("/")
    table, _, last = directory.rpartition("/")
    if last != LOG_DIR or not table:
        return None
    return table, directory, name


def delta_version(file_name: str) -> int | None:
    """The version of a commit file name, or ``None`` for any other file."""
    m = _DELTA_FILE.match(file_name)
    return int(m.group(1)) if m else None


class ExternalCoordinatedLogStore(LogStore):
    """A log store whose commits are arbitrated by an external store.

    Args:
        objects: The object store holding the files; only its overwriting writes and its reads
            are used for commits.
        ttl_seconds: Lifetime of a complete entry (see :data:`DEFAULT_TTL_SECONDS`).
    """

    is_partial_write_visible = False

    def __init__(self, objects: LogStore, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        if ttl_seconds < 0:
            raise ValueError("ttl_seconds must not be negative")
        self.objects = objects
        self.ttl_seconds = ttl_seconds
        #: The newest commit of each table seen complete (lets a commit skip its checks).
        self.known = KnownHeads(ttl_seconds)

    def __repr__(self) -> str:  # the object store only: never a client or its credentials
        return f"{type(self).__name__}({self.objects!r})"

    # ------------------------------------------------------------------ hooks

    @abstractmethod
    def put_entry(self, entry: ExternalCommitEntry, *, overwrite: bool) -> None:
        """Store ``entry``; without ``overwrite`` it must be an atomic create-if-absent.

        Raises:
            FileAlreadyExistsError: ``overwrite`` is false and the entry exists.
        """

    @abstractmethod
    def get_entry(self, table_path: str, file_name: str) -> ExternalCommitEntry | None:
        """The entry for one commit file (strongly consistent read), or ``None``."""

    @abstractmethod
    def get_latest_entry(self, table_path: str) -> ExternalCommitEntry | None:
        """The entry with the greatest file name for the table, or ``None``."""

    def describe_entry(self, entry: ExternalCommitEntry) -> str:
        """Where ``entry`` is stored, for messages a person acts on (table and key)."""
        return (
            f"the external store's entry (tablePath={entry.table_path!r}, "
            f"fileName={entry.file_name!r})"
        )

    def delete_entry_command(self, entry: ExternalCommitEntry) -> str | None:
        """A shell command that deletes ``entry``, when the store has a command-line tool."""
        return None

    # ------------------------------------------------------------------ seams

    def _fault(self, step: str) -> None:
        """Called between the steps of a commit; tests override it to inject failures.

        Steps: ``"temp_written"``, ``"entry_written"``, ``"copied"``, ``"acknowledged"``.
        """

    def _write_temp_file(self, path: str, data: bytes) -> None:
        self.objects.write(path, data, overwrite=True)

    def _copy_temp_file(self, data: bytes, target: str) -> None:
        # The bytes are still in memory: writing them is the copy, without reading back.
        try:
            self.objects.write(target, data, overwrite=False)
        except FileAlreadyExistsError:
            if self.objects.read(target) != data:
                raise ForeignCommitError(
                    f"{target} was written by a writer that does not use this table's external "
                    "commit store (e.g. delta-rs, which dropped S3DynamoDBLogStore support); "
                    "this commit did not land"
                ) from None
            # A concurrent repair already copied our bytes.

    def _put_complete_entry(self, entry: ExternalCommitEntry) -> None:
        self.put_entry(entry.as_complete(self.ttl_seconds), overwrite=True)

    def _fix_copy_temp_file(self, entry: ExternalCommitEntry) -> None:
        data = self.objects.read(entry.absolute_temp_path)
        with contextlib.suppress(FileAlreadyExistsError):  # copied meanwhile: never overwrite
            self.objects.write(entry.file_path, data, overwrite=False)

    def _fix_put_complete_entry(self, entry: ExternalCommitEntry) -> None:
        self.put_entry(entry.as_complete(self.ttl_seconds), overwrite=True)

    # ------------------------------------------------------------------ LogStore

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:  # noqa: D102
        parts = split_log_path(path)
        version = delta_version(parts[2]) if parts else None
        if overwrite:
            self.objects.write(path, data, overwrite=True)
            return
        if parts is None or version is None:
            self.objects.write(path, data, overwrite=False)
            return
        table_path, _, file_name = parts
        entry = ExternalCommitEntry(
            table_path, file_name, f"{TEMP_DIR}/{file_name}.{uuid.uuid4()}", complete=False
        )
        since = self.known.now()
        self._prepare(entry, version, data, checked=self.known.follows(table_path, version))
        try:
            self.put_entry(entry, overwrite=False)
        except FileAlreadyExistsError:
            self.known.forget(table_path)
            self._discard(entry.absolute_temp_path)
            # Help the winner finish, so that the caller can read N.json right away.
            try:
                self._repair(table_path, file_name)
            except OrphanedCommitEntryError:
                raise  # N is taken for good: no later attempt can get past it
            except LogStoreError as exc:
                log.warning("%s: could not finish the winning commit (%s)", path, exc)
            raise FileAlreadyExistsError(f"already exists: {path}") from None
        self._fault("entry_written")
        # The commit is decided. What follows is best effort: any reader repairs it.
        try:
            self._copy_temp_file(data, entry.file_path)
            self._fault("copied")
            self._put_complete_entry(entry)
            self._fault("acknowledged")
            # Nobody could claim N+1 before this entry existed: N+1 was free at ``since``.
            self.known.note(table_path, version, since)
        except ForeignCommitError:
            # Let readers go on (N.json exists), then tell the caller its commit was displaced.
            self._put_complete_entry(entry)
            raise
        except LogStoreError as exc:
            log.warning("%s: committed, but finishing failed (%s); repairing", path, exc)
            try:
                self.fix(entry)
            except LogStoreError as again:
                log.warning("%s: repair deferred to the next reader (%s)", path, again)

    def _prepare(
        self, entry: ExternalCommitEntry, version: int, data: bytes, *, checked: bool = False
    ) -> None:
        """Steps 1 and 2's temp file: everything before the entry, which decides the commit.

        With ``checked`` (:meth:`KnownHeads.follows`) step 1's checks are known to pass.

        Raises:
            FileAlreadyExistsError: ``N.json`` exists.
            OrphanedCommitEntryError: The previous commit's entry cannot be finished.
            WriteNotSentError: A check refused the commit, or failed; nothing can land.
            LogFileNotFoundError: The bucket (or the like) does not exist.
        """
        try:
            if not checked:
                if self.objects.exists(entry.file_path):
                    raise FileAlreadyExistsError(f"already exists: {entry.file_path}")
                self._ensure_previous(entry.table_path, version)
            self._write_temp_file(entry.absolute_temp_path, data)
        except (
            FileAlreadyExistsError,
            LogFileNotFoundError,
            OrphanedCommitEntryError,
            WriteNotSentError,
        ):
            raise
        except LogStoreError as exc:
            raise WriteNotSentError(
                f"cannot commit {entry.file_path}: {exc}; nothing was written (the entry "
                "that decides the commit was never sent)"
            ) from exc
        self._fault("temp_written")

    def _ensure_previous(self, table_path: str, version: int) -> None:
        if version == 0:
            entry = self.get_entry(table_path, f"{0:020d}.json")
            if entry is not None and entry.complete:
                raise WriteNotSentError(
                    f"old entries for {table_path} are still in the external store but "
                    f"{0:020d}.json does not exist; delete them before re-creating the table "
                    "(nothing was written)"
                )
            return
        previous_name = f"{version - 1:020d}.json"
        previous = self.get_entry(table_path, previous_name)
        if previous is not None and not previous.complete:
            self.fix(previous)
        elif not self.objects.exists(f"{table_path}/{LOG_DIR}/{previous_name}"):
            raise PreviousCommitMissingError(
                f"previous commit {previous_name} of {table_path} does not exist; a commit of "
                f"version {version} must follow version {version - 1} (nothing was written)"
            )

    def _discard(self, temp_path: str) -> None:
        try:
            self.objects.delete(temp_path)
        except LogStoreError as exc:  # an orphan temp file is harmless
            log.info("could not delete %s: %s", temp_path, exc)

    def fix(self, entry: ExternalCommitEntry) -> None:
        """Finish an incomplete commit: copy its temp file into place, mark the entry complete.

        Safe to run concurrently from several readers: each copies the same bytes.

        Raises:
            OrphanedCommitEntryError: The temp file is gone and ``N.json`` was never written.
            LogStoreError: The repair still failed after retries.
        """
        if entry.complete:
            return
        copied = False
        for attempt in range(_FIX_ATTEMPTS):
            try:
                if not copied and not self.objects.exists(entry.file_path):
                    self._copy_for_fix(entry)
                copied = True
                self._fix_put_complete_entry(entry)
                log.info("repaired %s", entry.file_path)
                return
            except OrphanedCommitEntryError:
                raise
            except LogStoreError as exc:
                if attempt == _FIX_ATTEMPTS - 1:
                    raise
                log.info("repairing %s: %s; retrying", entry.file_path, exc)

    def _copy_for_fix(self, entry: ExternalCommitEntry) -> None:
        """Copy the temp file of ``entry`` to its commit file, telling an orphaned entry apart.

        Raises:
            OrphanedCommitEntryError: Neither the temp file nor the commit file exists.
        """
        try:
            self._fix_copy_temp_file(entry)
        except LogFileNotFoundError as exc:
            if self.objects.exists(entry.file_path):
                return  # copied meanwhile, and its temp file cleaned up since
            if self.objects.exists(entry.absolute_temp_path):
                raise  # something else is missing (the bucket?)
            raise self._orphaned(entry) from exc

    def _orphaned(self, entry: ExternalCommitEntry) -> OrphanedCommitEntryError:
        version = delta_version(entry.file_name)
        assert version is not None  # only commit files get entries
        where = self.describe_entry(entry)
        command = self.delete_entry_command(entry)
        return OrphanedCommitEntryError(
            f"commit {entry.file_name} of {entry.table_path} cannot be finished: {where} "
            f"records it as incomplete, but {entry.file_path} was never written and the temp "
            f"file holding its content, {entry.absolute_temp_path}, is gone. Reading and "
            "committing fail until the entry is repaired by hand. If nobody has the "
            "commit's content any more, delete the entry"
            + (f" ({command})" if command else "")
            + f"; version {version} is then free again, and that commit is lost. If you have "
            f"its content, write it to {entry.file_path} and then set the entry's complete "
            'attribute to "true". The temp files under _delta_log/.tmp/ must outlive their '
            "commits (an expiry rule on them must be long, as delta-spark's documentation "
            "says).",
            table_path=entry.table_path,
            file_name=entry.file_name,
            version=version,
            commit_path=entry.file_path,
            temp_path=entry.absolute_temp_path,
            entry=where,
        )

    def list_from(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        parts = split_log_path(path)
        if parts is None:
            return self.objects.list_from(path)
        since = self.known.now()
        latest = self.get_latest_entry(parts[0])
        if latest is not None and not latest.complete:
            self.fix(latest)
        listed = list(self.objects.list_from(path))
        newest = max((v for s in listed if (v := delta_version(s.name)) is not None), default=None)
        if latest is not None and newest is not None and delta_version(latest.file_name) == newest:
            # The newest entry (complete now) is the newest commit: nothing after it had an
            # entry when the query ran, or that entry would have been the newest.
            self.known.note(parts[0], newest, since)
        return iter(listed)

    def read(self, path: str) -> bytes:  # noqa: D102
        try:
            return self.objects.read(path)
        except LogFileNotFoundError:
            parts = split_log_path(path)
            if parts is None or delta_version(parts[2]) is None:
                raise
            if not self._repair(parts[0], parts[2]):
                raise
        return self.objects.read(path)

    def _repair(self, table_path: str, file_name: str) -> bool:
        """Finish the commit ``file_name`` if its entry is incomplete; whether there was one."""
        entry = self.get_entry(table_path, file_name)
        if entry is None or entry.complete:
            return False
        self.fix(entry)
        return True

    def expired_temp_files(self, log_path: str, *, now: float | None = None) -> list[FileStatus]:
        """Temp files under ``<log_path>/.tmp`` that no commit can still need.

        A temp file qualifies when it is older than the entry TTL and its commit either completed
        (``N.json`` exists, or a later commit does, which repaired it first) or never happened
        (no entry names it). A temp file that the entry of a not yet copied commit names is
        always kept: repairing that commit needs it.

        Args:
            log_path: The ``_delta_log`` directory.
            now: The current time in epoch seconds (default: the clock).
        """
        table_path = log_path.rstrip("/").rpartition("/")[0]
        cutoff_ms = int(((time.time() if now is None else now) - self.ttl_seconds) * 1000)
        try:
            temps = [
                s
                for s in self.objects.list_from(self.join(log_path, TEMP_DIR, ""))
                if s.modification_time <= cutoff_ms and _TEMP_FILE.match(s.name)
            ]
        except LogFileNotFoundError:
            return []
        if not temps:
            return []
        commits = {
            v
            for s in self.objects.list_from(self.join(log_path, ""))
            if (v := delta_version(s.name)) is not None
        }
        latest = max(commits, default=-1)
        out = []
        for status in temps:
            version = int(status.name[:20])
            if version not in commits and version >= latest:
                entry = self.get_entry(table_path, status.name[: status.name.index(".json") + 5])
                if (
                    entry is not None
                    and not entry.complete
                    and entry.temp_path.endswith(status.name)
                ):
                    continue
            out.append(status)
        return out

    def list_tree(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        return self.objects.list_tree(path)

    def list_tree_where(  # noqa: D102
        self, path: str, keep: Callable[[str], bool]
    ) -> Iterator[FileStatus]:
        return self.objects.list_tree_where(path, keep)

    def delete(self, path: str) -> None:  # noqa: D102
        self.objects.delete(path)

    def delete_many(self, paths: Sequence[str]) -> None:  # noqa: D102
        self.objects.delete_many(paths)

    def stat(self, path: str) -> FileStatus:  # noqa: D102
        return self.objects.stat(path)

    def exists(self, path: str) -> bool:  # noqa: D102
        return self.objects.exists(path)

    def open_input(self, path: str, *, size: int | None = None) -> BinaryIO:  # noqa: D102
        return self.objects.open_input(path, size=size)

    def local_path(self, path: str) -> str | None:  # noqa: D102
        return self.objects.local_path(path)
