"""Schema evolution: merging the schema of new data into a table's, as delta-spark does.

The rules are delta-spark's ``mergeSchema`` (``SchemaMergingUtils.mergeSchemas`` as used by a
write with ``mergeSchema=true``):

* Columns match by name, ignoring case; a column keeps the table's spelling, nullability and
  field metadata. Columns the data lacks stay as they are.
* Columns new to the table are appended after the existing ones (inside structs too, at any
  depth, also within arrays and maps) and are made nullable, with their nested fields.
* Types do not change, except that a table with type widening enabled
  (``delta.enableTypeWidening=true`` and the ``typeWidening`` feature) takes the widenings
  delta-spark applies automatically during schema evolution: ``byte`` → ``short`` →
  ``integer`` → ``long``, ``float`` → ``double``, ``date`` → ``timestamp_ntz`` and a decimal
  to a wider decimal. Each widening is recorded in the field's ``delta.typeChanges`` metadata,
  as delta-spark records it. Partition columns never change type.
* A ``void`` (all-null) column takes the other side's type.

Anything else raises :class:`~deltalog.errors.SchemaEvolutionError` naming the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deltalog.errors import SchemaEvolutionError
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)

#: Field metadata key of the recorded type changes (delta-spark's TypeWideningMetadata).
TYPE_CHANGES_KEY = "delta.typeChanges"
_INTEGRAL = ("byte", "short", "integer", "long")
_VOID = PrimitiveType("void")
#: One recorded change: path inside arrays/maps (``element``, ``key``, ``value``), from, to.
_Change = tuple[tuple[str, ...], DataType, DataType]


def type_widening_enabled(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether the table widens types during schema evolution (property and feature both)."""
    enabled = str(metadata.configuration.get("delta.enableTypeWidening", "")).lower() == "true"
    features = set(protocol.writer_features or ())
    return enabled and bool(features & {"typeWidening", "typeWidening-preview"})


def widens(current: DataType, update: DataType) -> bool:
    """Whether ``current`` → ``update`` is a widening schema evolution applies by itself."""
    if isinstance(current, PrimitiveType) and isinstance(update, PrimitiveType):
        a, b = current.name, update.name
        if a in _INTEGRAL and b in _INTEGRAL:
            return _INTEGRAL.index(a) < _INTEGRAL.index(b)
        return (a, b) in {("float", "double"), ("date", "timestamp_ntz")}
    if isinstance(current, DecimalType) and isinstance(update, DecimalType):
        return current != update and (
            update.scale >= current.scale
            and update.precision - update.scale >= current.precision - current.scale
        )
    return False


def merge_schemas(
    table: StructType,
    data: StructType,
    *,
    partition_columns: Sequence[str] = (),
    type_widening: bool = False,
) -> StructType:
    """The table schema with ``data``'s new columns (and allowed widenings) merged in.

    Args:
        table: The table's schema.
        data: The schema of the data being written.
        partition_columns: The table's partition columns (their types never change).
        type_widening: Whether the table has type widening enabled
            (:func:`type_widening_enabled`).

    Returns:
        The merged schema; equal to ``table`` when the data brings nothing new.

    Raises:
        SchemaEvolutionError: A type change that is not an allowed widening, a changed partition
            column, or data column names that clash when case is ignored.
    """
    _check_no_duplicates(data, "")
    partitions = {c.lower() for c in partition_columns}
    return _merge_struct(table, data, "", type_widening, partitions)


def fits(table_type: DataType, data_type: DataType) -> bool:
    """Whether data of ``data_type`` can be written to a column of ``table_type`` as it is.

    Struct fields match by exact name (a data file keeps the data's spelling) and may be
    missing or in another order; every field the data has must be in the table with the same
    type. Nullability and field metadata do not matter.
    """
    if isinstance(table_type, StructType) and isinstance(data_type, StructType):
        by_name = {f.name: f for f in table_type.fields}
        return all(f.name in by_name and fits(by_name[f.name].type, f.type) for f in data_type)
    if isinstance(table_type, ArrayType) and isinstance(data_type, ArrayType):
        return fits(table_type.element_type, data_type.element_type)
    if isinstance(table_type, MapType) and isinstance(data_type, MapType):
        return fits(table_type.key_type, data_type.key_type) and fits(
            table_type.value_type, data_type.value_type
        )
    return table_type == data_type


def keeps_data_readable(old: StructType, new: StructType, *, type_widening: bool) -> bool:
    """Whether files written under ``old`` read correctly under ``new`` (no rewrite needed).

    Every column of ``old`` must still be in ``new`` (same name) with the same type, the type
    with nested fields added, or (``type_widening``) a widened type.
    """
    return _readable(old, new, type_widening)


def _readable(old: DataType, new: DataType, widening: bool) -> bool:
    if isinstance(old, StructType) and isinstance(new, StructType):
        by_name = {f.name: f for f in new.fields}
        return all(
            f.name in by_name and _readable(f.type, by_name[f.name].type, widening)
            for f in old.fields
        )
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return _readable(old.element_type, new.element_type, widening)
    if isinstance(old, MapType) and isinstance(new, MapType):
        return _readable(old.key_type, new.key_type, widening) and _readable(
            old.value_type, new.value_type, widening
        )
    return old == new or (widening and widens(old, new))


def _check_no_duplicates(struct: StructType, path: str) -> None:
    seen: dict[str, str] = {}
    for f in struct.fields:
        key = f.name.lower()
        if key in seen:
            raise SchemaEvolutionError(
                f"the data has columns {path}{seen[key]!r} and {path}{f.name!r}, which are the "
                "same name when case is ignored (Delta column names are case-insensitive)",
                column=f"{path}{f.name}",
            )
        seen[key] = f.name
        inner = _struct_inside(f.type)
        if inner is not None:
            _check_no_duplicates(inner, f"{path}{f.name}.")


def _struct_inside(t: DataType) -> StructType | None:
    while isinstance(t, ArrayType | MapType):
        t = t.element_type if isinstance(t, ArrayType) else t.value_type
    return t if isinstance(t, StructType) else None


def _merge_struct(
    current: StructType,
    update: StructType,
    path: str,
    widening: bool,
    partitions: set[str],
) -> StructType:
    updates = {f.name.lower(): f for f in update.fields}
    fields: list[StructField] = []
    for field in current.fields:
        other = updates.get(field.name.lower())
        if other is None:
            fields.append(field)
            continue
        name = f"{path}{field.name}"
        if (
            not path
            and field.name.lower() in partitions
            and _strip(field.type) != _strip(other.type)
        ):
            raise SchemaEvolutionError(
                f"partition column {name!r} is {_text(field.type)} in the table but "
                f"{_text(other.type)} in the data; partition columns cannot change",
                column=name,
            )
        merged, changes = _merge(field.type, other.type, name, widening)
        fields.append(_with_changes(StructField(field.name, merged, field.nullable,
                                                dict(field.metadata)), changes))  # fmt: skip
    known = {f.name.lower() for f in current.fields}
    for other in update.fields:
        if other.name.lower() not in known:
            fields.append(_new_field(other))
    return StructType(tuple(fields))


def _merge(
    current: DataType, update: DataType, path: str, widening: bool
) -> tuple[DataType, list[_Change]]:
    """Merge two types; the changes to record on the enclosing struct field."""
    if isinstance(current, StructType) and isinstance(update, StructType):
        return _merge_struct(current, update, path + ".", widening, set()), []
    if isinstance(current, ArrayType) and isinstance(update, ArrayType):
        element, changes = _merge(
            current.element_type, update.element_type, path + ".element", widening
        )
        return ArrayType(element, current.contains_null), _under("element", changes)
    if isinstance(current, MapType) and isinstance(update, MapType):
        key, key_changes = _merge(current.key_type, update.key_type, path + ".key", widening)
        value, value_changes = _merge(
            current.value_type, update.value_type, path + ".value", widening
        )
        return MapType(key, value, current.value_contains_null), [
            *_under("key", key_changes),
            *_under("value", value_changes),
        ]
    if current == update:
        return current, []
    if current == _VOID:
        return _nullable(update), []
    if update == _VOID:
        return current, []
    if widening and widens(current, update):
        return update, [((), current, update)]
    hint = (
        " (not a widening this table may apply)"
        if widening
        else (
            "; enable type widening on the table (delta.enableTypeWidening=true) to widen it"
            if widens(current, update)
            else ""
        )
    )
    raise SchemaEvolutionError(
        f"column {path!r} is {_text(current)} in the table but {_text(update)} in the data: "
        f"mergeSchema does not change column types{hint}",
        column=path,
    )


def _under(step: str, changes: list[_Change]) -> list[_Change]:
    return [((step, *where), old, new) for where, old, new in changes]


def _with_changes(field: StructField, changes: list[_Change]) -> StructField:
    """``field`` with the type changes appended to its ``delta.typeChanges`` metadata."""
    if not changes:
        return field
    recorded: list[Any] = list(field.metadata.get(TYPE_CHANGES_KEY) or [])
    for where, old, new in changes:
        entry: dict[str, Any] = {"fromType": _type_name(old), "toType": _type_name(new)}
        if where:
            entry["fieldPath"] = ".".join(where)
        recorded.append(entry)
    metadata = dict(field.metadata)
    metadata[TYPE_CHANGES_KEY] = recorded
    return StructField(field.name, field.type, field.nullable, metadata)


def _type_name(t: DataType) -> str:
    text = t.to_json()
    return text if isinstance(text, str) else str(text)


def _new_field(field: StructField) -> StructField:
    return StructField(field.name, _nullable(field.type), True, dict(field.metadata))


def _nullable(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType(tuple(_new_field(f) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_nullable(t.element_type), True)
    if isinstance(t, MapType):
        return MapType(_nullable(t.key_type), _nullable(t.value_type), True)
    return t


def _strip(t: DataType) -> DataType:
    """``t`` without nullability or field metadata (what must agree between two schemas)."""
    if isinstance(t, StructType):
        return StructType(tuple(StructField(f.name.lower(), _strip(f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_strip(t.element_type))
    if isinstance(t, MapType):
        return MapType(_strip(t.key_type), _strip(t.value_type))
    return t


def _text(t: DataType) -> str:
    text = t.to_json()
    return text if isinstance(text, str) else "a " + str(text.get("type", "complex")) + " type"
