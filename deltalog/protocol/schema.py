"""Delta schema JSON ⇄ Python types ⇄ pyarrow.

The Delta schema is Spark's JSON schema: a ``struct`` of fields with ``name``, ``type``,
``nullable`` and ``metadata``. Types are kept as small frozen dataclasses so that a schema read
from a log is written back exactly, field metadata included.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.errors import InvalidSchemaError
from deltalog.lazy import lazy_module
from deltalog.protocol.parquet_types import check_schema_types

if TYPE_CHECKING:  # parsing a schema string needs no pyarrow, converting to Arrow does
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

PRIMITIVES = (
    "string",
    "long",
    "integer",
    "short",
    "byte",
    "float",
    "double",
    "boolean",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "void",
    "variant",
)
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A primitive type by its Delta name, e.g. ``long`` or ``timestamp_ntz``."""

    name: str

    def to_json(self) -> Any:
        """The type as it appears in a schema string."""
        return self.name


@dataclass(frozen=True, slots=True)
class DecimalType:
    """``decimal(precision, scale)``."""

    precision: int
    scale: int

    def to_json(self) -> Any:
        """The type as it appears in a schema string."""
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True, slots=True)
class ArrayType:
    """``array`` of ``element_type``."""

    element_type: DataType
    contains_null: bool = True

    def to_json(self) -> Any:
        """The type as it appears in a schema string."""
        return {
            "type": "array",
            "elementType": self.element_type.to_json(),
            "containsNull": self.contains_null,
        }


@dataclass(frozen=True, slots=True)
class MapType:
    """``map`` from ``key_type`` to ``value_type``."""

    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    def to_json(self) -> Any:
        """The type as it appears in a schema string."""
        return {
            "type": "map",
            "keyType": self.key_type.to_json(),
            "valueType": self.value_type.to_json(),
            "valueContainsNull": self.value_contains_null,
        }


@dataclass(frozen=True, slots=True)
class StructField:
    """One named field of a struct."""

    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The field as it appears in a schema string.

        The metadata is a copy: parsed schemas are shared (see
        :meth:`StructType.from_json_string`), so nothing given out may alias them.
        """
        return {
            "name": self.name,
            "type": self.type.to_json(),
            "nullable": self.nullable,
            "metadata": copy.deepcopy(self.metadata) if self.metadata else {},
        }


@dataclass(frozen=True, slots=True)
class StructType:
    """A struct: the table schema itself is one."""

    fields: tuple[StructField, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The struct as it appears in a schema string."""
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}

    def to_json_string(self) -> str:
        """Compact JSON, as stored in ``metaData.schemaString``."""
        return orjson.dumps(self.to_json()).decode()

    @classmethod
    def from_json_string(cls, text: str) -> StructType:
        """Parse ``metaData.schemaString``.

        The same text gives the same (immutable) object: a writer's every new snapshot asks
        for its schema, and the table's schema string rarely changes.

        Raises:
            InvalidSchemaError: The text is not a valid Delta schema.
        """
        return _schema_from_string(text)

    def field(self, name: str) -> StructField:
        """The field called ``name``.

        Raises:
            KeyError: No such field.
        """
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        """Field names in order."""
        return [f.name for f in self.fields]

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def to_arrow(self) -> pa.Schema:
        """The equivalent pyarrow schema (Delta field metadata kept under ``delta.metadata``)."""
        return pa.schema([_field_to_arrow(f) for f in self.fields])

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> StructType:
        """Convert a pyarrow schema.

        Raises:
            InvalidSchemaError: A type has no Delta equivalent (e.g. unsigned integers).
        """
        return cls(tuple(_field_from_arrow(f) for f in schema))


DataType = PrimitiveType | DecimalType | ArrayType | MapType | StructType

_METADATA_KEY = b"delta.metadata"


def _parse_type(obj: Any) -> DataType:
    if isinstance(obj, str):
        if obj in PRIMITIVES:
            return PrimitiveType(obj)
        m = _DECIMAL.match(obj)
        if m:
            precision, scale = int(m.group(1)), int(m.group(2))
            if not (1 <= precision <= 38 and 0 <= scale <= precision):
                raise InvalidSchemaError(f"invalid decimal type {obj!r}")
            return DecimalType(precision, scale)
        raise InvalidSchemaError(f"unknown type {obj!r}")
    if not isinstance(obj, dict):
        raise InvalidSchemaError(f"invalid type {obj!r:.80}")
    kind = obj.get("type")
    try:
        if kind == "struct":
            fields = obj["fields"]
            if not isinstance(fields, list):
                raise InvalidSchemaError("struct fields must be a list")
            out = []
            for f in fields:
                name, nullable, metadata = f["name"], f.get("nullable", True), f.get("metadata", {})
                if not isinstance(name, str) or not isinstance(nullable, bool):
                    raise InvalidSchemaError(f"invalid struct field {f!r:.80}")
                if not isinstance(metadata, dict):
                    raise InvalidSchemaError(f"field {name!r}: metadata must be an object")
                out.append(StructField(name, _parse_type(f["type"]), nullable, metadata))
            _check_unique([f.name for f in out])
            return StructType(tuple(out))
        if kind == "array":
            return ArrayType(_parse_type(obj["elementType"]), bool(obj.get("containsNull", True)))
        if kind == "map":
            return MapType(
                _parse_type(obj["keyType"]),
                _parse_type(obj["valueType"]),
                bool(obj.get("valueContainsNull", True)),
            )
    except (KeyError, TypeError) as exc:
        raise InvalidSchemaError(f"invalid {kind} type: missing {exc}") from exc
    raise InvalidSchemaError(f"unknown type {kind!r}")


def match_name(names: Sequence[str], wanted: str) -> str | None:
    """``wanted`` among ``names``: exactly, else the one name equal to it ignoring case.

    Delta column names are case-insensitive (no two differ only in case); ``None`` when
    nothing matches, or several do (names that did not come from one schema).
    """
    if wanted in names:
        return wanted
    folded = [n for n in names if n.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None


def _check_unique(names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n.lower() in seen:
            raise InvalidSchemaError(f"duplicate column name {n!r} (names are case-insensitive)")
        seen.add(n.lower())


@functools.cache
def _to_arrow() -> dict[str, pa.DataType]:
    """Delta primitive type name -> pyarrow type."""
    return {
        "string": pa.string(),
        "long": pa.int64(),
        "integer": pa.int32(),
        "short": pa.int16(),
        "byte": pa.int8(),
        "float": pa.float32(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "binary": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"),
        "void": pa.null(),
    }


def type_to_arrow(dt: DataType) -> pa.DataType:
    """The pyarrow type for a Delta type.

    Raises:
        InvalidSchemaError: The type has no pyarrow equivalent (``variant``).
    """
    if isinstance(dt, PrimitiveType):
        try:
            return _to_arrow()[dt.name]
        except KeyError:
            raise InvalidSchemaError(f"type {dt.name!r} has no Arrow equivalent") from None
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, ArrayType):
        return pa.list_(pa.field("element", type_to_arrow(dt.element_type), dt.contains_null))
    if isinstance(dt, MapType):
        return pa.map_(
            pa.field("key", type_to_arrow(dt.key_type), False),
            pa.field("value", type_to_arrow(dt.value_type), dt.value_contains_null),
        )
    return pa.struct([_field_to_arrow(f) for f in dt.fields])


def _field_to_arrow(f: StructField) -> pa.Field:
    meta = {_METADATA_KEY: orjson.dumps(f.metadata)} if f.metadata else None
    return pa.field(f.name, type_to_arrow(f.type), f.nullable, metadata=meta)


def type_from_arrow(t: pa.DataType) -> DataType:
    """The Delta type for a pyarrow type.

    Timestamps of any unit map to ``timestamp`` when they carry a time zone and to
    ``timestamp_ntz`` otherwise; large and view variants map to their plain types.

    Raises:
        InvalidSchemaError: The type has no Delta equivalent.
    """
    if pa.types.is_boolean(t):
        return PrimitiveType("boolean")
    if pa.types.is_signed_integer(t):
        return PrimitiveType({8: "byte", 16: "short", 32: "integer", 64: "long"}[t.bit_width])
    if pa.types.is_float32(t):
        return PrimitiveType("float")
    if pa.types.is_float64(t):
        return PrimitiveType("double")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return PrimitiveType("string")
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return PrimitiveType("binary")
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return PrimitiveType("date")
    if pa.types.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz is not None else "timestamp_ntz")
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise InvalidSchemaError(f"decimal precision {t.precision} exceeds 38")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_null(t):
        return PrimitiveType("void")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        vf = t.value_field
        return ArrayType(type_from_arrow(vf.type), vf.nullable)
    if pa.types.is_map(t):
        return MapType(
            type_from_arrow(t.key_type), type_from_arrow(t.item_type), t.item_field.nullable
        )
    if pa.types.is_struct(t):
        return StructType(tuple(_field_from_arrow(t.field(i)) for i in range(t.num_fields)))
    if pa.types.is_dictionary(t):
        return type_from_arrow(t.value_type)
    raise InvalidSchemaError(f"Arrow type {t} has no Delta equivalent")


def _field_from_arrow(f: pa.Field) -> StructField:
    metadata: dict[str, Any] = {}
    if f.metadata and _METADATA_KEY in f.metadata:
        try:
            loaded = orjson.loads(f.metadata[_METADATA_KEY])
        except orjson.JSONDecodeError:
            loaded = {}
        if isinstance(loaded, dict):
            metadata = loaded
    return StructField(f.name, type_from_arrow(f.type), f.nullable, metadata)


def as_struct(schema: StructType | pa.Schema | Mapping[str, Any] | str) -> StructType:
    """Accept a schema in any supported form: ``StructType``, pyarrow, JSON dict or string.

    A pyarrow schema may not have types Delta readers cannot read in files, nanosecond
    timestamps included (see :mod:`deltalog.protocol.parquet_types`).

    Raises:
        InvalidSchemaError: The schema is invalid (:class:`UnsupportedParquetTypeError` for
            such a type).
    """
    if isinstance(schema, StructType):
        result = schema
    elif isinstance(schema, pa.Schema):
        check_schema_types(schema)
        result = StructType.from_arrow(schema)
    elif isinstance(schema, str):
        result = StructType.from_json_string(schema)
    elif isinstance(schema, Mapping):
        parsed = _parse_type(dict(schema))
        if not isinstance(parsed, StructType):
            raise InvalidSchemaError("the table schema must be a struct")
        result = parsed
    else:
        raise InvalidSchemaError(f"cannot use {type(schema).__name__} as a schema")
    _check_unique(result.names)
    if not result.fields:
        raise InvalidSchemaError("a table schema needs at least one column")
    return result


@functools.lru_cache(maxsize=64)
def _schema_from_string(text: str) -> StructType:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidSchemaError(f"schema string is not JSON: {exc}") from exc
    parsed = _parse_type(obj)
    if not isinstance(parsed, StructType):
        raise InvalidSchemaError("the table schema must be a struct")
    return parsed
