"""OPTIMIZE without Spark: bin-packing compaction of small files (``DeltaTable.optimize``).

The plan is delta-spark's, shared with ``deltalog.spark.optimize``
(:func:`deltalog.write.compaction.plan_bins`): per partition of the selected ones
(``partition_filters``), files smaller than ``min_file_size`` (or whose deletion vector deletes
more than 5% of their rows) are grouped, smallest first, into bins of at most ``target_size``
bytes; a bin of one file is left alone. Each bin's live rows (deletion vectors applied, so
deleted rows stay deleted and the DV goes away) are read and written as one new file with
``dataChange=false``, statistics gathered while writing.

One transaction with operation ``OPTIMIZE`` commits ``remove`` of the bins' files and ``add``
of the new ones (``dataChange=false``), with delta-spark's parameters (``predicate``,
``zOrderBy``, ``clusterBy``, ``auto``) and metrics. As in delta-spark, it records exactly the
files it rewrote as read (and the partition filter as read predicate) and commits under
``SnapshotIsolation``: concurrent appends do not conflict, a concurrent commit that removed a
rewritten file does (:class:`~deltalog.errors.ConcurrentDeleteReadError`; the new files are
deleted and nothing is committed).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import pyarrow as pa

from deltalog.errors import CommitStatusUnknownError, InvalidInputError, StorageError
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import physical_name
from deltalog.protocol.paths import decode_path
from deltalog.read import read_files_together
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import TRUE, matches, partition_table, validate
from deltalog.write.compaction import (
    DEFAULT_TARGET_FILE_SIZE,
    OptimizeResult,
    optimize_metrics,
    plan_bins,
)
from deltalog.write.data_writer import DataWriter
from deltalog.write.parquet_options import ParquetOptions
from deltalog.write.row_tracking import refuse_table_rewrite

from .handle import OperationSettings, TableHandle
from .scan import scan_files

__all__ = ["TableOptimizer", "compact"]


class TableOptimizer:
    """``DeltaTable.optimize``: call it, or its :meth:`compact`, to compact small files."""

    def __init__(self, table: TableHandle) -> None:
        self._table = table

    def __call__(self, **kwargs: Any) -> OptimizeResult:
        """The same as :meth:`compact`."""
        return self.compact(**kwargs)

    def compact(
        self,
        partition_filters: PredicateLike | None = None,
        target_size: int | None = None,
        *,
        min_file_size: int | None = None,
        commit_properties: Any = None,
    ) -> OptimizeResult:
        """Compact the small files of the table (delta-spark's ``OPTIMIZE``, bin-packing).

        Args:
            partition_filters: Only these partitions: a predicate on partition columns (SQL
                text, DNF tuples as delta-rs's ``partition_filters``, ...).
            target_size: Largest bin in bytes of input files, about the size of each new file
                (default the table's ``delta.targetFileSize``, else 1 GiB as delta-spark).
            min_file_size: Files smaller than this are compacted (default ``target_size``).
            commit_properties: :class:`~deltalog.CommitProperties` (or delta-rs's).

        Returns:
            What was compacted, committed and left alone (see
            :class:`~deltalog.write.compaction.OptimizeResult`).

        Raises:
            InvalidPredicateError: ``partition_filters`` does not parse or names a column that
                is not a partition column.
            InvalidInputError: A size is not a positive int.
            UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
            RowTrackingRewriteError: The table tracks row ids, which a rewrite would change.
            ConcurrentDeleteReadError: A concurrent commit removed a file being compacted.
            StorageError: The store failed.

        Nothing is committed, and the new files are deleted, when any of these is raised (but
        for a store failure after which the commit may have landed).
        """
        return compact(
            self._table,
            partition_filters,
            target_size=target_size,
            min_file_size=min_file_size,
            settings=OperationSettings.build(commit_properties),
        )


def compact(
    table: TableHandle,
    partition_filters: PredicateLike | None,
    *,
    target_size: int | None,
    min_file_size: int | None,
    settings: OperationSettings,
) -> OptimizeResult:
    """Compact the table's small files; see :meth:`TableOptimizer.compact`."""
    table.refresh()
    snapshot = table.snapshot
    target = _size("target_size", target_size, snapshot.configuration)
    minimum = target if min_file_size is None else _size("min_file_size", min_file_size, {})
    snapshot.check_writable()
    schema, partition_columns = snapshot.schema, list(snapshot.partition_columns)
    schema.to_arrow()  # a type the rewrite cannot read (variant) is refused here
    predicate = None if partition_filters is None else as_predicate(partition_filters)
    files = snapshot.files
    shown: list[str] = []
    if predicate is not None and predicate is not TRUE:
        validate(predicate, schema, partition_columns)
        values = partition_table(files.column("partition_values"), schema, partition_columns)
        files = files.filter(matches(predicate, values))
        shown = [partition_filters if isinstance(partition_filters, str) else str(predicate)]
    logged_keys = [physical_name(schema.field(c)) for c in partition_columns]
    bins, skipped = plan_bins(files, logged_keys, target, minimum, applies_deletion_vectors=True)
    nothing = OptimizeResult.nothing(snapshot.version, files.num_rows, skipped)
    if not bins:
        return nothing
    refuse_table_rewrite(snapshot.protocol, snapshot.metadata)  # row ids are not preserved
    parameters: dict[str, Any] = {
        "predicate": orjson.dumps(shown).decode(),
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": False,
    }
    tx = settings.start(table, "OPTIMIZE", parameters)
    rewritten = pa.concat_tables(bins)
    adds: list[AddFile] = []
    writers: list[DataWriter] = []
    try:
        for members in bins:

            def new_writer() -> DataWriter:
                writer = DataWriter(
                    table._storage.store,
                    table._storage.root,
                    schema,
                    partition_columns,
                    snapshot.configuration,
                    options=ParquetOptions(target_file_size=2 * target),
                    data_change=False,
                )
                writers.append(writer)
                return writer

            writer = new_writer()
            together = read_files_together(table._storage, snapshot, members)
            if together is not None:
                try:
                    for rows in together:
                        writer.write(rows)
                except (pa.ArrowException, OSError):  # read them one by one: names the problem
                    writer.abort()
                    writer = new_writer()
                    together = None
            if together is None:
                scanned = scan_files(table._storage, snapshot, members)
                _write_buffered(writer, (found.rows for _, found in scanned))
            adds += writer.close()
        tx.track_files_read(rewritten, predicate=predicate)
        tx.remove(rewritten, data_change=False)
        tx.add(adds)
        dvs = rewritten.column("deletion_vector").is_valid().to_pylist().count(True)
        metrics = optimize_metrics(
            [a.size for a in adds], _sizes(rewritten), deletion_vectors_removed=dvs
        )
        tx.set_metrics(metrics)
    except BaseException:
        _delete(table, writers, adds)
        raise
    try:
        version = tx.commit()
    except (StorageError, CommitStatusUnknownError):
        raise  # the commit may have landed: its files must stay
    except BaseException:
        _delete(table, writers, adds)
        raise
    values = {tuple(dict(b.column("partition_values")[0].as_py() or []).items()) for b in bins}
    return dataclasses.replace(
        nothing,
        version=version,
        committed=True,
        files_added=len(adds),
        files_removed=rewritten.num_rows,
        bytes_added=sum(a.size for a in adds),
        bytes_removed=sum(_sizes(rewritten)),
        partitions_optimized=len(values),
        bins=len(bins),
        metrics=metrics,
    )


#: Rows gathered from small files before one write (a write per small file costs ~1 ms).
WRITE_ROWS = 1 << 17


def _write_buffered(writer: DataWriter, tables: Iterable[pa.Table]) -> None:
    """Write ``tables`` in order, many small ones concatenated into one write."""
    buffered: list[pa.Table] = []
    rows = 0
    for table in tables:
        if buffered and (rows >= WRITE_ROWS or table.schema != buffered[0].schema):
            writer.write(pa.concat_tables(buffered).combine_chunks())
            buffered, rows = [], 0
        buffered.append(table)
        rows += table.num_rows
    if buffered:
        writer.write(pa.concat_tables(buffered).combine_chunks())


def _delete(table: TableHandle, writers: Sequence[DataWriter], adds: list[AddFile]) -> None:
    for writer in writers:
        writer.abort()
    storage = table._storage
    for add in adds:
        with contextlib.suppress(Exception):  # best effort: VACUUM removes an orphan
            storage.store.delete(storage.data_file(decode_path(add.path)))


def _size(name: str, value: object, configuration: Any) -> int:
    if value is None:
        configured = configuration.get("delta.targetFileSize")
        try:
            return int(configured) if configured else DEFAULT_TARGET_FILE_SIZE
        except ValueError:
            return DEFAULT_TARGET_FILE_SIZE
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive number of bytes, not {value!r}")
    return value


def _sizes(files: pa.Table) -> list[int]:
    return [int(s) for s in files.column("size").to_pylist()]
