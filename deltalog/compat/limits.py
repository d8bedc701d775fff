"""Known engine limitations: listed refusals and differences are not disagreements.

Known engine limitations: a refusal or difference listed here is reported as known, not as
a disagreement (docs/compat.md lists them).

A :class:`Limitation` matches an engine's refusal of a table version when the table uses the
``feature`` (a regular expression matching a reader or writer table feature's whole name;
``None``: any table) and the refusal's message
matches ``pattern``; with ``field`` set it instead matches a difference of that field in which
the engine is alone in its group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Limitation:
    """One known limitation of one engine."""

    engine: str
    feature: str | None
    pattern: str
    reason: str
    field: str | None = None

    def matches(self, engine: str, features: Iterable[str], message: str) -> bool:
        """Whether this limitation applies.

        Whether this limitation explains ``engine``'s ``message`` on a table with
        ``features``.
        """
        if engine != self.engine:
            return False
        if self.feature is not None and not any(
            re.fullmatch(self.feature, name) for name in features
        ):
            return False
        return re.search(self.pattern, message, re.IGNORECASE | re.DOTALL) is not None


#: The list (see the module docstring); a test keeps docs/compat.md's table in step.
KNOWN: tuple[Limitation, ...] = (
    Limitation(
        "delta-rs",
        "vacuumProtocolCheck",
        r"Unsupported table features required: \[VacuumProtocolCheck\]",
        "delta-rs does not support the vacuumProtocolCheck feature",
    ),
    Limitation(
        "delta-rs",
        "typeWidening-preview",
        r"Unsupported table features required: \[TypeWideningPreview\]",
        "delta-rs does not support the typeWidening-preview feature",
    ),
    Limitation(
        "deltalog",
        "variantType(-preview)?",
        r"type 'variant' has no Arrow equivalent",
        "deltalog cannot read variant columns (no Arrow type)",
    ),
)


def explain(
    engine: str,
    features: Iterable[str],
    message: str,
    field: str | None = None,
    known: Iterable[Limitation] = KNOWN,
) -> Limitation | None:
    """The limitation that explains a refusal (``field`` ``None``) or a difference."""
    names = list(features)
    for limitation in known:
        if limitation.field == field and limitation.matches(engine, names, message):
            return limitation
    return None
