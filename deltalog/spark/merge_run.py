"""Running a MERGE on Spark: scan, join, check, count, write, commit (delta-spark's semantics).

The driver reads only the log; every row is handled by Spark (DataFrame API only, so Spark
Connect works too):

1. **Plan**: the merge is analysed by :class:`~deltalog.dml.merge_plan.MergePlan` against the
   source's schema (no source row is read): unknown or ambiguous columns, bad assignments and
   a ``*`` clause missing a column are refused before anything runs. ``merge_schema`` evolves
   the schema as delta-spark's ``autoMerge`` does.
2. **Scan**: the candidate target files (every live file when a ``NOT MATCHED BY SOURCE``
   clause exists, else those the condition's target-only part may match, by partition values
   and statistics) are recorded as read, with the partition part of that predicate as the read
   predicate (as delta-spark's MERGE reads), and read with each row's file and position:
   plain files by Spark's own Parquet reader (:mod:`deltalog.spark.merge_native`), the rest
   on the executors by deltalog's reader (:func:`deltalog.spark.merge_scan.positions_task`).
3. **Join**: Spark joins the scan (aliased as the target) with the source on the merge
   condition: inner, left, right or full outer, as the clauses (and copy-on-write, which must
   copy the untouched rows of touched files) need. Each joined row gets the id of the clause
   that takes it (the first whose condition holds, per kind), evaluated by Spark.
4. **Checks and counts**: a target row matched by several source rows is refused
   (:class:`~deltalog.errors.MultipleSourceRowMatchError`, unless the one matched clause is an
   unconditional delete); one aggregation (per target row, then per clause and file) gives
   the most matches of any target row, the rows each clause takes per file, hence the touched
   files and the metrics, and with deletion vectors the positions taken out: the join is
   computed once for it and once for the write. This pass reads only the target columns the
   conditions name and leaves out target rows no clause can take (a touched file's copied
   rows are its live rows less those taken) and source rows no target row matches (the
   inserted rows are counted from the files written: written less updated and copied), as
   delta-spark's search for touched files does: its join is inner (left with ``NOT MATCHED
   BY SOURCE`` clauses), so Spark may broadcast the source instead of shuffling and sorting
   every target row. A merge that only inserts skips it.
5. **Write**: a Spark job writes the new rows (updated copies and inserts; with
   copy-on-write also the kept rows of touched files, told by a flag set in the scan, before
   the join's shuffle, not by the file's name) with
   :func:`deltalog.spark.job.run_job`; touched files are removed, or, with deletion vectors
   enabled, re-committed with a deletion vector naming the rows taken out
   (:class:`~deltalog.dml.rewrite.RowRewrite`).
6. **Commit**: one ``MERGE`` commit with delta-spark's parameters and metrics; a conflict
   raises the named :class:`~deltalog.errors.ConcurrentModificationError` subclass and every
   file written is deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.dml.merge import _metrics
from deltalog.dml.merge_clauses import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, Clause
from deltalog.dml.merge_clauses import merge_parameters as clause_parameters
from deltalog.dml.merge_exec import MergeCounts
from deltalog.dml.merge_plan import MergePlan, ResolvedClause
from deltalog.dml.results import DmlResult
from deltalog.dml.rewrite import RowRewrite, Timer, deletion_vectors_enabled
from deltalog.errors import AppendOnlyError, MultipleSourceRowMatchError
from deltalog.protocol.column_mapping import map_new_columns
from deltalog.protocol.schema import StructType
from deltalog.read import FileRows, _deleted_rows
from deltalog.spark.job import run_job
from deltalog.spark.merge_native import NativeTarget, split_target
from deltalog.spark.merge_scan import (
    FILE_COLUMN,
    PHYSICAL_COLUMN,
    POSITION_COLUMN,
    PositionsPlan,
    positions_task,
)
from deltalog.spark.read import _batch_rows, spark_schema
from deltalog.spark.scan import FILES_DDL, describe_files
from deltalog.stats.predicates import TRUE
from deltalog.stats.sql_expression import Column as ExprColumn
from deltalog.stats.sql_expression import Expr, column_refs
from deltalog.table import DeltaTable
from deltalog.write.assignments import Assignment
from deltalog.write.commit import num_records
from deltalog.write.input_data import schema_of_data, within_table
from deltalog.write.rewrite_plan import candidate_files, partition_part
from deltalog.write.row_tracking import refuse_table_rewrite
from deltalog.write.schema_merge import merge_schemas, type_widening_enabled
from deltalog.write.table_changes import protocol_for_schema

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.write.transaction import Transaction

__all__ = ["MergeRequest", "before_commit", "run_merge"]

_TARGET_PRESENT = "__deltalog_merge_t"
_SOURCE_PRESENT = "__deltalog_merge_s"
_CLAUSE = "__deltalog_merge_clause"
#: Copy-on-write write pass: whether a target row's file is touched (replaces its file name).
_TOUCHED = "__deltalog_merge_touched"
#: Clause ids: matched clauses count from 0, by-source ones from here, inserts from ``_INSERT``.
_BY_SOURCE = 1000
_INSERT = 2000


def before_commit(tx: Transaction) -> None:
    """A seam: called with the staged transaction just before it commits (tests race here)."""


@dataclass(frozen=True)
class MergeRequest:
    """A merge as the builder collected it.

    Attributes:
        uri: The target table URI.
        source: The source DataFrame.
        condition_text: The merge condition (Spark SQL).
        condition: The merge condition, parsed by deltalog (for column checks and pruning).
        clauses: The WHEN clauses, in the order given.
        source_alias: The source's alias.
        target_alias: The target's alias.
        merge_schema: Evolve the schema with the source's new columns (``*`` clauses).
        storage_options: Log store options, used on the driver and the executors.
    """

    uri: str
    source: DataFrame
    condition_text: str
    condition: Expr
    clauses: Sequence[Clause]
    source_alias: str
    target_alias: str
    merge_schema: bool
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass
class _Counts:
    """What the counting pass found: rows per clause, touched files, copies."""

    rows: dict[int, int] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    #: Per file with a row a clause takes: the data file's row count, and the rows taken.
    physical: dict[str, int] = field(default_factory=dict)
    taken_rows: dict[str, int] = field(default_factory=dict)
    #: The most source rows matching one target row (above 1: the duplicate-match check fails).
    most_matches: int = 0
    #: Per touched file (deletion vectors): the positions taken out and the file's row count.
    taken: dict[str, tuple[set[int], int]] = field(default_factory=dict)
    #: The scan's names (:data:`FILE_COLUMN` values) of the touched files.
    touched_keys: set[str] = field(default_factory=set)


def run_merge(spark: SparkSession, request: MergeRequest) -> DmlResult:
    """Run the merge (see the module docstring); what it did.

    Raises:
        DeltaLogError: Those :meth:`deltalog.spark.merge.SparkMerger.execute` documents.
    """
    timer = Timer()
    options = dict(request.storage_options)
    table = DeltaTable(request.uri, storage_options=options, background_checkpoints=False)
    snapshot = table.snapshot
    snapshot.check_writable()
    clauses = list(request.clauses)
    changes_rows = any(c.kind != NOT_MATCHED for c in clauses)
    if changes_rows and str(snapshot.configuration.get("delta.appendOnly")).lower() == "true":
        raise AppendOnlyError(
            "the table is append-only (delta.appendOnly=true): a MERGE may only insert"
        )
    source_arrow = _arrow_schema(request.source).empty_table()
    schema, configuration = _output_schema(request, snapshot, source_arrow.schema)
    plan = MergePlan(
        snapshot,
        source_arrow,
        request.condition,
        clauses,
        target_alias=request.target_alias,
        source_alias=request.source_alias,
        output_schema=schema,
        evolve=request.merge_schema,
    )
    use_dvs = deletion_vectors_enabled(snapshot.protocol, snapshot.metadata)
    if any(c.action == "update" for c in clauses) or (not use_dvs and changes_rows):
        refuse_table_rewrite(snapshot.protocol, snapshot.metadata, operation="merging into")
    tx = table.transaction("MERGE", parameters=clause_parameters(request.condition_text, clauses))
    if schema != snapshot.schema:
        upgrade = protocol_for_schema(snapshot, schema)
        if upgrade is not None:
            tx.update_protocol(upgrade)
        tx.update_metadata(schema=schema, configuration=configuration)
    files = _files_read(tx, plan)
    # plain files are read by Spark's Parquet reader, the rest by deltalog's (mapInArrow)
    target = split_target(
        table._storage.root,
        files,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
        snapshot.protocol,
    )
    # the counting pass reads only the target columns the conditions name, and no target row
    # no clause can take (as delta-spark's search for touched files prunes its scan and join)
    counts = _Counts()
    if plan.matched or plan.by_source:
        counting = _joined(
            spark,
            table,
            request,
            plan,
            target,
            options,
            use_dvs=use_dvs,
            columns=_condition_columns(request, plan),
            untouched=False,
            inserts=False,
        )
        counts = _count(counting, plan, target, use_dvs=use_dvs)
    if plan.matched and counts.most_matches > 1 and not _one_unconditional_delete(plan):
        joined = _joined(spark, table, request, plan, target, options, use_dvs=use_dvs)
        _check_multiple_matches(joined, request, plan, target)
    merge_counts = _merge_counts(counts, plan, request.source.count())
    merge_counts.scan_ms = timer.lap_ms()
    rewrite = RowRewrite(
        table._storage,
        snapshot,
        use_deletion_vectors=use_dvs,
        schema=schema,
        configuration=configuration,
    )
    if not counts.touched and not plan.not_matched:
        metrics = _metrics(rewrite, merge_counts, timer, 0)
        return DmlResult(snapshot.version, "MERGE", False, metrics)
    try:
        # the write pass's target rows carry whether their file is touched, not its name
        copied_from = None if use_dvs or not counts.touched else counts.touched_keys
        joined = _joined(
            spark,
            table,
            request,
            plan,
            target,
            options,
            use_dvs=use_dvs,
            untouched=bool(counts.touched),  # no touched file: no row to copy
            touched=copied_from,
        )
        rewrite.new_files = _write(
            joined, table, request, plan, counts, schema, configuration, use_dvs=use_dvs
        )
        touched = _touched_files(tx, counts.touched)
        rewrite.copied_rows = 0 if use_dvs else _copied(counts, touched)
        # the inserted rows are those written that are neither updates nor copies
        updated = merge_counts.matched_updated + merge_counts.by_source_updated
        written = sum(num_records(add) for add in rewrite.new_files)
        merge_counts.inserted = written - updated - rewrite.copied_rows
        if not counts.touched and not rewrite.new_files:  # no row inserted either
            metrics = _metrics(rewrite, merge_counts, timer, 0)
            return DmlResult(snapshot.version, "MERGE", False, metrics)
        if use_dvs:
            _mark_deleted(counts, table, rewrite, touched)
        else:
            for file in touched.to_pylist():
                rewrite.remove_whole(file)
        rewrite.stage(tx)
        metrics = _metrics(rewrite, merge_counts, timer, 0)
        before_commit(tx)
    except BaseException:
        rewrite.abort()
        raise
    version = rewrite.commit(tx, metrics)
    return DmlResult(version, "MERGE", True, metrics)


# ---------------------------------------------------------------------- planning
def _arrow_schema(source: DataFrame) -> pa.Schema:
    """The source's schema in Arrow (for the plan's checks; no row is read)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(source.schema)


def _output_schema(
    request: MergeRequest, snapshot: Any, source: pa.Schema
) -> tuple[StructType, dict[str, str]]:
    """The schema rows are written with, and the configuration, evolved with ``merge_schema``.

    Raises:
        SchemaEvolutionError: The source's columns cannot be added.
    """
    schema = snapshot.schema
    configuration = {k: v for k, v in snapshot.configuration.items() if v is not None}
    if not (request.merge_schema and any(c.star for c in request.clauses)):
        return schema, configuration
    merged = merge_schemas(
        snapshot.schema,
        within_table(schema_of_data(source), snapshot.schema),
        partition_columns=snapshot.partition_columns,
        type_widening=type_widening_enabled(snapshot.protocol, snapshot.metadata),
    )
    if merged == snapshot.schema:
        return schema, configuration
    evolved, mapped = map_new_columns(merged, configuration, previous=snapshot.configuration)
    return evolved, dict(mapped)


def _files_read(tx: Transaction, plan: MergePlan) -> pa.Table:
    """The candidate files, recorded as read as delta-spark's MERGE records them."""
    snapshot = tx.snapshot
    if plan.by_source:
        return tx.read_whole_table()
    predicate = plan.target_predicate()
    files = snapshot.files if predicate is None else candidate_files(snapshot, predicate)
    read = TRUE if predicate is None else partition_part(predicate, snapshot.partition_columns)
    tx.track_files_read(files, predicate=read)
    return files


# ---------------------------------------------------------------------- the join
def _joined(
    spark: SparkSession,
    table: DeltaTable,
    request: MergeRequest,
    plan: MergePlan,
    files: NativeTarget,
    options: dict[str, str],
    *,
    use_dvs: bool,
    columns: Sequence[str] | None = None,
    untouched: bool = True,
    inserts: bool = True,
    touched: Collection[str] | None = None,
) -> DataFrame:
    """Target scan joined with the source, with the id of the clause taking each row.

    ``files``: the candidate files, split between Spark's Parquet reader and deltalog's.
    ``columns``: the target columns read (table order); ``None``: every column.
    ``untouched``: keep the target rows no source row matches even when no clause can take
    them (a copy-on-write rewrite copies them; the counting pass does not need them).
    ``inserts``: keep the source rows no target row matches when a clause may insert them;
    the counting pass does not (inserts are counted from the files written), so its join
    streams the target and Spark may broadcast the source, as delta-spark's search for
    touched files does, instead of shuffling and sorting every target row.
    ``touched``: the scan names (:data:`FILE_COLUMN` values) of the touched files; when given,
    each target row carries :data:`_TOUCHED` (whether its file is one of them) instead of its
    file, position and row count, computed before the join: the join's shuffle and sort then
    carry one boolean per row rather than a file URI (the copy-on-write write pass).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField

    snapshot = table.snapshot
    schema = snapshot.schema
    names = list(schema.names) if columns is None else list(columns)
    scan = PositionsPlan(
        uri=table.uri,
        storage_options=options,
        table_schema=schema.to_json_string(),
        partition_columns=tuple(snapshot.partition_columns),
        columns=tuple(names),
        batch_rows=_batch_rows(spark),
    )
    out = spark_schema(schema, names)
    for name, kind in (
        (FILE_COLUMN, StringType()),
        (POSITION_COLUMN, LongType()),
        (PHYSICAL_COLUMN, LongType()),
    ):
        out = out.add(StructField(name, kind, True))
    partition_columns = list(snapshot.partition_columns)
    frames = []
    if files.split.native:
        frames.append(files.frame(spark, schema, partition_columns, names))
    if files.split.rest.num_rows or not frames:
        descriptors = spark.createDataFrame(describe_files(files.split.rest), FILES_DDL)
        frames.append(descriptors.mapInArrow(lambda batches: positions_task(scan, batches), out))
    target = frames[0] if len(frames) == 1 else frames[0].union(frames[1])
    if touched is not None:
        in_touched = F.col(FILE_COLUMN).isin(sorted(touched))
        target = target.withColumn(_TOUCHED, in_touched).drop(
            FILE_COLUMN, POSITION_COLUMN, PHYSICAL_COLUMN
        )
    target = target.withColumn(_TARGET_PRESENT, F.lit(True))
    source = request.source.withColumn(_SOURCE_PRESENT, F.lit(True))
    keep_target = bool(plan.by_source) or (untouched and not use_dvs and bool(plan.matched))
    keep_source = inserts and bool(plan.not_matched)
    how = {
        (False, False): "inner",
        (True, False): "left",
        (False, True): "right",
        (True, True): "full",
    }[(keep_target, keep_source)]
    joined = target.alias(request.target_alias).join(
        source.alias(request.source_alias), F.expr(request.condition_text), how
    )
    return joined.withColumn(_CLAUSE, _clause_ids(plan))


def _condition_columns(request: MergeRequest, plan: MergePlan) -> list[str] | None:
    """The target columns the merge condition and the clause conditions may name (table order).

    Every target column whose name any reference in them spells (as a column, a qualifier or a
    struct path part, case-insensitively as Spark resolves) is kept: a superset of what Spark
    needs. ``None`` when that is every column (nothing to prune) or none.
    """
    spelled: set[str] = set()
    conditions = [request.condition, *(c.condition for c in request.clauses)]
    for condition in conditions:
        if condition is None:
            continue
        for ref in column_refs(condition):
            spelled.add(ref.name.lower())
            if ref.qualifier is not None:
                spelled.update(part.lower() for part in ref.qualifier.split("."))
    names = list(plan.target_schema.names)
    kept = [n for n in names if n.lower() in spelled]
    return None if not kept or len(kept) == len(names) else kept


def _clause_ids(plan: MergePlan) -> SparkColumn:
    """The id of the clause taking each joined row (null: none; an untouched target row)."""
    from pyspark.sql import functions as F

    in_target = F.col(_TARGET_PRESENT).isNotNull()
    in_source = F.col(_SOURCE_PRESENT).isNotNull()
    sides = (
        (plan.matched, in_target & in_source, 0),
        (plan.by_source, in_target & ~in_source, _BY_SOURCE),
        (plan.not_matched, ~in_target & in_source, _INSERT),
    )
    chosen: Any = None
    for resolved_clauses, where, base in sides:
        for i, resolved in enumerate(resolved_clauses):
            condition = where
            if resolved.clause.condition_text is not None:
                condition = condition & F.expr(resolved.clause.condition_text)
            chosen = (F if chosen is None else chosen).when(condition, F.lit(base + i))
    return F.lit(None).cast("int") if chosen is None else chosen


def _ids(
    plan: MergePlan, action: str, kinds: Sequence[str] = (MATCHED, NOT_MATCHED_BY_SOURCE)
) -> list[int]:
    """Ids of the clauses of ``kinds`` doing ``action``."""
    out = []
    for kind, resolved_clauses, base in (
        (MATCHED, plan.matched, 0),
        (NOT_MATCHED_BY_SOURCE, plan.by_source, _BY_SOURCE),
        (NOT_MATCHED, plan.not_matched, _INSERT),
    ):
        if kind in kinds:
            out += [base + i for i, r in enumerate(resolved_clauses) if r.action == action]
    return out


# ---------------------------------------------------------------------- checks and counts
def _check_multiple_matches(
    joined: DataFrame, request: MergeRequest, plan: MergePlan, files: NativeTarget
) -> None:
    """Refuse a target row matched by several source rows (delta-spark's rule).

    Only run when :func:`_count` found such a row: this query finds one to name.

    Raises:
        MultipleSourceRowMatchError: Naming the first such row.
    """
    from pyspark.sql import functions as F

    # every matched pair counts, whether a clause takes it or not (as delta-spark's check)
    pairs = joined.where(F.col(_TARGET_PRESENT).isNotNull() & F.col(_SOURCE_PRESENT).isNotNull())
    target_columns = [F.col(f"`{request.target_alias}`.`{n}`") for n in plan.target_schema.names]
    many = (
        pairs.groupBy(FILE_COLUMN, POSITION_COLUMN)
        .agg(F.count(F.lit(1)).alias("n"), F.first(F.struct(*target_columns)).alias("row"))
        .where(F.col("n") > 1)
        .limit(1)
        .collect()
    )
    if not many:
        return
    first = many[0]
    values = first["row"].asDict(recursive=True)
    path = files.resolve(first[FILE_COLUMN])[0]
    raise MultipleSourceRowMatchError(
        f"the target row {values} (in {path}) is matched by {first['n']} source "
        "rows: which one updates it is ambiguous, as delta-spark refuses it. Deduplicate the "
        "source, or make the merge condition match at most one source row per target row. "
        "Nothing was written.",
        target_row=values,
        matches=int(first["n"]),
    )


def _one_unconditional_delete(plan: MergePlan) -> bool:
    """Whether the only matched clause is an unconditional delete (it may take any match)."""
    if len(plan.matched) != 1:
        return False
    only = plan.matched[0]
    return only.action == "delete" and only.condition is None


def _count(joined: DataFrame, plan: MergePlan, files: NativeTarget, *, use_dvs: bool) -> _Counts:
    """One aggregation: rows each clause takes, touched files, copies, the most matches per row.

    First per target row (file and position; source-only rows per inserting clause), then per
    clause and file: a target row counts once however many source rows matched it, and the
    most matched pairs of any target row feeds the duplicate-match check. With deletion
    vectors the positions taken out of each file come along, so the join runs once here and
    once for the write. A file's scan name is mapped back to its logged path, and its row
    count, when Spark's reader read it, comes from ``files``.
    """
    from pyspark.sql import functions as F

    in_target = F.col(_TARGET_PRESENT).isNotNull()
    pair = in_target & F.col(_SOURCE_PRESENT).isNotNull()
    changing = set(_ids(plan, "update") + _ids(plan, "delete"))
    per_row = joined.groupBy(
        F.col(FILE_COLUMN).alias(FILE_COLUMN),
        F.col(POSITION_COLUMN).alias(POSITION_COLUMN),
        F.when(~in_target, F.col(_CLAUSE)).alias("inserting"),
    ).agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(pair, F.lit(1))).alias("pairs"),
        # one clause per target row once the check passes (the exempt delete takes them all)
        F.max(_CLAUSE).alias(_CLAUSE),
        F.max(PHYSICAL_COLUMN).alias(PHYSICAL_COLUMN),
    )
    aggregates = [
        F.sum("n").alias("n"),
        F.count(F.lit(1)).alias("d"),
        F.max("pairs").alias("pairs"),
        F.max(PHYSICAL_COLUMN).alias("physical"),
    ]
    if use_dvs and changing:
        taken = F.when(F.col(_CLAUSE).isin(sorted(changing)), F.col(POSITION_COLUMN))
        aggregates.append(F.collect_list(taken).alias("positions"))
    rows = per_row.groupBy(_CLAUSE, FILE_COLUMN).agg(*aggregates).collect()
    counts = _Counts()
    for row in rows:
        clause, key = row[_CLAUSE], row[FILE_COLUMN]
        path, known = (None, None) if key is None else files.resolve(key)
        physical = known if known is not None else row["physical"]
        counts.most_matches = max(counts.most_matches, int(row["pairs"] or 0))
        if clause is None:
            continue
        # a target row is counted once however many source rows matched it
        taken_rows = int(row["n"]) if clause >= _INSERT else int(row["d"])
        counts.rows[clause] = counts.rows.get(clause, 0) + taken_rows
        if clause in changing and path is not None:
            counts.touched.add(path)
            counts.touched_keys.add(key)
            counts.physical[path] = int(physical)
            if use_dvs:
                positions, _ = counts.taken.get(path, (set(), 0))
                positions.update(int(p) for p in row["positions"])
                counts.taken[path] = (positions, int(physical))
        if path is not None:
            counts.taken_rows[path] = counts.taken_rows.get(path, 0) + taken_rows
    return counts


def _copied(counts: _Counts, touched: pa.Table) -> int:
    """Rows a copy-on-write rewrite copies: the live rows of touched files no clause takes.

    A file's live rows are its physical rows less those its deletion vector (if any) removes.
    """
    copied = 0
    for file in touched.select(["path", "deletion_vector"]).to_pylist():
        path, dv = file["path"], file["deletion_vector"]
        live = counts.physical[path] - (0 if dv is None else int(dv["cardinality"]))
        copied += live - counts.taken_rows.get(path, 0)
    return copied


def _merge_counts(counts: _Counts, plan: MergePlan, source_rows: int) -> MergeCounts:
    def total(ids: list[int]) -> int:
        return sum(counts.rows.get(i, 0) for i in ids)

    return MergeCounts(
        source_rows=source_rows,
        inserted=0,  # counted from the files written (the counting pass keeps no insert)
        matched_updated=total(_ids(plan, "update", (MATCHED,))),
        matched_deleted=total(_ids(plan, "delete", (MATCHED,))),
        by_source_updated=total(_ids(plan, "update", (NOT_MATCHED_BY_SOURCE,))),
        by_source_deleted=total(_ids(plan, "delete", (NOT_MATCHED_BY_SOURCE,))),
    )


# ---------------------------------------------------------------------- writing
def _write(
    joined: DataFrame,
    table: DeltaTable,
    request: MergeRequest,
    plan: MergePlan,
    counts: _Counts,
    schema: StructType,
    configuration: Mapping[str, str],
    *,
    use_dvs: bool,
) -> list[Any]:
    """Write the new rows (and, copy-on-write, the kept rows of touched files); their adds."""
    from pyspark.sql import functions as F

    clause = F.col(_CLAUSE)
    written_ids = _ids(plan, "update") + _ids(plan, "insert", (NOT_MATCHED,))
    wanted = clause.isin(written_ids) if written_ids else F.lit(False)
    if not use_dvs and counts.touched:
        kept = F.col(_TOUCHED) & clause.isNull()  # see _joined's ``touched``
        wanted = wanted | kept
    rows = joined.where(wanted).select(*_output_columns(request, plan, schema))
    return run_job(
        rows,
        table.uri,
        schema,
        list(table.snapshot.partition_columns),
        configuration,
        list(schema.names),
        dict(request.storage_options),
    )


def _output_columns(request: MergeRequest, plan: MergePlan, schema: StructType) -> list[Any]:
    """Each output column: the value the row's clause gives it, else the target's (or null)."""
    from pyspark.sql import functions as F

    spark_types = spark_schema(schema, list(schema.names))
    target_names = set(plan.target_schema.names)
    clause = F.col(_CLAUSE)
    writing: list[tuple[int, ResolvedClause]] = [
        (i, r) for i, r in enumerate(plan.matched) if r.action == "update"
    ]
    writing += [(_BY_SOURCE + i, r) for i, r in enumerate(plan.by_source) if r.action == "update"]
    writing += [(_INSERT + i, r) for i, r in enumerate(plan.not_matched)]
    out = []
    for f in spark_types.fields:
        current = (
            F.col(f"`{request.target_alias}`.`{f.name}`") if f.name in target_names else F.lit(None)
        )
        value: Any = None
        for ident, resolved in writing:
            by_column = {a.column: a for a in resolved.assignments}
            assignment = by_column.get(f.name)
            if assignment is not None:
                given = _spark_value(assignment)
            elif resolved.action == "insert":
                given = F.lit(None)
            else:
                continue  # an update keeps the target's value
            value = (F if value is None else value).when(clause == F.lit(ident), given)
        column = current if value is None else value.otherwise(current)
        out.append(column.cast(f.dataType).alias(f.name))
    return out


def _spark_value(assignment: Assignment) -> SparkColumn:
    """An assignment's value as a Spark column: a literal, a column, or SQL text."""
    from pyspark.sql import functions as F

    expression = assignment.expression
    if expression is None:
        return F.lit(assignment.constant)
    if isinstance(expression, ExprColumn):  # a * clause's source column: quoted, any name
        parts = [p for p in (expression.qualifier, expression.name) if p is not None]
        return F.col(".".join("`" + p.replace("`", "``") + "`" for p in parts))
    return F.expr(assignment.text)


def _touched_files(tx: Transaction, touched: set[str]) -> pa.Table:
    """The snapshot's rows (with statistics) of the touched files."""
    files = tx.snapshot.files
    if not touched:
        return files.slice(0, 0)
    mask = pc.is_in(files.column("path"), value_set=pa.array(sorted(touched), pa.string()))
    return files.filter(mask)


def _mark_deleted(
    counts: _Counts, table: DeltaTable, rewrite: RowRewrite, touched: pa.Table
) -> None:
    """Add the positions of the rows taken out (found by :func:`_count`) to each DV."""
    storage = table._storage
    for file in touched.to_pylist():
        positions, physical = counts.taken[file["path"]]
        descriptor = file.get("deletion_vector")
        deleted = None if descriptor is None else _deleted_rows(storage, descriptor, physical)
        live = physical - (0 if deleted is None else len(deleted))
        taken = pa.array(sorted(positions), pa.int64())
        stand_in = pa.table({"live": pa.nulls(live, pa.int8())})  # only its length is read
        rows = FileRows(stand_in, taken, physical, deleted)
        rewrite.change_positions(file, rows, taken)
