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

Every path is compared in one form (:class:`deltalog.log.root_paths.RootResolver`): decoded,
without empty or ``.`` segments, and on a local store with its directories' symlinks resolved
and spelled under the root. So a live file stays however the log spells it (``a//f``, ``./a/f``,
an absolute path through an alias of the root), and a location goes only if it resolves inside
the root's real path: a symlinked directory is never followed out of it (full mode does not
enter one; lite mode resolves what the log names).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import storage_errors
from deltalog.log.table_paths import TablePaths
from deltalog.logstores import FileStatus, LogFileNotFoundError
from deltalog.protocol.actions import AddCDCFile, RemoveFile


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file vacuum may delete: its location in the store's notation and its size."""

    location: str
    size: int


def needed_locations(paths: TablePaths, snapshot: Snapshot, delete_before_ms: int) -> set[str]:
    """Locations a vacuum must keep: live files, unexpired tombstones, their deletion vectors."""
    files = snapshot.files_without_stats()
    tombstones = snapshot.tombstones
    if tombstones.num_rows:
        stamp = pc.fill_null(tombstones.column("deletion_timestamp"), av.int64(0))
        tombstones = tombstones.filter(pc.greater_equal(stamp, av.int64(delete_before_ms)))
    return file_locations(
        paths, [(t.column("path"), t.column("deletion_vector")) for t in (files, tombstones)]
    )


#: Action paths, as an Arrow column.
PathColumn: TypeAlias = pa.Array | pa.ChunkedArray
#: Their deletion vectors, as an Arrow column or as the actions hold them.
DvColumn: TypeAlias = pa.Array | pa.ChunkedArray | Sequence[dict[str, Any] | None]


def file_locations(paths: TablePaths, columns: Iterable[tuple[PathColumn, DvColumn]]) -> set[str]:
    """Every location a vacuum must keep for the files that action paths and DVs name.

    The file as ``locate`` reads the path, also as delta-spark reads a raw ``?`` or ``#``,
    its deletion-vector file, and each of those spelled under the root where a directory
    resolves there (:meth:`TablePaths.with_resolved`).
    """
    arrays: list[pa.Array] = []
    extra: list[str] = []
    for path_column, dvs in columns:
        arrays.append(paths.location_array(path_column))
        extra += _uri_readings(path_column, paths)
        if isinstance(dvs, pa.Array | pa.ChunkedArray):
            if dvs.null_count == len(dvs):
                continue
            dvs = dvs.drop_null().to_pylist()
        for dv in dvs:
            location = paths.dv_location(dv)
            if location is not None:
                extra.append(location)
    arrays = [a.cast(pa.string()) for a in (*arrays, av.strings(extra)) if len(a)]
    if not arrays:
        return set()
    return paths.with_resolved(pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0])


def _uri_readings(column: pa.ChunkedArray | pa.Array, paths: TablePaths) -> list[str]:
    """Where delta-spark reads paths with a raw ``?`` or ``#``: without that URI suffix.

    deltalog (as delta-rs) takes them as part of the name; a vacuum keeps both files.
    """
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not len(array) or not pc.any(pc.match_substring_regex(array, "[?#]")).as_py():
        return []
    found = []
    for path in array.filter(pc.match_substring_regex(array, "[?#]")).to_pylist():
        stem = path.split("#", 1)[0].split("?", 1)[0]
        if stem:
            found.append(paths.storage.locate(stem))
    return found


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
    # The walk enters no symlinked directory; one that became one since is skipped.
    moved = {d for d in hidden_dirs if paths.resolver.directory(d) != d + "/"}
    out = [
        Candidate(s.path, s.size)
        for s in tree
        if s.modification_time < delete_before_ms
        and not (moved and s.path.rpartition("/")[0] in moved)
    ]
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
            if location is None or location in needed:
                continue
            resolved = paths.deletable(location)
            if resolved is None or resolved in needed or resolved in found:
                continue
            if paths.resolver.local and os.path.isdir(resolved):
                continue  # a directory (or a link to one) is no file of the table
            found[resolved] = Candidate(resolved, size)
    return sorted(found.values(), key=lambda c: c.location)
