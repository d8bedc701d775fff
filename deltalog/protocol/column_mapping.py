"""Column mapping (``delta.columnMapping.mode`` = ``name`` or ``id``): logical and physical names.

With column mapping every struct field, top-level or nested, carries a physical name
(``delta.columnMapping.physicalName``) and a 32-bit id (``delta.columnMapping.id``) in its
metadata. Data files hold the physical names (and, in ``id`` mode, the ids as Parquet
``field_id``); ``partitionValues``, statistics and clustering columns in the log are keyed by
physical names. The schema's ``name`` is only the display name, so renaming or dropping a column
changes the metadata and never the files.

This module is the one place that knows the mapping:

* :func:`mapping_mode`, :func:`physical_name`, :func:`field_id` read it;
* :func:`logical_to_physical`, :func:`physical_to_logical` map top-level names both ways;
* :func:`physical_schema` renames a schema's fields (at every level) to their physical names,
  which is the schema data files are written and checked with;
* :func:`arrow_with_field_ids` stamps the ids on an Arrow schema (``PARQUET:field_id``) so
  pyarrow writes them into the Parquet footer;
* :func:`assign_column_mapping` gives new fields ids and physical names and returns the new
  ``delta.columnMapping.maxColumnId``, for every path that adds columns (table creation,
  metadata changes, schema evolution).

Nothing here imports Spark: the executors of a Spark write use it too.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa

from deltalog.errors import ColumnMappingError, InvalidPropertyError
from deltalog.protocol.schema import ArrayType, DataType, MapType, StructField, StructType

MODE = "delta.columnMapping.mode"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"
#: The Arrow field metadata key pyarrow writes as the Parquet ``field_id``.
PARQUET_FIELD_ID = b"PARQUET:field_id"
MODES = ("none", "name", "id")

__all__ = [
    "COLUMN_ID",
    "MAX_COLUMN_ID",
    "MODE",
    "PHYSICAL_NAME",
    "arrow_field_ids",
    "arrow_with_field_ids",
    "assign_column_mapping",
    "check_mapped_file",
    "field_id",
    "is_mapped",
    "logical_to_physical",
    "map_new_columns",
    "mapping_mode",
    "max_column_id",
    "physical_name",
    "physical_schema",
    "physical_to_logical",
    "to_physical_batch",
]


def mapping_mode(configuration: Mapping[str, str | None]) -> str:
    """The table's column mapping mode: ``none``, ``name`` or ``id``.

    Raises:
        InvalidPropertyError: ``delta.columnMapping.mode`` has another value.
    """
    value = (configuration.get(MODE) or "none").lower()
    if value not in MODES:
        raise InvalidPropertyError(f"{MODE}={configuration.get(MODE)!r} is not one of {MODES}")
    return value


def is_mapped(configuration: Mapping[str, str | None]) -> bool:
    """Whether the table maps columns (mode ``name`` or ``id``)."""
    return mapping_mode(configuration) != "none"


def physical_name(field: StructField) -> str:
    """The name of ``field`` in data files and in the log (its own name when unmapped)."""
    return str(field.metadata.get(PHYSICAL_NAME, field.name))


def field_id(field: StructField) -> int | None:
    """The column mapping id of ``field``, if it has one."""
    value = field.metadata.get(COLUMN_ID)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def logical_to_physical(schema: StructType) -> dict[str, str]:
    """Top-level logical name → physical name."""
    return {f.name: physical_name(f) for f in schema.fields}


def physical_to_logical(schema: StructType) -> dict[str, str]:
    """Top-level physical name → logical name."""
    return {physical_name(f): f.name for f in schema.fields}


def physical_schema(schema: StructType) -> StructType:
    """``schema`` with every struct field renamed to its physical name (metadata kept)."""
    return StructType(
        tuple(replace(f, name=physical_name(f), type=_physical_type(f.type)) for f in schema)
    )


def _physical_type(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return physical_schema(t)
    if isinstance(t, ArrayType):
        return replace(t, element_type=_physical_type(t.element_type))
    if isinstance(t, MapType):
        return replace(
            t, key_type=_physical_type(t.key_type), value_type=_physical_type(t.value_type)
        )
    return t


def max_column_id(schema: StructType, configuration: Mapping[str, str | None]) -> int:
    """The highest column id in use: ``delta.columnMapping.maxColumnId`` or any field's id."""
    text = configuration.get(MAX_COLUMN_ID)
    recorded = int(text) if text and text.strip().lstrip("-").isdigit() else 0
    return max([recorded, *(_ids(schema))])


def _ids(t: DataType) -> list[int]:
    out: list[int] = []
    if isinstance(t, StructType):
        for f in t.fields:
            one = field_id(f)
            if one is not None:
                out.append(one)
            out += _ids(f.type)
    elif isinstance(t, ArrayType):
        out += _ids(t.element_type)
    elif isinstance(t, MapType):
        out += _ids(t.key_type) + _ids(t.value_type)
    return out


def assign_column_mapping(
    schema: StructType,
    configuration: Mapping[str, str | None],
    *,
    keep_names: bool = False,
) -> tuple[StructType, int]:
    """Give every field that lacks them a column id and a physical name.

    Fields that already have both keep them (a renamed column keeps its physical name, so
    existing files still hold it). A new field gets the next id above the table's
    ``delta.columnMapping.maxColumnId`` (and above every id in ``schema``) and the physical
    name ``col-<uuid>``, which is unique across every version of the table.

    Args:
        schema: The new schema (top-level and nested fields).
        configuration: The table properties (for ``delta.columnMapping.maxColumnId``).
        keep_names: Use each new field's current name as its physical name, as when column
            mapping is turned on for a table whose files already hold those names.

    Returns:
        The schema with ids and physical names on every field, and the new
        ``delta.columnMapping.maxColumnId`` (to record in the table properties).
    """
    counter = [max_column_id(schema, configuration)]

    def field(f: StructField) -> StructField:
        metadata: dict[str, Any] = dict(f.metadata)
        if field_id(f) is None:
            counter[0] += 1
            metadata[COLUMN_ID] = counter[0]
        if PHYSICAL_NAME not in metadata:
            metadata[PHYSICAL_NAME] = f.name if keep_names else f"col-{uuid.uuid4()}"
        return replace(f, type=kind(f.type), metadata=metadata)

    def kind(t: DataType) -> DataType:
        if isinstance(t, StructType):
            return StructType(tuple(field(f) for f in t.fields))
        if isinstance(t, ArrayType):
            return replace(t, element_type=kind(t.element_type))
        if isinstance(t, MapType):
            return replace(t, key_type=kind(t.key_type), value_type=kind(t.value_type))
        return t

    assigned = kind(schema)
    assert isinstance(assigned, StructType)
    return assigned, counter[0]


def map_new_columns(
    schema: StructType,
    configuration: Mapping[str, str],
    *,
    previous: Mapping[str, str | None] | None = None,
) -> tuple[StructType, dict[str, str]]:
    """Schema and properties of new metadata, with column mapping applied where it is on.

    When ``configuration`` turns column mapping on, every field without an id and physical
    name gets them (:func:`assign_column_mapping`) and ``delta.columnMapping.maxColumnId`` is
    set to the highest id, never below what ``previous`` recorded. When mapping is turned on
    for a table that had it off (``previous`` given, mode ``none``), existing fields keep their
    names as physical names, since the files hold them. Without column mapping both are
    returned unchanged.

    Args:
        schema: The new schema.
        configuration: The new table properties.
        previous: The properties in force before, for an existing table.

    Raises:
        InvalidPropertyError: ``delta.columnMapping.mode`` has an invalid value.
    """
    config = dict(configuration)
    if not is_mapped(config):
        return schema, config
    enabling = previous is not None and not is_mapped(previous)
    known = dict(config)
    if previous is not None and previous.get(MAX_COLUMN_ID):
        known[MAX_COLUMN_ID] = str(
            max(max_column_id(StructType(), previous), max_column_id(StructType(), config))
        )
    mapped, highest = assign_column_mapping(schema, known, keep_names=enabling)
    config[MAX_COLUMN_ID] = str(highest)
    return mapped, config


def arrow_with_field_ids(arrow: pa.Schema, physical: StructType) -> pa.Schema:
    """``arrow`` (physical names) with each struct field's id as ``PARQUET:field_id``.

    Fields are matched by name at every struct level; fields without an id are left as they
    are. pyarrow writes the metadata key into the Parquet schema's ``field_id``, which is how
    ``id``-mode readers (delta-spark, delta-rs) find the columns.
    """
    by_name = {f.name: f for f in physical.fields}
    return pa.schema([_stamp(f, by_name.get(f.name)) for f in arrow], metadata=arrow.metadata)


def _stamp(arrow_field: pa.Field, delta_field: StructField | None) -> pa.Field:
    if delta_field is None:
        return arrow_field
    new_type = _stamp_type(arrow_field.type, delta_field.type)
    out = arrow_field.with_type(new_type)
    one = field_id(delta_field)
    if one is not None:
        meta = dict(arrow_field.metadata or {})
        meta[PARQUET_FIELD_ID] = str(one).encode()
        out = out.with_metadata(meta)
    return out


def _stamp_type(t: pa.DataType, delta_type: DataType) -> pa.DataType:
    if pa.types.is_struct(t) and isinstance(delta_type, StructType):
        by_name = {f.name: f for f in delta_type.fields}
        return pa.struct(
            [_stamp(t.field(i), by_name.get(t.field(i).name)) for i in range(t.num_fields)]
        )
    if pa.types.is_list(t) and isinstance(delta_type, ArrayType):
        return pa.list_(t.value_field.with_type(_stamp_type(t.value_type, delta_type.element_type)))
    if pa.types.is_map(t) and isinstance(delta_type, MapType):
        return pa.map_(
            t.key_field.with_type(_stamp_type(t.key_type, delta_type.key_type)),
            t.item_field.with_type(_stamp_type(t.item_type, delta_type.value_type)),
        )
    return t


def arrow_field_ids(arrow: pa.Schema) -> dict[tuple[str, ...], int | None]:
    """The Parquet field id of every struct field of ``arrow``, by name path."""
    out: dict[tuple[str, ...], int | None] = {}

    def walk(f: pa.Field, path: tuple[str, ...]) -> None:
        raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
        out[path] = int(raw) if raw is not None and raw.strip().lstrip(b"-").isdigit() else None
        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                walk(f.type.field(i), (*path, f.type.field(i).name))

    for f in arrow:
        walk(f, (f.name,))
    return out


def check_mapped_file(file_schema: pa.Schema, table: StructType, mode: str, location: str) -> None:
    """Refuse a data file that a column-mapped table's readers would not find columns in.

    The file's columns must carry the physical names (at every struct level); in ``id`` mode
    each of them must also carry its column id as Parquet ``field_id``. A file written with the
    logical (display) names is refused rather than rewritten: its rows would read as nulls.

    Raises:
        ColumnMappingError: Naming the first offending column.
    """
    physical = physical_schema(table)
    logical = {f.name for f in table.fields}
    known = {f.name for f in physical.fields}
    for f in file_schema:
        if f.name not in known and f.name in logical:
            raise ColumnMappingError(
                f"{location}: column {f.name!r} is a logical name, but the table maps columns "
                f"({MODE}={mode}) and its files must use physical names "
                f"({f.name!r} is {logical_to_physical(table)[f.name]!r}); write the file with "
                "the physical names (deltalog.spark.write does) or rewrite it",
                path=location,
            )
    if mode != "id":
        return
    found = arrow_field_ids(file_schema)
    for path, expected in _expected_ids(physical, ()).items():
        if path in found and found[path] != expected:
            raise ColumnMappingError(
                f"{location}: column {'.'.join(path)!r} has Parquet field_id {found[path]}, "
                f"the table ({MODE}=id) gives it id {expected}; id-mode readers would not find "
                "it",
                path=location,
            )


def _expected_ids(struct: StructType, prefix: tuple[str, ...]) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for f in struct.fields:
        path = (*prefix, f.name)
        one = field_id(f)
        if one is not None:
            out[path] = one
        if isinstance(f.type, StructType):
            out.update(_expected_ids(f.type, path))
    return out


def to_physical_batch(
    batch: pa.RecordBatch, schema: StructType, *, field_ids: bool
) -> pa.RecordBatch:
    """``batch`` (logical column names) renamed to physical names at every struct level.

    Columns ``schema`` does not name pass through unchanged. With ``field_ids`` the column ids
    are stamped as ``PARQUET:field_id`` too (``id`` mode).
    """
    by_name = {f.name: f for f in schema.fields}
    fields: list[pa.Field] = []
    arrays: list[pa.Array] = []
    for f, array in zip(batch.schema, batch.columns, strict=True):
        delta_field = by_name.get(f.name)
        if delta_field is not None:
            array = _physical_array(array, delta_field.type)
            f = pa.field(physical_name(delta_field), array.type, f.nullable, f.metadata)
        fields.append(f)
        arrays.append(array)
    out = pa.schema(fields, metadata=batch.schema.metadata)
    if field_ids:
        out = arrow_with_field_ids(out, physical_schema(schema))
        arrays = [
            a.cast(t.type) if a.type != t.type else a for a, t in zip(arrays, out, strict=True)
        ]
    return pa.RecordBatch.from_arrays(arrays, schema=out)


def _physical_array(array: pa.Array, t: DataType) -> pa.Array:
    """``array`` with nested struct field names replaced by their physical names."""
    if isinstance(t, StructType) and pa.types.is_struct(array.type):
        by_name = {f.name: f for f in t.fields}
        children, names = [], []
        for i in range(array.type.num_fields):
            child = array.type.field(i)
            delta_field = by_name.get(child.name)
            values = array.field(i)
            if delta_field is not None:
                values = _physical_array(values, delta_field.type)
                names.append(physical_name(delta_field))
            else:
                names.append(child.name)
            children.append(values)
        fields = [
            pa.field(n, c.type, array.type.field(i).nullable)
            for i, (n, c) in enumerate(zip(names, children, strict=True))
        ]
        return pa.StructArray.from_arrays(
            children, fields=fields, mask=array.is_null() if array.null_count else None
        )
    if (pa.types.is_list(array.type) or pa.types.is_map(array.type)) and array.offset:
        array = pa.concat_arrays([array])  # a copy starting at offset 0 (a slice's nulls)
    if isinstance(t, ArrayType) and pa.types.is_list(array.type):
        values = _physical_array(array.values, t.element_type)
        if values is array.values:
            return array
        return pa.ListArray.from_arrays(
            array.offsets, values, mask=array.is_null() if array.null_count else None
        )
    if isinstance(t, MapType) and pa.types.is_map(array.type):
        keys = _physical_array(array.keys, t.key_type)
        items = _physical_array(array.items, t.value_type)
        if keys is array.keys and items is array.items:
            return array
        return pa.MapArray.from_arrays(
            array.offsets, keys, items, mask=array.is_null() if array.null_count else None
        )
    return array
