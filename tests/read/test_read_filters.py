"""Reading with every filter form: SQL (LIKE, IN, BETWEEN, IS NULL), DNF tuples, pyarrow
expressions; ``to_pandas``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltalog import DeltaTable, InvalidPredicateError, col, write_table
from deltalog.stats.arrow_expression import referenced_columns

DATA = pa.table(
    {
        "id": [1, 2, 3, 4, 5],
        "name": ["apple", "banana", "avocado", None, "a_b"],
        "p": ["x", "y", "x", "y", None],
    }
)


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    write_table(str(tmp_path / "t"), DATA, partition_by=["p"])
    return DeltaTable(str(tmp_path / "t"))


def _ids(table: DeltaTable, filter: Any) -> list[int]:
    return sorted(table.to_pyarrow_table(filter=filter).column("id").to_pylist())


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ("name LIKE 'a%'", [1, 3, 5]),
        ("name NOT LIKE 'a%'", [2]),
        ("name LIKE 'a\\_b'", [5]),
        ("name LIKE '_pple'", [1]),
        ("id IN (1, 4)", [1, 4]),
        ("id NOT IN (1, 4)", [2, 3, 5]),
        ("id BETWEEN 2 AND 4", [2, 3, 4]),
        ("id NOT BETWEEN 2 AND 4", [1, 5]),
        ("name IS NULL", [4]),
        ("p IS NOT NULL AND name IS NOT NULL", [1, 2, 3]),
        ([("p", "=", "x"), ("id", ">", 1)], [3]),
        ([[("p", "=", "x")], [("name", "=", "banana")]], [1, 2, 3]),
        ([("id", "in", [2, 5])], [2, 5]),
        (pc.field("id") > 3, [4, 5]),
        (pc.field("p") == "x", [1, 3]),
        ((pc.field("p") == "y") & pc.field("name").is_valid(), [2]),
        (pc.starts_with(pc.field("name"), "av"), [3]),
        (col("name").like("%an%"), [2]),
    ],
)
def test_filter_forms(table: DeltaTable, filter: Any, expected: list[int]) -> None:
    assert _ids(table, filter) == expected


def test_expressions_name_their_columns_and_unknown_ones_are_refused(table: DeltaTable) -> None:
    expression = (pc.field("a") > 1) | pc.field(("s", "x")).is_null() | (pc.field("b c") == 2)
    assert referenced_columns(expression) == {"a", "s", "b c"}
    with pytest.raises(InvalidPredicateError, match="nope"):
        table.to_pyarrow_table(filter=pc.field("nope") > 1)
    with pytest.raises(InvalidPredicateError):
        table.to_pyarrow_table(filter=pc.field("id") + 1)  # not a boolean
    with pytest.raises(InvalidPredicateError):
        table.to_pyarrow_table(filter="id LIKE 'x'")  # LIKE needs a string column


def test_partition_expressions_prune_files(table: DeltaTable) -> None:
    assert table.files(filter=pc.field("p") == "x").num_rows == 1
    assert table.files(filter="p = 'x'").num_rows == 1


def test_to_pandas(table: DeltaTable) -> None:
    frame = table.to_pandas(columns=["id", "name"], filter="id <= 2")
    assert list(frame.columns) == ["id", "name"]
    assert sorted(frame["id"].tolist()) == [1, 2]
    assert len(table.to_pandas()) == 5


def test_like_prints_as_sql_that_parses_back(table: DeltaTable) -> None:
    from deltalog.stats.predicate_sql import parse_predicate

    predicate = (col("like") == 1) | col("name").like("it's%")
    text = str(predicate)
    assert text == "(`like` = 1 OR name LIKE 'it''s%')"
    assert str(parse_predicate(text)) == "(`like` = '1' OR name LIKE 'it''s%')"
