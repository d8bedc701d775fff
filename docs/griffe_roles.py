"""A griffe extension for the API reference: Sphinx roles in docstrings become Markdown code.

deltalog's docstrings are Google style with Sphinx cross-reference roles
(``:class:`~deltalog.errors.MissingExtraError```, ``:meth:`append_files```), which mkdocstrings
would show as literal text. This turns each role into inline code of the name it shows
(``MissingExtraError``, ``append_files``), and reST's double backquotes into Markdown's single
ones, without touching the code. Loaded by mkdocs.yml (``extensions: docs/griffe_roles.py``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):`~?([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+)``")


def _shown(match: re.Match[str]) -> str:
    """What Sphinx would show for a role: the last part after ``~``, else the whole target."""
    target = match.group(1)
    whole = match.group(0)
    name = target.rsplit(".", 1)[-1] if "`~" in whole else target
    return f"`{name}`"


def markdown(text: str) -> str:
    """Docstring text with roles and reST literals as Markdown inline code."""
    return _DOUBLE.sub(r"`\1`", _ROLE.sub(_shown, text))


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring griffe loads (modules, classes, functions, attributes)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the object's docstring in place, once, before it is parsed."""
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
