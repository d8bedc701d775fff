"""The driver side of a Spark write: plan, run the write job, commit one transaction.

``write(df, uri, ...)`` is ``stage(...)`` followed by ``StagedWrite.commit()``. Staging pins the
table version the write reads, runs the Spark job that writes the data files (see
:mod:`deltalog.spark.task`) and stages the transaction; committing publishes it through the log
store, checking for conflicts with whatever landed in between. Tests and careful callers can
hold a staged write to control exactly how two writers interleave.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from deltalog import in_commit_timestamps as ict
from deltalog import row_tracking
from deltalog.actions import Action, AddFile, Txn, serialize_actions
from deltalog.clustering import check_clustering_stats
from deltalog.column_mapping import (
    logical_to_physical,
    mapping_mode,
    physical_name,
    physical_schema,
)
from deltalog.commit import make_commit_info, now_ms, num_records, try_write, write_metrics
from deltalog.errors import (
    AppendOnlyError,
    ConstraintViolationError,
    InvalidInputError,
    InvalidPredicateError,
    ProtocolChangedError,
    ReplaceWhereMismatchError,
    SparkWriteError,
    StorageError,
    TableNotFoundError,
    TransactionClosedError,
)
from deltalog.paths import decode_path
from deltalog.predicates import (
    And,
    Comparison,
    In,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateLike,
    as_predicate,
    matches,
    partition_table,
    validate,
)
from deltalog.schema import PrimitiveType, StructType
from deltalog.spark.constraints import refuse_unenforced_constraints
from deltalog.spark.replace_data import (
    check_predicate_columns,
    is_data_predicate,
    stage_data_replace,
)
from deltalog.spark.schema import check_partitioning, match_columns, schema_for_new_table
from deltalog.spark.task import CODECS, RESULT_DDL, TaskPlan, write_task
from deltalog.stats import DEFAULT_INDEXED_COLS
from deltalog.storage import TableStorage
from deltalog.table import DeltaTable, new_table_actions
from deltalog.transaction import Transaction

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

Mode = Literal["append", "overwrite"]
#: What a Python worker's failure says when deltalog is not installed on the executors.
_WORKER_IMPORT_FAILURE = "No module named 'deltalog"
PartitionOverwriteMode = Literal["static", "dynamic"]


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did.

    Attributes:
        version: The version committed; for a skipped or empty write, the version that already
            held it (``None`` when nothing was read, e.g. a skipped write to a new table).
        files_added: Data files committed.
        files_removed: Data files the write replaced.
        rows: Rows committed.
        bytes: Bytes of data files committed.
        skipped: Whether the write was skipped because ``app_id`` had already committed
            ``app_version`` (a retried micro-batch); then nothing was written at all.
    """

    version: int | None
    files_added: int
    files_removed: int
    rows: int
    bytes: int
    skipped: bool = False


class StagedWrite:
    """Data files written and a commit staged, not yet published.

    Call :meth:`commit` to publish or :meth:`abort` to give up (which deletes the files). The
    commit is a transaction on an existing table, or, for a new table, its version 0 (metadata,
    protocol and files in one commit, as delta-spark creates a table with its first write).
    """

    def __init__(
        self,
        storage: TableStorage,
        adds: list[AddFile],
        *,
        table: DeltaTable | None = None,
        tx: Transaction | None = None,
        first_commit: bytes | None = None,
        removed: int = 0,
        app: bool = False,
    ) -> None:
        self._storage = storage
        self._table = table
        self._tx = tx
        self._first_commit = first_commit
        self.adds = adds
        self._removed = removed
        self._app = app
        self._finished = False

    @property
    def read_version(self) -> int:
        """The table version the write read (-1 for a new table)."""
        if self._tx is not None:
            return self._tx.read_version
        return -1 if self._table is None else self._table.version()

    @property
    def skipped(self) -> bool:
        """Whether the write is a no-op: its ``app_version`` was already committed."""
        return self._tx is None and self._first_commit is None

    def commit(self) -> WriteResult:
        """Commit the staged write; returns what it did.

        Raises:
            ConcurrentModificationError: A concurrent commit conflicts with this write (the
                six named subclasses; ``ProtocolChangedError`` when another writer created the
                table first). The written files are deleted, as for every error but a storage
                failure.
            CommitFailedError: Every attempt lost the race.
            TransactionClosedError: Already committed or aborted.
            StorageError: The log store failed; the files are kept, since the commit may have
                landed.
        """
        if self._finished:
            raise TransactionClosedError("this staged write was already committed or aborted")
        if self.skipped:
            self._finished = True
            return WriteResult(self.read_version, 0, 0, 0, 0, skipped=True)
        no_op = False
        try:
            if self._first_commit is not None:
                version = self._create()
            else:
                assert self._tx is not None
                version = self._tx.commit()
                no_op = self._tx.no_op
        except StorageError:
            raise  # the commit may have landed: its files must stay
        except Exception:
            self._delete_files()  # refused or lost: nothing refers to the files
            raise
        finally:
            self._finished = True
        if no_op:  # nothing to commit, or the same app_id/app_version landed
            self._delete_files()
            return WriteResult(version, 0, 0, 0, 0, skipped=self._app)
        if self._table is not None:
            self._table.wait_for_checkpoints()
        return WriteResult(
            version=version,
            files_added=len(self.adds),
            files_removed=self._removed,
            rows=sum(num_records(a) for a in self.adds),
            bytes=sum(a.size for a in self.adds),
        )

    def _create(self) -> int:
        assert self._first_commit is not None
        if try_write(self._storage, 0, self._first_commit):
            return 0
        raise ProtocolChangedError(
            f"another writer created the table at {self._storage.uri} first (several writers "
            "writing to an empty location, as delta-spark reports it); write again, or create "
            "the table before starting concurrent writers",
            winning_version=0,
        )

    def abort(self) -> None:
        """Give up the write: nothing is committed and the written files are deleted."""
        if not self._finished:
            self._finished = True
            self._delete_files()

    def _delete_files(self) -> None:
        storage = self._storage
        for add in self.adds:
            with contextlib.suppress(Exception):  # best effort: an orphan file is harmless
                storage.store.delete(storage.data_file(decode_path(add.path)))


def write(
    df: DataFrame,
    uri: str,
    *,
    mode: Mode = "append",
    partition_by: Sequence[str] = (),
    replace_where: PredicateLike | None = None,
    partition_overwrite_mode: PartitionOverwriteMode | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    configuration: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write a Spark DataFrame to a Delta table and commit it; the table is created if absent.

    Spark's executors write the Parquet files straight into the table directory and read each
    file's statistics from its footer; the driver commits them in one transaction. Like
    ``df.write.format("delta")``:

    * ``mode="append"`` adds the rows (a blind append: it never conflicts with other writers'
      data changes).
    * ``mode="overwrite"`` replaces the whole table; with ``replace_where`` only the rows of the
      partitions the predicate selects (and every written row must satisfy it); with
      ``partition_overwrite_mode="dynamic"`` (default: the Spark session's
      ``spark.sql.sources.partitionOverwriteMode``) only the partitions the DataFrame writes to.
      The overwrite reads what it replaces, so a concurrent commit that changes those
      partitions makes this one fail with a named conflict; other partitions are free.
    * ``app_id``/``app_version`` make the write idempotent: if the table already records
      ``app_version`` (or later) for ``app_id``, nothing is written (a retried micro-batch).

    Args:
        df: The rows to write. Its columns must match the table's (by name, case-insensitive);
            table columns it lacks must be nullable.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        mode: ``append`` or ``overwrite``.
        partition_by: Partition columns of a new table; for an existing table, empty or the
            table's own.
        replace_where: With ``mode="overwrite"``: a predicate, as SQL text
            (``"day = '2024-01-01'"``) or any form :func:`deltalog.predicates.as_predicate`
            accepts. On data columns, the files holding matching rows are rewritten without
            them (see :mod:`deltalog.spark.replace_data`).
        partition_overwrite_mode: ``static`` or ``dynamic``, for ``mode="overwrite"``.
        storage_options: Log store options (credentials, endpoints, commit protocol), used on
            the driver and the executors.
        app_id: Streaming application id (``txn.appId``).
        app_version: Micro-batch number (``txn.version``) for ``app_id``.
        configuration: Table properties for a new table.

    Returns:
        What was committed.

    Raises:
        SchemaMismatchError: The DataFrame's columns do not fit the table (nothing written).
        ReplaceWhereMismatchError: A row falls outside ``replace_where`` (nothing written).
        InvalidPredicateError: ``replace_where`` does not parse or names an unknown column.
        InvalidInputError: Bad arguments (mode, partitioning, app id/version).
        SparkWriteError: The Spark job failed (nothing committed).
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
        StorageError: The log store failed.
    """
    staged = stage(
        df,
        uri,
        mode=mode,
        partition_by=partition_by,
        replace_where=replace_where,
        partition_overwrite_mode=partition_overwrite_mode,
        storage_options=storage_options,
        app_id=app_id,
        app_version=app_version,
        configuration=configuration,
    )
    return staged.commit()


def stage(
    df: DataFrame,
    uri: str,
    *,
    mode: Mode = "append",
    partition_by: Sequence[str] = (),
    replace_where: PredicateLike | None = None,
    partition_overwrite_mode: PartitionOverwriteMode | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    configuration: Mapping[str, str] | None = None,
) -> StagedWrite:
    """Everything :func:`write` does except the commit; see there for the arguments.

    The table version the write reads is pinned here; :meth:`StagedWrite.commit` checks what
    landed since.

    Raises:
        Same as :func:`write`, but for the commit-time conflicts.
    """
    _check_arguments(mode, replace_where, partition_overwrite_mode, app_id, app_version)
    options = dict(storage_options or {})
    frame_schema = StructType.from_json_string(df.schema.json())
    try:
        table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    except TableNotFoundError:
        return _stage_new_table(
            df,
            uri,
            frame_schema,
            mode=mode,
            partition_by=partition_by,
            replace_where=replace_where,
            options=options,
            app_id=app_id,
            app_version=app_version,
            configuration=configuration,
        )
    snapshot = table.snapshot
    snapshot.check_writable()
    check_clustering_stats(snapshot)
    refuse_unenforced_constraints(snapshot.schema, uri=uri)
    check_partitioning(partition_by, snapshot.partition_columns, uri=uri)
    pairs = match_columns(frame_schema, snapshot.schema, snapshot.partition_columns, uri=uri)
    if any(src != dst for src, dst in pairs):
        from pyspark.sql import functions as F

        df = df.select(*[F.col(_quote(src)).alias(dst) for src, dst in pairs])
    written = [dst for _, dst in pairs]

    dynamic = (
        mode == "overwrite"
        and replace_where is None
        and bool(snapshot.partition_columns)
        and (partition_overwrite_mode or _session_overwrite_mode(df)) == "dynamic"
    )
    append_only = str(snapshot.configuration.get("delta.appendOnly")).lower() == "true"
    if mode == "overwrite" and append_only:
        raise AppendOnlyError(f"the table at {uri} is append-only (delta.appendOnly=true)")
    predicate = _replace_predicate(df, replace_where, snapshot.schema, snapshot.partition_columns)
    parameters = _parameters(mode, partition_by, replace_where, predicate)
    if dynamic:
        parameters["isDynamicPartitionOverwrite"] = True

    tx = table.transaction("WRITE", parameters=parameters)
    if app_id is not None and app_version is not None:
        done = tx.txn_version(app_id)
        if done is not None and done >= app_version:
            return StagedWrite(table._storage, [], table=table)
        tx.set_transaction(app_id, app_version)
    if predicate is not None and is_data_predicate(predicate, snapshot.partition_columns):
        return stage_data_replace(
            df,
            table,
            tx,
            predicate,
            write_new=lambda frame, cols: _run_job(
                frame,
                uri,
                snapshot.schema,
                snapshot.partition_columns,
                snapshot.configuration,
                cols,
                options,
            ),
            options=options,
            app=app_id is not None,
        )
    if mode == "overwrite" and not dynamic:
        replaced = tx.read_whole_table() if predicate is None else tx.read_files(predicate)
    else:
        replaced = None

    adds = _run_job(
        df,
        uri,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
        written,
        options,
    )
    staged = StagedWrite(table._storage, adds, table=table, tx=tx, app=app_id is not None)
    try:
        if predicate is not None:
            _check_inside(adds, predicate, snapshot.schema, snapshot.partition_columns)
        if dynamic and adds:
            keys = [physical_name(snapshot.schema.field(c)) for c in snapshot.partition_columns]
            replaced = tx.read_files(_written_partitions(adds, snapshot.partition_columns, keys))
        tx.add(adds)
        if replaced is not None and replaced.num_rows:
            tx.remove(replaced)
            staged._removed = replaced.num_rows
    except BaseException:
        staged.abort()
        raise
    return staged


def _stage_new_table(
    df: DataFrame,
    uri: str,
    frame_schema: StructType,
    *,
    mode: str,
    partition_by: Sequence[str],
    replace_where: PredicateLike | None,
    options: dict[str, str],
    app_id: str | None,
    app_version: int | None,
    configuration: Mapping[str, str] | None,
) -> StagedWrite:
    """Stage the first commit of a new table: metadata, protocol and the DataFrame's files."""
    storage = TableStorage.open(uri, options)
    metadata, protocol = new_table_actions(
        schema_for_new_table(frame_schema),
        partition_by=partition_by,
        configuration=configuration,
    )
    schema = StructType.from_json_string(metadata.schema_string or "")
    refuse_unenforced_constraints(schema, uri=uri)
    partition_columns = list(metadata.partition_columns)
    predicate = _replace_predicate(df, replace_where, schema, partition_columns)
    written = [f.name for f in frame_schema.fields]
    adds = _run_job(df, uri, schema, partition_columns, metadata.configuration, written, options)
    staged = StagedWrite(storage, adds, app=app_id is not None)
    try:
        if predicate is not None and not is_data_predicate(predicate, partition_columns):
            _check_inside(adds, predicate, schema, partition_columns)
        info = make_commit_info(
            operation="WRITE",
            parameters=_parameters(mode, partition_by, replace_where, predicate),
            read_version=None,
            is_blind_append=mode == "append",
            metrics=write_metrics(adds),
        )
        if ict.enabled(metadata):
            info = ict.stamp(info, now_ms())
        first_adds: list[Action] = list(adds)
        row_domain = None
        if row_tracking.supported(protocol, metadata):  # fresh row ids from 0 at version 0
            assigned, row_domain = row_tracking.assign(adds, 0, -1)
            first_adds = list(assigned)
        actions: list[Action] = [info, protocol, metadata]
        if app_id is not None and app_version is not None:
            actions.append(Txn(app_id=app_id, version=app_version, last_updated=now_ms()))
        if row_domain is not None:
            actions.append(row_domain)
        actions.extend(first_adds)
        staged._first_commit = serialize_actions(actions)
    except BaseException:
        staged.abort()
        raise
    return staged


def _replace_predicate(
    df: DataFrame,
    replace_where: PredicateLike | None,
    schema: StructType,
    partition_columns: list[str],
) -> Predicate | None:
    """``replace_where`` as a checked predicate, timestamps in the Spark session's zone."""
    if replace_where is None:
        return None
    predicate = in_session_time_zone(as_predicate(replace_where), schema, _session_time_zone(df))
    if is_data_predicate(predicate, partition_columns):
        check_predicate_columns(predicate, schema)  # data columns: see deltalog.spark.replace_data
    else:
        validate(predicate, schema, partition_columns)
    return predicate


def _parameters(
    mode: str,
    partition_by: Sequence[str],
    replace_where: PredicateLike | None,
    predicate: Predicate | None,
) -> dict[str, Any]:
    """``operationParameters`` of the WRITE, as delta-spark records them."""
    parameters: dict[str, Any] = {
        "mode": "Overwrite" if mode == "overwrite" else "Append",
        # The writer's partitionBy, "[]" when not given.
        "partitionBy": orjson.dumps(list(partition_by)).decode(),
    }
    if predicate is not None:
        parameters["predicate"] = (
            replace_where if isinstance(replace_where, str) else str(predicate)
        )
    return parameters


def _check_arguments(
    mode: str,
    replace_where: object,
    partition_overwrite_mode: str | None,
    app_id: str | None,
    app_version: int | None,
) -> None:
    if mode not in ("append", "overwrite"):
        raise InvalidInputError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if replace_where is not None and mode != "overwrite":
        raise InvalidInputError("replace_where needs mode='overwrite'")
    if partition_overwrite_mode not in (None, "static", "dynamic"):
        raise InvalidInputError(
            f"partition_overwrite_mode must be 'static' or 'dynamic', not "
            f"{partition_overwrite_mode!r}"
        )
    if replace_where is not None and partition_overwrite_mode == "dynamic":
        raise InvalidInputError(
            "replace_where and partition_overwrite_mode='dynamic' both say what to overwrite; "
            "give one"
        )
    if (app_id is None) != (app_version is None):
        raise InvalidInputError("app_id and app_version go together")
    if app_id is not None and (not app_id or not isinstance(app_id, str)):
        raise InvalidInputError("app_id must be a non-empty string")
    if app_version is not None and (
        isinstance(app_version, bool) or not isinstance(app_version, int) or app_version < 0
    ):
        raise InvalidInputError(f"app_version must be a non-negative int, not {app_version!r}")


def _session_overwrite_mode(df: DataFrame) -> str:
    value = df.sparkSession.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    return str(value or "static").lower()


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _run_job(
    df: DataFrame,
    uri: str,
    schema: StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str | None],
    written: list[str],
    options: dict[str, str],
) -> list[AddFile]:
    """Run the Spark job that writes the data files; the ``add`` actions for them.

    Raises:
        ConstraintViolationError: A row breaks a NOT NULL or CHAR/VARCHAR constraint.
        SparkWriteError: The job failed otherwise.
    """
    plan = task_plan(
        df.sparkSession, uri, schema, partition_columns, configuration, written, options
    )
    return run_tasks(df, lambda batches: write_task(plan, batches), uri, options)


def task_plan(
    spark: SparkSession,
    uri: str,
    schema: StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str | None],
    written: list[str],
    options: dict[str, str],
) -> TaskPlan:
    """The plan the write tasks get: codec and file limits from the session, table settings.

    Raises:
        InvalidInputError: The session's Parquet codec is not one deltalog can write.
    """
    conf = spark.conf
    codec = str(conf.get("spark.sql.parquet.compression.codec", "snappy") or "snappy").lower()
    if codec not in CODECS:
        raise InvalidInputError(
            f"spark.sql.parquet.compression.codec={codec!r} is not one deltalog can write "
            f"({sorted(CODECS)})"
        )
    indexed = configuration.get("delta.dataSkippingNumIndexedCols")
    mode = mapping_mode(configuration)
    partition_schema = StructType(tuple(schema.field(c) for c in partition_columns))
    data_columns = tuple(c for c in written if c not in partition_columns)
    if mode != "none":  # files and partition values use the physical names
        partition_schema = physical_schema(partition_schema)
        to_physical = logical_to_physical(schema)
        data_columns = tuple(to_physical.get(c, c) for c in data_columns)
    return TaskPlan(
        uri=uri,
        storage_options=options,
        partition_schema=partition_schema.to_json_string(),
        data_columns=data_columns,
        column_mapping=mode,
        num_indexed_cols=int(indexed) if indexed else DEFAULT_INDEXED_COLS,
        codec=codec,
        max_records_per_file=int(conf.get("spark.sql.files.maxRecordsPerFile", "0") or 0),
        table_schema=schema.to_json_string(),
        spark_version=str(spark.version),
    )


def run_tasks(
    df: DataFrame,
    task: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    uri: str,
    options: Mapping[str, str],
    *,
    data_change: bool = True,
) -> list[AddFile]:
    """Run ``task`` over ``df``'s partitions (``mapInArrow``); the ``add`` actions it reports.

    Raises:
        ConstraintViolationError: A row breaks a NOT NULL or CHAR/VARCHAR constraint.
        SparkWriteError: The job failed otherwise.
    """
    try:
        rows = df.mapInArrow(task, RESULT_DDL).collect()
    except Exception as exc:
        text = str(exc)
        if _WORKER_IMPORT_FAILURE in text:
            raise SparkWriteError(
                f"Spark's Python workers cannot import deltalog, so the job writing to {uri} "
                "failed before writing anything: install deltalog (with its 'spark' extra) in "
                "the Python environment of every executor, e.g. in the cluster image, through "
                "spark.archives with a packed virtualenv, or with --py-files pointing to the "
                "deltalog wheel"
            ) from exc
        raise SparkWriteError(f"the Spark job writing to {uri} failed: {exc}") from exc
    adds = [
        AddFile(
            path=row["path"],
            partition_values=orjson.loads(row["partition_values"]),
            size=row["size"],
            modification_time=row["modification_time"],
            data_change=data_change,
            stats=row["stats"],
        )
        for row in rows
        if row["violation"] is None
    ]
    violations = [row["violation"] for row in rows if row["violation"] is not None]
    if violations:
        storage = TableStorage.open(uri, options)
        for add in adds:  # best effort: an orphan file is harmless (VACUUM deletes it)
            with contextlib.suppress(Exception):
                storage.store.delete(storage.data_file(decode_path(add.path)))
        raise ConstraintViolationError(f"{violations[0]} (writing to {uri}; nothing was committed)")
    return adds


def _written_partitions(
    adds: list[AddFile], partition_columns: list[str], keys: Sequence[str] | None = None
) -> Predicate:
    """The partitions the written files are in (nulls included), as a read predicate.

    ``keys`` are the partition columns' keys in ``partitionValues`` (physical names on a
    column-mapped table), in the order of ``partition_columns``.
    """
    logged = list(keys) if keys is not None else partition_columns
    combos = sorted(
        {tuple(a.partition_values.get(c) for c in logged) for a in adds},
        key=lambda combo: tuple((v is None, v or "") for v in combo),
    )
    if len(partition_columns) == 1:
        (name,) = partition_columns
        present = tuple(c[0] for c in combos if c[0] is not None)
        terms: list[Predicate] = [In(name, present)] if present else []
        if any(c[0] is None for c in combos):
            terms.append(IsNull(name))
        return _balanced(terms, Or)
    return _balanced(
        [
            _balanced(
                [
                    IsNull(name) if value is None else In(name, (value,))  # NaN = NaN
                    for name, value in zip(partition_columns, combo, strict=True)
                ],
                And,
            )
            for combo in combos
        ],
        Or,
    )


def _balanced(terms: list[Predicate], kind: type[And] | type[Or]) -> Predicate:
    """Combine terms into a tree of depth log2(n), not n (thousands of partitions)."""
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return kind(_balanced(terms[:middle], kind), _balanced(terms[middle:], kind))


def _session_time_zone(df: DataFrame) -> str:
    return str(df.sparkSession.conf.get("spark.sql.session.timeZone", "UTC") or "UTC")


def in_session_time_zone(predicate: Predicate, schema: StructType, zone: str) -> Predicate:
    """``predicate`` with zone-less timestamp literals read in ``zone``, as Spark SQL reads them.

    Text such as ``'2024-01-01 00:00:00'`` compared with a ``timestamp`` column means midnight
    in the Spark session's time zone; text with an offset keeps it. The zone is resolved only
    when such a literal needs it.

    Raises:
        InvalidPredicateError: A literal needs ``zone`` and it is not a zone deltalog knows.
    """

    def fix(column: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            field_type = schema.field(column).type
        except KeyError:
            return value
        if field_type != PrimitiveType("timestamp"):
            return value
        try:
            parsed = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return value  # left for validate() to refuse
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=spark_zone(zone))

    def walk(p: Predicate) -> Predicate:
        if isinstance(p, Comparison):
            return Comparison(p.column, p.op, fix(p.column, p.value))
        if isinstance(p, In):
            return In(p.column, tuple(fix(p.column, v) for v in p.values), negated=p.negated)
        if isinstance(p, And):
            return And(walk(p.left), walk(p.right))
        if isinstance(p, Or):
            return Or(walk(p.left), walk(p.right))
        if isinstance(p, Not):
            return Not(walk(p.operand))
        return p

    return walk(predicate)


_OFFSET = re.compile(r"^(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
#: Java's ZoneId.SHORT_IDS, which Spark accepts for spark.sql.session.timeZone.
_SHORT_IDS = {
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}


def spark_zone(name: str) -> dt.tzinfo:
    """A Spark session time zone (region id, offset such as ``+05:00``/``GMT+1``, short id).

    Raises:
        InvalidPredicateError: Not a zone this recognises.
    """
    text = _SHORT_IDS.get(name.strip().upper(), name.strip())
    if text.upper() in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    match = _OFFSET.match(text)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        offset = dt.timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0))
        return dt.timezone(sign * offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidPredicateError(f"unknown Spark session time zone {name!r}") from exc


def _check_inside(
    adds: list[AddFile], predicate: Predicate, schema: StructType, partition_columns: list[str]
) -> None:
    """Refuse written files outside ``replace_where`` (checked on what was actually written).

    Raises:
        ReplaceWhereMismatchError: Naming up to three offending partitions.
    """
    values = [a.partition_values for a in adds]
    verdicts = matches(predicate, partition_table(values, schema, partition_columns)).to_pylist()
    outside = [v for v, ok in zip(values, verdicts, strict=True) if not ok]
    if outside:
        distinct = sorted({orjson.dumps(v).decode() for v in outside})
        raise ReplaceWhereMismatchError(
            f"rows in {len(distinct)} partition(s) fall outside replace_where {predicate}, "
            f"e.g. {distinct[:3]}; nothing was committed"
        )
