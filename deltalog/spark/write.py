"""The driver side of a Spark write: plan, run the write job, commit one transaction.

``write(df, uri, ...)`` is ``stage(...)`` followed by ``StagedWrite.commit()``. Staging pins the
table version the write reads, runs the Spark job that writes the data files (see
:mod:`deltalog.spark.task`) and stages the transaction; committing publishes it through the log
store, checking for conflicts with whatever landed in between. Tests and careful callers can
hold a staged write to control exactly how two writers interleave.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import orjson

from deltalog.errors import (
    AppendOnlyError,
    InvalidInputError,
    InvalidOptionError,
    ReplaceWhereMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import (
    map_new_columns,
    physical_name,
)
from deltalog.protocol.schema import StructType
from deltalog.protocol.user_input import renamed_keyword
from deltalog.spark.job import run_job, written_partitions
from deltalog.spark.options import (
    AUTO_MERGE_CONF,
    SAVE_MODE_NAMES,
    USER_METADATA_CONF,
    Mode,
    OptionValue,
    WriteSettings,
)
from deltalog.spark.options import gather as gather_options
from deltalog.spark.options import resolve as resolve_options
from deltalog.spark.replace_data import (
    check_predicate_columns,
    is_data_predicate,
    stage_data_replace,
)
from deltalog.spark.schema import check_partitioning, match_columns, schema_for_new_table
from deltalog.spark.spark_predicate import case_sensitive, with_schema_names
from deltalog.spark.time_zones import in_session_time_zone, session_time_zone
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import (
    Predicate,
    matches,
    partition_table,
    validate,
)
from deltalog.table import DeltaTable, SchemaMode
from deltalog.write.clustering import check_clustering_stats
from deltalog.write.constraints import refuse_unenforced_constraints
from deltalog.write.first_commit import first_commit, new_table_actions
from deltalog.write.schema_merge import merge_schemas, type_widening_enabled
from deltalog.write.table_changes import protocol_for_schema
from deltalog.writer.staged import StagedWrite, WriteResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PartitionOverwriteMode = Literal["static", "dynamic"]


def write(
    df: DataFrame,
    uri: str,
    mode: Mode | None = "error",
    partition_by: Sequence[str] | str = (),
    *,
    options: Mapping[str, OptionValue] | None = None,
    predicate: PredicateLike | None = None,
    partition_overwrite_mode: PartitionOverwriteMode | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    configuration: Mapping[str, str] | None = None,
    schema_mode: SchemaMode | None = None,
    user_metadata: str | None = None,
    replace_where: PredicateLike | None = None,
    **spark_options: OptionValue | Sequence[str],
) -> WriteResult:
    """Write a Spark DataFrame to a Delta table and commit it; the table is created if absent.

    Spark's executors write the Parquet files straight into the table directory and read each
    file's statistics from its footer; the driver commits them in one transaction. Like
    ``df.write.format("delta").mode(mode).options(**options).save(uri)``, and spelled as
    ``DataFrameWriter.save(path, format, mode, partitionBy, **options)`` is (without the format):
    ``write(df, uri, "append")``, ``write(df, uri, "overwrite", ["day"])``,
    ``write(df, uri, mode="append", partitionBy="day", mergeSchema=True)``; delta-spark's
    options go as keyword arguments or in ``options={...}``, names in any case.

    * ``mode="error"`` (also ``"errorifexists"``, ``"default"``; the default, as in Spark)
      creates the table and refuses to write to an existing one (``TableAlreadyExistsError``,
      nothing written).
    * ``mode="ignore"`` creates the table, or does nothing at all when it exists (the result
      has ``ignored=True``).
    * ``mode="append"`` adds the rows (a blind append: it never conflicts with other writers'
      data changes).
    * ``mode="overwrite"`` replaces the whole table; with ``predicate`` (delta-spark's
      ``replaceWhere``) only the rows the predicate selects (and every written row must
      satisfy it); with
      ``partitionOverwriteMode=dynamic`` (default: the Spark session's
      ``spark.sql.sources.partitionOverwriteMode``) only the partitions the DataFrame writes to.
      The overwrite reads what it replaces, so a concurrent commit that changes those
      partitions makes this one fail with a named conflict; other partitions are free.
      With ``overwriteSchema=true`` (and no ``replaceWhere``) the table takes the DataFrame's
      schema and ``partition_by`` as its partitioning, in the same commit.
    * ``mergeSchema=true`` (or the session's ``spark.databricks.delta.schema.autoMerge.enabled``)
      adds the DataFrame's new columns, nested fields included, to the table schema in the
      same commit (see :mod:`deltalog.write.schema_merge` for the rules).
    * ``txnAppId``/``txnVersion`` make the write idempotent: if the table already records
      ``txnVersion`` (or later) for ``txnAppId``, nothing is written (a retried micro-batch).

    Args:
        df: The rows to write. Its columns must match the table's (by name, case-insensitive);
            table columns it lacks must be nullable.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        mode: ``error`` (default; also ``None``), ``append``, ``overwrite`` or ``ignore``; any
            case.
        partition_by: Partition columns of a new table (a name or a list; Spark's
            ``partitionBy=`` too); for an existing table, empty or the table's own (other
            columns only with ``overwriteSchema`` in overwrite mode).
        options: delta-spark's write options, names in any case: ``mergeSchema``,
            ``overwriteSchema``, ``replaceWhere``, ``txnAppId``, ``txnVersion``,
            ``userMetadata``, ``partitionOverwriteMode``, ``maxRecordsPerFile``,
            ``compression`` (the Parquet codec; default: the session's
            ``spark.sql.parquet.compression.codec``, snappy).
        predicate: The overwrite predicate (delta-spark's ``replaceWhere`` option, delta-rs'
            ``predicate``): SQL text, a :class:`~deltalog.stats.predicates.Predicate` or any
            form :func:`deltalog.stats.predicate_input.as_predicate` accepts. On data columns,
            the files holding matching rows are rewritten without them (see
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
        replace_where: Deprecated spelling of ``predicate`` (a ``DeprecationWarning``).
        **spark_options: delta-spark's options as keyword arguments (``mergeSchema=True``,
            ``replaceWhere="day = '2024-01-01'"``, any case), and ``partitionBy``.

    Returns:
        What was committed.

    Raises:
        InvalidWriteModeError: An unknown mode (nothing written).
        InvalidOptionError: An unknown option or a bad value; ``ConflictingOptionsError`` when
            an option and its keyword argument disagree (or ``options`` and a keyword option,
            or ``partition_by`` and ``partitionBy``), or ``predicate`` and ``replace_where``
            are both given (nothing written).
        TableAlreadyExistsError: ``mode="error"`` and the table exists (nothing written).
        SchemaMismatchError: The DataFrame's columns do not fit the table (nothing written);
            ``SchemaEvolutionError`` when ``mergeSchema`` cannot merge them (a type change).
        PartitioningMismatchError: ``partition_by`` differs from the table's partitioning.
        ReplaceWhereMismatchError: A row falls outside ``predicate`` (nothing written).
        InvalidPredicateError: ``predicate`` does not parse or names an unknown column.
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
        mode,
        partition_by,
        options=options,
        predicate=renamed_keyword(
            "deltalog.spark.write", "predicate", predicate, "replace_where", replace_where
        ),
        partition_overwrite_mode=partition_overwrite_mode,
        storage_options=storage_options,
        app_id=app_id,
        app_version=app_version,
        configuration=configuration,
        schema_mode=schema_mode,
        user_metadata=user_metadata,
        **spark_options,
    )
    return staged.commit()


def stage(
    df: DataFrame,
    uri: str,
    mode: Mode | None = "error",
    partition_by: Sequence[str] | str = (),
    *,
    options: Mapping[str, OptionValue] | None = None,
    predicate: PredicateLike | None = None,
    partition_overwrite_mode: PartitionOverwriteMode | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    configuration: Mapping[str, str] | None = None,
    schema_mode: SchemaMode | None = None,
    user_metadata: str | None = None,
    replace_where: PredicateLike | None = None,
    **spark_options: OptionValue | Sequence[str],
) -> StagedWrite:
    """Everything :func:`write` does except the commit; see there for the arguments.

    The table version the write reads is pinned here; :meth:`StagedWrite.commit` checks what
    landed since. With ``mode="ignore"`` on an existing table the staged write is empty
    (``ignored``); with ``mode="error"`` staging raises before the Spark job runs.

    Raises:
        DeltaLogError: Those :func:`write` raises, but for the commit-time conflicts.
    """
    options, partition_by = gather_options(options, spark_options, partition_by)
    settings = resolve_options(
        "error" if mode is None else mode,
        options,
        replace_where=renamed_keyword(
            "deltalog.spark.stage", "predicate", predicate, "replace_where", replace_where
        ),
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
            write_new=lambda frame, cols: run_job(
                frame,
                uri,
                schema,
                partition_columns,
                snapshot.configuration,
                cols,
                options,
                max_records_per_file=settings.max_records_per_file,
                compression=settings.compression,
            ),
            options=options,
            app=settings.app_id is not None,
        )
    if mode == "overwrite" and not dynamic:
        replaced = tx.read_whole_table() if predicate is None else tx.read_files(predicate)
    else:
        replaced = None

    adds = run_job(
        df,
        uri,
        schema,
        partition_columns,
        snapshot.configuration,
        written,
        options,
        max_records_per_file=settings.max_records_per_file,
        compression=settings.compression,
    )
    staged = StagedWrite(table._storage, adds, table=table, tx=tx, app=settings.app_id is not None)
    try:
        if predicate is not None:
            _check_inside(adds, predicate, schema, partition_columns)
        if dynamic and adds:
            keys = [physical_name(schema.field(c)) for c in partition_columns]
            replaced = tx.read_files(written_partitions(adds, partition_columns, keys))
    except BaseException:
        staged.abort()
        raise
    staged.stage(replaced)
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
    adds = run_job(
        df,
        uri,
        schema,
        partition_columns,
        metadata.configuration,
        written,
        options,
        max_records_per_file=settings.max_records_per_file,
        compression=settings.compression,
    )
    staged = StagedWrite(storage, adds, app=settings.app_id is not None)
    try:
        if predicate is not None and not is_data_predicate(predicate, partition_columns):
            _check_inside(adds, predicate, schema, partition_columns)
        txns = None
        if settings.app_id is not None and settings.app_version is not None:
            txns = {settings.app_id: settings.app_version}
        staged._first_commit = first_commit(
            metadata,
            protocol,
            adds,
            parameters=_parameters(settings, partition_by, predicate),
            is_blind_append=settings.mode != "overwrite",
            txns=txns,
            user_metadata=settings.user_metadata,
        )
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
    predicate = in_session_time_zone(as_predicate(replace_where), schema, session_time_zone(df))
    if not case_sensitive(df.sparkSession):
        predicate = with_schema_names(predicate, schema.names)  # ``ID`` is ``id``, as in Spark
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
        raise InvalidOptionError(
            "an overwrite predicate (predicate=, option replaceWhere) needs mode='overwrite'",
            option="replaceWhere",
        )
    if replace_where is not None and settings.partition_overwrite_mode == "dynamic":
        raise InvalidOptionError(
            "predicate= (replaceWhere) and partitionOverwriteMode=dynamic both say what to "
            "overwrite; give one",
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
            f"rows in {len(distinct)} partition(s) fall outside the overwrite predicate "
            f"{predicate}, e.g. {distinct[:3]}; nothing was committed"
        )
