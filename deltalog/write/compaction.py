"""OPTIMIZE's bin-packing plan and metrics, shared by ``DeltaTable.optimize`` and Spark's.

As delta-spark's ``OptimizeTableCommand`` compacts without ``ZORDER BY``:

1. the candidate files are the live files of the selected partitions that are smaller than
   ``min_file_size`` (``optimize.minFileSize``), or, where the rewrite applies deletion
   vectors, whose DV deletes more than ``max_deleted_rows_ratio`` of their rows
   (``optimize.maxDeletedRowsRatio``, 5%) or that have a DV but no ``numRecords``;
2. they are grouped per partition, smallest first, into bins of at most ``target`` bytes;
3. a bin of one file is left alone (nothing to merge it with).

:func:`plan_bins` gives the bins and the files left alone (with the reason);
:func:`optimize_metrics` the commit's ``operationMetrics``; :class:`OptimizeResult` what an
optimize did.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import columns as arrow_columns
from deltalog.arrow import values as arrow_values
from deltalog.stats.num_records import num_records

__all__ = [
    "ALONE_REASON",
    "DEFAULT_TARGET_FILE_SIZE",
    "DELETION_VECTOR_REASON",
    "MAX_DELETED_ROWS_RATIO",
    "OptimizeResult",
    "SkippedFile",
    "optimize_metrics",
    "plan_bins",
]

#: delta-spark's ``spark.databricks.delta.optimize.maxFileSize`` default: 1 GiB.
DEFAULT_TARGET_FILE_SIZE = 1 << 30
#: delta-spark's ``spark.databricks.delta.optimize.maxDeletedRowsRatio`` default.
MAX_DELETED_ROWS_RATIO = 0.05
#: Reason given for a file with a deletion vector, where the rewrite cannot apply DVs.
DELETION_VECTOR_REASON = (
    "has a deletion vector; deltalog does not apply deletion vectors, and rewriting the file "
    "whole would bring its deleted rows back"
)
#: Reason given for the only small file of a partition (or of a bin).
ALONE_REASON = "the only file of its bin: nothing to merge it with"


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file small enough to compact that was left as it is.

    Attributes:
        path: The file's ``path`` as logged.
        partition_values: Its partition values.
        size: Its size in bytes.
        reason: Why it was not rewritten.
    """

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    reason: str


@dataclass(frozen=True, slots=True)
class OptimizeResult:
    """What an optimize did.

    Attributes:
        version: The version committed; when there was nothing to compact (nothing
            committed), the version that was read.
        committed: Whether a commit was written.
        files_added: New (compacted) data files.
        files_removed: Data files replaced by them.
        bytes_added: Bytes of the new files.
        bytes_removed: Bytes of the replaced files.
        partitions_optimized: Distinct partitions that had a bin rewritten.
        bins: Bins rewritten (one new file each, unless a size limit splits one).
        files_considered: Live files of the selected partitions.
        skipped: Small files left alone, each with the reason (files at or above
            ``min_file_size`` are not listed: they are already large enough).
        metrics: The commit's ``operationMetrics`` (empty when nothing was committed).
    """

    version: int
    committed: bool
    files_added: int
    files_removed: int
    bytes_added: int
    bytes_removed: int
    partitions_optimized: int
    bins: int
    files_considered: int
    skipped: tuple[SkippedFile, ...] = ()
    metrics: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def nothing(
        cls, version: int, files_considered: int, skipped: Sequence[SkippedFile] = ()
    ) -> OptimizeResult:
        """The result of an optimize that found nothing to compact (and committed nothing)."""
        return cls(
            version=version,
            committed=False,
            files_added=0,
            files_removed=0,
            bytes_added=0,
            bytes_removed=0,
            partitions_optimized=0,
            bins=0,
            files_considered=files_considered,
            skipped=tuple(skipped),
        )


def optimize_metrics(
    added: list[int], removed: list[int], *, deletion_vectors_removed: int = 0
) -> dict[str, str]:
    """``operationMetrics`` of an OPTIMIZE commit, as delta-spark records them.

    The size percentiles are of the added files, taken as delta-spark's
    ``FileSizeStatsWithHistogram`` does (the element at ``n/4``, ``n/2``, ``3n/4`` of the
    sorted sizes).
    """
    sizes = sorted(added)
    n = len(sizes)
    return {
        "numAddedFiles": str(n),
        "numRemovedFiles": str(len(removed)),
        "numAddedBytes": str(sum(sizes)),
        "numRemovedBytes": str(sum(removed)),
        "minFileSize": str(sizes[0] if n else 0),
        "p25FileSize": str(sizes[n // 4] if n else 0),
        "p50FileSize": str(sizes[n // 2] if n else 0),
        "p75FileSize": str(sizes[n * 3 // 4] if n else 0),
        "maxFileSize": str(sizes[-1] if n else 0),
        "numDeletionVectorsRemoved": str(deletion_vectors_removed),
    }


def plan_bins(
    files: pa.Table,
    partition_columns: list[str],
    target: int,
    minimum: int,
    *,
    applies_deletion_vectors: bool = False,
    max_deleted_rows_ratio: float = MAX_DELETED_ROWS_RATIO,
) -> tuple[list[pa.Table], list[SkippedFile]]:
    """Group the candidate files of each partition into bins (see the module docstring).

    Args:
        files: Live files (rows of a snapshot's files; ``stats`` is read for files with DVs).
        partition_columns: The keys of ``partition_values`` (physical names when mapped).
        target: Largest bin, in bytes of input files.
        minimum: Files smaller than this are candidates.
        applies_deletion_vectors: The rewrite applies DVs (deleted rows stay deleted); else
            files with a DV are left alone.
        max_deleted_rows_ratio: With ``applies_deletion_vectors``: a file whose DV deletes more
            than this share of its rows is a candidate whatever its size.
    """
    dv = files.column("deletion_vector").is_valid()
    small = pc.less(files.column("size"), arrow_values.int64(minimum))  # (no pandas import)
    skipped: list[SkippedFile] = []
    if applies_deletion_vectors:
        many_deleted = _many_deleted(files, max_deleted_rows_ratio)
        candidates = files.filter(pc.or_(small, many_deleted))
    else:
        with_dv = files.filter(pc.and_(small, dv))
        for row in with_dv.select(["path", "partition_values", "size"]).to_pylist():
            skipped.append(_skip(row, DELETION_VECTOR_REASON))
        candidates = files.filter(pc.and_(small, pc.invert(dv)))
    groups: dict[tuple[str | None, ...], list[int]] = {}
    values = candidates.column("partition_values").to_pylist()
    for i, pv in enumerate(values):
        mapping = dict(pv or [])
        groups.setdefault(tuple(mapping.get(c) for c in partition_columns), []).append(i)
    sizes = candidates.column("size").to_pylist()
    bins: list[pa.Table] = []
    for indexes in groups.values():
        for members in _pack(sorted(indexes, key=lambda i: sizes[i]), sizes, target):
            if len(members) > 1:
                bins.append(candidates.take(arrow_columns.column(members, pa.int64())))
            else:
                row = candidates.slice(members[0], 1).select(["path", "partition_values", "size"])
                skipped.append(_skip(row.to_pylist()[0], ALONE_REASON))
    return bins, skipped


def _many_deleted(files: pa.Table, ratio: float) -> pa.Array:
    """Per file: it has a DV deleting more than ``ratio`` of its rows, or a DV and no count."""
    out = []
    columns = ["deletion_vector", "stats"] if "stats" in files.column_names else None
    rows = files.select(columns or ["deletion_vector"]).to_pylist()
    for row in rows:
        dv = row["deletion_vector"]
        if not dv:
            out.append(False)
            continue
        records = num_records(row.get("stats"))
        deleted = int(dv.get("cardinality") or 0)
        out.append(records is None or (records > 0 and deleted / records > ratio))
    return arrow_columns.bools(out)  # (pa.array would import pandas)


def _pack(indexes: Iterable[int], sizes: list[int], target: int) -> Iterator[list[int]]:
    current: list[int] = []
    total = 0
    for i in indexes:
        if current and total + sizes[i] > target:
            yield current
            current, total = [], 0
        current.append(i)
        total += sizes[i]
    if current:
        yield current


def _skip(row: dict[str, Any], reason: str) -> SkippedFile:
    return SkippedFile(row["path"], dict(row["partition_values"] or []), row["size"], reason)
