"""Changing rows in place without Spark: DELETE, UPDATE, MERGE, and OPTIMIZE's compaction.

The operations ``DeltaTable.delete``, ``update``, ``merge`` and ``optimize`` run here
(:class:`~deltalog.dml.table_methods.RowChanges` is mixed into the table facade). Each reads the
candidate files (pruned by partition values and statistics), decides row by row in Arrow, and
commits one transaction with delta-spark's operation name, parameters and metrics. Where the
table has ``delta.enableDeletionVectors`` on, changed rows are marked in deletion vectors
(:mod:`deltalog.dml.rewrite`) and only new rows are written; otherwise touched files are
rewritten (copy-on-write). Whatever fails before the commit lands deletes the files written.

A floor above maintenance and below the table facade: it may import the log, ``write``,
``read`` and ``maintenance``; it reaches the table only through the object it is mixed into.
"""
