"""``deltalog.write_table``: write pyarrow, pandas, polars or DuckDB data to a Delta table.

The names follow delta-rs's ``write_deltalake`` (``mode``, ``partition_by``, ``predicate``,
``schema_mode``, ``configuration``, ``storage_options``, ``target_file_size``,
``commit_properties``, ``name``, ``description``), so code moves over by changing the import;
the semantics follow delta-spark's ``df.write.format("delta")`` where the two differ. The data
files are written by :class:`~deltalog.write.data_writer.DataWriter` straight into the table
directory; one transaction commits them (version 0 with the table's metadata when the table is
new). Whatever fails before the commit lands deletes the files written and commits nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import (
    AppendOnlyError,
    InvalidOptionError,
    InvalidWriteModeError,
    PartitioningMismatchError,
    ReplaceWhereMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import map_new_columns
from deltalog.protocol.schema import StructType
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import Predicate, matches, validate
from deltalog.table import DeltaTable
from deltalog.write.check_constraints import check_constraints
from deltalog.write.clustering import check_clustering_stats
from deltalog.write.commit import RetryPolicy
from deltalog.write.commit_properties import CommitProperties, commit_settings
from deltalog.write.constraints import refuse_unenforced_constraints
from deltalog.write.data_writer import DataWriter
from deltalog.write.first_commit import first_commit, new_table_actions
from deltalog.write.input_data import Conformer, as_reader, schema_of_data, within_table
from deltalog.write.parquet_options import TARGET_FILE_SIZE, ParquetOptions
from deltalog.write.rewrite_plan import check_predicate_columns
from deltalog.write.schema_merge import merge_schemas, type_widening_enabled
from deltalog.write.table_changes import protocol_for_schema
from deltalog.write.transaction import Transaction
from deltalog.writer.replace_rows import kept_rows, plan_row_replace
from deltalog.writer.staged import StagedWrite, WriteResult

__all__ = ["CommitProperties", "WriteMode", "write_table"]

WriteMode = Literal["error", "append", "overwrite", "ignore"]
#: Features deltalog in general cannot honour that this writer enforces on its rows.
ENFORCED = frozenset({"checkConstraints"})
_MODES = {
    "error": "error",
    "errorifexists": "error",
    "default": "error",
    "append": "append",
    "overwrite": "overwrite",
    "ignore": "ignore",
}
#: ``operationParameters.mode`` as delta-spark records it.
_MODE_NAMES = {
    "error": "ErrorIfExists",
    "append": "Append",
    "overwrite": "Overwrite",
    "ignore": "Ignore",
}


def write_table(
    table_or_uri: str | os.PathLike[str] | DeltaTable,
    data: Any,
    *,
    mode: WriteMode = "error",
    partition_by: Sequence[str] | str | None = None,
    predicate: PredicateLike | None = None,
    schema_mode: Literal["merge", "overwrite"] | None = None,
    configuration: Mapping[str, str | None] | None = None,
    storage_options: Mapping[str, str] | None = None,
    target_file_size: int | None = None,
    max_rows_per_file: int | None = None,
    compression: str | None = None,
    commit_properties: CommitProperties | Any | None = None,
    name: str | None = None,
    description: str | None = None,
) -> WriteResult:
    """Write ``data`` to the Delta table at ``table_or_uri``; the table is created if absent.

    * ``mode="error"`` (the default) creates the table and refuses an existing one
      (``TableAlreadyExistsError``); ``"ignore"`` creates it or does nothing at all.
    * ``mode="append"`` adds the rows (a blind append: it never conflicts with other writers).
    * ``mode="overwrite"`` replaces every row; with ``predicate``, only the rows it selects
      (on partition columns, the partitions; on data columns, the rows, rewriting the files
      that hold them), and every new row must satisfy it (``ReplaceWhereMismatchError``).
    * ``schema_mode="merge"`` adds the data's new columns to the table schema;
      ``"overwrite"`` (with ``mode="overwrite"``, no predicate) replaces the schema and, with
      ``partition_by``, the partitioning.

    Args:
        table_or_uri: A path, URI (``s3://``, ``gs://``, ``az://``, ``memory://``, ...) or
            :class:`~deltalog.table.DeltaTable` (moved to the version written).
        data: A pyarrow ``Table``, ``RecordBatch``, ``RecordBatchReader`` (written in bounded
            memory, however large) or ``Dataset``, a pandas ``DataFrame`` (its index is not
            written), or anything with ``__arrow_c_stream__``/``__arrow_c_array__`` (polars,
            DuckDB). Columns match the table's by name (case-insensitive); nanosecond
            timestamps become microseconds when no value changes.
        mode: ``error``, ``append``, ``overwrite`` or ``ignore``.
        partition_by: Partition columns of a new table (for an existing one: its own, or
            none).
        predicate: With ``mode="overwrite"``: the rows to replace (SQL text such as
            ``"day = '2024-01-01'"``, a :class:`~deltalog.stats.predicates.Predicate`, a
            pyarrow expression, or DNF tuples).
        schema_mode: ``"merge"`` or ``"overwrite"`` (see above).
        configuration: Table properties of a new table (``delta.*``).
        storage_options: Options for the table's store.
        target_file_size: Start a new file once one holds this many bytes (default 100 MiB).
        max_rows_per_file: Start a new file after this many rows (default: no limit).
        compression: Parquet codec, Spark's names (default ``snappy``; ``zstd``, ``gzip``,
            ``lz4``, ``uncompressed``, ...).
        commit_properties: :class:`CommitProperties` (or delta-rs's: its ``custom_metadata``
            ``userMetadata`` and ``app_transactions`` are honoured).
        name: Table name of a new table.
        description: Table description of a new table.

    Returns:
        What was committed (``skipped`` for a retried ``app_id``/``version``, ``ignored`` for
        ``mode="ignore"`` on an existing table).

    Raises:
        InvalidWriteModeError: An unknown mode.
        InvalidOptionError: A bad option value or combination (``predicate`` without overwrite).
        TableAlreadyExistsError: ``mode="error"`` and the table exists.
        SchemaMismatchError: The data's columns do not fit the table; subclasses
            ``LossyConversionError`` (a value would change: sub-microsecond timestamps, an
            overflowing integer), ``UnsupportedParquetTypeError`` (a type Delta has none for,
            e.g. unsigned integers in a new table) and ``SchemaEvolutionError`` (merge refused).
        PartitioningMismatchError: ``partition_by`` differs from the table's.
        InvalidPredicateError: ``predicate`` does not parse or names a missing column;
            ``ReplaceWhereMismatchError`` when a new row falls outside it.
        ConstraintViolationError: A row breaks a NOT NULL, CHAR/VARCHAR or CHECK constraint.
        AppendOnlyError: An overwrite of a ``delta.appendOnly`` table.
        ConcurrentModificationError: A concurrent commit conflicts (a named subclass).
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
        StorageError: The store failed (written files are kept only if the commit may have
            landed).

    Nothing is committed, and the files written are deleted, when any of these is raised
    (but for a store failure after which the commit may have landed).
    """
    chosen = _MODES.get(str(mode).lower()) if isinstance(mode, str) else None
    if chosen is None:
        raise InvalidWriteModeError(
            f"unknown write mode {mode!r}: use 'error', 'append', 'overwrite' or 'ignore'"
        )
    settings = _Settings.build(
        chosen,
        partition_by=partition_by,
        predicate=predicate,
        schema_mode=schema_mode,
        target_file_size=target_file_size,
        max_rows_per_file=max_rows_per_file,
        compression=compression,
        commit_properties=commit_properties,
    )
    reader = as_reader(data)
    options = dict(storage_options or {})
    if isinstance(table_or_uri, DeltaTable):
        table: DeltaTable | None = table_or_uri
        table_or_uri.update()
        uri = table_or_uri.uri
    else:
        uri = os.fspath(table_or_uri)
        try:
            table = DeltaTable(uri, storage_options=options, retry=settings.retry)
        except TableNotFoundError:
            table = None
    if table is None:
        return _new_table(uri, reader, settings, options, configuration, name, description)
    if settings.mode == "error":
        raise TableAlreadyExistsError(
            f"a Delta table already exists at {uri} (version {table.version()}) and the write "
            "mode is 'error'; write with mode='append' or mode='overwrite'. Nothing was written."
        )
    if settings.mode == "ignore":
        return WriteResult(table.version(), 0, 0, 0, 0, ignored=True)
    return _existing_table(table, reader, settings)


@dataclass(frozen=True)
class _Settings:
    """The checked arguments of one write."""

    mode: str
    partition_by: list[str] | None
    predicate: Predicate | None
    predicate_text: str | None
    schema_mode: str | None
    options: ParquetOptions
    user_metadata: str | None
    txns: dict[str, int]
    retry: RetryPolicy | None

    @classmethod
    def build(
        cls,
        mode: str,
        *,
        partition_by: Sequence[str] | str | None,
        predicate: PredicateLike | None,
        schema_mode: str | None,
        target_file_size: int | None,
        max_rows_per_file: int | None,
        compression: str | None,
        commit_properties: Any,
    ) -> _Settings:
        if schema_mode not in (None, "merge", "overwrite"):
            raise InvalidOptionError(
                f"schema_mode must be 'merge', 'overwrite' or None, not {schema_mode!r}",
                option="schema_mode",
            )
        if predicate is not None and mode != "overwrite":
            raise InvalidOptionError("predicate needs mode='overwrite'", option="predicate")
        if schema_mode == "overwrite" and (mode != "overwrite" or predicate is not None):
            raise InvalidOptionError(
                "schema_mode='overwrite' replaces the whole table: it needs mode='overwrite' "
                "and no predicate",
                option="schema_mode",
            )
        columns = [partition_by] if isinstance(partition_by, str) else partition_by
        if columns is not None:
            columns = list(columns)
            if not all(isinstance(c, str) for c in columns):
                raise InvalidOptionError("partition_by holds column names", option="partition_by")
        parsed = None if predicate is None else as_predicate(predicate)
        text = predicate if isinstance(predicate, str) else None
        user_metadata, txns, retries = _commit_properties(commit_properties)
        options = ParquetOptions(
            codec=(compression or "snappy").lower(),
            target_file_size=TARGET_FILE_SIZE if target_file_size is None else target_file_size,
            max_rows_per_file=0 if max_rows_per_file is None else max_rows_per_file,
        )
        retry = None if retries is None else RetryPolicy(max_attempts=retries + 1)
        return cls(mode, columns, parsed, text, schema_mode, options, user_metadata, txns, retry)

    def parameters(self, predicate: Predicate | None = None) -> dict[str, Any]:
        """``operationParameters`` of the WRITE, as delta-spark records them."""
        out: dict[str, Any] = {
            "mode": _MODE_NAMES[self.mode],
            "partitionBy": orjson.dumps(self.partition_by or []).decode(),
        }
        if predicate is not None:
            out["predicate"] = self.predicate_text or str(predicate)
        if self.schema_mode == "merge":
            out["canMergeSchema"] = True
        if self.schema_mode == "overwrite":
            out["canOverwriteSchema"] = True
        return out


def _commit_properties(given: Any) -> tuple[str | None, dict[str, int], int | None]:
    """``(user metadata, {app_id: version}, max retries)`` from commit properties."""
    checked = commit_settings(given)
    return checked.user_metadata, dict(checked.txns or {}), checked.retries


def _new_table(
    uri: str,
    reader: pa.RecordBatchReader,
    settings: _Settings,
    options: dict[str, str],
    configuration: Mapping[str, str | None] | None,
    name: str | None,
    description: str | None,
) -> WriteResult:
    """Create the table with the data as version 0."""
    storage = TableStorage.open(uri, options)
    config = {k: v for k, v in (configuration or {}).items() if v is not None}
    metadata, protocol = new_table_actions(
        schema_of_data(reader.schema),
        partition_by=settings.partition_by or (),
        configuration=config,
        name=name,
        description=description,
    )
    schema = StructType.from_json_string(metadata.schema_string or "")
    refuse_unenforced_constraints(schema, uri=uri)
    partition_columns = list(metadata.partition_columns)
    predicate = settings.predicate
    if predicate is not None:
        _check_predicate(predicate, schema, partition_columns)
    writer = DataWriter(
        storage.store, storage.root, schema, partition_columns, metadata.configuration,
        options=settings.options,
    )  # fmt: skip
    adds = _write(writer, Conformer(reader.schema, schema).batches(reader), predicate)
    staged = StagedWrite(storage, adds, app=bool(settings.txns))
    try:
        staged._first_commit = first_commit(
            metadata,
            protocol,
            adds,
            parameters=settings.parameters(predicate),
            is_blind_append=settings.mode != "overwrite",
            txns=settings.txns,
            user_metadata=settings.user_metadata,
        )
    except BaseException:
        staged.abort()
        raise
    return staged.commit()


def _existing_table(
    table: DeltaTable, reader: pa.RecordBatchReader, settings: _Settings
) -> WriteResult:
    """Append to or overwrite an existing table."""
    snapshot = table.snapshot
    check_constraints(snapshot.configuration, snapshot.schema)  # each one can be evaluated
    snapshot.check_writable(ENFORCED)
    check_clustering_stats(snapshot)
    overwrite = settings.mode == "overwrite"
    if overwrite and str(snapshot.configuration.get("delta.appendOnly")).lower() == "true":
        raise AppendOnlyError(f"the table at {table.uri} is append-only (delta.appendOnly=true)")
    schema, partition_columns = snapshot.schema, list(snapshot.partition_columns)
    if settings.schema_mode == "overwrite":
        schema = schema_of_data(reader.schema)
        kept = [c for c in partition_columns if c in schema.names]
        partition_columns = settings.partition_by if settings.partition_by is not None else kept
    else:
        given = settings.partition_by
        if given and given != partition_columns:
            raise PartitioningMismatchError(
                f"partition_by {given} differs from the table's partitioning "
                f"{partition_columns}; leave it out, or overwrite with schema_mode='overwrite'"
            )
        if settings.schema_mode == "merge":
            schema = merge_schemas(
                snapshot.schema,
                within_table(schema_of_data(reader.schema), snapshot.schema),
                partition_columns=partition_columns,
                type_widening=type_widening_enabled(snapshot.protocol, snapshot.metadata),
            )
    configuration = {k: v for k, v in snapshot.configuration.items() if v is not None}
    if schema != snapshot.schema:  # new columns of a column-mapped table get ids and names
        schema, configuration = map_new_columns(
            schema, configuration, previous=snapshot.configuration
        )
    refuse_unenforced_constraints(schema, uri=table.uri)
    conformer = Conformer(reader.schema, schema)
    predicate = settings.predicate
    tx = table.transaction(
        "WRITE",
        parameters=settings.parameters(predicate),
        user_metadata=settings.user_metadata,
        retry=settings.retry,
    )
    tx.enforced = ENFORCED
    if schema != snapshot.schema or partition_columns != list(snapshot.partition_columns):
        upgrade = protocol_for_schema(snapshot, schema)
        if upgrade is not None:
            tx.update_protocol(upgrade)
        tx.update_metadata(
            schema=schema, partition_by=partition_columns, configuration=configuration
        )
    if settings.txns and _already_committed(tx, settings.txns):
        return StagedWrite(table._storage, [], table=table).commit()
    replaced, rewrite = None, None
    if overwrite and predicate is None:
        replaced = tx.read_whole_table()
    elif predicate is not None:
        _check_predicate(predicate, schema, partition_columns)
        if predicate.columns() <= set(partition_columns):
            replaced = tx.read_files(predicate)
        else:
            replaced = rewrite = plan_row_replace(tx, predicate)
    storage = table._storage
    writer = DataWriter(
        storage.store, storage.root, schema, partition_columns, configuration,
        options=settings.options,
    )  # fmt: skip
    batches = conformer.batches(reader)
    adds = _write(writer, batches, predicate, _rewritten(storage, tx, rewrite, predicate, schema))
    staged = StagedWrite(storage, adds, table=table, tx=tx, app=bool(settings.txns))
    staged.stage(replaced)
    return staged.commit()


def _already_committed(tx: Transaction, txns: dict[str, int]) -> bool:
    """Stage the ``txn`` actions; whether every one of them is already in the table."""
    done = True
    for app_id, version in txns.items():
        seen = tx.txn_version(app_id)
        done = done and seen is not None and seen >= version
        tx.set_transaction(app_id, version)
    return done


def _rewritten(
    storage: TableStorage,
    tx: Transaction,
    files: pa.Table | None,
    predicate: Predicate | None,
    schema: StructType,
) -> Iterator[pa.RecordBatch]:
    """The rows of the files a data-column overwrite rewrites that it keeps."""
    if files is None or predicate is None or not files.num_rows:
        return iter(())
    return kept_rows(storage, tx.snapshot, files, predicate, schema)


def _check_predicate(
    predicate: Predicate, schema: StructType, partition_columns: list[str]
) -> None:
    """Refuse a predicate naming columns the table lacks or values that do not fit."""
    if predicate.columns() <= set(partition_columns):
        validate(predicate, schema, partition_columns)
    else:
        check_predicate_columns(predicate, schema)


def _write(
    writer: DataWriter,
    batches: Iterator[pa.RecordBatch],
    predicate: Predicate | None,
    kept: Iterator[pa.RecordBatch] | None = None,
) -> list[AddFile]:
    """Write the new rows (each checked against ``predicate``), then ``kept``; the adds."""
    try:
        for batch in batches:
            if predicate is not None and batch.num_rows:
                _check_rows(batch, predicate)
            writer.write(batch)
        for batch in kept or ():
            writer.write(batch)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def _check_rows(batch: pa.RecordBatch, predicate: Predicate) -> None:
    """Refuse rows for which the overwrite predicate is not true.

    Raises:
        ReplaceWhereMismatchError: Naming how many rows and one of them.
    """
    table = pa.Table.from_batches([batch])
    bad = pc.invert(matches(predicate, table))
    count = pc.sum(bad).as_py() or 0
    if count:
        example = table.filter(bad).slice(0, 1).to_pylist()[0]
        raise ReplaceWhereMismatchError(
            f"{count} row(s) of the data do not satisfy the overwrite predicate {predicate}, e.g. "
            f"{orjson.dumps(example, default=str).decode()}; nothing was written"
        )
