"""The report's data.

The report's data: how each engine fared, and per table version what they saw and where
they differ. Renderers are in :mod:`deltalog.compat.render`; the diff in
:mod:`deltalog.compat.diff`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The parts of an observation that are compared, in report order.
FIELDS = (
    "version",
    "protocol",
    "schema",
    "partitionColumns",
    "configuration",
    "files",
    "rows",
    "columns",
    "history",
)

#: Exit statuses of ``deltalog compat`` (and :attr:`CompatReport.exit_code`).
EXIT_AGREE = 0
EXIT_NOT_A_TABLE = 2
EXIT_DISAGREE = 3


@dataclass(frozen=True)
class EngineStatus:
    """One engine of a run.

    One engine of a run: ``ran`` (with its version), ``skipped`` (how to get it),
    ``crashed`` (its process died: the exit status and the tail of its stderr).
    """

    name: str
    state: str
    detail: str
    required: bool = False

    @property
    def failed(self) -> bool:
        """A crash, or a required engine that did not run."""
        return self.state == "crashed" or (self.required and self.state != "ran")


@dataclass(frozen=True)
class Outcome:
    """One engine on one table version.

    One engine on one table version: ``ok``, ``refused``, ``known`` (a refusal listed in
    :data:`deltalog.compat.limits.KNOWN`) or ``crashed``; ``detail`` says what happened.
    """

    state: str
    detail: str = ""


@dataclass(frozen=True)
class Difference:
    """Engines that report different values of one field.

    Engines that report different values of one field: ``groups`` pairs engine names with
    a short description of what they saw; ``known`` names the listed limitation, if any.
    """

    field: str
    groups: list[tuple[list[str], str]]
    known: str | None = None


@dataclass
class TableResult:
    """One table version (``version`` ``None`` is the latest) across the engines."""

    table: str
    version: int | None
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    problem: str | None = None
    observations: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``table`` or ``table@vN``."""
        return self.table if self.version is None else f"{self.table}@v{self.version}"

    @property
    def agree(self) -> bool:
        """Whether the engines agree on this table version.

        No problem, no crash, no unlisted difference, no unlisted refusal of a version that
        another engine reads (every engine refusing one is agreement).
        """
        if self.problem is not None:
            return False
        states = {o.state for o in self.outcomes.values()}
        if "crashed" in states or ("refused" in states and "ok" in states):
            return False
        return all(d.known is not None for d in self.differences)


def overall_agree(
    engines: list[EngineStatus], tables: list[TableResult], probes: list[dict[str, Any]]
) -> bool:
    """Every table version agrees, no engine failed, every write probe agrees."""
    return (
        not any(e.failed for e in engines)
        and all(t.agree for t in tables)
        and all(p.get("agree", False) for p in probes)
    )


def exit_code(
    engines: list[EngineStatus], tables: list[TableResult], probes: list[dict[str, Any]]
) -> int:
    """0 when all agree, 2 when a path is no table, 3 for any other disagreement."""
    if any(t.problem and t.problem.startswith("not a Delta table") for t in tables):
        return EXIT_NOT_A_TABLE
    return EXIT_AGREE if overall_agree(engines, tables, probes) else EXIT_DISAGREE
