"""OPTIMIZE on Spark: bin-packing compaction of a table's small files.

``optimize(spark, uri, ...)`` is ``stage_optimize(...)`` followed by
:meth:`StagedOptimize.commit`, as delta-spark's ``OPTIMIZE`` compacts without ``ZORDER BY``:

1. the live files of the selected partitions smaller than ``min_file_size`` are grouped per
   partition, smallest first, into bins of at most ``target_file_size`` bytes; a bin of one file
   is left alone (nothing to merge it with);
2. one Spark job rewrites every bin into one new file of its partition, one task per bin: the
   executor reads the bin's files through the table's store and writes them with the same code
   as :func:`deltalog.spark.write` (statistics from the new footers);
3. one transaction commits ``remove`` of the old files and ``add`` of the new ones, all with
   ``dataChange=false``, as operation ``OPTIMIZE`` with delta-spark's ``operationParameters``
   and ``operationMetrics``.

Conflicts are delta-spark's: the transaction records only the files it rewrote as read, and
commits under ``SnapshotIsolation`` (it changes no data), so concurrent appends land on both
sides, while a concurrent commit that removed a rewritten file makes the commit fail with
:class:`~deltalog.errors.ConcurrentDeleteReadError` (the new files are deleted; the log gains
nothing). Files with a deletion vector are never rewritten (deltalog does not apply deletion
vectors, and rewriting the file whole would bring deleted rows back); they are reported in
:attr:`OptimizeResult.skipped`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from deltalog.errors import InvalidInputError
from deltalog.protocol.column_mapping import physical_name
from deltalog.protocol.schema import PrimitiveType, StructField, StructType
from deltalog.spark.job import run_tasks, task_plan
from deltalog.spark.task import RewriteBin, rewrite_task
from deltalog.spark.time_zones import in_session_time_zone
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import matches, partition_table, validate
from deltalog.table import DeltaTable
from deltalog.write.compaction import (
    ALONE_REASON,
    DEFAULT_TARGET_FILE_SIZE,
    DELETION_VECTOR_REASON,
    OptimizeResult,
    SkippedFile,
    optimize_metrics,
    plan_bins,
)
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.writer.staged import StagedWrite

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ALONE_REASON",
    "DEFAULT_TARGET_FILE_SIZE",
    "DELETION_VECTOR_REASON",
    "OptimizeResult",
    "SkippedFile",
    "StagedOptimize",
    "optimize",
    "optimize_metrics",
    "stage_optimize",
]


class StagedOptimize:
    """Compacted files written and the OPTIMIZE commit staged, not yet published.

    :meth:`commit` publishes it, checking what landed since :attr:`read_version`;
    :meth:`abort` gives up and deletes the new files.
    """

    def __init__(
        self, staged: StagedWrite | None, result: OptimizeResult, removed: list[str]
    ) -> None:
        self._staged = staged
        self._result = result
        self._removed = removed

    @property
    def read_version(self) -> int:
        """The table version the optimize read and compacted."""
        return self._result.version

    @property
    def removed_paths(self) -> list[str]:
        """Paths (as logged) of the files the commit removes."""
        return list(self._removed)

    @property
    def added_paths(self) -> list[str]:
        """Paths of the new files the commit adds."""
        return [] if self._staged is None else [a.path for a in self._staged.adds]

    def commit(self) -> OptimizeResult:
        """Commit the compaction; returns what it did.

        Raises:
            ConcurrentDeleteReadError: A concurrent commit removed a file this one rewrote;
                the new files are deleted and nothing is committed. Run optimize again.
            ConcurrentModificationError: Another conflict (protocol or metadata changed).
            TransactionClosedError: Already committed or aborted.
            StorageError: The log store failed (the new files are kept: the commit may have
                landed).
        """
        if self._staged is None:
            return self._result
        written = self._staged.commit()
        assert written.version is not None
        return dataclasses.replace(self._result, version=written.version, committed=True)

    def abort(self) -> None:
        """Give up: nothing is committed and the new files are deleted."""
        if self._staged is not None:
            self._staged.abort()


def optimize(
    spark: SparkSession,
    uri: str,
    *,
    where: PredicateLike | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    min_file_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> OptimizeResult:
    """Compact the small files of a Delta table (delta-spark's ``OPTIMIZE``, bin-packing).

    Args:
        spark: The Spark session whose executors rewrite the files.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        where: Only these partitions: a predicate on partition columns, as SQL text
            (``"day >= '2024-01-01'"``) or any form
            :func:`deltalog.stats.predicate_input.as_predicate`
            accepts (as ``replace_where`` of :func:`deltalog.spark.write`).
        target_file_size: Largest bin, in bytes of input files, and so about the size of the
            files written (delta-spark's ``optimize.maxFileSize``, 1 GiB by default).
        min_file_size: Files smaller than this are compacted (delta-spark's
            ``optimize.minFileSize``); default ``target_file_size``.
        storage_options: Log store options, used on the driver and the executors.

    Returns:
        What was compacted, committed and skipped.

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        InvalidPredicateError: ``where`` does not parse or names a non-partition column.
        InvalidInputError: A size is not a positive int (nothing written).
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks (checked
            before any file is written).
        RowTrackingRewriteError: The table tracks row ids, which a rewrite by deltalog would
            not preserve (checked before any file is written).
        SparkWriteError: The Spark job failed (nothing committed).
        ConcurrentDeleteReadError: A concurrent commit removed a file being compacted.
        StorageError: The log store failed.
    """
    return stage_optimize(
        spark,
        uri,
        where=where,
        target_file_size=target_file_size,
        min_file_size=min_file_size,
        storage_options=storage_options,
    ).commit()


def stage_optimize(
    spark: SparkSession,
    uri: str,
    *,
    where: PredicateLike | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    min_file_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> StagedOptimize:
    """Everything :func:`optimize` does except the commit; see there for the arguments.

    The version read is pinned here; :meth:`StagedOptimize.commit` checks what landed since.

    Raises:
        DeltaLogError: Those :func:`optimize` raises, but for the commit-time conflicts.
    """
    _check_size("target_file_size", target_file_size)
    if min_file_size is None:
        min_file_size = target_file_size
    _check_size("min_file_size", min_file_size)
    options = dict(storage_options or {})
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    snapshot = table.snapshot
    snapshot.check_writable()
    refuse_table_rewrite(snapshot.protocol, snapshot.metadata)  # row ids are not preserved
    schema = snapshot.schema
    partition_columns = snapshot.partition_columns
    schema.to_arrow()  # a type the rewrite cannot read (variant) is refused here
    files = snapshot.files_without_stats()
    predicate_text = "[]"
    if where is not None:
        zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC")
        predicate = in_session_time_zone(as_predicate(where), schema, zone)
        validate(predicate, schema, partition_columns)
        values = partition_table(files.column("partition_values"), schema, partition_columns)
        files = files.filter(matches(predicate, values))
        shown = where if isinstance(where, str) else str(predicate)
        predicate_text = orjson.dumps([shown]).decode()
    # Partition values are logged by physical name on a column-mapped table.
    logged_keys = [physical_name(schema.field(c)) for c in partition_columns]
    bins, skipped = plan_bins(files, logged_keys, target_file_size, min_file_size)
    parameters: dict[str, Any] = {
        "predicate": predicate_text,
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": False,
    }
    nothing = OptimizeResult.nothing(snapshot.version, files.num_rows, skipped)
    if not bins:
        return StagedOptimize(None, nothing, [])

    storage = table._storage
    plan = task_plan(
        spark,
        table.uri,
        _strings_for(schema, partition_columns),
        partition_columns,
        snapshot.configuration,
        [f.name for f in schema.fields],
        options,
    )
    # One file per bin, as delta-spark writes; the real types tell the reader what to cast to.
    plan = dataclasses.replace(
        plan, max_file_bytes=2 * target_file_size, table_schema=schema.to_json_string()
    )
    work = [
        RewriteBin(
            locations=tuple(storage.locate(p) for p in b.column("path").to_pylist()),
            partition_values=_partition_items(b, logged_keys),
        )
        for b in bins
    ]
    jobs = spark.range(0, len(work), 1, len(work))
    adds = run_tasks(
        jobs,
        lambda batches: rewrite_task(plan, work, batches),
        table.uri,
        plan.storage_options,
        data_change=False,
    )
    rewritten = pa.concat_tables(bins)
    tx = table.transaction("OPTIMIZE", parameters=parameters)
    staged = StagedWrite(storage, adds, table=table, tx=tx, removed=rewritten.num_rows)
    try:
        tx.track_files_read(rewritten)
        tx.remove(rewritten, data_change=False)
        tx.add(adds)
        metrics = optimize_metrics([a.size for a in adds], _sizes(rewritten))
        tx.set_metrics(metrics)
    except BaseException:
        staged.abort()
        raise
    result = dataclasses.replace(
        nothing,
        files_added=len(adds),
        files_removed=rewritten.num_rows,
        bytes_added=sum(a.size for a in adds),
        bytes_removed=sum(_sizes(rewritten)),
        partitions_optimized=len({b.partition_values for b in work}),
        bins=len(work),
        metrics=metrics,
    )
    return StagedOptimize(staged, result, rewritten.column("path").to_pylist())


def _check_size(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive number of bytes, not {value!r}")


def _sizes(files: pa.Table) -> list[int]:
    return [int(s) for s in files.column("size").to_pylist()]


def _partition_items(
    files: pa.Table, partition_columns: list[str]
) -> tuple[tuple[str, str | None], ...]:
    mapping = dict(files.column("partition_values")[0].as_py() or [])
    return tuple((c, mapping.get(c)) for c in partition_columns)  # logged (physical) keys


def _strings_for(schema: StructType, partition_columns: list[str]) -> StructType:
    """``schema`` with the partition columns typed ``string`` (values are copied as logged)."""
    return StructType(
        tuple(
            StructField(f.name, PrimitiveType("string"), True, f.metadata)
            if f.name in partition_columns
            else f
            for f in schema.fields
        )
    )
