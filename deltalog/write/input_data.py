"""What callers hand a writer, as Arrow record batches fitted to the table's columns.

:func:`as_reader` accepts pyarrow ``Table``, ``RecordBatch``, ``RecordBatchReader`` and
``Dataset``, a list of record batches, pandas ``DataFrame`` (without its index), and any object
with ``__arrow_c_stream__`` or ``__arrow_c_array__`` (polars, DuckDB relations, nanoarrow, ...):
a stream is read batch by batch, never whole.

:class:`Conformer` fits each batch to the table: columns matched by name (exactly, else ignoring
case), put in table order, absent nullable columns filled with nulls, and values cast to the
table's types where no value changes: nanosecond timestamps (pandas' default) become
microseconds when they have no sub-microsecond digits, naive timestamps written to a
``timestamp`` column are taken as UTC, integers and floats widen (or narrow, when every value
fits), unsigned integers fit a signed column wide enough. Anything else is refused before a row
is written: :class:`~deltalog.errors.SchemaMismatchError` for a column the table lacks or a
type that does not fit, :class:`~deltalog.errors.LossyConversionError` when a value would
change, :class:`~deltalog.errors.UnsupportedParquetTypeError` for a type Delta has none for
(:func:`schema_of_data`, for a new table's schema).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from deltalog.errors import (
    InvalidInputError,
    InvalidSchemaError,
    LossyConversionError,
    SchemaMismatchError,
)
from deltalog.protocol.parquet_types import check_data_types
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    type_from_arrow,
)

__all__ = ["Conformer", "as_reader", "schema_of_data", "within_table"]


def as_reader(data: Any) -> pa.RecordBatchReader:
    """``data`` as a stream of record batches (see the module docstring for what is accepted).

    Raises:
        InvalidInputError: ``data`` is none of the accepted kinds, or pandas cannot convert it.
    """
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        try:
            table = pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidInputError(f"cannot convert the pandas DataFrame to Arrow: {exc}") from exc
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    dataset = sys.modules.get("pyarrow.dataset")
    if dataset is not None and isinstance(data, dataset.Dataset):
        return data.scanner().to_reader()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if hasattr(data, "__arrow_c_array__"):
        return _batches_reader([pa.record_batch(data)])
    if isinstance(data, Sequence) and data and not isinstance(data, str | bytes):
        batches = []
        for item in data:
            if isinstance(item, pa.Table):
                batches.extend(item.to_batches())
            elif isinstance(item, pa.RecordBatch) or hasattr(item, "__arrow_c_array__"):
                batches.append(item if isinstance(item, pa.RecordBatch) else pa.record_batch(item))
            else:
                raise InvalidInputError(f"cannot write a sequence holding {type(item).__name__}")
        return _batches_reader(batches)
    raise InvalidInputError(
        f"cannot write {type(data).__name__}: give a pyarrow Table, RecordBatch, "
        "RecordBatchReader or Dataset, a pandas DataFrame, or an object with "
        "__arrow_c_stream__ / __arrow_c_array__ (polars, DuckDB, ...)"
    )


def _batches_reader(batches: list[pa.RecordBatch]) -> pa.RecordBatchReader:
    schema = batches[0].schema
    for batch in batches[1:]:
        if not batch.schema.equals(schema):
            raise SchemaMismatchError(
                f"the batches given have different schemas: {schema} and {batch.schema}"
            )
    return pa.RecordBatchReader.from_batches(schema, batches)


def schema_of_data(schema: pa.Schema) -> StructType:
    """The Delta schema for data of this Arrow schema (a new table's, or one to merge in).

    Timestamps of any unit become Delta's microsecond ``timestamp`` (with a time zone) or
    ``timestamp_ntz`` (without); large and view variants and dictionaries their plain types.

    Raises:
        UnsupportedParquetTypeError: A type Delta has none for (unsigned integers, ...).
        InvalidSchemaError: Another type with no Delta equivalent.
    """
    check_data_types(schema)
    fields = [pa.field(f.name, f.type, f.nullable) for f in schema]
    return StructType.from_arrow(pa.schema(fields))


def within_table(data: StructType, table: StructType) -> StructType:
    """``data`` with the table's type for each column the table has in a type the data casts to.

    What a schema merge should see: a byte column written to a short one is no type change
    (the :class:`Conformer` widens it, checking every value), only a column the table lacks
    or a type it cannot take is.
    """
    by_lower = {f.name.lower(): f for f in table.fields}
    fields = []
    for f in data.fields:
        known = by_lower.get(f.name.lower())
        if known is not None and known.type != f.type and _fits(known.type, f.type):
            f = StructField(f.name, known.type, f.nullable, f.metadata)
        fields.append(f)
    return StructType(tuple(fields))


def _plain(schema: pa.Schema) -> pa.Schema:
    """``schema`` without field metadata (Delta's is not written into data files)."""
    return pa.schema([pa.field(f.name, _plain_type(f.type), f.nullable) for f in schema])


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _plain_type(t.value_type), True))
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), pa.field("value", _plain_type(t.item_type), True))
    return t


class Conformer:
    """Fits batches of one source schema to the table's columns (see the module docstring).

    Args:
        source: The data's Arrow schema.
        table: The table schema (logical names), partition columns included.

    Raises:
        SchemaMismatchError: A column the table lacks, a non-nullable table column the data
            lacks, a type that does not fit, or two data columns for one table column.
    """

    def __init__(self, source: pa.Schema, table: StructType) -> None:
        self.target = _plain(table.to_arrow())
        exact = {name: i for i, name in enumerate(source.names)}
        folded: dict[str, list[int]] = {}
        for i, name in enumerate(source.names):
            folded.setdefault(name.lower(), []).append(i)
        used: set[int] = set()
        self._plan: list[tuple[int | None, bool]] = []  # (source index, cast?)
        for field, target in zip(table.fields, self.target, strict=True):
            index = exact.get(field.name)
            if index is None:
                candidates = folded.get(field.name.lower(), [])
                if len(candidates) > 1:
                    names = [source.names[i] for i in candidates]
                    raise SchemaMismatchError(
                        f"the data has columns {names}, which all match table column "
                        f"{field.name!r} (names ignore case); keep one"
                    )
                index = candidates[0] if candidates else None
            if index is None:
                if not field.nullable:
                    raise SchemaMismatchError(
                        f"the data lacks column {field.name!r}, which the table requires (NOT NULL)"
                    )
                self._plan.append((None, False))
                continue
            used.add(index)
            given = source.field(index).type
            _check_fits(given, field.type, target.type, field.name)
            self._plan.append((index, given != target.type))
        extra = [name for i, name in enumerate(source.names) if i not in used]
        if extra:
            raise SchemaMismatchError(
                f"the data has column(s) {extra} the table lacks (columns: {table.names}); "
                "write with schema_mode='merge' to add them"
            )

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with the table's columns, in order and typed as the table's.

        Raises:
            LossyConversionError: A value would change in the cast.
        """
        arrays = []
        for (index, cast), target in zip(self._plan, self.target, strict=True):
            if index is None:
                arrays.append(pa.nulls(batch.num_rows, target.type))
                continue
            array = batch.column(index)
            if cast:
                array = _cast(array, target.type, target.name)
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)

    def batches(self, reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
        """Every batch of ``reader``, conformed."""
        for batch in reader:
            yield self(batch)


def _cast(array: pa.Array, target: pa.DataType, column: str) -> pa.Array:
    try:
        return array.cast(target, safe=True)
    except pa.ArrowInvalid as exc:
        if _has_ns(array.type):
            raise LossyConversionError(
                f"column {column!r} holds nanosecond timestamps with sub-microsecond digits; "
                "Delta timestamps hold microseconds, and converting would change them. Round "
                "or truncate them first, e.g. pc.floor_temporal(column, unit='microsecond') "
                f"or Series.dt.floor('us') ({exc})",
                column=column,
            ) from exc
        raise LossyConversionError(
            f"column {column!r} ({array.type}) does not fit the table's {target} without "
            f"changing values: {exc}",
            column=column,
        ) from exc
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaMismatchError(
            f"column {column!r} ({array.type}) cannot be written as the table's {target}: {exc}"
        ) from exc


def _has_ns(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return bool(t.unit == "ns")
    if pa.types.is_struct(t):
        return any(_has_ns(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_ns(t.value_type)
    if pa.types.is_map(t):
        return _has_ns(t.key_type) or _has_ns(t.item_type)
    return False


_NUMERIC = ("byte", "short", "integer", "long", "float", "double")


def _check_fits(given: pa.DataType, table: DataType, target: pa.DataType, column: str) -> None:
    """Refuse data of type ``given`` for a table column of Delta type ``table``.

    Raises:
        SchemaMismatchError: Naming the column and both types.
    """
    if given == target:
        return
    if pa.types.is_unsigned_integer(given) and _numeric(table):
        return  # cast with a check on every value
    try:
        data = type_from_arrow(given)
    except InvalidSchemaError as exc:
        raise SchemaMismatchError(f"column {column!r}: {exc}") from exc
    if not _fits(table, data):
        raise SchemaMismatchError(
            f"column {column!r} is {data.to_json()} in the data but {table.to_json()} in the "
            "table; cast it, or overwrite with schema_mode='overwrite' to change the type"
        )


def _numeric(t: DataType) -> bool:
    return isinstance(t, PrimitiveType) and t.name in _NUMERIC


def _fits(table: DataType, data: DataType) -> bool:
    """Whether data of Delta type ``data`` casts to ``table`` without changing values (checked)."""
    if isinstance(table, StructType) and isinstance(data, StructType):
        by_name = {f.name: f for f in table.fields}
        return [f.name for f in data.fields] == [f.name for f in table.fields] and all(
            _fits(by_name[f.name].type, f.type) for f in data.fields
        )
    if isinstance(table, ArrayType) and isinstance(data, ArrayType):
        return _fits(table.element_type, data.element_type)
    if isinstance(table, MapType) and isinstance(data, MapType):
        return _fits(table.key_type, data.key_type) and _fits(table.value_type, data.value_type)
    if _numeric(table) and _numeric(data):
        return True
    if table == PrimitiveType("timestamp") and data == PrimitiveType("timestamp_ntz"):
        return True  # naive timestamps are taken as UTC
    return table == data
