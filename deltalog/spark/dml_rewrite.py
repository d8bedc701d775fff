"""The driver side of a Spark DELETE or UPDATE: run the job, turn its rows into one commit.

:func:`run_job` maps the candidate files through :func:`deltalog.spark.dml_scan.dml_task` on
the executors (DataFrame API only, so it runs over Spark Connect too) and gathers what the
tasks report into a :class:`Changes`: files removed whole, files re-committed with a new
deletion vector (:func:`deltalog.dml.dv_adds.add_with_deletion_vector`, delta-spark's wide
bounds), new data files, DV files written. :meth:`Changes.commit` stages them on the
transaction and commits with the operation's metrics; whatever goes wrong before the commit
may have landed deletes every file the job wrote (a failed job's files are found by the job's
token in their names).
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from deltalog import errors
from deltalog.dml.dv_adds import add_with_deletion_vector
from deltalog.dml.handle import OperationSettings, predicate_parameter, refuse_append_only
from deltalog.dml.rewrite import deletion_vectors_enabled
from deltalog.errors import (
    CommitStatusUnknownError,
    InvalidExpressionError,
    SparkWriteError,
    StorageError,
)
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile
from deltalog.protocol.paths import decode_path
from deltalog.spark.dml_scan import (
    CANDIDATES_DDL,
    RESULT_DDL,
    DmlPlan,
    assign,
    describe_candidates,
    dml_task,
    file_token,
)
from deltalog.spark.job import task_plan
from deltalog.spark.shipping import executor_import_hint, missing_on_executors
from deltalog.spark.spark_predicate import case_sensitive, with_schema_names
from deltalog.spark.time_zones import in_session_time_zone
from deltalog.stats.expression_predicate import row_predicate
from deltalog.stats.predicate_input import PredicateLike
from deltalog.stats.predicates import Predicate, validate
from deltalog.table import DeltaTable
from deltalog.write.assignments import Assignment, parse_assignments
from deltalog.write.deletion_vector_files import dv_prefix_length
from deltalog.write.rewrite_plan import candidate_files, check_predicate_columns, partition_part
from deltalog.write.row_tracking import refuse_table_rewrite

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.write.transaction import Transaction

__all__ = ["Changes", "Statement", "prepare", "run_job"]


@dataclass
class Changes:
    """What a DELETE or UPDATE changes, and the files it wrote.

    Attributes:
        storage: The table's storage.
        removes: Paths of the files removed (whole, rewritten, or re-committed with a DV).
        dv_adds: The re-commits of files with their new DV.
        new_files: New data files.
        written: Locations of every file written (data and DV files), deleted on failure.
        taken: Rows deleted, or updated.
        copied: Rows copied into new files unchanged (copy-on-write).
        removed_files: Files removed without a re-commit.
        removed_bytes: Their bytes.
        dvs_added: Files that got their first DV.
        dvs_removed: Files with a DV removed whole.
        dvs_updated: Files whose DV grew.
    """

    storage: TableStorage
    removes: list[str] = field(default_factory=list)
    dv_adds: list[AddFile] = field(default_factory=list)
    new_files: list[AddFile] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    taken: int = 0
    copied: int = 0
    removed_files: int = 0
    removed_bytes: int = 0
    dvs_added: int = 0
    dvs_removed: int = 0
    dvs_updated: int = 0
    _finished: bool = False

    def remove_whole(self, file: Mapping[str, Any]) -> None:
        """Remove a live file (a row of the snapshot's files) whole."""
        self.removes.append(file["path"])
        self.removed_files += 1
        self.removed_bytes += int(file.get("size") or 0)
        if file.get("deletion_vector"):
            self.dvs_removed += 1

    @property
    def has_changes(self) -> bool:
        """Whether anything is to be committed."""
        return bool(self.removes or self.new_files)

    @property
    def added_bytes(self) -> int:
        """Bytes of the new data files."""
        return sum(a.size for a in self.new_files)

    def dv_metrics(self) -> dict[str, int]:
        """Deletion-vector counts as delta-spark reports them (updated ones count in both)."""
        return {
            "numDeletionVectorsAdded": self.dvs_added + self.dvs_updated,
            "numDeletionVectorsRemoved": self.dvs_removed + self.dvs_updated,
            "numDeletionVectorsUpdated": self.dvs_updated,
        }

    def commit(self, tx: Transaction, metrics: Mapping[str, int]) -> int:
        """Stage the changes on ``tx`` and commit with ``metrics``; the version.

        Raises:
            Whatever :meth:`Transaction.commit` raises. The files written are deleted unless
            the commit may have landed (``StorageError``, ``CommitStatusUnknownError``).
        """
        try:
            if self.removes:
                tx.remove(self.removes)
            adds = [*self.dv_adds, *self.new_files]
            if adds:
                tx.add(adds)
            tx.set_metrics({k: str(v) for k, v in metrics.items()})
            version = tx.commit()
        except (StorageError, CommitStatusUnknownError):
            self._finished = True
            raise  # the commit may have landed: its files must stay
        except BaseException:
            self.abort()
            raise
        self._finished = True
        return version

    def abort(self) -> None:
        """Delete every file written (best effort: an orphan is harmless, VACUUM removes it)."""
        if self._finished:
            return
        self._finished = True
        _delete(self.storage, self.written)


def run_job(
    spark: SparkSession,
    storage: TableStorage,
    plan: DmlPlan,
    candidates: pa.Table,
    uri: str,
) -> Changes:
    """Run the DML job over ``candidates`` (rows of the snapshot's files); what it changed.

    Raises:
        SparkWriteError: The job failed (every file it wrote is deleted).
        DeltaLogError: A task refused its rows (a constraint, an assignment that does not fit):
            the same error, raised here after every file written is deleted.
    """
    described = describe_candidates(candidates)
    parts = _task_count(spark, len(described))
    frame = spark.createDataFrame(described, CANDIDATES_DDL).repartition(parts)
    try:
        rows = frame.mapInArrow(lambda batches: dml_task(plan, batches), RESULT_DDL).collect()
    except Exception as exc:
        _delete_tokened(storage, plan.token)
        missing = missing_on_executors(str(exc))
        if missing is not None:
            raise SparkWriteError(executor_import_hint(spark, missing, uri)) from exc
        raise SparkWriteError(
            f"the Spark job changing rows of {uri} failed (nothing was committed): {exc}"
        ) from exc
    changes = Changes(storage)
    files = candidates.to_pylist()
    failures: list[str] = []
    for row in rows:
        kind = row["kind"]
        if kind == "error":
            failures.append(row["error"])
        elif kind == "dv_file":
            changes.written.append(row["path"])
        elif kind == "add":
            changes.written.append(storage.data_file(decode_path(row["path"])))
            changes.new_files.append(
                AddFile(
                    path=row["path"],
                    partition_values=orjson.loads(row["partition_values"]),
                    size=row["size"],
                    modification_time=row["modification_time"],
                    data_change=True,
                    stats=row["stats"],
                )
            )
        else:
            file = files[int(row["idx"])]
            changes.taken += int(row["taken"])
            changes.copied += int(row["copied"] or 0)
            if kind == "remove":
                changes.remove_whole(file)
            else:
                descriptor = orjson.loads(row["descriptor"])
                changes.dv_adds.append(
                    add_with_deletion_vector(dict(file), descriptor, int(row["physical_rows"]))
                )
                changes.removes.append(file["path"])
                if file.get("deletion_vector"):
                    changes.dvs_updated += 1
                else:
                    changes.dvs_added += 1
    if failures:
        changes.abort()
        _delete_tokened(storage, plan.token)
        raise _named(failures[0])
    return changes


def _task_count(spark: SparkSession, files: int) -> int:
    """Tasks for ``files`` candidate files: one per file, at most the shuffle partitions."""
    text = spark.conf.get("spark.sql.shuffle.partitions", "200")
    try:
        most = max(1, int(str(text)))
    except ValueError:
        most = 200
    return max(1, min(files, most))


def _named(text: str) -> errors.DeltaLogError:
    """The error a task reported as ``<ErrorClass>: message``, as an exception."""
    name, _, message = text.partition(": ")
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, errors.DeltaLogError):
        with contextlib.suppress(TypeError):
            return cls(message)
    return SparkWriteError(f"the Spark job changing rows failed (nothing was committed): {text}")


def _delete(storage: TableStorage, locations: list[str]) -> None:
    for location in locations:
        with contextlib.suppress(Exception):
            storage.store.delete(location)


def _delete_tokened(storage: TableStorage, token: str) -> None:
    """Delete the files a failed job wrote: data and DV files with ``token`` in their name."""

    def ours(location: str) -> bool:
        name = posixpath.basename(location)
        return f"-{token}-" in name or name.startswith(f"deletion_vector_{token}-")

    with contextlib.suppress(Exception):
        found = [s.path for s in storage.store.list_tree_where(storage.root, ours)]
        _delete(storage, [p for p in found if "/_delta_log/" not in p])


@dataclass(frozen=True)
class Statement:
    """A checked DELETE or UPDATE, ready to run: the table, its transaction and the plan.

    Attributes:
        table: The table (its snapshot is the one ``tx`` reads).
        tx: The operation's transaction (the files read already recorded).
        candidates: The files the job reads (rows of the snapshot's files).
        plan: What the tasks get.
        whole: The candidates are removed whole without reading them (a delete on partitions).
    """

    table: DeltaTable
    tx: Transaction
    candidates: pa.Table
    plan: DmlPlan
    whole: bool


def prepare(
    spark: SparkSession,
    uri: str,
    operation: str,
    predicate: PredicateLike | None,
    *,
    assignments: Mapping[str, Any] | None,
    storage_options: Mapping[str, str] | None,
    commit_properties: Any,
) -> Statement:
    """Check the statement against the table and start its transaction; nothing is written.

    Raises:
        TableNotFoundError: No table at ``uri``.
        InvalidPredicateError: The predicate does not parse or names a missing column.
        InvalidExpressionError: An assignment names a missing column or does not fit.
        AppendOnlyError, UnsupportedFeatureError, RowTrackingRewriteError: As the Python DML.
    """
    settings = OperationSettings.build(commit_properties)
    options = dict(storage_options or {})
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    snapshot = table.snapshot
    schema = snapshot.schema
    snapshot.check_writable()
    refuse_append_only(snapshot, operation)
    parsed: Predicate | None = None
    if predicate is not None:
        zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC")
        parsed = in_session_time_zone(row_predicate(predicate), schema, zone)
        if not case_sensitive(spark):
            parsed = with_schema_names(parsed, schema.names)  # ``ID`` is ``id``, as in Spark
    partition_columns = list(snapshot.partition_columns)
    on_partitions = parsed is not None and parsed.columns() <= set(partition_columns)
    if parsed is not None:
        if on_partitions:
            validate(parsed, schema, partition_columns)
        else:
            check_predicate_columns(parsed, schema)
    sets: list[Assignment] = []
    if assignments is not None:
        sets = parse_assignments(assignments, schema)
        if not sets:
            raise InvalidExpressionError(f"{operation} needs at least one column to set")
        arrow = pa.schema([f.remove_metadata() for f in schema.to_arrow()])
        assign(tuple(sets), pa.Table.from_batches([], schema=arrow))  # names and types
    use_dvs = deletion_vectors_enabled(snapshot.protocol, snapshot.metadata)
    tx = settings.start(table, operation, {"predicate": predicate_parameter(predicate, parsed)})
    if parsed is None:
        candidates = tx.read_whole_table()
    elif on_partitions:
        candidates = tx.read_files(parsed)
    else:
        candidates = candidate_files(snapshot, parsed)
        tx.track_files_read(candidates, predicate=partition_part(parsed, partition_columns))
    whole = not sets and (parsed is None or on_partitions)
    if candidates.num_rows and not whole and (sets or not use_dvs):
        what = "updating rows of" if sets else "deleting rows of"
        refuse_table_rewrite(snapshot.protocol, snapshot.metadata, operation=what)
    read_columns: tuple[str, ...] = ()
    if use_dvs and not sets and parsed is not None:
        needed = parsed.columns()
        read_columns = tuple(f.name for f in schema.fields if f.name in needed)
    names = [f.name for f in schema.fields]
    write = task_plan(
        spark, table.uri, schema, partition_columns, snapshot.configuration, names, options
    )
    plan = DmlPlan(
        write=write,
        predicate=None if on_partitions else parsed,
        assignments=tuple(sets),
        use_deletion_vectors=use_dvs,
        dv_prefix_length=dv_prefix_length(snapshot.configuration),
        read_columns=read_columns,
        token=file_token(),
    )
    return Statement(table, tx, candidates, plan, whole)
