"""Every Delta table the interop tests make, kept for the final ``deltalog compat`` sweep.

After each interop test (:func:`collect_after` from an autouse fixture in ``conftest.py``) the
session's temporary directory (``tmp_path`` and ``tmp_path_factory`` directories alike) is
searched for directories holding a ``_delta_log``; each new or changed one is copied into the
registry's own directory, so a later test or fixture that removes or rewrites it does not take
it away, and is remembered with the test that made (or last changed) it. Hadoop's hidden
checksum files (``.part-0.parquet.crc``, ``_delta_log/.00000000000000000001.json.crc``) are left
out of the copy: one left stale by a later rewrite of its file (by deltalog, which writes none)
makes delta-spark's reader log a ``ChecksumException``, and without it Hadoop reads the file
unchecked. Delta's own version checksums (``_delta_log/00000000000000000001.crc``) are copied.
``interop_tests/test_zz_compat_every_table.py``, ordered last, compares every engine on them.

Tables on the object-store test servers (moto's S3, Azurite, the GCS server) are not collected:
they live in the servers' memory, and the tests that make them there make the same kinds of
tables locally too (the cloud tests check the log stores, which compat does not look at).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

#: The registry's directory name under the session's temporary directory (never searched).
KEEP_DIR = "compat-every-table"


@dataclass
class MadeTable:
    """A table an interop test made, as it was after the last test that changed it.

    Attributes:
        source: Where the test made it.
        copy: The registry's copy, compared at the end of the session.
        made_by: Node ids of the tests that made or changed it, in order.
    """

    source: Path
    copy: Path
    made_by: list[str] = field(default_factory=list)
    fingerprint: tuple[object, ...] = ()


@dataclass
class TableRegistry:
    """The tables found so far under ``root`` (the session's temporary directory).

    Directories that were in ``root`` before the registry was made (the unit tests' ones,
    when the whole suite runs) are not searched: only the interop tests' tables are collected.
    """

    root: Path
    keep: Path
    tables: dict[Path, MadeTable] = field(default_factory=dict)
    before: frozenset[str] = frozenset()

    @classmethod
    def under(cls, root: Path, keep: Path) -> TableRegistry:
        """A registry for what is made in ``root`` from now on, copied into ``keep``."""
        return cls(root, keep, before=frozenset(e.name for e in os.scandir(root)))

    def collect_after(self, nodeid: str) -> None:
        """Copy every table made under ``root`` that is new or changed since the last test."""
        tops = [
            Path(e.path)
            for e in os.scandir(self.root)
            if e.name not in self.before and e.is_dir(follow_symlinks=False)
        ]
        for table in _find_tables(tops, skip=self.keep):
            print_ = _fingerprint(table)
            if print_ is None:
                continue
            known = self.tables.get(table)
            if known is not None and known.fingerprint == print_:
                continue
            if known is None:
                copy = self.keep / f"t{len(self.tables):04d}-{table.name}"[:120]
                known = self.tables[table] = MadeTable(table, copy)
            if not _copy(table, known.copy):
                continue
            known.fingerprint = print_
            known.made_by.append(nodeid)

    def distinct(self) -> list[MadeTable]:
        """One table per content (the first one made), in the order they were made."""
        seen: dict[str, MadeTable] = {}
        for made in self.tables.values():
            if not made.made_by:
                continue
            digest = content_digest(made.copy)
            first = seen.get(digest)
            if first is not None:
                first.made_by.extend(n for n in made.made_by if n not in first.made_by)
            else:
                seen[digest] = made
        return list(seen.values())


def _find_tables(roots: list[Path], skip: Path) -> list[Path]:
    """Directories in ``roots`` holding a ``_delta_log`` (not searched further)."""
    found: list[Path] = []
    pending = [r for r in roots if r != skip]
    while pending:
        here = pending.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        if any(e.name == "_delta_log" and e.is_dir(follow_symlinks=False) for e in entries):
            found.append(here)
            continue
        pending.extend(
            Path(e.path)
            for e in entries
            if e.is_dir(follow_symlinks=False) and Path(e.path) != skip
        )
    return sorted(found)


def _fingerprint(table: Path) -> tuple[object, ...] | None:
    """What changes when a table is written: its log's and top directory's entries."""
    try:
        log = sorted(
            (e.name, e.stat().st_size, e.stat().st_mtime_ns)
            for e in os.scandir(table / "_delta_log")
        )
        top = sorted(e.name for e in os.scandir(table))
    except OSError:
        return None
    return (tuple(log), tuple(top))


def hadoop_checksums(folder: str, names: list[str]) -> set[str]:
    """The hidden Hadoop checksum files (``.<name>.crc``) among ``names`` in ``folder``.

    A ``shutil.copytree`` ``ignore`` callable. Delta's version checksum files
    (``00000000000000000001.crc``, not hidden) are not among them.
    """
    return {
        n
        for n in names
        if n.startswith(".") and n.endswith(".crc") and os.path.isfile(os.path.join(folder, n))
    }


def _copy(table: Path, copy: Path) -> bool:
    """Replace ``copy`` with ``table``'s files but Hadoop's checksums; ``False`` if it vanished."""
    shutil.rmtree(copy, ignore_errors=True)
    try:
        shutil.copytree(table, copy, symlinks=True, ignore=hadoop_checksums)
    except (OSError, shutil.Error):
        shutil.rmtree(copy, ignore_errors=True)
        return False
    return True


def content_digest(table: Path) -> str:
    """A digest of every file's path (relative to the table) and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in table.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(table)).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
