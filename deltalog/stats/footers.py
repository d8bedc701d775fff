"""``add`` actions for existing Parquet files: schema check, partition values, footer stats.

Only the Parquet footer is read. Statistics follow the protocol's per-file statistics:
``numRecords``, and ``minValues``/``maxValues``/``nullCount`` nested like the schema, for the
first ``delta.dataSkippingNumIndexedCols`` (default 32) leaf columns outside lists and maps.
Strings are cut to a 32-character prefix (a column whose maximum would be cut gets no bounds,
since a prefix is not an upper bound), timestamps are truncated to milliseconds, and a column
whose bounds JSON cannot hold exactly (NaN, infinities, decimals a double would round) gets no
bounds. A column has both ``minValues`` and ``maxValues`` or neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.errors import SchemaMismatchError
from deltalog.logstores.errors import is_store_failure
from deltalog.protocol import config
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import (
    check_mapped_file,
    logical_to_physical,
    mapping_mode,
    physical_schema,
)
from deltalog.protocol.config import DEFAULT_INDEXED_COLS
from deltalog.protocol.parquet_types import check_file_types
from deltalog.protocol.partitions import check_partition_values, parse_hive_path
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructType,
    type_from_arrow,
)
from deltalog.stats.stats_json import STRING_PREFIX, bounds, set_path, stats_json, string_prefix


@dataclass(frozen=True, slots=True)
class FooterInfo:
    """What the footer of a data file says."""

    schema: pa.Schema
    metadata: pq.FileMetaData


def read_footer(fh: Any, location: str) -> FooterInfo:
    """Read a Parquet footer from an open file.

    A failure of the storage while reading (a dropped connection, a local I/O error) is
    re-raised as it is, for the caller's :func:`~deltalog.log.storage.storage_errors` to report:
    it says nothing about the file's bytes.

    Raises:
        SchemaMismatchError: The file is not Parquet.
        LogStoreError, OSError: The storage failed.
    """
    try:
        pf = pq.ParquetFile(fh)
        return FooterInfo(pf.schema_arrow, pf.metadata)
    except (pa.ArrowException, OSError, ValueError) as exc:
        if is_store_failure(exc):
            raise
        raise SchemaMismatchError(
            f"{location} is not a readable Parquet file: {exc}", path=location
        ) from exc


def compatible(file_type: DataType, table_type: DataType, arrow_type: pa.DataType) -> bool:
    """Whether a file column of ``file_type`` (``arrow_type`` in the file) fits ``table_type``."""
    if isinstance(table_type, StructType):
        if not isinstance(file_type, StructType):
            return False
        by_name = {f.name: f for f in table_type.fields}
        return all(
            f.name in by_name
            and compatible(f.type, by_name[f.name].type, arrow_type.field(f.name).type)
            for f in file_type.fields
        )
    if isinstance(table_type, ArrayType):
        return isinstance(file_type, ArrayType) and compatible(
            file_type.element_type, table_type.element_type, arrow_type.value_type
        )
    if isinstance(table_type, MapType):
        return (
            isinstance(file_type, MapType)
            and compatible(file_type.key_type, table_type.key_type, arrow_type.key_type)
            and compatible(file_type.value_type, table_type.value_type, arrow_type.item_type)
        )
    if table_type == PrimitiveType("timestamp") and file_type == PrimitiveType("timestamp_ntz"):
        # INT96 timestamps (Spark's default) carry no time zone flag but are UTC instants.
        return bool(pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns")
    return file_type == table_type


def check_file_schema(
    file_schema: pa.Schema, table: StructType, partition_columns: list[str], location: str
) -> None:
    """Refuse a data file whose columns do not fit the table.

    Every column of the file must exist in the table (partition columns excluded) with the same
    type; table columns missing from the file must be nullable.

    Raises:
        SchemaMismatchError: Naming the file and the first offending column.
    """
    by_name = {f.name: f for f in table.fields}
    present = set()
    for arrow_field in file_schema:
        name = arrow_field.name
        if name in partition_columns:
            raise SchemaMismatchError(
                f"{location}: column {name!r} is a partition column and must not be in the file",
                path=location,
            )
        if name not in by_name:
            raise SchemaMismatchError(
                f"{location}: column {name!r} is not in the table schema", path=location
            )
        try:
            file_type = type_from_arrow(arrow_field.type)
        except Exception as exc:
            raise SchemaMismatchError(f"{location}: column {name!r}: {exc}", path=location) from exc
        if not compatible(file_type, by_name[name].type, arrow_field.type):
            raise SchemaMismatchError(
                f"{location}: column {name!r} has type {file_type.to_json()} in the file but "
                f"{by_name[name].type.to_json()} in the table",
                path=location,
            )
        present.add(name)
    for f in table.fields:
        if f.name not in present and f.name not in partition_columns and not f.nullable:
            raise SchemaMismatchError(
                f"{location}: non-nullable column {f.name!r} is missing from the file",
                path=location,
            )


def _leaves(t: pa.DataType, path: tuple[str, ...], repeated: bool, out: list[Any]) -> None:
    """Parquet leaf columns in order: (path, arrow type, inside a list or map)."""
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            f = t.field(i)
            _leaves(f.type, (*path, f.name), repeated, out)
    elif pa.types.is_map(t):
        _leaves(t.key_type, (*path, "key"), True, out)
        _leaves(t.item_type, (*path, "value"), True, out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _leaves(t.value_type, (*path, "element"), True, out)
    else:
        out.append((path, t, repeated))


def compute_stats(
    footer: FooterInfo,
    num_indexed_cols: int = DEFAULT_INDEXED_COLS,
    prefix: int = STRING_PREFIX,
) -> str:
    """The ``stats`` JSON string for a data file, from its footer only."""
    meta = footer.metadata
    stats: dict[str, Any] = {"numRecords": meta.num_rows}
    leaves: list[Any] = []
    for f in footer.schema:
        _leaves(f.type, (f.name,), False, leaves)
    if len(leaves) != meta.num_columns:
        return orjson.dumps(stats).decode()
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    indexed = leaves if num_indexed_cols < 0 else leaves[:num_indexed_cols]
    for j, (path, arrow_type, repeated) in enumerate(indexed):
        if repeated:
            continue
        chunks = [meta.row_group(i).column(j).statistics for i in range(meta.num_row_groups)]
        if meta.num_row_groups == 0:
            set_path(nulls, path, 0)
            continue
        if all(s is not None and s.has_null_count for s in chunks):
            set_path(nulls, path, sum(s.null_count for s in chunks))
        with_values = [s for s in chunks if s is not None and s.has_min_max]
        all_null = all(
            s is not None and s.has_null_count and s.null_count == s.num_values
            for s in chunks
            if s not in with_values
        )
        if not with_values or not all_null:
            continue
        pair = bounds(
            min(s.min for s in with_values), max(s.max for s in with_values), arrow_type, prefix
        )
        if pair is not None:
            set_path(mins, path, pair[0])
            set_path(maxs, path, pair[1])
    return stats_json(meta.num_rows, mins, maxs, nulls)


def check_nullability(stats: str, table: StructType, location: str) -> None:
    """Refuse a file whose statistics show nulls in a top-level non-nullable column.

    Raises:
        SchemaMismatchError: A non-nullable column holds nulls.
    """
    counts = orjson.loads(stats).get("nullCount", {})
    for f in table.fields:
        n = counts.get(f.name)
        if not f.nullable and isinstance(n, int) and n > 0:
            raise SchemaMismatchError(
                f"{location}: non-nullable column {f.name!r} holds {n} nulls", path=location
            )


def build_add(
    *,
    action_path: str,
    relative_for_partitions: str,
    size: int,
    modification_time: int,
    footer: FooterInfo,
    table: StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str | None],
    location: str,
    data_change: bool = True,
) -> AddFile:
    """Validate one data file against the table and describe it as an ``add`` action.

    On a column-mapped table the file must hold the physical column names (and, in ``id``
    mode, the column ids as Parquet field ids); partition directories may use either the
    logical or the physical names. Partition values and statistics are logged by physical name.

    Raises:
        UnsupportedParquetTypeError: A column has a type some Delta reader cannot read.
        ColumnMappingError: The file uses logical names or lacks the ids of a mapped table.
        SchemaMismatchError: The file's schema does not fit the table.
        PartitionValueError: The Hive-style directories do not give valid partition values.
    """
    check_file_types(footer.metadata, footer.schema, location)
    raw_values = parse_hive_path(relative_for_partitions)
    mode = mapping_mode(configuration)
    if mode != "none":  # files, partition values and stats use physical names
        check_mapped_file(footer.schema, table, mode, location)
        to_physical = logical_to_physical(table)
        raw_values = {to_physical.get(k, k): v for k, v in raw_values.items()}
        partition_columns = [to_physical[c] for c in partition_columns]
        table = physical_schema(table)
    data_schema = StructType(tuple(f for f in table.fields if f.name not in partition_columns))
    check_file_schema(footer.schema, table, partition_columns, location)
    values = check_partition_values(
        {k: v for k, v in raw_values.items() if k in partition_columns}, table, partition_columns
    )
    stats = compute_stats(
        footer, config.num_indexed_cols(configuration), string_prefix(configuration)
    )
    check_nullability(stats, data_schema, location)
    return AddFile(
        path=action_path,
        partition_values=values,
        size=size,
        modification_time=modification_time,
        data_change=data_change,
        stats=stats,
    )
