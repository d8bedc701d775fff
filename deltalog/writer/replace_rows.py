"""An overwrite with a predicate on data columns: replace the rows it selects, keep the rest.

As delta-spark's ``replaceWhere`` on data columns (a DELETE of the matching rows plus an append,
in one commit) and delta-rs's ``predicate=`` overwrite:

1. The candidates are the live files that may hold a matching row, by partition values and
   statistics (:func:`deltalog.write.rewrite_plan.candidate_files`). The transaction records
   them as read (a concurrent commit that removes one conflicts) and, as read predicate, the
   conjuncts of the predicate on partition columns (``TRUE`` if none).
2. Every new row must satisfy the predicate (checked as it is written).
3. The rows of the candidates for which the predicate is not true (false or null) are written
   again, through the same data writer as the new rows (deletion vectors applied: deleted rows
   stay deleted).
4. One commit removes the candidates and adds every file written.

Files wholly outside the predicate are untouched.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.schema import StructType
from deltalog.read import read_file_rows
from deltalog.stats.predicates import Predicate, matches
from deltalog.write.input_data import Conformer
from deltalog.write.rewrite_plan import candidate_files, partition_part
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.write.transaction import Transaction

__all__ = ["kept_rows", "plan_row_replace"]


def plan_row_replace(tx: Transaction, predicate: Predicate) -> pa.Table:
    """The files to rewrite (rows of the snapshot's files), recorded as read by ``tx``.

    Raises:
        RowTrackingRewriteError: Rows would be copied on a row-tracking table.
    """
    snapshot = tx.snapshot
    candidates = candidate_files(snapshot, predicate)
    if candidates.num_rows:  # their unselected rows would be copied under new row ids
        refuse_table_rewrite(
            snapshot.protocol, snapshot.metadata, operation="an overwrite with a predicate on"
        )
    tx.track_files_read(candidates, predicate=partition_part(predicate, snapshot.partition_columns))
    return candidates


def kept_rows(
    storage: TableStorage,
    snapshot: Snapshot,
    files: pa.Table,
    predicate: Predicate,
    schema: StructType,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``files`` for which ``predicate`` is not true, fitted to ``schema``.

    ``schema`` is the schema the write commits (the snapshot's, or one with merged columns).
    """
    conformer: Conformer | None = None
    for rows in read_file_rows(storage, snapshot, files):
        kept = rows.filter(pc.invert(matches(predicate, rows)))
        if not kept.num_rows:
            continue
        if conformer is None:
            conformer = Conformer(kept.schema, schema)
        for batch in kept.to_batches():
            yield conformer(batch)
