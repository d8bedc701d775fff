"""Which files a predicate on data columns touches: the planner rewrites share.

An overwrite with ``replaceWhere`` on data columns (Spark or not), and row-level deletes and
updates, rewrite the live files that may hold a row the predicate selects and leave the others
alone. :func:`candidate_files` finds them by partition values and statistics
(:mod:`deltalog.stats.skipping`); :func:`partition_part` is the part of the predicate a
transaction records as its read predicate (as delta-spark's conflict checker uses a read's
partition filters); :func:`check_predicate_columns` refuses a predicate the table cannot
evaluate before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from deltalog.errors import InvalidPredicateError
from deltalog.log.snapshot import Snapshot
from deltalog.protocol.schema import StructType
from deltalog.stats.file_stats import UnusableParsedStats
from deltalog.stats.predicates import TRUE, And, Predicate, matches
from deltalog.stats.skipping import prune_files

__all__ = ["candidate_files", "check_predicate_columns", "is_data_predicate", "partition_part"]


def is_data_predicate(predicate: Predicate, partition_columns: Iterable[str]) -> bool:
    """Whether ``predicate`` names a column that is not a partition column."""
    return not predicate.columns() <= set(partition_columns)


def check_predicate_columns(predicate: Predicate, schema: StructType) -> None:
    """Refuse a predicate naming unknown columns or values that do not fit their columns.

    Raises:
        InvalidPredicateError: Naming the column or value.
    """
    unknown = sorted(predicate.columns() - set(schema.names))
    if unknown:
        raise InvalidPredicateError(
            f"the predicate names column(s) {unknown} the table lacks (columns: {schema.names})"
        )
    arrow = pa.schema([f.remove_metadata() for f in schema.to_arrow()])
    empty = pa.Table.from_batches([], schema=arrow)  # Schema.empty_table() imports pandas
    matches(predicate, empty)  # raises on a literal that does not fit


def partition_part(predicate: Predicate, partition_columns: Iterable[str]) -> Predicate:
    """The top-level conjuncts of ``predicate`` on partition columns only (``TRUE`` if none).

    Every row the predicate selects satisfies it, so it is a sound read predicate.
    """
    allowed = set(partition_columns)
    stack, kept = [predicate], []
    while stack:
        node = stack.pop()
        if isinstance(node, And):
            stack += [node.right, node.left]
        elif node.columns() and node.columns() <= allowed:
            kept.append(node)
    if not kept:
        return TRUE
    out = kept[0]
    for node in kept[1:]:
        out = And(out, node)
    return out


def candidate_files(snapshot: Snapshot, predicate: Predicate) -> pa.Table:
    """The live files (rows of ``snapshot.files``) that may hold a row ``predicate`` selects."""
    schema, partition_columns = snapshot.schema, snapshot.partition_columns
    try:  # the checkpoint's typed statistics spare parsing its JSON, where already at hand
        typed = snapshot.typed_stats(build=False)
        return prune_files(snapshot.files, predicate, schema, partition_columns, typed)
    except UnusableParsedStats:
        return prune_files(snapshot.files, predicate, schema, partition_columns)
