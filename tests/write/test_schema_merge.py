"""``deltalog.write.schema_merge``: delta-spark's mergeSchema rules, without Spark."""

from __future__ import annotations

from typing import Any

import pytest

from deltalog import SchemaEvolutionError, SchemaMismatchError
from deltalog.protocol.schema import PrimitiveType, StructField, StructType
from deltalog.write.schema_merge import (
    TYPE_CHANGES_KEY,
    fits,
    keeps_data_readable,
    merge_schemas,
    widens,
)


def _schema(*fields: dict[str, Any]) -> StructType:
    return StructType.from_json_string(
        __import__("orjson").dumps({"type": "struct", "fields": list(fields)}).decode()
    )


def _f(name: str, type_: Any, nullable: bool = True, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata}


def _struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


TABLE = _schema(
    _f("id", "long", False, comment="key"),
    _f("s", _struct(_f("a", "integer"), _f("b", "string"))),
    _f("tags", {"type": "array", "elementType": _struct(_f("k", "string")), "containsNull": True}),
    _f("p", "string"),
)


def test_new_columns_are_appended_nullable_nested_included_and_case_is_ignored() -> None:
    data = _schema(
        _f("ID", "long", False),  # same column, other case: keeps the table's spelling
        _f("S", _struct(_f("B", "string"), _f("c", "double", False))),  # nested new field
        _f("tags", {"type": "array", "elementType": _struct(_f("k", "string"), _f("v", "long"))}),
        _f("new", _struct(_f("x", "integer", False)), False),
    )
    merged = merge_schemas(TABLE, data, partition_columns=["p"])
    assert merged.names == ["id", "s", "tags", "p", "new"]
    assert merged.field("id") == TABLE.field("id")  # nullability and metadata kept
    s = merged.field("s").type
    assert isinstance(s, StructType)
    assert [(f.name, f.type.to_json(), f.nullable) for f in s.fields] == [
        ("a", "integer", True),
        ("b", "string", True),
        ("c", "double", True),  # new: nullable
    ]
    element = merged.field("tags").type.to_json()["elementType"]  # type: ignore[union-attr]
    assert [f["name"] for f in element["fields"]] == ["k", "v"]
    new = merged.field("new")
    assert new.nullable and new.type.to_json()["fields"][0]["nullable"] is True  # type: ignore[union-attr,index]
    # Nothing new: the table schema itself.
    assert (
        merge_schemas(TABLE, _schema(_f("id", "long"), _f("S", _struct(_f("a", "integer")))))
        == TABLE
    )


@pytest.mark.parametrize(
    ("table_type", "data_type", "widening"),
    [
        ("long", "integer", False),  # narrowing
        ("integer", "long", False),  # widening needs type widening enabled
        ("string", "long", True),
        ("long", "double", True),  # not applied automatically by schema evolution
        ("decimal(10,2)", "decimal(12,1)", True),  # loses scale
    ],
)
def test_type_changes_are_named_errors(table_type: str, data_type: str, widening: bool) -> None:
    table = _schema(_f("id", "long"), _f("x", table_type))
    with pytest.raises(SchemaEvolutionError) as info:
        merge_schemas(table, _schema(_f("x", data_type)), type_widening=widening)
    assert info.value.column == "x"
    assert isinstance(info.value, SchemaMismatchError)


def test_nested_type_change_names_the_path() -> None:
    data = _schema(_f("s", _struct(_f("a", "string"))))
    with pytest.raises(SchemaEvolutionError) as info:
        merge_schemas(TABLE, data)
    assert info.value.column == "s.a"


def test_widening_on_a_type_widening_table_records_the_type_change() -> None:
    table = _schema(
        _f("x", "integer", comment="c"),
        _f("m", {"type": "map", "keyType": "string", "valueType": "float"}),
        _f("d", "decimal(10,2)"),
    )
    data = _schema(
        _f("x", "long"),
        _f("m", {"type": "map", "keyType": "string", "valueType": "double"}),
        _f("d", "decimal(12,2)"),
    )
    merged = merge_schemas(table, data, type_widening=True)
    x = merged.field("x")
    assert x.type.to_json() == "long"
    assert x.metadata == {
        "comment": "c",
        TYPE_CHANGES_KEY: [{"fromType": "integer", "toType": "long"}],
    }
    assert merged.field("m").metadata[TYPE_CHANGES_KEY] == [
        {"fromType": "float", "toType": "double", "fieldPath": "value"}
    ]
    assert merged.field("d").type.to_json() == "decimal(12,2)"
    assert keeps_data_readable(table, merged, type_widening=True)
    assert not keeps_data_readable(table, merged, type_widening=False)


def test_partition_columns_never_change_type() -> None:
    table = _schema(_f("id", "long"), _f("p", "integer"))
    with pytest.raises(SchemaEvolutionError, match="partition column"):
        merge_schemas(table, _schema(_f("P", "long")), partition_columns=["p"], type_widening=True)


def test_duplicate_names_in_the_data_are_refused() -> None:
    inner = StructType(
        (StructField("q", PrimitiveType("long")), StructField("Q", PrimitiveType("long")))
    )
    with pytest.raises(SchemaEvolutionError, match="case is ignored"):
        merge_schemas(TABLE, StructType((StructField("s", inner),)))


def test_widens_and_fits() -> None:
    assert widens(*_types("byte", "long")) and widens(*_types("date", "timestamp_ntz"))
    assert not widens(*_types("long", "integer")) and not widens(*_types("integer", "double"))
    assert widens(*_types("decimal(5,2)", "decimal(8,3)"))
    assert not widens(*_types("decimal(5,2)", "decimal(5,3)"))
    # A struct value lacking a table field, in another order, fits; an extra one does not.
    assert fits(TABLE.field("s").type, _schema(_f("b", "string")))
    assert not fits(TABLE.field("s").type, _schema(_f("B", "string")))  # nested: exact names
    assert not fits(TABLE.field("s").type, _schema(_f("z", "string")))
    assert keeps_data_readable(
        TABLE, merge_schemas(TABLE, _schema(_f("q", "date"))), type_widening=False
    )


def _types(a: str, b: str) -> tuple[Any, Any]:
    schema = _schema(_f("a", a), _f("b", b))
    return schema.field("a").type, schema.field("b").type
