"""Data files against the replayed state: present, of the logged size, and orphans."""

from __future__ import annotations

from deltalog.check.findings import Findings
from deltalog.check.state import TableState
from deltalog.errors import InvalidPathError
from deltalog.log.root_paths import RootResolver
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.paths import LOG_DIR, check_action_path


class FileChecks:
    """Checks the files under a table root.

    Args:
        storage: The table's storage.
        findings: Where problems go.
    """

    def __init__(self, storage: TableStorage, findings: Findings) -> None:
        self.storage = storage
        self.findings = findings
        self.root = storage.root.rstrip("/")

    def data_files(self, state: TableState) -> int:
        """Every live file exists with its logged size; unreferenced files are orphans.

        Returns:
            How many files the listing of the table root found.
        """
        tree = self._list(self.root)
        inside = self.root + "/"
        resolver = RootResolver(self.storage)
        referenced: set[str] = set()

        def listed(location: str) -> str:
            """The listing's spelling of ``location`` (another spelling resolved), recorded."""
            referenced.add(location)
            if location not in tree:
                resolved = resolver.resolve(location)
                if resolved is not None:
                    referenced.add(resolved)
                    return resolved
            return location

        for file in state.files.values():
            if not _safe(file.path, self.root):
                continue  # reported as unsafe-path; never followed
            location = self.storage.locate(file.path)
            size = tree.get(listed(location))
            if size is None:  # outside the root, under a symlinked directory, or missing
                size = self._size(location)
            if size is None:
                message = f"live file {file.path!r} (added in version {file.version}) is missing"
                self.findings.report("missing-file", message, file.version, location)
            elif size != file.size:
                message = f"live file {file.path!r} holds {size} bytes, the log says {file.size}"
                self.findings.report("size-mismatch", message, file.version, location)
        for path in state.removed:
            if _safe(path, self.root):
                listed(self.storage.locate(path))
        columns = set(state.metadata.partition_columns) if state.metadata else set()
        for location in sorted(tree.keys() - referenced):
            relative = location[len(inside) :]
            name = relative.rsplit("/", 1)[-1]
            if not location.startswith(inside) or _hidden(relative, columns):
                continue
            if name.startswith("deletion_vector_"):
                continue  # referenced through a deletion vector descriptor, not a path
            self.findings.report(
                "orphan-file",
                f"{relative} is not referenced by the log (uncommitted, or removed, not vacuumed)",
                None,
                location,
            )
        return len(tree)

    def log_leftovers(self) -> None:
        """Temp files of log writes that never completed (or whose commit lost a race)."""
        log_path = self.storage.log_path
        for location in self._list(log_path):
            relative = location[len(log_path) + 1 :]
            name = relative.rsplit("/", 1)[-1]
            if relative.startswith(".tmp/") or (name.startswith(".") and name.endswith(".tmp")):
                message = f"{LOG_DIR}/{relative} is a temp file of a log write"
                self.findings.report("orphan-log-file", message, None, location)

    def _list(self, directory: str) -> dict[str, int]:
        try:
            with storage_errors(f"cannot list {directory}"):
                return {s.path: s.size for s in self.storage.store.list_tree(directory)}
        except LogFileNotFoundError:
            return {}

    def _size(self, location: str) -> int | None:
        if "\x00" in location:
            return None  # no store holds such a name (and os.stat raises ValueError on it)
        try:
            with storage_errors(f"cannot stat {location}"):
                return self.storage.store.stat(location).size
        except LogFileNotFoundError:
            return None


def _safe(action_path: str, root: str) -> bool:
    try:
        check_action_path(action_path, root)
    except InvalidPathError:
        return False
    return True


def _hidden(relative: str, partition_columns: set[str]) -> bool:
    """Whether Delta ignores a path: a segment starts with ``_`` or ``.`` and is no partition."""
    for segment in relative.split("/"):
        if segment.startswith(("_", ".")):
            name, eq, _ = segment.partition("=")
            if not (eq and name in partition_columns):
                return True
    return False
