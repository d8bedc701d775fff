"""A data file's row count, ``numRecords``, read from its ``stats`` JSON.

Counts taken from the log (the rows a MERGE target file holds, the files worth compacting, row
ids, a commit's metrics) all read it here, the same way: a non-negative integer, or ``None``
when the statistics are absent, unreadable or do not count the rows.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["num_records"]


def num_records(stats: str | bytes | None) -> int | None:
    """``numRecords`` of a file's ``stats`` JSON; ``None`` when it is not logged or not valid.

    Args:
        stats: The ``stats`` field of an ``add`` action (JSON text), or ``None``.

    Returns:
        The row count, or ``None``.
    """
    if not stats:
        return None
    try:
        value: Any = orjson.loads(stats).get("numRecords")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
