"""The plain files of a Spark read, read by Spark's own Parquet reader.

Most live files of most tables need nothing of deltalog's per-file reader: no deletion vector,
partition values spelled in the file's ``col=value`` directories as Hive spells them, and no
column mapping other than names. Spark reads those files itself (``spark.read.parquet`` with
the table's schema and ``basePath``): columns are pruned, filters pushed into the row groups,
and ``count()`` answered from the footers, as ``format("delta")`` does. Partition values come
from the directories, typed by the schema Spark is given; mapped names are renamed and mapped
nested fields cast to their logical names.

:func:`split_files` decides file by file, and only when the whole table allows it (a local
table, column mapping ``none`` or ``name``, no type widening, partition column types whose
directory spelling Spark casts exactly); every other file goes to the ``mapInArrow`` path of
:mod:`deltalog.spark.scan`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from deltalog.errors import MissingDataFileError
from deltalog.protocol.column_mapping import mapping_mode, physical_name, physical_schema
from deltalog.protocol.partitions import HIVE_NULL, hive_partition_dir
from deltalog.protocol.paths import decode_path, has_scheme
from deltalog.protocol.schema import StructType
from deltalog.spark.session import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.protocol.actions import Protocol

#: Partition column types whose ``col=value`` spelling Spark's partition parsing casts back to
#: the logged value (no time zone, no float formatting in play).
_PARTITION_TYPES = frozenset({"string", "byte", "short", "integer", "long", "boolean", "date"})
#: Reader features after which a file's Parquet types may differ from the schema's.
_RETYPING_FEATURES = frozenset({"typeWidening", "typeWidening-preview"})
#: Above this many paths Spark lists them with a Spark job.
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
#: Characters Spark reads as a glob pattern in a path it is given.
_GLOB = frozenset("{}[]*?\\")


@dataclass(frozen=True)
class FileSplit:
    """The live files of a read, split between Spark's Parquet reader and deltalog's.

    Attributes:
        root: The table's root directory (``basePath``).
        native: Local paths of the files Spark reads itself.
        rest: The rows of the files table that deltalog's reader reads (``mapInArrow``).
    """

    root: str
    native: list[str]
    rest: pa.Table


def split_files(
    root: str,
    files: pa.Table,
    schema: StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str | None],
    protocol: Protocol,
) -> FileSplit:
    """Which of ``files`` (rows of ``snapshot.files``) Spark's own Parquet reader can read.

    A file qualifies when it has no deletion vector and its path is ``<partition dir>/<name>``
    relative to the root, the partition directory spelled exactly as Hive spells the logged
    values, with no character Spark reads as a glob and no hidden segment. Nothing qualifies
    on a remote table, with ``id`` column mapping or type widening, or with a partition column
    of a type outside the exactly-cast ones (timestamps, floats, decimals, binary).
    """
    none = FileSplit(root, [], files)
    if not _table_qualifies(root, schema, partition_columns, configuration, protocol):
        return none
    physical = [physical_name(schema.field(c)) for c in partition_columns]
    base = root.rstrip("/")
    native: list[str] = []
    rest: list[int] = []
    rows = files.select(["path", "partition_values", "deletion_vector"]).to_pylist()
    for index, row in enumerate(rows):
        path = _native_path(row, physical)
        if path is None:
            rest.append(index)
        else:
            native.append(f"{base}/{path}")
    if not native:
        return none
    return FileSplit(root, native, files.take(pa.array(rest, pa.int64())))


def _table_qualifies(
    root: str,
    schema: StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str | None],
    protocol: Protocol,
) -> bool:
    if has_scheme(root) or not root.startswith("/") or _GLOB & set(root):
        return False
    if mapping_mode(configuration) == "id":
        return False
    if _RETYPING_FEATURES & set(protocol.reader_features or ()):
        return False
    if '"void"' in schema.to_json_string():
        return False
    types = (schema.field(name).type.to_json() for name in partition_columns)
    return all(t in _PARTITION_TYPES for t in types)


def _native_path(row: Mapping[str, Any], partition_columns: Sequence[str]) -> str | None:
    """The file's relative path when Spark can read it as a partition file; else ``None``."""
    if row["deletion_vector"] is not None:
        return None
    logged = str(row["path"])
    if logged.startswith("/") or has_scheme(logged):
        return None
    path = decode_path(logged)
    directory, _, name = path.rpartition("/")
    values = dict(row["partition_values"] or [])
    if set(values) != set(partition_columns) or HIVE_NULL in values.values():
        return None  # (Spark reads a directory value spelled as Hive's null as null)
    expected = hive_partition_dir({c: values[c] for c in partition_columns})
    if directory != expected or not name or name[0] in "._" or _GLOB & set(path):
        return None
    if ":" in path or any(s[:1] in (".", "_") for s in directory.split("/") if s):
        return None
    return path


def read_native(
    spark: SparkSession,
    split: FileSplit,
    schema: StructType,
    partition_columns: Sequence[str],
    columns: Sequence[str],
) -> DataFrame:
    """``columns`` of the split's native files, in order, with the table's logical names.

    Raises:
        MissingDataFileError: A file the log names is gone (Spark checks every path).
    """
    frame, selected = native_relation(spark, split, schema, partition_columns, columns)
    return frame.select(*selected)


def native_relation(
    spark: SparkSession,
    split: FileSplit,
    schema: StructType,
    partition_columns: Sequence[str],
    columns: Sequence[str],
) -> tuple[DataFrame, list[Any]]:
    """The split's native files as Spark's Parquet relation, and ``columns`` selected from it.

    The relation itself still has Spark's hidden ``_metadata`` column (file path, row index),
    which a projection would hide; :func:`read_native` selects the columns at once.

    Raises:
        MissingDataFileError: A file the log names is gone (Spark checks every path).
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType as SparkStructType

    physical = physical_schema(schema)
    partitions = set(partition_columns)
    read_fields, selected = [], []
    for name in columns:
        logical = schema.field(name)
        mapped = physical.fields[schema.names.index(name)]
        field_json = _plain(_field_json(mapped))
        if name in partitions:
            field_json = {**field_json, "type": logical.type.to_json()}
        read_fields.append(field_json)
        column = F.col(_quote(mapped.name))
        if name not in partitions and mapped.type != logical.type:
            column = column.cast(_spark_type(_nullable(_plain(logical.type.to_json()))))
        selected.append(column.alias(name))
    read_schema = SparkStructType.fromJson({"type": "struct", "fields": read_fields})
    try:
        with _listed_on_the_driver(spark, len(split.native)):
            reader = spark.read.schema(read_schema).option("basePath", split.root)
            frame = _parquet(spark, reader, split.native)
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" in str(exc) or "Path does not exist" in str(exc):
            raise MissingDataFileError(
                f"a data file the log names does not exist: {exc}", path=split.root
            ) from exc
        raise
    return frame, selected


def _parquet(spark: SparkSession, reader: Any, paths: Sequence[str]) -> DataFrame:
    """``reader.parquet(*paths)``, the paths handed to a classic session's JVM in one call.

    PySpark hands a list to the JVM element by element (a py4j round trip per path: 200 for
    200 files, a sizeable part of building the DataFrame); here the paths travel as one
    string, split in the JVM (a local path holds no NUL). Over Spark Connect the paths travel
    in the plan anyway.
    """
    if is_connect(spark):
        return reader.parquet(*paths)  # type: ignore[no-any-return]
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    joined = "\0".join(paths)
    split = jvm.java.util.regex.Pattern.compile("\0").split(joined, -1)  # a String[]
    jdf = reader._jreader.parquet(split)
    return reader._df(jdf)  # type: ignore[no-any-return]


@contextmanager
def _listed_on_the_driver(spark: SparkSession, paths: int) -> Iterator[None]:
    """List ``paths`` known files on the driver, not in a Spark job of their own.

    Spark lists more than ``parallelPartitionDiscovery.threshold`` (32) paths with a job, which
    took seconds for 200 local files whose sizes the log already gave; a classic session
    resolves the relation at once, so the threshold is raised for that moment only. (A Spark
    Connect server resolves it later, with its own setting.)
    """
    if is_connect(spark):
        yield
        return
    before = spark.conf.get(_LISTING_THRESHOLD, None)
    spark.conf.set(_LISTING_THRESHOLD, str(paths + 1))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(_LISTING_THRESHOLD)
        else:
            spark.conf.set(_LISTING_THRESHOLD, before)


def _spark_type(type_json: Any) -> Any:
    """The Spark data type of a Delta type JSON value (the same JSON)."""
    from pyspark.sql.types import StructType as SparkStructType

    wrapper = {"name": "v", "type": type_json, "nullable": True, "metadata": {}}
    return SparkStructType.fromJson({"type": "struct", "fields": [wrapper]}).fields[0].dataType


def _field_json(field: Any) -> dict[str, Any]:
    document = orjson.loads(StructType((field,)).to_json_string())
    out: dict[str, Any] = document["fields"][0]
    return out


def _plain(value: Any) -> Any:
    """A schema JSON value with every field's metadata dropped, at every level."""
    if isinstance(value, dict):
        out = {k: _plain(v) for k, v in value.items()}
        if "name" in out and "metadata" in out:
            out["metadata"] = {}
        return out
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _nullable(value: Any) -> Any:
    """A type JSON value with every field, element and map value nullable, as files read."""
    if isinstance(value, dict):
        out = {k: _nullable(v) for k, v in value.items()}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in out:
                out[key] = True
        return out
    if isinstance(value, list):
        return [_nullable(v) for v in value]
    return value


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
