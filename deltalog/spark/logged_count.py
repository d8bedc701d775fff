"""A whole snapshot's DataFrame whose ``count()`` answers from the log, as delta-spark's does.

delta-spark answers ``spark.read.format("delta").load(uri).count()`` from the ``numRecords``
statistic of every live file, less the rows each file's deletion vector deletes, and opens no
data file (an optimizer rule in its jars, switched by
``spark.databricks.delta.optimizeMetadataQuery.enabled``). A session without those jars has no
such rule, so the DataFrame :func:`deltalog.spark.read` returns for a whole snapshot carries the
same shortcut in its own ``count()``: the DataFrame is of a subclass of the session's own
DataFrame class whose ``count`` asks the log first. Every transformation (``filter``,
``select``, ``union``, ...) returns Spark's plain DataFrame, whose ``count`` runs a Spark job,
as a filtered count does in delta-spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.table import DeltaTable

#: delta-spark's switch for answering aggregates from the log (default on).
OPTIMIZE_METADATA_QUERY = "spark.databricks.delta.optimizeMetadataQuery.enabled"
#: Where the snapshot's table hangs on the DataFrame (its instance dictionary).
_TABLE = "_deltalog_snapshot_table"
_COUNT = "_deltalog_logged_count"
#: The counting subclass of each DataFrame class met (classic, Spark Connect).
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


def counted_from_log(frame: DataFrame, table: DeltaTable) -> DataFrame:
    """``frame``, which holds every live row of ``table``'s snapshot, counted from its log.

    The DataFrame keeps its class's behaviour but for ``count()``: when the session has not
    switched off ``spark.databricks.delta.optimizeMetadataQuery.enabled`` and every live
    file's statistics hold ``numRecords``, the count is their sum less the deletion vectors'
    cardinalities (worked out once); otherwise it is Spark's count.
    """
    frame.__class__ = _counting_class(type(frame))
    frame.__dict__[_TABLE] = table
    frame.__dict__.pop(_COUNT, None)
    return frame


class _LoggedCount:
    """The ``count`` of a DataFrame of a whole snapshot (mixed in before Spark's class)."""

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


def _enabled(frame: Any) -> bool:
    value = frame.sparkSession.conf.get(OPTIMIZE_METADATA_QUERY, "true")
    return str(value).strip().lower() != "false"


def _counting_class(base: type[Any]) -> type[Any]:
    """``base`` (classic or Spark Connect DataFrame) with the logged ``count``."""
    if issubclass(base, _LoggedCount):
        return base
    counting = _CLASSES.get(base)
    if counting is None:
        counting = type(base.__name__, (_LoggedCount, base), {"__module__": base.__module__})
        counting.__qualname__ = base.__qualname__
        counting.__doc__ = base.__doc__
        _CLASSES[base] = counting
    return counting
