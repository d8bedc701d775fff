"""Where a table's files are: action paths to locations, under one spelling, and hidden names.

:class:`TablePaths` turns the paths the log names (relative, percent-encoded, absolute, URIs,
with empty or ``.`` segments) into locations in the store's notation, the same way the reader
opens them (:meth:`~deltalog.log.storage.TableStorage.locate`), resolves a local location's
directories the way ``realpath`` does (:class:`~deltalog.log.root_paths.RootResolver`) to tell
whether it is inside the table root, and knows the protocol's hidden-name rule (a segment
starting with ``_`` or ``.``, except partition directories and delta-spark's ``_change_data``
and ``_delta_index``). VACUUM, the writer's vacuum fence and ``check`` all locate files here, so
they cannot disagree about which file a path names.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import DeletionVectorError, InvalidPathError
from deltalog.log.root_paths import RootResolver
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.deletion_vectors import dv_file_path
from deltalog.protocol.paths import check_action_path

#: Action paths :meth:`TableStorage.locate` must read: percent-encoded, absolute or a URI, with
#: empty or ``.`` segments, or ending in ``/``.
_SPELLED_OTHERWISE = r"[%:]|^/|//|/$|(^|/)\.(/|$)"


class TablePaths:
    """Locations of a table's files, and its hidden-name rule.

    Args:
        storage: The table's storage.
        snapshot: The snapshot whose partition columns and properties apply.
    """

    def __init__(self, storage: TableStorage, snapshot: Snapshot) -> None:
        self.storage = storage
        self.resolver = RootResolver(storage)
        self.root = self.resolver.root
        self.partition_prefixes = tuple(f"{c}=" for c in snapshot.partition_columns)
        formats = snapshot.configuration.get("delta.universalFormat.enabledFormats") or ""
        self.iceberg = "iceberg" in formats.lower()

    def inside(self, location: str) -> str | None:
        """``location`` relative to the root, or ``None`` when it is not under the root.

        Lexical: the resolved form is :meth:`deletable`'s business.
        """
        return location[len(self.root) :] if location.startswith(self.root) else None

    def deletable(self, location: str) -> str | None:
        """Where ``location`` is, spelled under the root, if a vacuum may delete it.

        ``None`` when it resolves outside the root (through a symlinked directory or an alias),
        is the root itself or a directory spelling, or is hidden as spelled or as resolved.
        """
        resolved = self.resolver.resolve(location)
        if resolved is None or self.hidden(resolved[len(self.root) :]):
            return None
        relative = self.inside(location)
        if relative is None or relative == resolved[len(self.root) :]:
            return resolved
        return None if self.hidden(relative) else resolved

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
        """Where the files that action paths name are (see :meth:`TableStorage.locate`)."""
        located: list[str] = self.location_array(paths).to_pylist()
        return located

    def location_array(self, paths: pa.Array | pa.ChunkedArray) -> pa.Array:
        """:meth:`locations` as an Arrow array.

        A path spelled plainly (relative, no ``%``, ``:``, empty or ``.`` segments) is joined
        to the root in one kernel; any other goes through :meth:`TableStorage.locate`.
        """
        array = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
        if not len(array):
            return av.strings([])
        if not pc.any(pc.match_substring_regex(array, _SPELLED_OTHERWISE)).as_py():
            return pc.binary_join_element_wise(av.string(self.root), array, av.string(""))
        return av.strings([self.storage.locate(p) for p in array.to_pylist()])

    def with_resolved(self, locations: pa.Array) -> set[str]:
        """``locations`` plus their spelling under the root where a directory resolves there.

        That is a path through an alias of the root or a symlinked directory of the table.
        One ``lstat`` per directory; nothing more when no directory resolves elsewhere.
        """
        found = set(locations.to_pylist())
        if not self.resolver.local or not len(locations):
            return found
        split = pc.split_pattern(locations, "/", max_splits=1, reverse=True)
        directories = pc.list_element(split, av.int64(0))
        moved: dict[str, str] = {}
        for directory in pc.unique(directories).to_pylist():
            if directory is None:
                continue
            under = self.resolver.directory(directory)
            if under is not None and under != directory + "/":
                moved[directory] = under
        if moved:
            hit = pc.is_in(directories, value_set=av.strings(list(moved)))
            for location in locations.filter(hit).to_pylist():
                directory, slash, name = location.rpartition("/")
                if slash and directory in moved:
                    found.add(moved[directory] + name)
        return found

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
