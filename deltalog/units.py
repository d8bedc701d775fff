"""Sizes and times as people read them: ``1.2 MiB``, ``2026-11-21 10:00:00.000Z``, ``7 days``.

The CLI and the report print the same units; the CLI's Arrow forms of these (a million files
at a time) live in :mod:`deltalog.cli.text` and give the same text.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

#: Units of :func:`human_size`, each 1024 times the one before.
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def timestamp(ms: Any) -> str:
    """Milliseconds since the epoch as UTC text, ``-`` when not an integer."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return "-"
    try:
        when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    except (ValueError, OverflowError, OSError):  # out of datetime's range
        return f"{ms} ms"
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def tenths(n: int, k: int) -> int:
    """``n / 1024**k`` in tenths, rounded half up (integers only, so Arrow computes the same)."""
    unit: int = 1024**k
    return (n * 10 + unit // 2) // unit


def human_size(n: Any) -> str:
    """A byte count as ``512 B``, ``1.2 KiB``, ``3.4 GiB`` (``-`` when not a count).

    The unit is the largest in which the value rounds to at least 1.0, so 1,023 bytes are
    ``1.0 KiB`` (as ``ls -h`` shows them).
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return "-" if n is None else str(n)
    k = 0
    while k + 1 < len(UNITS) and tenths(n, k + 1) >= 10:
        k += 1
    if k == 0:
        return f"{n} B"
    t = tenths(n, k)
    return f"{t // 10}.{t % 10} {UNITS[k]}"


_SPANS = (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1000))


def duration(ms: int) -> str:
    """A duration in the largest unit that divides it: ``7 days``, ``36 hours``, ``250 ms``."""
    for name, size in _SPANS:
        if ms >= size and ms % size == 0:
            n = ms // size
            return f"{n} {name}{'' if n == 1 else 's'}"
    return f"{ms} ms"
