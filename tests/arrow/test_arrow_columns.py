"""Columns built from buffers equal what pyarrow's conversion of the same Python values gives."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from deltalog.arrow import columns as arrow_columns
from deltalog.log.file_actions import (
    FILES_SCHEMA,
    TOMBSTONES_SCHEMA,
    adds_to_table,
    removes_to_table,
)
from deltalog.protocol.actions import AddFile, RemoveFile

STRING_MAP = pa.map_(pa.string(), pa.string())
DV = FILES_SCHEMA.field("deletion_vector").type

CASES: list[tuple[pa.DataType, list[Any]]] = [
    (pa.string(), []),
    (pa.string(), [None]),
    (pa.string(), ["a", None, "", "x=é", "\x00z", "日本", None]),
    (pa.int64(), [0, None, -(2**63), 2**63 - 1]),
    (pa.int32(), [None, 7, -(2**31), 2**31 - 1]),
    (pa.bool_(), [True, None, False, True]),
    (STRING_MAP, [{}, None, {"p": "1", "q": None}, {"é": "日本"}]),
    (STRING_MAP, [None, None]),
    (
        DV,
        [
            None,
            {
                "storageType": "u",
                "pathOrInlineDv": "ab",
                "offset": None,
                "sizeInBytes": 3,
                "cardinality": 2,
                "maxRowIndex": None,
            },
        ],
    ),
]


@pytest.mark.parametrize(("t", "values"), CASES)
@pytest.mark.parametrize("repeat", [1, 100])  # 100x: bitmaps over the Python-packing limit
def test_column_equals_pyarrow_conversion(t: pa.DataType, values: list[Any], repeat: int) -> None:
    values = values * repeat
    got = arrow_columns.column(values, t)
    got.validate(full=True)
    assert got.type == t
    assert got.equals(pa.array(values, t))


def test_random_file_actions_equal_pyarrow_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)

    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.3 else v

    adds, removes = [], []
    for i in range(700):
        dv = maybe(
            {
                "storageType": "u",
                "pathOrInlineDv": f"dv{i}",
                "offset": maybe(i),
                "sizeInBytes": 40,
                "cardinality": i % 5,
                "maxRowIndex": maybe(i * 10),
            }
        )
        pv = {"p": maybe(str(i % 3)), "ü": "v"} if rng.random() < 0.8 else {}
        adds.append(
            AddFile(
                path=f"p={i % 3}/f{i}é.parquet",
                partition_values=pv,
                size=i,
                modification_time=10**12 + i,
                data_change=rng.random() < 0.5,
                stats=maybe('{"numRecords":1}'),
                tags=maybe({"k": maybe("v")}),
                deletion_vector=dv,
                base_row_id=maybe(i),
                default_row_commit_version=maybe(3),
                clustering_provider=maybe("l"),
            )
        )
        removes.append(
            RemoveFile(
                path=f"f{i}",
                deletion_timestamp=maybe(i),
                data_change=rng.random() < 0.5,
                extended_file_metadata=maybe(True),
                partition_values=maybe(pv),
                size=maybe(i),
                deletion_vector=dv,
            )
        )
    # Valid actions never take the fallback through pyarrow's conversion.
    build = arrow_columns.column

    def strict(values: list[Any], t: pa.DataType) -> pa.Array:
        try:
            return build(values, t)
        except (TypeError, ValueError, OverflowError) as exc:
            raise AssertionError(f"valid {t} values fell back: {exc}") from exc

    with monkeypatch.context() as m:
        m.setattr(arrow_columns, "column", strict)
        built = [adds_to_table(adds), removes_to_table(removes)]
    for table, objects, schema in (
        (built[0], adds, FILES_SCHEMA),
        (built[1], removes, TOMBSTONES_SCHEMA),
    ):
        table.validate(full=True)
        expected = pa.Table.from_pylist(
            [{f.name: getattr(a, f.name) for f in schema} for a in objects], schema=schema
        )
        assert table.equals(expected)


@pytest.mark.parametrize(
    ("t", "values"),
    [
        (pa.string(), ["a", 1]),
        (pa.string(), ["\ud800"]),
        (pa.string(), [None, 0]),
        (pa.string(), [None, False]),
        (pa.int64(), [1, "2"]),
        (pa.int64(), [1, True]),
        (DV, [{"storageType": "u", "offset": True}]),
        (pa.int32(), [2**31]),
        (pa.bool_(), [True, "yes"]),
        (pa.bool_(), [1, None]),
        (STRING_MAP, [{"a": "b"}, ["a"]]),
        (STRING_MAP, [{None: "b"}]),
        (DV, [{"storageType": 1}]),
        (pa.float64(), [1.0]),
    ],
)
def test_values_of_the_wrong_kind_raise(t: pa.DataType, values: list[Any]) -> None:
    with pytest.raises((TypeError, ValueError, OverflowError, AttributeError)):
        arrow_columns.column(values, t)


def test_wrong_kinds_fall_back_to_pyarrow_errors() -> None:
    bad = AddFile(
        path="f",
        partition_values={},
        size="12",  # type: ignore[arg-type]
        modification_time=1,
        data_change=True,
    )
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        adds_to_table([bad])
