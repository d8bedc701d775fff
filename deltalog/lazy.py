"""Modules imported on first use: ``pa = lazy_module("pyarrow")`` instead of ``import pyarrow``.

Opening a table and asking its version needs neither pyarrow nor numpy, and every CLI command is
a fresh process, so modules on that path name the heavy packages through a stand-in that imports
the real module the first time one of its attributes is read. It then puts the real module in
place of itself in the globals of the module that read it, so later uses cost nothing extra.
Type checkers see the real import::

    if TYPE_CHECKING:
        import pyarrow as pa
    else:
        pa = lazy_module("pyarrow")
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "lazy_module"]


class LazyModule:
    """Stands for the module ``name`` until an attribute of it is read."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def _load(self) -> ModuleType:
        return importlib.import_module(self._name)

    def __getattr__(self, attr: str) -> Any:
        module = self._load()
        caller = sys._getframe(1).f_globals
        for key, value in list(caller.items()):
            if value is self:  # the reader's ``pa``: from now on the real module
                caller[key] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        loaded = "loaded" if self._name in sys.modules else "not loaded yet"
        return f"<lazy module {self._name!r} ({loaded})>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it on first attribute access."""
    return LazyModule(name)
