"""``deltalog history``: the commits, newest first, as an aligned table or JSON.

Each line has the version, its timestamp, the operation, the files added and removed, the
rows and bytes written (from ``operationMetrics``, under whichever name the engine used:
:mod:`deltalog.log.operation_metrics`) and the operation's parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import deltalog.cli.text as text
from deltalog.log.operation_metrics import summarize

HEADERS = ("VERSION", "TIMESTAMP (UTC)", "OPERATION", "+FILES", "-FILES", "ROWS", "BYTES")
_RIGHT = (True, False, False, True, True, True, True, False)


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _parameters(params: Any) -> str:
    if not isinstance(params, Mapping):
        return ""
    return ", ".join(f"{k}={v}" for k, v in params.items() if v is not None)


def row(entry: Mapping[str, Any]) -> list[str]:
    """The cells of one history entry."""
    m = summarize(entry.get("operationMetrics"))
    return [
        str(entry["version"]),
        text.timestamp(entry.get("timestamp")),
        str(entry.get("operation") or "-"),
        _count(m.files_added),
        _count(m.files_removed),
        _count(m.rows),
        "-" if m.bytes_added is None else text.human_size(m.bytes_added),
        _parameters(entry.get("operationParameters")),
    ]


def lines(entries: list[dict[str, Any]]) -> list[str]:
    """The history as an aligned table: a header, then one line per commit."""
    return text.table([*HEADERS, "PARAMETERS"], [row(e) for e in entries], _RIGHT)
