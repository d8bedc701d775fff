"""Where a data file really is, relative to the table root: one location per file.

Locations come from :meth:`TableStorage.locate` (decoded, empty and ``.`` segments dropped).
On a local store two spellings can still name one file through symlinks: an absolute path
through an alias of the root (``/data/current/t/x`` for ``/data/2024/t/x``), or a directory of
the table that is a symlink (``<root>/archive -> /elsewhere``). :class:`RootResolver` follows
them: every directory is resolved as ``realpath`` resolves it, and a location whose directory
lands inside the root's real path is re-spelled under the root (as a listing of the root spells
it); one that lands elsewhere is outside, whatever its spelling. The last component is not
followed: deleting a symlinked file deletes the link, never its target. On object stores there
are no symlinks and the spelling decides.
"""

from __future__ import annotations

import errno
import os
import stat

from deltalog.log.storage import TableStorage

_OUTSIDE = ""


class RootResolver:
    """Resolves locations against a table root (see the module docstring).

    Args:
        storage: The table's storage.
    """

    def __init__(self, storage: TableStorage) -> None:
        self.root = storage.root.rstrip("/") + "/"
        local = storage.store.local_path(storage.root)
        self.local = local is not None
        self._real_root = _real_dir(local) if local is not None else self.root
        self._real: dict[str, str] = {"/": "/", "": "/"}  # directory -> its real path + "/"
        self._under_root: dict[str, str] = {}  # directory -> its location under the root + "/"

    def resolve(self, location: str) -> str | None:
        """``location`` spelled under the root with its directories resolved; ``None`` outside.

        The root itself and locations ending in ``/``, ``.`` or ``..`` are never files of the
        table: ``None`` too.
        """
        directory, _, name = location.rpartition("/")
        if name in ("", ".", ".."):
            return None
        if not self.local:
            return location if location.startswith(self.root) else None
        under = self.directory(directory)
        return None if under is None else under + name

    def directory(self, directory: str) -> str | None:
        """A directory's location under the root (ending in ``/``); ``None`` when outside."""
        if not self.local:
            spelled = directory + "/"
            return spelled if spelled.startswith(self.root) else None
        known = self._under_root.get(directory)
        if known is None:
            real = self._resolve_dir(directory)
            known = (
                self.root + real[len(self._real_root) :]
                if real.startswith(self._real_root)
                else _OUTSIDE
            )
            self._under_root[directory] = known
        return known or None

    def _resolve_dir(self, directory: str) -> str:
        """The real path of ``directory`` plus ``/``: its parent's, then this component's.

        One ``lstat`` per directory not seen before; a symlinked component goes through
        ``os.path.realpath`` (chains and loops included).
        """
        known = self._real.get(directory)
        if known is not None:
            return known
        parent, _, name = directory.rpartition("/")
        real_parent = self._resolve_dir(parent)
        if name in ("", "."):
            real = real_parent
        elif name == "..":
            real = real_parent.rstrip("/").rpartition("/")[0] + "/"
        else:
            candidate = real_parent + name
            real = candidate + "/"
            try:
                if stat.S_ISLNK(os.lstat(candidate).st_mode):
                    real = _real_dir(candidate)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    real = _real_dir(candidate)  # realpath copes as it can (EACCES, ELOOP...)
        self._real[directory] = real
        return real


def _real_dir(path: str) -> str:
    real = os.path.realpath(path)
    return real if real.endswith("/") else real + "/"
