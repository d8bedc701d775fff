"""Find which log files rebuild a version: a checkpoint (if any) and the commits after it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from deltalog.checkpoints.errors import CheckpointFormatError
from deltalog.checkpoints.last_checkpoint import LastCheckpoint, parse_last_checkpoint
from deltalog.errors import TableNotFoundError, VersionGapError, VersionNotFoundError
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileStatus
from deltalog.protocol.paths import commit_name, parse_log_name


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One complete checkpoint: its version and its files (every part, in order)."""

    version: int
    files: tuple[FileStatus, ...]

    @property
    def name(self) -> str:
        """Its first file's name, which tells it from the other checkpoints of its version."""
        return self.files[0].name


@dataclass(frozen=True, slots=True)
class LogListing:
    """What a listing of ``_delta_log`` found.

    Attributes:
        commits: Commit files by version.
        checkpoints: Complete checkpoints by version, best first within a version.
        complete: Whether the listing started at the beginning of the log (``False`` when it
            started at ``_last_checkpoint``'s version).
        hint: ``_last_checkpoint`` as read before listing, when it parsed.
    """

    commits: dict[int, FileStatus]
    checkpoints: dict[int, list[Checkpoint]]
    complete: bool = True
    hint: LastCheckpoint | None = None

    @property
    def latest_version(self) -> int | None:
        """Newest version the listing can reach, or ``None`` when it holds no table."""
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None

    def stranded(self, version: int) -> bool:
        """Whether the checkpoint at ``version`` lies below a log cleanup boundary.

        Such a checkpoint (typically a background checkpoint that finished after another
        writer's log cleanup) has neither its own commit nor the next one around it, while a
        newer checkpoint exists: the versions after it were cleaned up, they are not a gap.
        """
        return (
            version not in self.commits
            and version + 1 not in self.commits
            and any(v > version for v in self.checkpoints)
        )


@dataclass(frozen=True, slots=True)
class LogSegment:
    """The files that rebuild ``version``: ``checkpoint`` (or none) then ``commits`` in order."""

    version: int
    checkpoint: Checkpoint | None
    commits: tuple[FileStatus, ...]
    #: The commit file of ``version`` itself when the listing has it (its time is the
    #: version's time, also when ``version`` is rebuilt from a checkpoint alone).
    version_commit: FileStatus | None = None
    #: ``_last_checkpoint`` when it names ``checkpoint`` itself (its counts are checked).
    hint: LastCheckpoint | None = None

    @property
    def start_version(self) -> int:
        """First version replayed from JSON."""
        return self.checkpoint.version + 1 if self.checkpoint else 0


def _kind_rank(checkpoint: Checkpoint) -> int:
    parsed = parse_log_name(checkpoint.name)
    kind = parsed.kind if parsed is not None else ""
    return {"v2checkpoint": 2, "multipart": 1}.get(kind, 0)


def names_checkpoint(hint: LastCheckpoint, checkpoint: Checkpoint) -> bool:
    """Whether ``_last_checkpoint`` (``hint``) describes ``checkpoint`` itself.

    It names a V2 checkpoint by its file (``v2Checkpoint.path``), a multi-part one by its
    ``parts``, and otherwise the classic ``<version>.checkpoint.parquet``.
    """
    if hint.version != checkpoint.version:
        return False
    v2 = hint.extra.get("v2Checkpoint")
    path = v2.get("path") if isinstance(v2, dict) else None
    if isinstance(path, str):
        return len(checkpoint.files) == 1 and checkpoint.name == path.rsplit("/", 1)[-1]
    rank = _kind_rank(checkpoint)
    if hint.parts is not None:
        return rank == 1 and len(checkpoint.files) == hint.parts
    return rank == 0


def order_checkpoints(
    checkpoints: Iterable[Checkpoint], hint: LastCheckpoint | None = None
) -> list[Checkpoint]:
    """Checkpoints of one version, the one to try first first.

    The one ``_last_checkpoint`` names leads; the others follow in delta-spark's order (which
    delta-rs shares): UUID-named V2 checkpoints by descending file name, then multi-part ones
    by descending part count, then the classic one. A reader that cannot use one (a sidecar
    missing, a file unreadable) tries the next before any older version.
    """
    ordered = sorted(checkpoints, key=lambda c: (_kind_rank(c), len(c.files), c.name), reverse=True)
    if hint is not None:
        ordered.sort(key=lambda c: not names_checkpoint(hint, c))  # stable: the rest keep order
    return ordered


def classify(entries: Iterable[FileStatus], hint: LastCheckpoint | None = None) -> LogListing:
    """Sort a listing into commits and complete checkpoints (incomplete multi-part sets dropped).

    The checkpoints of each version come in :func:`order_checkpoints`'s order for ``hint``.
    """
    commits: dict[int, FileStatus] = {}
    singles: dict[int, list[Checkpoint]] = defaultdict(list)
    parts: dict[tuple[int, int], dict[int, FileStatus]] = defaultdict(dict)
    for entry in entries:
        parsed = parse_log_name(entry.name)
        if parsed is None:
            continue
        if parsed.kind == "commit":
            commits[parsed.version] = entry
        elif parsed.kind == "multipart":
            parts[(parsed.version, parsed.parts)][parsed.part] = entry
        else:
            singles[parsed.version].append(Checkpoint(parsed.version, (entry,)))
    for (version, count), found in parts.items():
        if sorted(found) == list(range(1, count + 1)):
            files = tuple(found[i] for i in range(1, count + 1))
            singles[version].append(Checkpoint(version, files))
    ordered = {v: order_checkpoints(cps, hint) for v, cps in singles.items()}
    return LogListing(commits, ordered)


#: Listings taken before a hole in the commit versions is believed.
LISTING_ATTEMPTS = 4


def _has_hole(entries: Iterable[FileStatus]) -> bool:
    versions = {
        parsed.version
        for entry in entries
        if (parsed := parse_log_name(entry.name)) is not None and parsed.kind == "commit"
    }
    return bool(versions) and len(versions) != max(versions) - min(versions) + 1


def list_entries(storage: TableStorage, start_name: str = "") -> list[FileStatus]:
    """List ``_delta_log`` from ``start_name``, re-listing (bounded) while commits have a hole.

    A directory listing is not a snapshot: taken while a writer creates ``N.json`` and then
    ``N+1.json`` (and their temporary files), it can show ``N+1`` without ``N``. A commit is
    only created after its predecessor exists, so a fresh listing shows ``N``; a hole that
    persists over :data:`LISTING_ATTEMPTS` listings is real and left for the caller to report.

    Raises:
        TableNotFoundError: There is no ``_delta_log`` directory.
    """
    entries = storage.list_log(start_name)
    for _ in range(LISTING_ATTEMPTS - 1):
        if not _has_hole(entries):
            break
        entries = storage.list_log(start_name)
    return entries


def list_log(storage: TableStorage, *, use_hint: bool = True) -> LogListing:
    """List ``_delta_log``, starting at ``_last_checkpoint``'s version when it is usable.

    A hint that is unparseable, or names a checkpoint the listing does not show complete, is
    ignored and the whole log is listed.

    Raises:
        TableNotFoundError: No ``_delta_log`` or nothing in it.
    """
    raw = storage.read_last_checkpoint()
    hint = None
    if raw is not None:
        try:
            hint = parse_last_checkpoint(raw)
        except CheckpointFormatError:
            hint = None
    if use_hint and hint is not None:
        listing = classify(list_entries(storage, commit_name(hint.version)[:20]), hint)
        if hint.version in listing.checkpoints:
            return LogListing(listing.commits, listing.checkpoints, complete=False, hint=hint)
    listing = classify(list_entries(storage), hint)
    if listing.latest_version is None:
        raise TableNotFoundError(f"no Delta table at {storage.uri}: {storage.log_path} is empty")
    return LogListing(listing.commits, listing.checkpoints, hint=hint)


def build_segment(
    listing: LogListing, version: int | None = None, *, exclude: frozenset[str] = frozenset()
) -> LogSegment:
    """Choose the newest usable checkpoint at or before ``version`` and the commits after it.

    Among the checkpoints of one version, the first in the listing's order that is not
    excluded is chosen (see :func:`order_checkpoints`).

    Args:
        listing: A listing of the log.
        version: The version to rebuild; ``None`` for the latest.
        exclude: Checkpoints known to be unreadable, by :attr:`Checkpoint.name`.

    Raises:
        VersionNotFoundError: ``version`` is newer than the log, or older than what remains.
        VersionGapError: A commit needed for ``version`` is missing.
    """
    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError("the log holds no commit")
    target = latest if version is None else version
    if target < 0 or target > latest:
        raise VersionNotFoundError(
            f"version {target} does not exist (latest is {latest})", version=target
        )
    newest_first = sorted((v for v in listing.checkpoints if v <= target), reverse=True)
    usable = (c for v in newest_first for c in listing.checkpoints[v] if c.name not in exclude)
    checkpoint = next(usable, None)
    start = checkpoint.version + 1 if checkpoint else 0
    needed = range(start, target + 1)
    missing = [v for v in needed if v not in listing.commits]
    if missing:
        present = [v for v in needed if v in listing.commits]
        cleaned = checkpoint is not None and listing.stranded(checkpoint.version)
        if cleaned or (checkpoint is None and (not present or missing[-1] < present[0])):
            raise VersionNotFoundError(
                f"version {target} cannot be rebuilt: commits before {missing[-1] + 1} are gone "
                "and no checkpoint covers them",
                version=target,
            )
        raise VersionGapError(
            f"the log is missing commit {missing[0]} (needed to rebuild version {target})",
            version=missing[0],
        )
    commits = tuple(listing.commits[v] for v in needed)
    hint = listing.hint
    if checkpoint is None or hint is None or not names_checkpoint(hint, checkpoint):
        hint = None  # its counts describe another checkpoint (tombstones may differ)
    return LogSegment(target, checkpoint, commits, listing.commits.get(target), hint)


def commit_times(listing: LogListing) -> dict[int, int]:
    """Each commit's time: its file's modification time, raised to one past the previous.

    This is the commit timestamp delta-spark's history and time travel use.
    """
    out: dict[int, int] = {}
    previous = -1
    for v in sorted(listing.commits):
        previous = max(listing.commits[v].modification_time, previous + 1)
        out[v] = previous
    return out
