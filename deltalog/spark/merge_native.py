"""The plain files of a MERGE's target scan, read by Spark's own Parquet reader.

A MERGE's target scan (:mod:`deltalog.spark.merge_scan`) yields each live row with its file,
its position in the file and the file's row count. The files :func:`deltalog.spark.parquet_read.
split_files` finds plain (no deletion vector, Hive-spelled partition directories, column
mapping ``none`` or ``name``, a local table) whose statistics give ``numRecords`` are read by
Spark's Parquet reader instead: columns are pruned and the join's filters pushed into the scan.
The file and position come from Spark's hidden ``_metadata`` column (``file_path``, a URI, and
``row_index``, both on Spark 3.5 and 4); the row count is left null in the rows and looked up
on the driver (:meth:`NativeTarget.resolve`), which also maps Spark's file URI back to the path
the log names. Every other file keeps the ``mapInArrow`` path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.protocol.paths import decode_path
from deltalog.protocol.schema import StructType
from deltalog.spark.merge_scan import FILE_COLUMN, PHYSICAL_COLUMN, POSITION_COLUMN
from deltalog.spark.parquet_read import FileSplit, native_relation, split_files
from deltalog.stats.num_records import num_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.protocol.actions import Protocol

__all__ = ["NativeTarget", "split_target"]

#: Spark's hidden column of file metadata; a table column of that name hides it.
_METADATA = "_metadata"


@dataclass(frozen=True)
class NativeTarget:
    """A MERGE target's candidate files, split between Spark's reader and deltalog's.

    Attributes:
        split: The native files (``split.native``) and the rest (``split.rest``, the rows of
            the files table read through ``mapInArrow``).
        files: Per native file's local path: the path the log names and its row count.
    """

    split: FileSplit
    files: Mapping[str, tuple[str, int]]

    def frame(
        self,
        spark: SparkSession,
        schema: StructType,
        partition_columns: Sequence[str],
        columns: Sequence[str],
    ) -> DataFrame:
        """``columns`` of the native files, with the file, position and (null) row count.

        Raises:
            MissingDataFileError: A file the log names is gone.
        """
        from pyspark.sql import functions as F

        relation, selected = native_relation(spark, self.split, schema, partition_columns, columns)
        return relation.select(
            *selected,
            F.col(f"{_METADATA}.file_path").alias(FILE_COLUMN),
            F.col(f"{_METADATA}.row_index").cast("long").alias(POSITION_COLUMN),
            F.lit(None).cast("long").alias(PHYSICAL_COLUMN),
        )

    def resolve(self, key: str) -> tuple[str, int | None]:
        """The logged path of a scanned row's file, and its row count when known here.

        ``key`` is a :data:`FILE_COLUMN` value: Spark's ``file:`` URI of a native file, or the
        logged path of a file read through ``mapInArrow`` (returned as is, count unknown).
        """
        if key.startswith("file:"):
            local = "/" + unquote(key[len("file:") :]).lstrip("/")
            found = self.files.get(local)
            if found is not None:
                return found
        return key, None


def split_target(
    root: str,
    files: pa.Table,
    schema: StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str | None],
    protocol: Protocol,
) -> NativeTarget:
    """Split ``files`` (rows of ``snapshot.files``) between Spark's reader and deltalog's.

    A file goes to Spark's reader when :func:`~deltalog.spark.parquet_read.split_files` finds
    it plain and its statistics give ``numRecords``; nothing does when a table column is named
    ``_metadata`` (it would hide Spark's file metadata).
    """
    nothing = NativeTarget(FileSplit(root, [], files), {})
    if any(name.lower() == _METADATA for name in schema.names):
        return nothing
    counts = _num_records(files)
    counted = pa.array([c is not None for c in counts], pa.bool_())
    with_counts = files.filter(counted)
    split = split_files(root, with_counts, schema, partition_columns, configuration, protocol)
    if not split.native:
        return nothing
    rest = pa.concat_tables([split.rest, files.filter(pc.invert(counted))])
    native = set(split.native)
    base = root.rstrip("/")
    mapped: dict[str, tuple[str, int]] = {}
    for path, count in zip(files.column("path").to_pylist(), counts, strict=True):
        local = f"{base}/{decode_path(path)}"
        if count is not None and local in native:
            mapped[local] = (path, count)
    return NativeTarget(FileSplit(split.root, split.native, rest), mapped)


def _num_records(files: pa.Table) -> list[int | None]:
    """Each file's ``numRecords`` from its statistics (``None``: not logged)."""
    if "stats" not in files.column_names:
        return [None] * files.num_rows
    return [num_records(text) for text in files.column("stats").to_pylist()]
