"""Entry points of one group, without importing ``importlib.metadata`` when nothing declares it.

Every table open looks up plugin stores (they may replace a built-in scheme), and
``importlib.metadata`` costs a CLI command more than the rest of its start-up: importing it
loads ``email``, ``zipfile``, ``csv`` and more, and its scan parses every installed
distribution. Almost always no distribution declares the group at all, which a glance at the
``entry_points.txt`` files on ``sys.path`` tells. :func:`entry_points` answers from that glance
only when it is certain: whenever anything could hold metadata it does not read (a zip or egg
on ``sys.path``, a finder other than the standard one that finds distributions), or a file
names the group, it asks ``importlib.metadata`` itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["entry_points", "may_declare"]

_METADATA_DIRS = (".dist-info", ".egg-info")


def entry_points(*, group: str) -> Sequence[EntryPoint]:
    """``importlib.metadata.entry_points(group=group)``; ``()`` when surely none is declared."""
    if not may_declare(group):
        return ()
    from importlib.metadata import entry_points as scan

    return tuple(scan(group=group))


def may_declare(group: str, path: Sequence[str] | None = None) -> bool:
    """Whether an installed distribution may declare entry points of ``group``.

    ``False`` only when every place ``importlib.metadata`` would look is a directory whose
    ``*.dist-info``/``*.egg-info`` metadata was read and none of it names the group.
    """
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return True  # distributions this scan cannot see
    needle = group.encode()
    for entry in sys.path if path is None else path:
        root = entry or "."
        if not os.path.exists(root):
            continue
        if not os.path.isdir(root) or root.lower().rstrip("/\\").endswith(".egg"):
            return True  # a zip or an egg: metadata inside it
        if _declared_in(root, needle):
            return True
    return False


def _declared_in(root: str, needle: bytes) -> bool:
    """Whether an ``entry_points.txt`` in ``root``'s metadata directories mentions ``needle``."""
    try:
        children = os.scandir(root)
    except OSError:
        return True  # unreadable: let importlib.metadata decide
    with children:
        for child in children:
            if not child.name.lower().endswith(_METADATA_DIRS):
                continue
            try:
                with open(os.path.join(child.path, "entry_points.txt"), "rb") as f:
                    text = f.read()
            except (FileNotFoundError, NotADirectoryError):
                continue  # no entry points (or an old single-file egg-info)
            except OSError:
                return True
            if needle in text:
                return True
    return False
