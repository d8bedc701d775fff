"""The ``add`` that gives a live file a new deletion vector, as delta-spark writes it.

A row-level change that marks rows deleted commits ``remove`` of the file's current entry and
``add`` of the same path with the new DV (``dataChange=true``), keeping its size, modification
time, tags, partition values and row-tracking fields. Its statistics are the old ones turned
into *wide bounds* (delta-spark's ``updateStatsToWideBounds``): ``tightBounds`` becomes false
(min/max may now name deleted rows) and, where the bounds were tight, a column whose every live
row was null gets the physical row count as its ``nullCount``. ``numRecords`` stays the
physical row count, as the protocol requires of a file with a DV.
"""

from __future__ import annotations

from typing import Any

import orjson

from deltalog.protocol.actions import AddFile

__all__ = ["add_with_deletion_vector", "wide_bounds_stats"]

#: Order of the statistics' top-level fields (delta-spark's ``ALL_STAT_FIELDS``).
_STAT_ORDER = ("numRecords", "minValues", "maxValues", "nullCount", "tightBounds")


def add_with_deletion_vector(
    file: dict[str, Any], descriptor: dict[str, Any], physical_rows: int
) -> AddFile:
    """The ``add`` re-committing ``file`` (a row of a snapshot's files) with ``descriptor``."""
    old = file.get("deletion_vector")
    old_cardinality = int(old.get("cardinality") or 0) if old else 0
    tags = file.get("tags")
    return AddFile(
        path=file["path"],
        partition_values=dict(file.get("partition_values") or []),
        size=file["size"],
        modification_time=file["modification_time"],
        data_change=True,
        stats=wide_bounds_stats(file.get("stats"), physical_rows, old_cardinality),
        tags=dict(tags) if tags else None,
        deletion_vector=descriptor,
        base_row_id=file.get("base_row_id"),
        default_row_commit_version=file.get("default_row_commit_version"),
        clustering_provider=file.get("clustering_provider"),
    )


def wide_bounds_stats(stats: str | None, physical_rows: int, old_cardinality: int = 0) -> str:
    """``stats`` (JSON) with wide bounds for a file of ``physical_rows`` rows (see above).

    Args:
        stats: The file's statistics (``None`` or unparsable: only ``numRecords`` is written).
        physical_rows: Rows in the data file.
        old_cardinality: Rows the file's current DV deletes (the stats' logical row count is
            ``physical_rows - old_cardinality`` while its bounds are tight).
    """
    parsed: Any = None
    if stats:
        try:
            parsed = orjson.loads(stats)
        except orjson.JSONDecodeError:
            parsed = None
    if not isinstance(parsed, dict):
        parsed = {}
    tight = parsed.get("tightBounds") is not False
    nulls = parsed.get("nullCount")
    if tight and old_cardinality and isinstance(nulls, dict):
        logical = physical_rows - old_cardinality
        parsed["nullCount"] = _all_null_to_physical(nulls, logical, physical_rows)
    parsed["numRecords"] = physical_rows
    parsed["tightBounds"] = False
    ordered = {k: parsed[k] for k in _STAT_ORDER if k in parsed}
    ordered.update({k: v for k, v in parsed.items() if k not in ordered})
    return orjson.dumps(ordered).decode()


def _all_null_to_physical(counts: dict[str, Any], logical: int, physical: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in counts.items():
        if isinstance(value, dict):
            out[name] = _all_null_to_physical(value, logical, physical)
        elif isinstance(value, int) and not isinstance(value, bool) and value == logical:
            out[name] = physical
        else:
            out[name] = value
    return out
