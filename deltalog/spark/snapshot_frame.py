"""The DataFrame of a whole snapshot: ``count()`` and ``filter()`` use the log, as delta-spark's.

delta-spark answers ``spark.read.format("delta").load(uri).count()`` from the ``numRecords``
statistic of every live file, less the rows each file's deletion vector deletes, and opens no
data file (an optimizer rule in its jars, switched by
``spark.databricks.delta.optimizeMetadataQuery.enabled``); and it reads, for a ``filter``, only
the files whose partition values and statistics may match it. A session without those jars
has no such rules, so the DataFrame :func:`deltalog.spark.read` returns for every live row
carries both in its own methods: it is of a subclass of the session's DataFrame class
(classic or Spark Connect) whose

* ``count()`` answers from the log when every live file's statistics hold ``numRecords`` and
  the switch is not ``false``, else counts with Spark;
* ``filter(text)`` / ``where(text)`` with SQL text that deltalog's predicates read and whose
  columns the DataFrame has, reads again, at the same snapshot, only the files that may hold a
  matching row, and Spark filters those rows by the same text. A ``Column`` condition, text
  deltalog cannot read or reads otherwise than Spark (:mod:`deltalog.spark.spark_predicate`),
  or a cached DataFrame get Spark's own filter over every file.

Every other transformation returns Spark's plain DataFrame, and what derives from it counts
and filters with Spark alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.table import DeltaTable

#: The same read of only the files a SQL condition may match; ``None`` when it cannot tell.
Pruner = Callable[[str], "DataFrame | None"]

#: delta-spark's switch for answering aggregates from the log (default on).
OPTIMIZE_METADATA_QUERY = "spark.databricks.delta.optimizeMetadataQuery.enabled"
#: What hangs on the DataFrame (its instance dictionary).
_TABLE = "_deltalog_snapshot_table"
_PRUNER = "_deltalog_snapshot_pruner"
_COUNT = "_deltalog_logged_count"
#: The subclass of each DataFrame class met (classic, Spark Connect).
_CLASSES: dict[type[Any], type[Any]] = {}


def logged_count(table: DeltaTable) -> int | None:
    """The live rows of ``table``'s snapshot by its statistics; ``None`` if a file lacks them."""
    files = table.files(with_stats=False, flatten_stats=True)
    if not files.num_rows:
        return 0
    records = files.column("num_records")
    if records.null_count:
        return None
    deleted = pc.struct_field(files.column("deletion_vector"), "cardinality")
    total = pc.sum(records).as_py() - (pc.sum(deleted).as_py() or 0)
    return int(total)


def snapshot_frame(frame: DataFrame, table: DeltaTable, pruned: Pruner) -> DataFrame:
    """``frame``, every live row of ``table``'s snapshot, counted and filtered with its log.

    Args:
        frame: The DataFrame of every live row (any columns).
        table: The table at the snapshot ``frame`` reads.
        pruned: The same read of only the files a SQL condition may match, or ``None``.

    Returns:
        ``frame`` itself, its class now the counting and pruning subclass of its own.
    """
    frame.__class__ = _snapshot_class(type(frame))
    state = frame.__dict__
    state[_TABLE] = table
    state[_PRUNER] = pruned
    state.pop(_COUNT, None)
    return frame


class _SnapshotMethods:
    """``count`` and ``filter`` of a whole snapshot's DataFrame (mixed in before Spark's)."""

    def count(self) -> int:
        """The number of rows: from the log when it can tell, else Spark's count."""
        state = self.__dict__
        table = state.get(_TABLE)
        if table is not None and _enabled(self):
            if _COUNT not in state:
                state[_COUNT] = logged_count(table)
            known = state[_COUNT]
            if known is not None:
                return int(known)
        return int(cast(Any, super()).count())

    def filter(self, condition: Any) -> DataFrame:
        """The rows matching ``condition``; SQL text reads only the files that may match."""
        pruner = self.__dict__.get(_PRUNER)
        if isinstance(condition, str) and pruner is not None and not _cached(self):
            narrowed = pruner(condition)
            if narrowed is not None:
                return cast("DataFrame", narrowed.filter(condition))
        return cast("DataFrame", cast(Any, super()).filter(condition))

    def where(self, condition: Any) -> DataFrame:
        """An alias of :meth:`filter`, as Spark's."""
        return self.filter(condition)


def _enabled(frame: Any) -> bool:
    value = frame.sparkSession.conf.get(OPTIMIZE_METADATA_QUERY, "true")
    return str(value).strip().lower() != "false"


def _cached(frame: Any) -> bool:
    """Whether the user cached the DataFrame (a fresh read would bypass the cache)."""
    return bool(getattr(frame, "is_cached", False))


def _snapshot_class(base: type[Any]) -> type[Any]:
    """``base`` (classic or Spark Connect DataFrame) with the snapshot's methods."""
    if issubclass(base, _SnapshotMethods):
        return base
    made = _CLASSES.get(base)
    if made is None:
        made = type(base.__name__, (_SnapshotMethods, base), {"__module__": base.__module__})
        made.__qualname__ = base.__qualname__
        made.__doc__ = base.__doc__
        _CLASSES[base] = made
    return made
