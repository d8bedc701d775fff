"""MERGE into a Delta table on Spark, without delta-spark's jars: ``merge(spark, uri, ...)``.

``deltalog.spark.merge(spark, uri, source_df, "target.id = source.id")`` returns a
:class:`SparkMerger`, the builder of :meth:`deltalog.DeltaTable.merge` (delta-rs's names:
``when_matched_update``, ``when_matched_update_all``, ``when_matched_delete``,
``when_not_matched_insert``, ``when_not_matched_insert_all``,
``when_not_matched_by_source_update``, ``when_not_matched_by_source_delete``, ``execute``)
with delta-spark's ``DeltaTable.merge`` semantics. Conditions and values are Spark SQL, which
Spark evaluates; the join and the rewrite run on the executors
(:mod:`deltalog.spark.merge_run`), the driver commits one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltalog.dml.merge_builder import MergeClauses, merge_aliases
from deltalog.dml.merge_clauses import Clause, check_clauses
from deltalog.dml.results import DmlResult
from deltalog.errors import (
    ConflictingOptionsError,
    InvalidInputError,
    InvalidOptionError,
    InvalidPredicateError,
)
from deltalog.spark.merge_run import MergeRequest, run_merge
from deltalog.stats.sql_expression import parse_expression

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DmlResult", "SparkMerger", "merge"]


def merge(
    spark: SparkSession,
    uri: str,
    source: DataFrame,
    predicate: str,
    *,
    source_alias: str = "source",
    target_alias: str = "target",
    merge_schema: bool = False,
    storage_options: Mapping[str, str] | None = None,
    **options: str | bool,
) -> SparkMerger:
    """Start a MERGE of ``source`` into the Delta table at ``uri`` (delta-spark's ``merge``).

    Like ``DeltaTable.forPath(spark, uri).alias("target").merge(source.alias("source"),
    predicate)`` in a session without delta-spark's jars: add ``when_...`` clauses, then
    :meth:`SparkMerger.execute`.

    Args:
        spark: The session whose executors join and write.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        source: The source rows.
        predicate: The merge condition, Spark SQL naming columns as ``<alias>.<column>``
            (or unqualified when only one side has the column).
        source_alias: The source's name in conditions and values.
        target_alias: The target's name in conditions and values.
        merge_schema: Add the source's new columns to the table (``UPDATE SET *`` and
            ``INSERT *`` clauses), as delta-spark's ``schema.autoMerge.enabled``.
        storage_options: Log store options, used on the driver and the executors.
        **options: delta-spark's option ``mergeSchema`` (name in any case; ``True`` or
            ``"true"``), as its writer takes it.

    Raises:
        InvalidPredicateError: ``predicate`` is not text or does not parse.
        InvalidOptionError: A bad alias, or the same alias twice, ``merge_schema`` not a
            bool, or an unknown option; ``ConflictingOptionsError`` when ``mergeSchema`` and
            ``merge_schema`` disagree.
    """
    for key, value in options.items():
        if key.lower() != "mergeschema":
            raise InvalidOptionError(
                f"unknown merge option {key!r}; deltalog.spark.merge takes mergeSchema",
                option=key,
            )
        given = value if isinstance(value, bool) else str(value).strip().lower()
        if given not in (True, False, "true", "false"):
            raise InvalidOptionError(f"{key} must be true or false, not {value!r}", option=key)
        wanted = given in (True, "true")
        if merge_schema and not wanted:
            raise ConflictingOptionsError(
                f"option {key}={value!r} and merge_schema=True disagree", option=key
            )
        merge_schema = wanted
    return SparkMerger(
        spark,
        uri,
        source,
        predicate,
        source_alias=source_alias,
        target_alias=target_alias,
        merge_schema=merge_schema,
        storage_options=storage_options,
    )


class SparkMerger(MergeClauses):
    """A Spark MERGE being built: add ``when_...`` clauses, then :meth:`execute`.

    Clauses of each kind apply in the order they are added; the first whose condition holds
    for a row takes it (delta-spark's rule). Conditions and values are Spark SQL strings
    (a value may also be a Python literal).
    """

    def __init__(
        self,
        spark: SparkSession,
        uri: str,
        source: DataFrame,
        predicate: str,
        *,
        source_alias: str = "source",
        target_alias: str = "target",
        merge_schema: bool = False,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(predicate, str):
            raise InvalidPredicateError(
                f"the merge predicate is SQL text, not {type(predicate).__name__}"
            )
        self._condition = parse_expression(predicate, error=InvalidPredicateError)
        source_alias, target_alias = merge_aliases(source_alias, target_alias)
        if not isinstance(merge_schema, bool):
            raise InvalidOptionError(
                f"merge_schema must be True or False, not {merge_schema!r}", option="merge_schema"
            )
        if not hasattr(source, "schema") or not hasattr(source, "alias"):
            raise InvalidInputError(
                f"the merge source is a Spark DataFrame, not {type(source).__name__}"
            )
        self._spark = spark
        self._uri = uri
        self._source = source
        self._text = predicate
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._merge_schema = merge_schema
        self._options = dict(storage_options or {})
        self._clauses: list[Clause] = []

    # ------------------------------------------------------------------ run
    def execute(self) -> DmlResult:
        """Run the merge on Spark; one ``MERGE`` commit (none when no row changes).

        Returns:
            The version committed and delta-spark's ``operationMetrics``
            (``numTargetRowsInserted``, ``numTargetRowsUpdated``, ``numTargetRowsDeleted``,
            ``numSourceRows``, ``numTargetFilesAdded``, ...).

        Raises:
            TableNotFoundError: No Delta table at the URI.
            InvalidMergeClausesError: No clause was added, or a clause without a condition
                comes before another of its kind (only the last may omit it).
            InvalidPredicateError: A condition does not parse, names an unknown or ambiguous
                column, or is not boolean.
            InvalidExpressionError: An assignment is refused (unknown column, a value of the
                wrong type, a ``*`` clause missing a source column without ``merge_schema``).
            MultipleSourceRowMatchError: A target row matched several source rows.
            SchemaEvolutionError: ``merge_schema`` cannot add the source's columns.
            ConstraintViolationError: A written row breaks a NOT NULL or CHAR/VARCHAR
                constraint.
            AppendOnlyError: The merge would update or delete rows of an append-only table.
            RowTrackingRewriteError: The merge updates or copies rows of a row-tracking table.
            SparkWriteError: A Spark job failed.
            ConcurrentModificationError: A concurrent commit conflicts (a named subclass, e.g.
                ``ConcurrentAppendError`` when it added rows the merge should have read).
            StorageError: The store failed.

        Nothing is committed, and every file written is deleted, when any of these is raised
        (but for a store failure after which the commit may have landed).
        """
        check_clauses(self._clauses)
        request = MergeRequest(
            uri=self._uri,
            source=self._source,
            condition_text=self._text,
            condition=self._condition,
            clauses=tuple(self._clauses),
            source_alias=self._source_alias,
            target_alias=self._target_alias,
            merge_schema=self._merge_schema,
            storage_options=self._options,
        )
        return run_merge(self._spark, request)
