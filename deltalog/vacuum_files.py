"""Which files a vacuum may delete: what the snapshot still needs, and the candidates.

delta-spark's rules (``VacuumCommand``):

* **Needed** are every live file, every tombstone not yet expired (deleted at or after the
  cutoff), and the deletion-vector files of both. Paths outside the table root are never
  candidates, whatever the log says.
* **Hidden** names are never touched: a path segment starting with ``_`` or ``.`` (so
  ``_delta_log`` and everything in it), except partition directories (``col=value``) and
  delta-spark's ``_change_data`` (change data feed files, which vacuum expires) and
  ``_delta_index`` directories; ``metadata`` too when Iceberg metadata is generated.
* **Full** mode lists the table directory and takes every file that is not needed, not hidden,
  and last modified before the cutoff: also files no commit ever named (a dead Spark task's).
* **Lite** mode reads the ``remove`` (and ``cdc``) actions of the commits between the last
  vacuum's window and the newest commit before the cutoff, instead of listing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog import arrow_values as av
from deltalog.actions import AddCDCFile, RemoveFile
from deltalog.deletion_vectors import dv_file_path
from deltalog.errors import DeletionVectorError, InvalidPathError
from deltalog.logstores import FileStatus, LogFileNotFoundError
from deltalog.paths import check_action_path
from deltalog.snapshot import Snapshot
from deltalog.storage import TableStorage, storage_errors


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file vacuum may delete: its location in the store's notation and its size."""

    location: str
    size: int


class TablePaths:
    """Locations of a table's files, and its hidden-name rule.

    Args:
        storage: The table's storage.
        snapshot: The snapshot whose partition columns and properties apply.
    """

    def __init__(self, storage: TableStorage, snapshot: Snapshot) -> None:
        self.storage = storage
        self.root = storage.root.rstrip("/") + "/"
        self.partition_prefixes = tuple(f"{c}=" for c in snapshot.partition_columns)
        formats = snapshot.configuration.get("delta.universalFormat.enabledFormats") or ""
        self.iceberg = "iceberg" in formats.lower()

    def inside(self, location: str) -> str | None:
        """``location`` relative to the root, or ``None`` when it is not under the root."""
        return location[len(self.root) :] if location.startswith(self.root) else None

    def hidden(self, relative: str) -> bool:
        """Whether any segment of a relative path is hidden (see the module docstring)."""
        for segment in relative.split("/"):
            if self.iceberg and segment == "metadata":
                return True
            if (
                segment[:1] in ("_", ".")
                and not segment.startswith(("_delta_index", "_change_data"))
                and not (self.partition_prefixes and segment.startswith(self.partition_prefixes))
            ):
                return True
        return False

    def locations(self, paths: pa.Array | pa.ChunkedArray) -> list[str]:
        """Where the files that action paths name are (decoded, joined to the root)."""
        array = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
        if not len(array):
            return []
        special = pc.or_(
            pc.or_(pc.match_substring(array, "%"), pc.starts_with(array, "/")),
            pc.match_substring(array, ":"),
        )
        if not pc.any(special).as_py():
            joined: list[str] = pc.binary_join_element_wise(
                av.string(self.root), array, av.string("")
            ).to_pylist()
            return joined
        return [self.storage.locate(p) for p in array.to_pylist()]

    def safe_location(self, action_path: str) -> str | None:
        """The location of an action's path when it is safe to act on, else ``None``."""
        try:
            check_action_path(action_path, self.root.rstrip("/"))
        except InvalidPathError:
            return None
        return self.storage.locate(action_path)

    def dv_location(self, dv: dict[str, Any] | None) -> str | None:
        """The file of an on-disk deletion vector (``None`` for inline, none or malformed)."""
        if not dv:
            return None
        try:
            path = dv_file_path(dv)
        except DeletionVectorError:
            return None
        if path is None:
            return None
        if dv.get("storageType") == "p":
            return self.safe_location(path)
        return f"{self.root}{path}"


def needed_locations(paths: TablePaths, snapshot: Snapshot, delete_before_ms: int) -> set[str]:
    """Locations a vacuum must keep: live files, unexpired tombstones, their deletion vectors."""
    files = snapshot.files_without_stats()
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        stamp = pc.fill_null(tombstones.column("deletion_timestamp"), av.int64(0))
        tombstones = tombstones.filter(pc.greater_equal(stamp, av.int64(delete_before_ms)))
    needed = set(paths.locations(files.column("path")))
    needed.update(paths.locations(tombstones.column("path")))
    for table in (files, tombstones):
        dvs = table.column("deletion_vector")
        if dvs.null_count == len(dvs):
            continue
        for dv in dvs.drop_null().to_pylist():
            location = paths.dv_location(dv)
            if location is not None:
                needed.add(location)
    return needed


@dataclass(frozen=True)
class Listing:
    """What a full vacuum found under the root.

    Attributes:
        candidates: Files to delete, in path order.
        directories: Directories seen (plus the root), as delta-spark counts them.
        files: Files seen outside hidden directories.
    """

    candidates: list[Candidate]
    directories: int
    files: int


def full_candidates(paths: TablePaths, needed: set[str], delete_before_ms: int) -> Listing:
    """List the table directory and pick what full vacuum deletes.

    Only files that are neither hidden nor needed have their size and modification time
    fetched (a filesystem ``stat``), so a table of mostly live files lists quickly.

    Raises:
        StorageError: The store failed.
    """
    storage = paths.storage
    hidden_dirs: dict[str, bool] = {}
    visible_dirs: list[str] = []  # one entry per visible file: list.append is thread-safe
    root, skip = paths.root, len(paths.root)
    seen = visible_dirs.append

    def keep(location: str) -> bool:  # called once per file under the root: kept lean
        if not location.startswith(root):
            return False
        directory, _, name = location.rpartition("/")
        hidden = hidden_dirs.get(directory)
        if hidden is None:
            relative = directory[skip:]
            hidden = hidden_dirs[directory] = bool(relative) and paths.hidden(relative)
        if hidden or (name[:1] in ("_", ".") and paths.hidden(name)):
            return False
        seen(directory)
        return location not in needed

    try:
        with storage_errors(f"cannot list {storage.root}"):
            tree: Iterable[FileStatus] = list(storage.store.list_tree_where(storage.root, keep))
    except LogFileNotFoundError:
        tree = []
    out = [Candidate(s.path, s.size) for s in tree if s.modification_time < delete_before_ms]
    directories = {d[len(root) :] for d in set(visible_dirs) if len(d) >= len(root)}
    return Listing(out, _with_ancestors(directories) + 1, len(visible_dirs))


def _with_ancestors(directories: set[str]) -> int:
    every = set(directories)
    for directory in directories:
        while "/" in directory:
            directory = directory.rpartition("/")[0]
            every.add(directory)
    return len(every)


def lite_candidates(
    paths: TablePaths,
    needed: set[str],
    delete_before_ms: int,
    actions: Iterable[RemoveFile | AddCDCFile],
) -> list[Candidate]:
    """Pick what lite vacuum deletes from the ``remove`` and ``cdc`` actions of old commits.

    A removed file counts as modified at its ``deletionTimestamp`` and a change data file at 0,
    as in delta-spark.
    """
    found: dict[str, Candidate] = {}
    for action in actions:
        if isinstance(action, RemoveFile):
            stamp = action.deletion_timestamp or 0
            entries = [(action.path, action.size or 0)]
            dv_location = paths.dv_location(action.deletion_vector)
            if dv_location is not None:
                dv_size = (action.deletion_vector or {}).get("sizeInBytes")
                entries.append((dv_location, dv_size if isinstance(dv_size, int) else 0))
        else:
            stamp = 0
            entries = [(action.path, action.size or 0)]
        if stamp >= delete_before_ms:
            continue
        for i, (path, size) in enumerate(entries):
            location = path if i else paths.safe_location(path)
            if location is None or location in needed or location in found:
                continue
            relative = paths.inside(location)
            if relative is None or paths.hidden(relative):
                continue
            found[location] = Candidate(location, size)
    return sorted(found.values(), key=lambda c: c.location)
