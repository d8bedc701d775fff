"""SQL expressions for UPDATE/MERGE: parsing, evaluation with Spark's semantics, predicates.

Values are checked against what Spark SQL gives for the same expression (three-valued logic,
literal typing, ``/`` and ``%``, null propagation), and every refusal is a named error.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from deltalog import InvalidExpressionError, InvalidPredicateError
from deltalog.stats.expression_eval import Scope, evaluate, evaluate_condition
from deltalog.stats.expression_functions import NOW
from deltalog.stats.expression_predicate import ExpressionPredicate, row_predicate
from deltalog.stats.predicates import And, Comparison, matches
from deltalog.stats.sql_expression import MAX_DEPTH, MAX_NESTING, column_refs, parse_expression
from deltalog.write.assignments import parse_assignments, store_cast

ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "s": ["a", None, "Cc", "d"],
        "d": pa.array([dt.date(2024, 1, 1)] * 4),
        "price": pa.array([decimal.Decimal("1.25")] * 3 + [None], pa.decimal128(10, 2)),
        "small": pa.array([1, 2, 3, 4], pa.int16()),
        "f": [1.5, 2.5, None, -4.5],
        "st": [{"x": 1}, {"x": 2}, None, {"x": 4}],
    }
)


def _eval(text: str, table: pa.Table = ROWS) -> list[Any]:
    return evaluate(parse_expression(text), Scope.of(table)).to_pylist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id + 1", [2, 3, 4, None]),
        ("id / 2", [0.5, 1.0, 1.5, None]),  # integers divide as doubles
        ("-7 % 3", [-1] * 4),  # the dividend's sign, as Java
        ("f % 2", [1.5, 0.5, None, -0.5]),
        ("small + 1", [2, 3, 4, 5]),
        ("price * 2", [decimal.Decimal("2.50")] * 3 + [None]),
        ("s || '!'", ["a!", None, "Cc!", "d!"]),
        ("concat(s, '-', id)", ["a-1", None, "Cc-3", None]),
        ("upper(s)", ["A", None, "CC", "D"]),
        ("coalesce(s, 'none')", ["a", "none", "Cc", "d"]),
        ("d = '2024-01-01'", [True] * 4),  # the string literal is a date here
        ("d > DATE '2023-12-31'", [True] * 4),
        (
            "CASE WHEN id > 1 THEN 'big' WHEN id = 1 THEN 'one' ELSE 'none' END",
            ["one", "big", "big", "none"],
        ),
        ("CASE id WHEN 1 THEN 10 ELSE 0 END", [10, 0, 0, 0]),
        ("id IN (1, 3)", [True, False, True, None]),
        ("id NOT IN (1, NULL)", [False, None, None, None]),
        ("s LIKE 'C%'", [False, None, True, False]),
        ("CAST(id AS string)", ["1", "2", "3", None]),
        ("round(f)", [2.0, 3.0, None, -5.0]),  # half away from zero
        ("floor(f)", [1, 2, None, -5]),
        ("greatest(id, 2)", [2, 2, 3, 2]),
        ("substring(s, 2)", ["", None, "c", ""]),
        ("nullif(id, 2)", [1, None, 3, None]),
        ("if(id > 1, 'y', 'n')", ["n", "y", "y", "n"]),
        ("id <=> NULL", [False, False, False, True]),
        ("id BETWEEN 1 AND 2", [True, True, False, None]),
        ("NULL AND false", [False] * 4),
        ("NULL OR true", [True] * 4),
        ("st.x * 10", [10, 20, None, 40]),
        ("`id` IS NOT NULL AND s IS NULL", [False, True, False, False]),
        ("ID + 0", [1, 2, 3, None]),  # names ignore case when unambiguous
    ],
)
def test_values_follow_spark(text: str, expected: list[Any]) -> None:
    assert _eval(text) == expected


def test_the_clock_is_a_seam() -> None:
    NOW.insert(0, lambda: dt.datetime(2030, 5, 6, 7, 8, tzinfo=dt.UTC))
    try:
        assert _eval("current_date()")[0] == dt.date(2030, 5, 6)
    finally:
        NOW.pop(0)


@pytest.mark.parametrize(
    "text",
    [
        "id + s",
        "missing",
        "foo(1)",
        "id / 0",
        "CAST('x' AS int)",
        "id >",
        "upper(s, s)",
        "s LIKE s",
        "CASE WHEN id THEN 1 END",
        "'a' = ",
        "x.y",
    ],
)
def test_refusals_are_named(text: str) -> None:
    with pytest.raises(InvalidExpressionError):
        _eval(text)


def test_qualified_names_and_ambiguity() -> None:
    target = pa.table({"id": [1, 2], "v": [10, 20]})
    source = pa.table({"id": [1, 3], "w": [5, 6]})
    scope = Scope({"t": target, "s": source})
    assert evaluate(parse_expression("t.v + s.w"), scope).to_pylist() == [15, 26]
    assert evaluate(parse_expression("v + w"), scope).to_pylist() == [15, 26]
    with pytest.raises(InvalidExpressionError, match="ambiguous"):
        evaluate(parse_expression("id"), scope)
    assert [str(c) for c in column_refs(parse_expression("t.v + coalesce(s.w, 1)"))] == [
        "t.v",
        "s.w",
    ]


def test_conditions_must_be_boolean() -> None:
    with pytest.raises(InvalidExpressionError):
        evaluate_condition(parse_expression("id + 1"), Scope.of(ROWS))


def test_nesting_is_bounded() -> None:
    with pytest.raises(InvalidExpressionError, match="nested"):
        parse_expression("(" * (MAX_NESTING + 5) + "1" + ")" * (MAX_NESTING + 5))
    with pytest.raises(InvalidExpressionError, match="nested"):
        parse_expression("NOT " * (MAX_NESTING + 5) + "true")
    with pytest.raises(InvalidExpressionError, match="nests deeper"):
        parse_expression(" + ".join(["1"] * (MAX_DEPTH + 5)))
    chain = " OR ".join(f"id = {i}" for i in range(MAX_DEPTH - 5))
    assert _eval(chain) == [True, True, True, None]


def test_row_predicates_keep_prunable_parts() -> None:
    simple = row_predicate("id > 1 AND s = 'a'")
    assert isinstance(simple, And)  # the partition-predicate grammar took it
    mixed = row_predicate("id > 1 AND price * 2 > id")
    assert isinstance(mixed, And)
    assert isinstance(mixed.left, Comparison)  # statistics can prune on it
    assert isinstance(mixed.right, ExpressionPredicate)
    assert mixed.columns() == {"id", "price"}
    assert matches(mixed, ROWS).to_pylist() == [False, True, False, False]
    assert matches(row_predicate("id % 2 = 1"), ROWS).to_pylist() == [True, False, True, False]
    with pytest.raises(InvalidPredicateError):
        row_predicate("id >")


def test_assignments_are_checked_and_stored() -> None:
    from deltalog.protocol.schema import StructType

    schema = StructType.from_arrow(pa.schema([("id", pa.int32()), ("d", pa.date32())]))
    (id_set, d_set) = parse_assignments({"ID": "id * 2", "d": "'2024-02-29'"}, schema)
    assert id_set.column == "id"
    table = pa.table({"id": pa.array([1, 2], pa.int32()), "d": pa.array([None, None], pa.date32())})
    scope = Scope.of(table)
    assert id_set.values(scope, pa.int32()).to_pylist() == [2, 4]
    assert d_set.values(scope, pa.date32()).to_pylist() == [dt.date(2024, 2, 29)] * 2
    with pytest.raises(InvalidExpressionError, match="no such column"):
        parse_assignments({"nope": "1"}, schema)
    with pytest.raises(InvalidExpressionError, match="twice"):
        parse_assignments({"id": "1", "ID": "2"}, schema)
    with pytest.raises(InvalidExpressionError):
        parse_assignments({"d": "'not a date'"}, schema)[0].values(scope, pa.date32())
    assert store_cast(pa.array([1.7, -1.7]), pa.int32(), "x").to_pylist() == [1, -1]
    money = pa.array([decimal.Decimal("1.375")], pa.decimal128(13, 3))
    assert store_cast(money, pa.decimal128(10, 2), "x").to_pylist() == [decimal.Decimal("1.38")]
    assert store_cast(pa.array([1, 2]), pa.string(), "x").to_pylist() == ["1", "2"]
    with pytest.raises(InvalidExpressionError, match="cannot store string"):
        store_cast(pa.array(["1"]), pa.int64(), "x")
    with pytest.raises(InvalidExpressionError, match="does not fit"):
        store_cast(pa.array([300]), pa.int8(), "x")
