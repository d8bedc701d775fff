"""The driver side of a Spark write: plan, run the write job, commit one transaction.

``write(df, uri, ...)`` is ``stage(...)`` followed by ``StagedWrite.commit()``. Staging pins the
table version the write reads, runs the Spark job that writes the data files (see
:mod:`deltalog.spark.task`) and stages the transaction; committing publishes it through the log
store, checking for conflicts with whatever landed in between. Tests and careful callers can
hold a staged write to control exactly how two writers interleave.
"""

from __future__ import annotations

import contextlib
import dataclasses
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
    map_new_columns,
    mapping_mode,
    physical_name,
    physical_schema,
)
from deltalog.commit import make_commit_info, now_ms, num_records, try_write, write_metrics
from deltalog.config import num_indexed_cols
from deltalog.errors import (
    AppendOnlyError,
    CommitStatusUnknownError,
    ConstraintViolationError,
    InvalidInputError,
    InvalidOptionError,
    InvalidPredicateError,
    ProtocolChangedError,
    ReplaceWhereMismatchError,
    SparkWriteError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TransactionClosedError,
)
from deltalog.paths import decode_path
from deltalog.predicate_input import PredicateLike, as_predicate
from deltalog.predicates import (
    And,
    Comparison,
    In,
    IsNull,
    Not,
    Or,
    Predicate,
    matches,
    partition_table,
    validate,
)
from deltalog.schema import PrimitiveType, StructType
from deltalog.schema_merge import merge_schemas, type_widening_enabled
from deltalog.spark.constraints import refuse_unenforced_constraints
from deltalog.spark.options import (
    AUTO_MERGE_CONF,
    SAVE_MODE_NAMES,
    USER_METADATA_CONF,
    Mode,
    OptionValue,
    WriteSettings,
)
from deltalog.spark.options import resolve as resolve_options
from deltalog.spark.replace_data import (
    check_predicate_columns,
    is_data_predicate,
    stage_data_replace,
)
from deltalog.spark.schema import check_partitioning, match_columns, schema_for_new_table
from deltalog.spark.task import CODECS, RESULT_DDL, TaskPlan, write_task
from deltalog.storage import TableStorage
from deltalog.table import DeltaTable, SchemaMode, new_table_actions
from deltalog.table_changes import protocol_for_schema
from deltalog.transaction import Transaction

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

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
        ignored: Whether ``mode="ignore"`` found the table already there; then nothing was
            written at all (``version`` is the table's current version).
    """

    version: int | None
    files_added: int
    files_removed: int
    rows: int
    bytes: int
    skipped: bool = False
    ignored: bool = False


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
        ignored: bool = False,
    ) -> None:
        self._storage = storage
        self._table = table
        self._tx = tx
        self._first_commit = first_commit
        self.adds = adds
        self._removed = removed
        self._app = app
        self._ignored = ignored
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
        return self._tx is None and self._first_commit is None and not self._ignored

    @property
    def ignored(self) -> bool:
        """Whether the write is a no-op because of ``mode="ignore"`` on an existing table."""
        return self._ignored

    def commit(self) -> WriteResult:
        """Commit the staged write; returns what it did.

        Raises:
            ConcurrentModificationError: A concurrent commit conflicts with this write (the
                six named subclasses; ``ProtocolChangedError`` when another writer created the
                table first). The written files are deleted, as for every error but a storage
                failure.
            CommitFailedError: Every attempt lost the race.
            TransactionClosedError: Already committed or aborted.
            CommitStatusUnknownError: The store failed mid-commit and the commit may have
                landed; the files are kept.
            StorageError: The log store failed; the files are kept.
        """
        if self._finished:
            raise TransactionClosedError("this staged write was already committed or aborted")
        if self.skipped or self._ignored:
            self._finished = True
            return WriteResult(
                self.read_version, 0, 0, 0, 0, skipped=not self._ignored, ignored=self._ignored
            )
        no_op = False
        try:
            if self._first_commit is not None:
                version = self._create()
            else:
                assert self._tx is not None
                version = self._tx.commit()
                no_op = self._tx.no_op
        except (StorageError, CommitStatusUnknownError):
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
    mode: Mode = "error",
    options: Mapping[str, OptionValue] | None = None,
    partition_by: Sequence[str] = (),
    replace_where: PredicateLike | None = None,
    partition_overwrite_mode: PartitionOverwriteMode | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    configuration: Mapping[str, str] | None = None,
    schema_mode: SchemaMode | None = None,
    user_metadata: str | None = None,
) -> WriteResult:
    """Write a Spark DataFrame to a Delta table and commit it; the table is created if absent.

    Spark's executors write the Parquet files straight into the table directory and read each
    file's statistics from its footer; the driver commits them in one transaction. Like
    ``df.write.format("delta").mode(mode).options(**options).save(uri)``:

    * ``mode="error"`` (also ``"errorifexists"``, ``"default"``; the default, as in Spark)
      creates the table and refuses to write to an existing one (``TableAlreadyExistsError``,
      nothing written).
    * ``mode="ignore"`` creates the table, or does nothing at all when it exists (the result
      has ``ignored=True``).
    * ``mode="append"`` adds the rows (a blind append: it never conflicts with other writers'
      data changes).
    * ``mode="overwrite"`` replaces the whole table; with ``replaceWhere`` only the rows of the
      partitions the predicate selects (and every written row must satisfy it); with
      ``partitionOverwriteMode=dynamic`` (default: the Spark session's
      ``spark.sql.sources.partitionOverwriteMode``) only the partitions the DataFrame writes to.
      The overwrite reads what it replaces, so a concurrent commit that changes those
      partitions makes this one fail with a named conflict; other partitions are free.
      With ``overwriteSchema=true`` (and no ``replaceWhere``) the table takes the DataFrame's
      schema and ``partition_by`` as its partitioning, in the same commit.
    * ``mergeSchema=true`` (or the session's ``spark.databricks.delta.schema.autoMerge.enabled``)
      adds the DataFrame's new columns, nested fields included, to the table schema in the
      same commit (see :mod:`deltalog.schema_merge` for the rules).
    * ``txnAppId``/``txnVersion`` make the write idempotent: if the table already records
      ``txnVersion`` (or later) for ``txnAppId``, nothing is written (a retried micro-batch).

    Args:
        df: The rows to write. Its columns must match the table's (by name, case-insensitive);
            table columns it lacks must be nullable.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        mode: ``error`` (default), ``append``, ``overwrite`` or ``ignore``; any case.
        options: delta-spark's write options, names in any case: ``mergeSchema``,
            ``overwriteSchema``, ``replaceWhere``, ``txnAppId``, ``txnVersion``,
            ``userMetadata``, ``partitionOverwriteMode``, ``maxRecordsPerFile``.
        partition_by: Partition columns of a new table; for an existing table, empty or the
            table's own (other columns only with ``overwriteSchema`` in overwrite mode).
        replace_where: ``replaceWhere``, also as a :class:`~deltalog.predicates.Predicate` or
            any form :func:`deltalog.predicate_input.as_predicate` accepts. On data columns, the
            files holding matching rows are rewritten without them (see
            :mod:`deltalog.spark.replace_data`).
        partition_overwrite_mode: ``partitionOverwriteMode``.
        storage_options: Log store options (credentials, endpoints, commit protocol), used on
            the driver and the executors.
        app_id: ``txnAppId`` (``txn.appId``).
        app_version: ``txnVersion``, the micro-batch number for ``app_id``.
        configuration: Table properties for a new table.
        schema_mode: ``"merge"`` for ``mergeSchema=true``, ``"overwrite"`` for
            ``overwriteSchema=true`` (delta-rs' spelling).
        user_metadata: ``userMetadata``, recorded as ``commitInfo.userMetadata`` (default: the
            session's ``spark.databricks.delta.commitInfo.userMetadata``).

    Returns:
        What was committed.

    Raises:
        InvalidWriteModeError: An unknown mode (nothing written).
        InvalidOptionError: An unknown option or a bad value; ``ConflictingOptionsError`` when
            an option and its keyword argument disagree (nothing written).
        TableAlreadyExistsError: ``mode="error"`` and the table exists (nothing written).
        SchemaMismatchError: The DataFrame's columns do not fit the table (nothing written);
            ``SchemaEvolutionError`` when ``mergeSchema`` cannot merge them (a type change).
        PartitioningMismatchError: ``partition_by`` differs from the table's partitioning.
        ReplaceWhereMismatchError: A row falls outside ``replace_where`` (nothing written).
        InvalidPredicateError: ``replace_where`` does not parse or names an unknown column.
        InvalidInputError: Other bad arguments (app id/version).
        SparkWriteError: The Spark job failed (nothing committed).
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass;
            ``MetadataChangedError`` when it changed the schema this write read).
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
        StorageError: The log store failed.
    """
    staged = stage(
        df,
        uri,
        mode=mode,
        options=options,
        partition_by=partition_by,
        replace_where=replace_where,
        partition_overwrite_mode=partition_overwrite_mode,
        storage_options=storage_options,
        app_id=app_id,
        app_version=app_version,
        configuration=configuration,
        schema_mode=schema_mode,
        user_metadata=user_metadata,
    )
    return staged.commit()


def stage(
    df: DataFrame,
    uri: str,
    *,
    mode: Mode = "error",
    options: Mapping[str, OptionValue] | None = None,
    partition_by: Sequence[str] = (),
    replace_where: PredicateLike | None = None,
    partition_overwrite_mode: PartitionOverwriteMode | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    configuration: Mapping[str, str] | None = None,
    schema_mode: SchemaMode | None = None,
    user_metadata: str | None = None,
) -> StagedWrite:
    """Everything :func:`write` does except the commit; see there for the arguments.

    The table version the write reads is pinned here; :meth:`StagedWrite.commit` checks what
    landed since. With ``mode="ignore"`` on an existing table the staged write is empty
    (``ignored``); with ``mode="error"`` staging raises before the Spark job runs.

    Raises:
        Same as :func:`write`, but for the commit-time conflicts.
    """
    settings = resolve_options(
        mode,
        options,
        replace_where=replace_where,
        partition_overwrite_mode=partition_overwrite_mode,
        app_id=app_id,
        app_version=app_version,
        schema_mode=schema_mode,
        user_metadata=user_metadata,
    )
    _check_arguments(settings)
    settings = _with_session_defaults(df, settings)
    storage_options = dict(storage_options or {})
    frame_schema = StructType.from_json_string(df.schema.json())
    try:
        table = DeltaTable(uri, storage_options=storage_options, background_checkpoints=False)
    except TableNotFoundError:
        return _stage_new_table(
            df,
            uri,
            frame_schema,
            settings=settings,
            partition_by=partition_by,
            options=storage_options,
            configuration=configuration,
        )
    if settings.mode == "error":
        raise TableAlreadyExistsError(
            f"a Delta table already exists at {uri} (version {table.version()}) and the write "
            "mode is 'error' (Spark's default); write with mode='append' or mode='overwrite'. "
            "Nothing was written."
        )
    if settings.mode == "ignore":
        return StagedWrite(table._storage, [], table=table, ignored=True)
    return _stage_existing(df, uri, table, frame_schema, settings, partition_by, storage_options)


def _stage_existing(
    df: DataFrame,
    uri: str,
    table: DeltaTable,
    frame_schema: StructType,
    settings: WriteSettings,
    partition_by: Sequence[str],
    options: dict[str, str],
) -> StagedWrite:
    """Stage an append or overwrite of an existing table (schema changes included)."""
    snapshot = table.snapshot
    snapshot.check_writable()
    check_clustering_stats(snapshot)
    mode, replace_where = settings.mode, settings.replace_where
    overwrite_schema = mode == "overwrite" and settings.overwrite_schema and replace_where is None
    dynamic = (
        mode == "overwrite"
        and replace_where is None
        and bool(snapshot.partition_columns)
        and (settings.partition_overwrite_mode or _session_overwrite_mode(df)) == "dynamic"
    )
    if dynamic and overwrite_schema:
        raise InvalidOptionError(
            "overwriteSchema cannot be used with dynamic partition overwrite (as in "
            "delta-spark): it would replace the schema of partitions it does not rewrite",
            option="overwriteSchema",
        )
    append_only = str(snapshot.configuration.get("delta.appendOnly")).lower() == "true"
    if mode == "overwrite" and append_only:
        raise AppendOnlyError(f"the table at {uri} is append-only (delta.appendOnly=true)")

    schema, partition_columns = snapshot.schema, list(snapshot.partition_columns)
    if overwrite_schema:
        schema = schema_for_new_table(frame_schema)
        spelled = {name.lower(): name for name in schema.names}  # names ignore case
        partition_columns = [spelled.get(c.lower(), c) for c in partition_by]
    else:
        check_partitioning(partition_by, snapshot.partition_columns, uri=uri)
        if settings.merge_schema:
            schema = merge_schemas(
                snapshot.schema,
                schema_for_new_table(frame_schema),
                partition_columns=snapshot.partition_columns,
                type_widening=type_widening_enabled(snapshot.protocol, snapshot.metadata),
            )
    configuration = {k: v for k, v in snapshot.configuration.items() if v is not None}
    if schema != snapshot.schema:  # new columns of a column-mapped table get ids and names now,
        # so that the executors write the physical names the new metadata will record
        schema, configuration = map_new_columns(
            schema, configuration, previous=snapshot.configuration
        )
    refuse_unenforced_constraints(schema, uri=uri)
    pairs = match_columns(frame_schema, schema, partition_columns, uri=uri)
    if any(src != dst for src, dst in pairs):
        from pyspark.sql import functions as F

        df = df.select(*[F.col(_quote(src)).alias(dst) for src, dst in pairs])
    written = [dst for _, dst in pairs]

    predicate = _replace_predicate(df, replace_where, schema, partition_columns)
    parameters = _parameters(settings, partition_by, predicate)
    if dynamic:
        parameters["isDynamicPartitionOverwrite"] = True

    tx = table.transaction("WRITE", parameters=parameters, user_metadata=settings.user_metadata)
    if schema != snapshot.schema or partition_columns != list(snapshot.partition_columns):
        upgrade = protocol_for_schema(snapshot, schema)
        if upgrade is not None:
            tx.update_protocol(upgrade)
        tx.update_metadata(
            schema=schema, partition_by=partition_columns, configuration=configuration
        )
    if settings.app_id is not None and settings.app_version is not None:
        done = tx.txn_version(settings.app_id)
        if done is not None and done >= settings.app_version:
            return StagedWrite(table._storage, [], table=table)
        tx.set_transaction(settings.app_id, settings.app_version)
    if predicate is not None and is_data_predicate(predicate, partition_columns):
        return stage_data_replace(
            df,
            table,
            tx,
            predicate,
            write_new=lambda frame, cols: _run_job(
                frame,
                uri,
                schema,
                partition_columns,
                snapshot.configuration,
                cols,
                options,
                max_records_per_file=settings.max_records_per_file,
            ),
            options=options,
            app=settings.app_id is not None,
        )
    if mode == "overwrite" and not dynamic:
        replaced = tx.read_whole_table() if predicate is None else tx.read_files(predicate)
    else:
        replaced = None

    adds = _run_job(
        df,
        uri,
        schema,
        partition_columns,
        snapshot.configuration,
        written,
        options,
        max_records_per_file=settings.max_records_per_file,
    )
    staged = StagedWrite(table._storage, adds, table=table, tx=tx, app=settings.app_id is not None)
    try:
        if predicate is not None:
            _check_inside(adds, predicate, schema, partition_columns)
        if dynamic and adds:
            keys = [physical_name(schema.field(c)) for c in partition_columns]
            replaced = tx.read_files(_written_partitions(adds, partition_columns, keys))
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
    settings: WriteSettings,
    partition_by: Sequence[str],
    options: dict[str, str],
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
    predicate = _replace_predicate(df, settings.replace_where, schema, partition_columns)
    written = [f.name for f in frame_schema.fields]
    adds = _run_job(
        df,
        uri,
        schema,
        partition_columns,
        metadata.configuration,
        written,
        options,
        max_records_per_file=settings.max_records_per_file,
    )
    staged = StagedWrite(storage, adds, app=settings.app_id is not None)
    try:
        if predicate is not None and not is_data_predicate(predicate, partition_columns):
            _check_inside(adds, predicate, schema, partition_columns)
        info = make_commit_info(
            operation="WRITE",
            parameters=_parameters(settings, partition_by, predicate),
            read_version=None,
            is_blind_append=settings.mode != "overwrite",
            metrics=write_metrics(adds),
            user_metadata=settings.user_metadata,
        )
        if ict.enabled(metadata):
            info = ict.stamp(info, now_ms())
        first_adds: list[Action] = list(adds)
        row_domain = None
        if row_tracking.supported(protocol, metadata):  # fresh row ids from 0 at version 0
            assigned, row_domain = row_tracking.assign(adds, 0, -1)
            first_adds = list(assigned)
        actions: list[Action] = [info, protocol, metadata]
        if settings.app_id is not None and settings.app_version is not None:
            actions.append(
                Txn(app_id=settings.app_id, version=settings.app_version, last_updated=now_ms())
            )
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
    settings: WriteSettings,
    partition_by: Sequence[str],
    predicate: Predicate | None,
) -> dict[str, Any]:
    """``operationParameters`` of the WRITE, as delta-spark records them."""
    parameters: dict[str, Any] = {
        "mode": SAVE_MODE_NAMES[settings.mode],
        # The writer's partitionBy, "[]" when not given.
        "partitionBy": orjson.dumps(list(partition_by)).decode(),
    }
    replace_where = settings.replace_where
    if predicate is not None:
        parameters["predicate"] = (
            replace_where if isinstance(replace_where, str) else str(predicate)
        )
    if settings.overwrite_schema:
        parameters["canOverwriteSchema"] = True
    if settings.merge_schema:
        parameters["canMergeSchema"] = True
    return parameters


def _check_arguments(settings: WriteSettings) -> None:
    """Refuse combinations of settings delta-spark refuses (before anything is read)."""
    mode, replace_where = settings.mode, settings.replace_where
    if replace_where is not None and mode != "overwrite":
        raise InvalidOptionError("replaceWhere needs mode='overwrite'", option="replaceWhere")
    if replace_where is not None and settings.partition_overwrite_mode == "dynamic":
        raise InvalidOptionError(
            "replaceWhere and partitionOverwriteMode=dynamic both say what to overwrite; give one",
            option="replaceWhere",
        )
    app_id, app_version = settings.app_id, settings.app_version
    if (app_id is None) != (app_version is None):
        raise InvalidInputError("app_id and app_version (txnAppId and txnVersion) go together")
    if app_id is not None and (not app_id or not isinstance(app_id, str)):
        raise InvalidInputError("app_id must be a non-empty string")
    if app_version is not None and (
        isinstance(app_version, bool) or not isinstance(app_version, int) or app_version < 0
    ):
        raise InvalidInputError(f"app_version must be a non-negative int, not {app_version!r}")


def _with_session_defaults(df: DataFrame, settings: WriteSettings) -> WriteSettings:
    """Fill what the options left open from the Spark session, as delta-spark does."""
    conf = df.sparkSession.conf
    changes: dict[str, Any] = {}
    if settings.merge_schema is None:
        auto = str(conf.get(AUTO_MERGE_CONF, "false") or "false").strip().lower()
        changes["merge_schema"] = auto == "true"
    if settings.user_metadata is None:
        text = conf.get(USER_METADATA_CONF, None)
        if text:
            changes["user_metadata"] = str(text)
    return dataclasses.replace(settings, **changes) if changes else settings


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
    *,
    max_records_per_file: int | None = None,
) -> list[AddFile]:
    """Run the Spark job that writes the data files; the ``add`` actions for them.

    Raises:
        ConstraintViolationError: A row breaks a NOT NULL or CHAR/VARCHAR constraint.
        SparkWriteError: The job failed otherwise.
    """
    plan = task_plan(
        df.sparkSession,
        uri,
        schema,
        partition_columns,
        configuration,
        written,
        options,
        max_records_per_file=max_records_per_file,
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
    *,
    max_records_per_file: int | None = None,
) -> TaskPlan:
    """The plan the write tasks get: codec and file limits from the session, table settings.

    ``max_records_per_file`` (the ``maxRecordsPerFile`` option) overrides the session's
    ``spark.sql.files.maxRecordsPerFile``; 0 or less means no limit.

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
        num_indexed_cols=num_indexed_cols(configuration),
        codec=codec,
        max_records_per_file=max(
            0,
            max_records_per_file
            if max_records_per_file is not None
            else int(conf.get("spark.sql.files.maxRecordsPerFile", "0") or 0),
        ),
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
