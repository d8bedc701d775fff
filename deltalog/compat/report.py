"""The result of a ``compat`` run: :class:`CompatReport`, with its three renderings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deltalog.compat.junit import to_junit_xml
from deltalog.compat.model import EngineStatus, TableResult, exit_code, overall_agree
from deltalog.compat.render import render_text, to_json


@dataclass
class CompatReport:
    """Every engine's status and every table version's outcome.

    Attributes:
        engines: One :class:`~deltalog.compat.model.EngineStatus` per engine asked for.
        tables: One :class:`~deltalog.compat.model.TableResult` per table version.
        write_probe: Per table, the ``--write-probe`` steps (empty unless asked for).
    """

    engines: list[EngineStatus]
    tables: list[TableResult]
    write_probe: list[dict[str, Any]] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        """Whether everything agrees.

        Every table version agrees (known limitations allowed), no engine crashed, every
        required engine ran, and every write probe read back the same.
        """
        return overall_agree(self.engines, self.tables, self.write_probe)

    @property
    def exit_code(self) -> int:
        """0 when all agree, 2 when a path is no table, 3 for any other disagreement."""
        return exit_code(self.engines, self.tables, self.write_probe)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (``deltalog compat --json``)."""
        return to_json(self.engines, self.tables, self.write_probe)

    def render(self) -> str:
        """The report as aligned text for a terminal."""
        return render_text(self.engines, self.tables, self.write_probe)

    def to_junit_xml(self) -> str:
        """The report as JUnit XML: a test case per table version, one per engine status."""
        return to_junit_xml(self.engines, self.tables, self.write_probe)
