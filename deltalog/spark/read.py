"""Read a Delta table into a Spark DataFrame without delta-spark's jars.

``read(spark, uri, ...)`` is ``spark.read.format("delta").load(uri)`` for a plain PySpark
session: the driver replays the log with deltalog and chooses the live files (pruned by
partition values and statistics when a ``filter`` is given, see :func:`live_files`), and the
executors read those files (:mod:`deltalog.spark.scan`, through ``mapInArrow``) with deltalog's
own per-file reader: column mapping at every level, partition columns typed from the Delta
schema, deletion vectors applied. No row passes through the driver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.errors import (
    ConflictingOptionsError,
    InvalidInputError,
    InvalidOptionError,
    InvalidPredicateError,
)
from deltalog.spark.parquet_read import read_native, split_files
from deltalog.spark.scan import FILES_DDL, ScanPlan, describe_files, scan_task
from deltalog.spark.snapshot_frame import snapshot_frame
from deltalog.spark.spark_predicate import (
    case_sensitive,
    schema_name,
    spark_predicate,
    spark_text,
)
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import Predicate
from deltalog.table import DeltaTable, TimestampLike

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType

    from deltalog.protocol.schema import StructType

#: Field metadata that is the log's business, not the DataFrame's (delta-spark drops it too).
_INTERNAL_METADATA = (
    "delta.columnMapping.id",
    "delta.columnMapping.physicalName",
    "delta.columnMapping.nested.ids",
    "parquet.field.id",
)


def read(
    spark: SparkSession,
    uri: str,
    *,
    version: int | None = None,
    timestamp: TimestampLike | None = None,
    columns: Sequence[str] | None = None,
    filter: PredicateLike | None = None,
    storage_options: Mapping[str, str] | None = None,
    **spark_options: str | int,
) -> DataFrame:
    """A Delta table's rows as a Spark DataFrame, read by the executors; no delta-spark needed.

    Like ``spark.read.format("delta").option("versionAsOf", v).load(uri).where(filter)``, in a
    session without delta-spark's jars. The driver reads the log (only the log) and hands the
    executors one small row per live data file; they read the files with deltalog and yield
    the rows in the table's schema (converted to Spark's): partition columns typed, column
    mapping applied at every level, rows deleted by a deletion vector left out. The executors
    import deltalog (install it there, or ship it: :func:`deltalog.spark.package_zip`).

    Args:
        spark: The session whose executors read the files.
        uri: The table URI (local path, ``file://``, ``s3://``, ``gs://``, ``az://``, ...).
        version: Read this version (delta-spark's ``versionAsOf``).
        timestamp: Read the latest version committed at or before this time (a datetime, an
            ISO-8601 string or milliseconds since the epoch; delta-spark's ``timestampAsOf``).
        columns: Only these columns (logical names), in this order; default all.
        filter: Only rows matching this predicate: SQL text (``"day >= '2024-01-01'"``) or any
            form :func:`deltalog.stats.predicate_input.as_predicate` accepts. Files that cannot
            hold a matching row (by partition values and statistics) are not read, and the
            rows are filtered by Spark (``df.filter``; timestamps in the session's time zone).
        storage_options: Log store options, used on the driver and the executors.
        **spark_options: delta-spark's read options ``versionAsOf`` and ``timestampAsOf``
            (names in any case), as ``spark.read.option(...)`` takes them.

    Returns:
        A lazy DataFrame: the files are read when an action runs. Without a ``filter`` it
        uses the log as delta-spark's does (:mod:`deltalog.spark.snapshot_frame`): its
        ``count()`` answers from the files' ``numRecords`` (unless one lacks it or
        ``spark.databricks.delta.optimizeMetadataQuery.enabled`` is ``false``), and its
        ``filter(text)`` reads only the files that may match. DataFrames derived from it are
        Spark's own.

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        VersionNotFoundError: ``version`` does not exist.
        TimestampOutOfRangeError: ``timestamp`` is before the first commit or after the latest.
        InvalidPredicateError: ``filter`` does not parse, or it or ``columns`` names a column
            the table lacks.
        InvalidInputError: ``columns`` is empty, or both ``version`` and ``timestamp`` given.
        InvalidOptionError: An unknown read option; ``ConflictingOptionsError`` when an option
            and its keyword argument disagree.
        InvalidSchemaError: A column type deltalog cannot read (variant).
        UnsupportedFeatureError: The table needs a reader feature deltalog lacks.
        StorageError: The log store failed.
    """
    table, options = open_snapshot(uri, version, timestamp, storage_options, spark_options)
    schema = table.schema()
    schema.to_arrow()  # a type the executors cannot read (variant) is refused here
    names = list(schema.names)
    exact_case = case_sensitive(spark)
    wanted = _columns(columns, names, exact_case)
    predicate, text, used = None, None, set[str]()
    if filter is not None:
        # Spark filters the rows by this text, so the files are chosen by the same text: a
        # timestamp without an offset (text or a naive datetime) is in the session's zone.
        parsed = as_predicate(filter)  # text deltalog cannot read is refused
        text = filter if isinstance(filter, str) else spark_text(parsed)
        used = parsed.columns()
        if not exact_case:
            used = {schema_name(c, names) for c in used}
        try:
            predicate = _session_predicate(spark, text, schema, exact_case)
        except InvalidPredicateError:
            predicate = None  # read as Spark would not (a string's escapes): every file
    needed = set(wanted) | used
    unknown = sorted(needed - set(names))
    if unknown:
        raise InvalidPredicateError(f"the table has no column(s) {unknown} (columns: {names})")
    read_names = [n for n in names if n in needed]
    frame = _scan(spark, table, options, read_names, predicate)
    if text is not None:
        frame = frame.filter(text)
    frame = _select(frame, read_names, wanted)
    if text is not None:
        return frame

    def pruned(condition: str) -> DataFrame | None:
        """The same read of only the files ``condition`` may match; ``None`` if unusable."""
        try:
            narrowed = _session_predicate(spark, condition, schema, exact_case)
            if not narrowed.columns() <= set(wanted):
                return None  # a column this DataFrame lacks: Spark's own error
            ordered = [n for n in names if n in wanted]
            return _select(_scan(spark, table, options, ordered, narrowed), ordered, wanted)
        except InvalidInputError:
            return None  # text deltalog cannot judge: Spark's own filter alone

    # Every live row: count() answers from the log and filter() prunes files, as delta-spark's.
    return snapshot_frame(frame, table, pruned)


def open_snapshot(
    uri: str,
    version: int | None,
    timestamp: TimestampLike | None,
    storage_options: Mapping[str, str] | None,
    spark_options: Mapping[str, object],
) -> tuple[DeltaTable, dict[str, str]]:
    """The table at the snapshot a Spark read asks for, and its log store options.

    ``version``/``timestamp`` may also come as delta-spark's read options (``versionAsOf``,
    ``timestampAsOf``); the driver opens the log without background checkpoints.
    """
    version, timestamp = _time_travel(version, timestamp, spark_options)
    options = dict(storage_options or {})
    table = DeltaTable(
        uri,
        version=version,
        timestamp=timestamp,
        storage_options=options,
        background_checkpoints=False,
    )
    return table, options


def _session_predicate(
    spark: SparkSession, text: str, schema: StructType, exact_case: bool
) -> Predicate:
    """``text`` as a predicate to choose files by (see :mod:`deltalog.spark.spark_predicate`)."""
    zone = str(spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC")
    return spark_predicate(text, schema, zone, case_sensitive=exact_case)


def _scan(
    spark: SparkSession,
    table: DeltaTable,
    options: dict[str, str],
    columns: list[str],
    predicate: Predicate | None,
) -> DataFrame:
    """``columns`` (in the schema's order) of the live files that may match ``predicate``.

    The rows themselves are not filtered: the caller filters them with Spark.
    """
    schema = table.schema()
    files = live_files(table, predicate)
    plan = ScanPlan(
        uri=table.uri,
        storage_options=options,
        table_schema=schema.to_json_string(),
        partition_columns=tuple(table.snapshot.partition_columns),
        columns=tuple(columns),
        batch_rows=_batch_rows(spark),
    )
    snapshot = table.snapshot
    split = split_files(
        table._storage.root,
        files,
        schema,
        snapshot.partition_columns,
        snapshot.configuration,
        snapshot.protocol,
    )
    frames = []
    if split.native:
        frames.append(read_native(spark, split, schema, snapshot.partition_columns, columns))
    if split.rest.num_rows or not frames:
        descriptors = spark.createDataFrame(describe_files(split.rest), FILES_DDL)
        frames.append(
            descriptors.mapInArrow(
                lambda batches: scan_task(plan, batches), spark_schema(schema, columns)
            )
        )
    return frames[0] if len(frames) == 1 else frames[0].union(frames[1])


def _select(frame: DataFrame, has: list[str], columns: list[str]) -> DataFrame:
    """``frame``, whose columns are ``has``, with exactly ``columns`` in order."""
    if has == columns:
        return frame
    return frame.select(*[_quote(n) for n in columns])


def live_files(table: DeltaTable, predicate: Predicate | None) -> pa.Table:
    """The live files a read of ``predicate`` must read (all of them without one).

    The one place a Spark read chooses its files: :meth:`DeltaTable.files` prunes by partition
    values and by statistics (:mod:`deltalog.stats.skipping`); a file that may hold a matching
    row is kept.

    Raises:
        InvalidPredicateError: A literal does not fit its column.
    """
    if predicate is None:
        return table.snapshot.files_without_stats()
    return table.files(with_stats=False, filter=predicate)


def spark_schema(schema: StructType, columns: Sequence[str]) -> SparkStructType:
    """The Spark schema of ``columns`` of a Delta schema (column-mapping metadata dropped).

    Delta's schema JSON is Spark's, so only the log's internal field metadata goes.
    """
    from pyspark.sql.types import StructType as SparkStructType

    document = orjson.loads(schema.to_json_string())
    by_name = {f["name"]: f for f in document["fields"]}
    picked = {"type": "struct", "fields": [_without_internal(by_name[c]) for c in columns]}
    return SparkStructType.fromJson(picked)


def _without_internal(value: Any) -> Any:
    """A schema JSON value with the internal metadata of every field, at every level, dropped."""
    if isinstance(value, dict):
        out = {k: _without_internal(v) for k, v in value.items()}
        metadata = out.get("metadata")
        if "name" in out and isinstance(metadata, dict):
            out["metadata"] = {k: v for k, v in metadata.items() if k not in _INTERNAL_METADATA}
        return out
    if isinstance(value, list):
        return [_without_internal(v) for v in value]
    return value


def _time_travel(
    version: int | None, timestamp: TimestampLike | None, spark_options: Mapping[str, object]
) -> tuple[Any, Any]:
    """``version`` and ``timestamp``, also spelled as delta-spark's read options."""
    for key, value in spark_options.items():
        name = key.lower() if isinstance(key, str) else ""
        if name not in ("versionasof", "timestampasof"):
            raise InvalidOptionError(
                f"unknown read option {key!r}; deltalog.spark.read takes versionAsOf and "
                "timestampAsOf (names in any case)",
                option=str(key),
            )
        given: Any = value
        if name == "versionasof" and isinstance(value, str):
            try:
                given = int(value.strip())
            except ValueError:
                raise InvalidOptionError(
                    f"versionAsOf must be a version number, not {value!r}", option=key
                ) from None
        current = version if name == "versionasof" else timestamp
        if current is not None and current != given:
            raise ConflictingOptionsError(
                f"option {key!r}={value!r} and the keyword argument "
                f"{'version' if name == 'versionasof' else 'timestamp'}={current!r} disagree",
                option=key,
            )
        if name == "versionasof":
            version = given
        else:
            timestamp = given
    return version, timestamp


def _columns(columns: Sequence[str] | None, names: list[str], case_sensitive: bool) -> list[str]:
    if columns is None:
        return names
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise InvalidInputError(f"columns must be a list of column names, not {columns!r}")
    if not columns:
        raise InvalidInputError("columns is empty: name at least one column")
    return list(columns) if case_sensitive else [schema_name(c, names) for c in columns]


def _batch_rows(spark: SparkSession) -> int:
    text = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
    try:
        rows = int(str(text))
    except ValueError:
        return 10_000
    return rows if rows > 0 else 10_000


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
