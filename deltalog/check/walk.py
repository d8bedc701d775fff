"""The checker's walk over a log: listing, version gaps, and replay with checkpoints."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from deltalog.check.actions import ActionChecks
from deltalog.check.checkpoints import CheckpointChecks
from deltalog.check.checksums import SIZE_CHECKS, check_checksum
from deltalog.check.files import FileChecks
from deltalog.check.findings import CheckReport, Findings
from deltalog.check.lost_commits import empty_commit, gaps_below_checkpoint
from deltalog.check.orphans import OrphanChecks
from deltalog.check.state import TableState, compare_checkpoint
from deltalog.errors import MalformedCommitError, TableNotFoundError
from deltalog.log.segment import Checkpoint, classify, list_entries
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileStatus, LogFileNotFoundError
from deltalog.protocol.actions import Action, parse_actions
from deltalog.protocol.paths import commit_name, parse_log_name

#: ``progress(step, done, total)``: ``step`` is ``"versions"`` (log versions walked).
Progress = Callable[[str, int, int], None]


def check_table(
    uri: str,
    storage_options: Mapping[str, str] | None = None,
    *,
    data_files: bool = True,
    progress: Progress | None = None,
) -> CheckReport:
    """Check the Delta table at ``uri``; works on logs ``DeltaTable`` refuses to open.

    Args:
        uri: The table location.
        storage_options: Options for the log store.
        data_files: Also check that live data files exist with their logged sizes, and
            report orphans (one recursive listing of the table).
        progress: Called after each log version is walked (a long check's progress).

    Returns:
        The findings; ``report.ok`` is true when there is no error.

    Raises:
        TableNotFoundError: There is no Delta log at ``uri``.
        StorageError: The store failed while reading.
    """
    storage = TableStorage.open(uri, storage_options)
    return check_storage(storage, data_files=data_files, progress=progress)


def check_storage(
    storage: TableStorage, *, data_files: bool = True, progress: Progress | None = None
) -> CheckReport:
    """Check the table on ``storage``; see :func:`check_table`."""
    return _Walk(storage, progress).run(data_files=data_files)


class _Walk:
    def __init__(self, storage: TableStorage, progress: Progress | None = None) -> None:
        self.storage = storage
        self.progress = progress
        self.findings = Findings()
        self.checks = ActionChecks(storage.root, self.findings)
        self.checkpoints = CheckpointChecks(storage, self.checks)
        self.files = FileChecks(storage, self.findings)
        self.orphans = OrphanChecks(storage, self.checks.prefix, self.findings)
        self.checked = {"commits": 0, "checkpoints": 0, "actions": 0}
        self.crcs: dict[int, str] = {}
        self.size_checked: set[int] = set()

    def run(self, *, data_files: bool) -> CheckReport:
        entries = list_entries(self.storage)
        listing = classify(entries)
        latest = listing.latest_version
        if latest is None:
            raise TableNotFoundError(f"no Delta table at {self.storage.uri}: the log is empty")
        self._incomplete_checkpoints(entries)
        retained = sorted(v for v in listing.checkpoints if not listing.stranded(v))
        starts = retained or sorted(listing.checkpoints)
        self._gaps(set(listing.commits), starts)
        oldest = starts[0] if starts else None
        gaps_below_checkpoint(self.findings, self.storage, set(listing.commits), oldest)
        self.crcs = {
            int(e.name[:20]): e.name
            for e in entries
            if len(e.name) == 24 and e.name.endswith(".crc") and e.name[:20].isdigit()
        }
        self.size_checked = set(sorted(self.crcs)[-SIZE_CHECKS:])
        state = self._replay(listing.commits, listing.checkpoints)
        self.checkpoints.last_checkpoint(listing.checkpoints, latest)
        if data_files and state is not None:
            self.checked["files_listed"] = self.files.data_files(state)
        self.files.log_leftovers()
        if state is not None:
            self.checked["live_files"] = len(state.files)
        self.checked["checkpoint_rows_checked"] = self.checkpoints.rows_checked
        return CheckReport(self.storage.uri, latest, self.findings.ordered(), self.checked)

    def _incomplete_checkpoints(self, entries: Iterable[FileStatus]) -> None:
        """Multi-part checkpoints with parts missing (``classify`` drops them silently)."""
        parts: dict[tuple[int, int], set[int]] = {}
        for entry in entries:
            parsed = parse_log_name(entry.name)
            if parsed is not None and parsed.kind == "multipart":
                parts.setdefault((parsed.version, parsed.parts), set()).add(parsed.part)
        for (version, count), found in sorted(parts.items()):
            missing = sorted(set(range(1, count + 1)) - found)
            if missing:
                self.findings.report(
                    "incomplete-checkpoint",
                    f"checkpoint {version} in {count} parts lacks part(s) {missing}; "
                    "readers ignore it",
                    version,
                    None,
                )

    def _gaps(self, commits: set[int], checkpoints: list[int]) -> None:
        """Report missing versions after the oldest checkpoint not stranded by log cleanup."""
        start = checkpoints[0] + 1 if checkpoints else 0
        # Only the versions present are walked: a bogus name such as 99999999999999999999.json
        # makes one huge gap, not a loop over every version in between.
        present = sorted(v for v in commits.union(checkpoints) if v >= start)
        for first, last in _holes(start, present):
            span = f"version {first}" if first == last else f"versions {first}-{last}"
            where = self.storage.log_file(commit_name(first))
            if first == 0:
                message = f"{span} missing and no checkpoint covers them: the table is unreadable"
                self.findings.report("missing-history", message, first, where)
            else:
                after = " after the oldest retained checkpoint" if checkpoints else ""
                self.findings.report("version-gap", f"{span} missing{after}", first, where)

    def _replay(
        self,
        commits: Mapping[int, FileStatus],
        checkpoints: Mapping[int, list[Checkpoint]],
    ) -> TableState | None:
        """Walk every version; the state after the latest, or ``None`` if replay broke off.

        Replay starts at version 0, or at the first checkpoint that can be read, and starts
        again at the next readable checkpoint after a gap or an unreadable commit.
        """
        state = TableState() if 0 in commits else None
        previous = -1
        versions = sorted(commits.keys() | checkpoints.keys())
        for done, version in enumerate(versions, 1):
            if version != previous + 1:
                state = None  # a gap: replay resumes at the next readable checkpoint
            previous = version
            status = commits.get(version)
            if status is not None:
                actions = self._read_commit(version, status.name)
                if actions is not None:
                    self.orphans.commit_read(version, status, actions, applied=state is not None)
                if actions is None:
                    state = None
                elif state is not None:
                    self.checks.apply(state, version, actions, status.path)
                    if version == 0:
                        self._first_commit(state, status.path)
            loaded_any = False
            for checkpoint in checkpoints.get(version, []):
                loaded = self.checkpoints.load(checkpoint, state)
                if loaded is None:
                    continue
                loaded_any = True
                self.checked["checkpoints"] += 1
                if state is None:
                    state = loaded.state
                else:
                    compare_checkpoint(
                        version, state, loaded.state, self.findings, same_files=loaded.same_files
                    )
            if loaded_any:
                self.orphans.checkpoint_loaded(version, checkpoints[version])
            if status is None and not loaded_any:
                state = None  # neither the commit nor a checkpoint gives this version
            crc = self.crcs.get(version)
            if crc is not None and state is not None:
                size = version in self.size_checked
                if check_checksum(
                    self.storage, version, crc, state, self.findings, check_size=size
                ):
                    self.checked["checksums"] = self.checked.get("checksums", 0) + 1
            if self.progress is not None:
                self.progress("versions", done, len(versions))
        return state

    def _read_commit(self, version: int, name: str) -> list[Action] | None:
        path = self.storage.log_file(name)
        try:
            data = self.storage.read_log_file(name)
        except LogFileNotFoundError:
            return None  # removed by log cleanup after the listing
        self.checked["commits"] += 1
        if empty_commit(self.findings, version, data, path):
            return None
        try:
            actions = parse_actions(data, version=version, path=path)
        except MalformedCommitError as exc:
            self.findings.report("malformed-commit", str(exc), version, path)
            return None
        self.checked["actions"] += len(actions)
        self.checks.action_set(version, path, actions)
        return actions

    def _first_commit(self, state: TableState, path: str) -> None:
        if state.protocol is None:
            self.findings.report("missing-protocol", "version 0 has no protocol", 0, path)
        if state.metadata is None:
            self.findings.report("missing-metadata", "version 0 has no metaData", 0, path)


def _holes(start: int, present: list[int]) -> list[tuple[int, int]]:
    """Missing runs from ``start`` up to the last of the sorted ``present``.

    ``_holes(0, [0, 1, 4, 5, 7])`` is ``[(2, 3), (6, 6)]``.
    """
    holes: list[tuple[int, int]] = []
    expected = start
    for v in present:
        if v > expected:
            holes.append((expected, v - 1))
        expected = v + 1
    return holes
