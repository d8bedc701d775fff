"""Per-module outcomes and times for a folder's tests, printed at the end of a pytest run.

CI logs are the only record of a run that passed, and ``-ra`` there gives only the totals. The
conftests of ``tests/`` and ``interop_tests/`` each feed their tests' reports to a
:class:`ModuleTally` and print it in the terminal summary, so a log says, per module, how
many tests passed, failed, were skipped or xfailed, and how long the module took (setup, call
and teardown of its tests).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("passed", "failed", "skipped", "xfailed", "error")


@dataclass
class ModuleTally:
    """Outcomes and seconds per test module.

    Attributes:
        title: The heading printed above the table.
        counts: Module file name -> outcome -> number of tests.
        seconds: Module file name -> seconds spent in its tests' phases.
    """

    title: str
    counts: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, report: Any) -> None:
        """Count one phase report (``pytest_runtest_logreport``)."""
        module = report.nodeid.split("::", 1)[0].split("/", 1)[-1]  # below the top folder
        self.seconds[module] += report.duration
        outcome = _outcome(report)
        if outcome is not None:
            tally = self.counts[module]
            tally[outcome] = tally.get(outcome, 0) + 1

    def lines(self) -> list[str]:
        """The table: one line per module, then the totals."""
        if not self.seconds:
            return []
        width = max(len(m) for m in self.seconds)
        head = "  ".join(f"{o:>7}" for o in OUTCOMES)
        out = [self.title, f"{'module':<{width}}  {head}  {'seconds':>8}"]
        totals: dict[str, int] = {}
        for module in sorted(self.seconds):
            tally = self.counts.get(module, {})
            for outcome, n in tally.items():
                totals[outcome] = totals.get(outcome, 0) + n
            cells = "  ".join(f"{tally.get(o, 0):>7}" for o in OUTCOMES)
            out.append(f"{module:<{width}}  {cells}  {self.seconds[module]:>8.1f}")
        cells = "  ".join(f"{totals.get(o, 0):>7}" for o in OUTCOMES)
        out.append(f"{'total':<{width}}  {cells}  {sum(self.seconds.values()):>8.1f}")
        return out


def _outcome(report: Any) -> str | None:
    """The test's outcome this phase decides, or ``None`` when it decides none."""
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            return "xfailed" if report.skipped else "passed"
        return str(report.outcome)
    if report.skipped:
        return "xfailed" if hasattr(report, "wasxfail") else "skipped"
    if report.failed:
        return "error"
    return None
