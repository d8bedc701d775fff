"""The report's view of the live files: sizes, small files, partitions, deletion vectors.

Everything here is computed from ``DeltaTable.files(flatten_stats=True)`` by Arrow kernels,
so the page's numbers are those ``files()`` gives: a size histogram on fixed bounds (powers of
four from 1 KiB to 1 GiB), the files below the small-file size, files, bytes and rows per
partition with how uneven they are, and the rows deletion vectors hide.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.arrow.maps import chunked_map_texts

#: Upper bounds of the size histogram's bins (the last bin has none).
SIZE_BOUNDS = tuple(1024 * 4**k for k in range(11))  # 1 KiB .. 1 GiB
#: Small-file size when the table sets no ``delta.targetFileSize``: a quarter of 128 MiB.
DEFAULT_SMALL_FILE_SIZE = 32 << 20
#: Partitions listed by the report (the largest by bytes); the counts cover them all.
TOP_PARTITIONS = 30


@dataclass(frozen=True)
class SizeBin:
    """Files whose size is in ``[low, high)`` (``high`` ``None``: no upper bound)."""

    low: int
    high: int | None
    files: int
    bytes: int


@dataclass(frozen=True)
class PartitionSummary:
    """One partition: its values as ``k=v,...``, files, bytes and rows (where stats say)."""

    values: str
    files: int
    bytes: int
    rows: int | None


@dataclass
class FileSummary:
    """What the live files of one version look like.

    Attributes:
        num_files: Live files.
        total_bytes: Their total size.
        rows: Rows they hold by their statistics, not counting rows deletion vectors hide.
        files_without_row_count: Files whose statistics give no row count.
        min_size: Smallest file size (``None`` without files); ``median_size``,
            ``max_size`` alike.
        bins: The size histogram.
        small_file_size: Files below this size count as small.
        small_files: How many are; ``small_bytes``: their total size.
        partition_columns: The table's partition columns.
        num_partitions: Distinct partitions with live files.
        partitions: The :data:`TOP_PARTITIONS` largest partitions by bytes.
        partition_median_bytes: Median bytes per partition; ``partition_max_bytes``: the most.
        skew: ``partition_max_bytes / partition_median_bytes`` (1.0: even).
        dv_files: Files with a deletion vector.
        dv_rows_deleted: Rows their deletion vectors hide (sum of cardinalities).
        dv_rows_in_files: Rows in the files that have one, by their statistics.
    """

    num_files: int = 0
    total_bytes: int = 0
    rows: int = 0
    files_without_row_count: int = 0
    min_size: int | None = None
    median_size: int | None = None
    max_size: int | None = None
    bins: list[SizeBin] = field(default_factory=list)
    small_file_size: int = DEFAULT_SMALL_FILE_SIZE
    small_files: int = 0
    small_bytes: int = 0
    partition_columns: list[str] = field(default_factory=list)
    num_partitions: int = 0
    partitions: list[PartitionSummary] = field(default_factory=list)
    partition_median_bytes: int | None = None
    partition_max_bytes: int | None = None
    skew: float | None = None
    dv_files: int = 0
    dv_rows_deleted: int = 0
    dv_rows_in_files: int = 0

    def to_json(self) -> dict[str, Any]:
        """The summary as a JSON object."""
        return asdict(self)


def _int(scalar: pa.Scalar) -> int:
    value = scalar.as_py()
    return int(value or 0)


def _median(values: pa.Array | pa.ChunkedArray) -> int | None:
    if not len(values):
        return None
    (median,) = pc.quantile(values, q=0.5, interpolation="lower").to_pylist()
    return int(median)


def size_bins(sizes: pa.ChunkedArray) -> list[SizeBin]:
    """The size histogram of ``sizes`` on :data:`SIZE_BOUNDS`."""
    bins = []
    low = 0
    for high in (*SIZE_BOUNDS, None):
        inside = pc.greater_equal(sizes, av.int64(low))
        if high is not None:
            inside = pc.and_(inside, pc.less(sizes, av.int64(high)))
        bins.append(
            SizeBin(
                low,
                high,
                _int(pc.sum(inside.cast(pa.int64()))),
                _int(pc.sum(pc.if_else(inside, sizes, av.int64(0)))),
            )
        )
        low = high or 0
    return bins


def _partitions(files: pa.Table, summary: FileSummary) -> None:
    texts = chunked_map_texts(files.column("partition_values"))
    grouped = (
        pa.table({"values": texts, "size": files.column("size"), "rows": files.column("rows")})
        .group_by("values")
        .aggregate([("size", "count"), ("size", "sum"), ("rows", "sum"), ("rows", "count")])
        .sort_by([("size_sum", "descending"), ("values", "ascending")])
    )
    summary.num_partitions = grouped.num_rows
    summary.partition_median_bytes = _median(grouped.column("size_sum"))
    summary.partition_max_bytes = _int(pc.max(grouped.column("size_sum"))) if len(grouped) else None
    if summary.partition_median_bytes:
        summary.skew = round((summary.partition_max_bytes or 0) / summary.partition_median_bytes, 2)
    for row in grouped.slice(0, TOP_PARTITIONS).to_pylist():
        complete = row["rows_count"] == row["size_count"]  # every file has a row count
        summary.partitions.append(
            PartitionSummary(
                values=row["values"],
                files=row["size_count"],
                bytes=row["size_sum"],
                rows=row["rows_sum"] if complete else None,
            )
        )


def summarize_files(
    files: pa.Table, partition_columns: list[str], small_file_size: int
) -> FileSummary:
    """Summarize ``files``: ``DeltaTable.files(flatten_stats=True)`` of one version."""
    rows = files.column("num_records") if "num_records" in files.column_names else None
    if rows is None:
        rows = pa.chunked_array([pa.nulls(files.num_rows, pa.int64())])
    files = files.append_column("rows", rows.cast(pa.int64()))
    sizes = files.column("size")
    summary = FileSummary(
        num_files=files.num_rows,
        total_bytes=_int(pc.sum(sizes)) if files.num_rows else 0,
        rows=_int(pc.sum(files.column("rows"))) if files.num_rows else 0,
        files_without_row_count=files.column("rows").null_count,
        min_size=_int(pc.min(sizes)) if files.num_rows else None,
        median_size=_median(sizes),
        max_size=_int(pc.max(sizes)) if files.num_rows else None,
        bins=size_bins(sizes),
        small_file_size=small_file_size,
        partition_columns=list(partition_columns),
    )
    small = pc.less(sizes, av.int64(small_file_size))
    summary.small_files = _int(pc.sum(small.cast(pa.int64()))) if files.num_rows else 0
    summary.small_bytes = _int(pc.sum(pc.if_else(small, sizes, av.int64(0))))
    if partition_columns:
        _partitions(files, summary)
    dv = files.column("deletion_vector")
    with_dv = pc.is_valid(dv)
    summary.dv_files = _int(pc.sum(with_dv.cast(pa.int64()))) if files.num_rows else 0
    if summary.dv_files:
        chosen = files.filter(with_dv)
        cardinality = pc.struct_field(chosen.column("deletion_vector"), "cardinality")
        summary.dv_rows_deleted = _int(pc.sum(cardinality))
        summary.dv_rows_in_files = _int(pc.sum(chosen.column("rows")))
    return summary
