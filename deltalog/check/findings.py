"""What ``deltalog check`` reports: findings with a code, a severity, a version and a path.

Each code has one severity, so scripts can rely on either:

- ``error``: the log breaks the protocol or loses data; a reader may fail or return wrong rows.
- ``warning``: the log breaks a rule readers tolerate (a ``_last_checkpoint`` that disagrees
  with its checkpoint, a remove of a file that is not live, ...).
- ``info``: leftovers that harm nothing, such as data files no commit references (a writer
  that died before committing), temp files of unfinished log writes, and a
  ``_last_checkpoint`` left behind on a checkpoint log cleanup removed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]

#: Every finding code, with its severity and what it means.
CODES: dict[str, tuple[Severity, str]] = {
    "version-gap": (
        "error",
        "a commit is missing after the oldest retained checkpoint, or between two commits",
    ),
    "missing-history": ("error", "no checkpoint covers the versions before the first commit"),
    "orphaned-commit": ("error", "a commit below a checkpoint that never held it (lost)"),
    "malformed-commit": ("error", "a commit line is not UTF-8, JSON, or a valid action"),
    "empty-commit": ("error", "a commit file holds no action (0 bytes): a lost write"),
    "multiple-metadata": ("error", "a commit has more than one metaData action"),
    "multiple-protocol": ("error", "a commit has more than one protocol action"),
    "duplicate-txn": ("error", "a commit has two txn actions for one appId"),
    "duplicate-domain": ("error", "a commit has two domainMetadata actions for one domain"),
    "missing-protocol": ("error", "the history starts without a protocol action"),
    "missing-metadata": ("error", "the history starts without a metaData action"),
    "duplicate-add": ("error", "a commit adds the same path twice"),
    "duplicate-remove": ("error", "a commit removes the same path twice"),
    "duplicate-file-action": ("error", "a commit adds and removes the same logical file"),
    "unsafe-path": ("error", "a file path has '..' segments or is on another bucket/account"),
    "bad-partition-values": ("error", "partition values do not match the partition columns"),
    "bad-stats": ("error", "a stats string does not parse or disagrees with the schema"),
    "bad-schema": ("error", "the schema does not parse or lacks a partition column"),
    "bad-table-property": ("error", "a delta.* table property has an invalid value"),
    "unsupported-reader-feature": ("error", "the protocol needs a reader feature not known"),
    "corrupt-checkpoint": ("error", "a checkpoint cannot be read"),
    "checkpoint-mismatch": ("error", "a checkpoint differs from replay of the commits it covers"),
    "missing-file": ("error", "a live data file does not exist"),
    "size-mismatch": ("error", "a live data file's size differs from its add action"),
    "checksum-mismatch": ("error", "a version's .crc file disagrees with replay"),
    "bad-checksum": ("warning", "a version's .crc file does not parse"),
    "unsupported-writer-feature": ("warning", "the protocol needs a writer feature not known"),
    "remove-of-missing-file": ("warning", "a commit removes a file that is not live"),
    "stats-unknown-column": ("warning", "stats name a column the schema does not have"),
    "incomplete-checkpoint": ("warning", "a multi-part checkpoint is missing parts"),
    "bad-last-checkpoint": ("warning", "_last_checkpoint does not parse"),
    "last-checkpoint-mismatch": ("warning", "_last_checkpoint disagrees with its checkpoint"),
    "stale-last-checkpoint": (
        "info",
        "_last_checkpoint names an older checkpoint log cleanup removed (readers list past it)",
    ),
    "orphan-file": ("info", "a data file under the table root that no action references"),
    "orphan-log-file": ("info", "a temp file of an unfinished or superseded log write"),
    "external-path": ("info", "a live file outside the table root (e.g. a shallow clone)"),
}

_RANK = {"info": 0, "warning": 1, "error": 2}
#: Exit status of ``deltalog check`` when findings at or above ``--fail-on`` exist.
EXIT_FINDINGS = 3


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in a table.

    Attributes:
        code: What kind of problem (a key of :data:`CODES`).
        message: What exactly is wrong, for people.
        version: The commit or checkpoint version it was found in, when there is one.
        path: The log file or data file concerned, when there is one.
    """

    code: str
    message: str
    version: int | None = None
    path: str | None = None

    @property
    def severity(self) -> Severity:
        """``error``, ``warning`` or ``info``, fixed by the code."""
        return CODES[self.code][0]

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON object."""
        return {"severity": self.severity, **asdict(self)}


class Findings:
    """Where the checks put what they find."""

    def __init__(self) -> None:
        self.items: list[Finding] = []

    def report(self, code: str, message: str, version: int | None, path: str | None) -> None:
        """Record one finding (``code`` must be a key of :data:`CODES`)."""
        if code not in CODES:
            raise ValueError(f"unknown finding code {code!r}")
        self.items.append(Finding(code, message, version, path))

    def ordered(self) -> list[Finding]:
        """By version (unversioned last), then severity, then path."""
        return sorted(
            self.items,
            key=lambda f: (f.version is None, f.version or 0, -_RANK[f.severity], f.path or ""),
        )


@dataclass
class CheckReport:
    """The result of checking one table.

    Attributes:
        table: The table URI.
        version: The latest version found in the log (``None`` if there is none).
        findings: Everything found, ordered by version, severity and path.
        checked: How much was looked at (commits, checkpoints, live files, ...).
    """

    table: str
    version: int | None
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    def _with(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    @property
    def errors(self) -> list[Finding]:
        """Findings of severity ``error``."""
        return self._with("error")

    @property
    def warnings(self) -> list[Finding]:
        """Findings of severity ``warning``."""
        return self._with("warning")

    @property
    def infos(self) -> list[Finding]:
        """Findings of severity ``info``."""
        return self._with("info")

    @property
    def ok(self) -> bool:
        """No errors (warnings and infos allowed)."""
        return not self.errors

    @property
    def clean(self) -> bool:
        """No errors and no warnings (infos, such as orphan files, allowed)."""
        return not self.errors and not self.warnings

    def codes(self) -> set[str]:
        """The distinct finding codes."""
        return {f.code for f in self.findings}

    def exit_code(self, fail_on: Severity = "error") -> int:
        """0, or :data:`EXIT_FINDINGS` when a finding is at least as severe as ``fail_on``."""
        worst = max((_RANK[f.severity] for f in self.findings), default=-1)
        return EXIT_FINDINGS if worst >= _RANK[fail_on] else 0

    def summary(self) -> dict[str, int]:
        """Number of findings per severity."""
        counts = Counter(f.severity for f in self.findings)
        return {s: counts.get(s, 0) for s in ("error", "warning", "info")}

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object."""
        return {
            "table": self.table,
            "version": self.version,
            "ok": self.ok,
            "summary": self.summary(),
            "checked": self.checked,
            "findings": [f.to_json() for f in self.findings],
        }
