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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson

from deltalog.actions import AddFile
from deltalog.errors import (
    CommitFailedError,
    InvalidInputError,
    ReplaceWhereMismatchError,
    SparkWriteError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from deltalog.partitions import serialize_partition_value
from deltalog.paths import decode_path
from deltalog.predicates import (
    And,
    Comparison,
    In,
    IsNull,
    Or,
    Predicate,
    PredicateLike,
    as_predicate,
    matches,
    partition_table,
    validate,
)
from deltalog.schema import PrimitiveType, StructType
from deltalog.spark.schema import check_partitioning, match_columns, schema_for_new_table
from deltalog.spark.task import CODECS, RESULT_DDL, TaskPlan, write_task
from deltalog.stats import DEFAULT_INDEXED_COLS, check_nullability
from deltalog.table import DeltaTable
from deltalog.transaction import Transaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Mode = Literal["append", "overwrite"]
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
    """Data files written and a transaction staged, not yet committed.

    Call :meth:`commit` to publish or :meth:`abort` to give up (which deletes the files).
    """

    def __init__(
        self,
        table: DeltaTable,
        tx: Transaction | None,
        adds: list[AddFile],
        removed: int,
    ) -> None:
        self._table = table
        self._tx = tx
        self.adds = adds
        self._removed = removed
        self._finished = False

    @property
    def read_version(self) -> int:
        """The table version the write read."""
        return self._table.version() if self._tx is None else self._tx.read_version

    @property
    def skipped(self) -> bool:
        """Whether the write is a no-op: its ``app_version`` was already committed."""
        return self._tx is None

    def commit(self) -> WriteResult:
        """Commit the staged write; returns what it did.

        Raises:
            ConcurrentModificationError: A concurrent commit conflicts with this write (the
                six named subclasses; the written files are deleted).
            CommitFailedError: Every attempt lost the race (the files are deleted).
            TransactionClosedError: Already committed or aborted.
            StorageError: The log store failed; the files are kept, since the commit may have
                landed.
        """
        if self._tx is None:
            self._finished = True
            return WriteResult(self._table.version(), 0, 0, 0, 0, skipped=True)
        try:
            version = self._tx.commit()
        except CommitFailedError:
            self._delete_files()  # definitely not committed: nothing refers to the files
            raise
        finally:
            self._finished = True
        if self._tx.no_op:  # the same app_id/app_version landed concurrently
            self._delete_files()
            return WriteResult(version, 0, 0, 0, 0, skipped=True)
        self._table.wait_for_checkpoints()
        return WriteResult(
            version=version,
            files_added=len(self.adds),
            files_removed=self._removed,
            rows=sum(_records(a) for a in self.adds),
            bytes=sum(a.size for a in self.adds),
        )

    def abort(self) -> None:
        """Give up the write: nothing is committed and the written files are deleted."""
        if not self._finished:
            self._finished = True
            self._delete_files()

    def _delete_files(self) -> None:
        storage = self._table._storage
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
        replace_where: With ``mode="overwrite"``: a predicate on partition columns, as SQL text
            (``"day = '2024-01-01'"``) or any form :func:`deltalog.predicates.as_predicate`
            accepts.
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
        InvalidPredicateError: ``replace_where`` does not parse or names a non-partition column.
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
    table = _open_or_create(uri, frame_schema, partition_by, configuration, options)
    snapshot = table.snapshot
    snapshot.check_writable()
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
    parameters: dict[str, Any] = {
        "mode": "Overwrite" if mode == "overwrite" else "Append",
        "partitionBy": orjson.dumps(snapshot.partition_columns).decode(),
    }
    predicate: Predicate | None = None
    if replace_where is not None:
        predicate = as_predicate(replace_where)
        validate(predicate, snapshot.schema, snapshot.partition_columns)
        parameters["predicate"] = (
            replace_where if isinstance(replace_where, str) else str(predicate)
        )
    if dynamic:
        parameters["isDynamicPartitionOverwrite"] = True

    tx = table.transaction("WRITE", parameters=parameters)
    if app_id is not None and app_version is not None:
        done = tx.txn_version(app_id)
        if done is not None and done >= app_version:
            return StagedWrite(table, None, [], 0)
        tx.set_transaction(app_id, app_version)
    if predicate is not None:
        _check_replace_where(df, predicate, snapshot.schema, snapshot.partition_columns)
    if mode == "overwrite" and not dynamic:
        replaced = tx.read_whole_table() if predicate is None else tx.read_files(predicate)
    else:
        replaced = None

    adds = _run_job(df, table, snapshot.schema, written, options)
    staged = StagedWrite(table, tx, adds, 0)
    try:
        data_schema = StructType(
            tuple(f for f in snapshot.schema.fields if f.name not in snapshot.partition_columns)
        )
        for add in adds:
            check_nullability(add.stats or "{}", data_schema, add.path)
        if dynamic and adds:
            replaced = tx.read_files(_written_partitions(adds, snapshot.partition_columns))
        tx.add(adds)
        if replaced is not None and replaced.num_rows:
            tx.remove(replaced)
            staged._removed = replaced.num_rows
    except BaseException:
        staged.abort()
        raise
    return staged


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


def _open_or_create(
    uri: str,
    frame_schema: StructType,
    partition_by: Sequence[str],
    configuration: Mapping[str, str] | None,
    options: dict[str, str],
) -> DeltaTable:
    """The table at ``uri``; created from the DataFrame's schema when there is none."""
    try:
        return DeltaTable(uri, storage_options=options, background_checkpoints=False)
    except TableNotFoundError:
        pass
    # Created concurrently? Then write into it like into any existing table.
    with contextlib.suppress(TableAlreadyExistsError):
        DeltaTable.create(
            uri,
            schema_for_new_table(frame_schema),
            partition_by=list(partition_by),
            configuration=configuration,
            storage_options=options,
        )
    return DeltaTable(uri, storage_options=options, background_checkpoints=False)


def _session_overwrite_mode(df: DataFrame) -> str:
    value = df.sparkSession.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    return str(value or "static").lower()


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _check_replace_where(
    df: DataFrame, predicate: Predicate, schema: StructType, partition_columns: list[str]
) -> None:
    """Refuse a DataFrame with rows outside ``predicate``, before anything is written.

    Spark computes the distinct partition values of the DataFrame; the predicate is evaluated
    on them with the same code that later selects the files to replace.

    Raises:
        ReplaceWhereMismatchError: Naming up to three offending partitions.
    """
    from pyspark.sql import functions as F

    columns = []
    for name in partition_columns:
        t = schema.field(name).type
        if t == PrimitiveType("timestamp"):
            columns.append(F.unix_micros(F.col(_quote(name))).alias(name))
        elif t == PrimitiveType("timestamp_ntz"):
            columns.append(F.col(_quote(name)).cast("string").alias(name))
        else:
            columns.append(F.col(_quote(name)))
    rows = df.select(*columns).distinct().collect()
    values = [
        {name: _partition_text(row[i], schema, name) for i, name in enumerate(partition_columns)}
        for row in rows
    ]
    table = partition_table(values, schema, partition_columns)
    outside = [
        v for v, ok in zip(values, matches(predicate, table).to_pylist(), strict=True) if not ok
    ]
    if outside:
        raise ReplaceWhereMismatchError(
            f"{len(outside)} partition(s) of the DataFrame fall outside replace_where "
            f"{predicate}, e.g. {outside[:3]}; nothing was written"
        )


def _partition_text(value: Any, schema: StructType, name: str) -> str | None:
    t = schema.field(name).type
    if value is not None and t == PrimitiveType("timestamp"):
        value = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(value))
    if isinstance(value, bytearray):
        value = bytes(value)
    text = serialize_partition_value(value, t)
    return None if text == "" else text


def _run_job(
    df: DataFrame,
    table: DeltaTable,
    schema: StructType,
    written: list[str],
    options: dict[str, str],
) -> list[AddFile]:
    """Run the Spark job that writes the data files; the ``add`` actions for them.

    Raises:
        SparkWriteError: The job failed.
    """
    snapshot = table.snapshot
    partition_columns = snapshot.partition_columns
    conf = df.sparkSession.conf
    codec = str(conf.get("spark.sql.parquet.compression.codec", "snappy") or "snappy").lower()
    if codec not in CODECS:
        raise InvalidInputError(
            f"spark.sql.parquet.compression.codec={codec!r} is not one deltalog can write "
            f"({sorted(CODECS)})"
        )
    indexed = snapshot.configuration.get("delta.dataSkippingNumIndexedCols")
    plan = TaskPlan(
        uri=table.uri,
        storage_options=options,
        partition_schema=StructType(
            tuple(schema.field(c) for c in partition_columns)
        ).to_json_string(),
        data_columns=tuple(c for c in written if c not in partition_columns),
        num_indexed_cols=int(indexed) if indexed else DEFAULT_INDEXED_COLS,
        codec=codec,
        max_records_per_file=int(conf.get("spark.sql.files.maxRecordsPerFile", "0") or 0),
    )
    try:
        rows = df.mapInArrow(lambda batches: write_task(plan, batches), RESULT_DDL).collect()
    except Exception as exc:
        raise SparkWriteError(f"the Spark job writing to {table.uri} failed: {exc}") from exc
    return [
        AddFile(
            path=row["path"],
            partition_values=orjson.loads(row["partition_values"]),
            size=row["size"],
            modification_time=row["modification_time"],
            data_change=True,
            stats=row["stats"],
        )
        for row in rows
    ]


def _written_partitions(adds: list[AddFile], partition_columns: list[str]) -> Predicate:
    """The partitions the written files are in (nulls included), as a read predicate."""
    combos = sorted(
        {tuple(a.partition_values.get(c) for c in partition_columns) for a in adds},
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
                    IsNull(name) if value is None else Comparison(name, "=", value)
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


def _records(add: AddFile) -> int:
    stats = orjson.loads(add.stats or "{}")
    return int(stats.get("numRecords", 0))
