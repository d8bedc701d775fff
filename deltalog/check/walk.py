"""The checker's walk over a log: listing, version gaps, and replay with checkpoints."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deltalog.actions import Action, parse_actions
from deltalog.check.actions import ActionChecks
from deltalog.check.checkpoints import CheckpointChecks
from deltalog.check.files import FileChecks
from deltalog.check.findings import CheckReport, Findings
from deltalog.check.state import TableState, compare_checkpoint
from deltalog.errors import MalformedCommitError, TableNotFoundError
from deltalog.paths import commit_name, parse_log_name
from deltalog.segment import Checkpoint, classify
from deltalog.storage import TableStorage
from logstores import FileStatus, LogFileNotFoundError


def check_table(
    uri: str, storage_options: Mapping[str, str] | None = None, *, data_files: bool = True
) -> CheckReport:
    """Check the Delta table at ``uri``; works on logs ``DeltaTable`` refuses to open.

    Args:
        uri: The table location.
        storage_options: Options for the log store.
        data_files: Also check that live data files exist with their logged sizes, and
            report orphans (one recursive listing of the table).

    Returns:
        The findings; ``report.ok`` is true when there is no error.

    Raises:
        TableNotFoundError: There is no Delta log at ``uri``.
        StorageError: The store failed while reading.
    """
    return check_storage(TableStorage.open(uri, storage_options), data_files=data_files)


def check_storage(storage: TableStorage, *, data_files: bool = True) -> CheckReport:
    """Check the table on ``storage``; see :func:`check_table`."""
    return _Walk(storage).run(data_files=data_files)


class _Walk:
    def __init__(self, storage: TableStorage) -> None:
        self.storage = storage
        self.findings = Findings()
        self.checks = ActionChecks(storage.root, self.findings)
        self.checkpoints = CheckpointChecks(storage, self.checks)
        self.files = FileChecks(storage, self.findings)
        self.checked = {"commits": 0, "checkpoints": 0, "actions": 0}

    def run(self, *, data_files: bool) -> CheckReport:
        entries = self.storage.list_log()
        listing = classify(entries)
        latest = listing.latest_version
        if latest is None:
            raise TableNotFoundError(f"no Delta table at {self.storage.uri}: the log is empty")
        self._incomplete_checkpoints(entries)
        self._gaps(set(listing.commits), sorted(listing.checkpoints), latest)
        state = self._replay(listing.commits, listing.checkpoints, latest)
        self.checkpoints.last_checkpoint(listing.checkpoints, latest)
        if data_files and state is not None:
            self.checked["files_listed"] = self.files.data_files(state)
        self.files.log_leftovers()
        if state is not None:
            self.checked["live_files"] = len(state.files)
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

    def _gaps(self, commits: set[int], checkpoints: list[int], latest: int) -> None:
        start = checkpoints[0] + 1 if checkpoints else 0
        present = commits.union(checkpoints)
        for first, last in _runs([v for v in range(start, latest + 1) if v not in present]):
            span = f"version {first}" if first == last else f"versions {first}-{last}"
            where = self.storage.log_file(commit_name(first))
            if first == 0:
                message = f"{span} missing and no checkpoint covers them: the table is unreadable"
                self.findings.report("missing-history", message, first, where)
            else:
                message = f"{span} missing after the oldest retained checkpoint"
                self.findings.report("version-gap", message, first, where)

    def _replay(
        self,
        commits: Mapping[int, FileStatus],
        checkpoints: Mapping[int, list[Checkpoint]],
        latest: int,
    ) -> TableState | None:
        """Walk every version; the state after ``latest``, or ``None`` if replay broke off.

        Replay starts at version 0, or at the first checkpoint that can be read, and starts
        again at the next readable checkpoint after a gap or an unreadable commit.
        """
        first = min([*commits, *checkpoints])
        state = TableState() if first == 0 and 0 in commits else None
        for version in range(first, latest + 1):
            status = commits.get(version)
            if status is not None:
                actions = self._read_commit(version, status.name)
                if actions is None:
                    state = None
                elif state is not None:
                    self.checks.apply(state, version, actions, status.path)
                    if version == 0:
                        self._first_commit(state, status.path)
            elif version not in checkpoints:
                state = None
            for checkpoint in checkpoints.get(version, []):
                loaded = self.checkpoints.load(checkpoint)
                if loaded is None:
                    continue
                self.checked["checkpoints"] += 1
                if state is None:
                    state = loaded
                else:
                    compare_checkpoint(version, state, loaded, self.findings)
        return state

    def _read_commit(self, version: int, name: str) -> list[Action] | None:
        path = self.storage.log_file(name)
        try:
            data = self.storage.read_log_file(name)
        except LogFileNotFoundError:
            return None  # removed by log cleanup after the listing
        self.checked["commits"] += 1
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


def _runs(versions: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs in a sorted list: ``[1, 2, 3, 7]`` → ``[(1, 3), (7, 7)]``."""
    runs: list[tuple[int, int]] = []
    for v in versions:
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs
