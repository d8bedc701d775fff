"""Data skipping (``deltalog.stats.skipping``) keeps every file Spark may find a matching row in.

Cases found by tests/spark/test_spark_prune_adversarial.py, checked here without Spark.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

from deltalog import DeltaTable, InvalidPredicateError, write_table
from deltalog.stats.predicate_sql import Unquoted, parse_predicate


def _files(tmp_path: Path, batches: list[pa.Table]) -> DeltaTable:
    uri = str(tmp_path / "t")
    for batch in batches:
        write_table(uri, batch, mode="append")
    return DeltaTable(uri)


def _kept(table: DeltaTable, text: str) -> int:
    return int(table.files(filter=text).num_rows)


def test_nan_literal_keeps_files_of_floats(tmp_path: Path) -> None:
    # NaN sorts above every number in Spark (NaN = NaN holds) and no bound holds it
    table = _files(
        tmp_path,
        [pa.table({"d": [1.5, math.nan]}), pa.table({"d": pa.array([0.25], pa.float32())})],
    )
    for text in ("d = 'NaN'", "d <= 'NaN'", "d >= 'NaN'", "d IN ('NaN')"):
        assert _kept(table, text) == 2, text


def test_float_column_is_compared_in_double(tmp_path: Path) -> None:
    # 0.1f is 0.10000000149...; Spark compares it with 0.1000000015 in double: it is smaller
    table = _files(tmp_path, [pa.table({"f": pa.array([0.1], pa.float32())})])
    assert _kept(table, "f < 0.1000000015") == 1
    assert _kept(table, "f < 0.1") == 0


def test_literal_kinds_are_kept_apart() -> None:
    p = parse_predicate("a = 5 AND b = '5' AND c = DATE '2024-01-01' AND d = TRUE")
    values = []
    while hasattr(p, "left"):
        values.append(p.right.value)  # type: ignore[attr-defined]
        p = p.left  # type: ignore[attr-defined]
    values.append(p.value)  # type: ignore[attr-defined]
    assert [isinstance(v, Unquoted) for v in reversed(values)] == [True, False, True, True]


@pytest.mark.parametrize("text", ["s = 'a\\\\b'", "s = 'a\\tb'", "s = 'a''b'", "s LIKE 'a\\_%'"])
def test_spark_text_with_escapes_is_refused(text: str) -> None:
    parse_predicate(text)  # deltalog's own reading
    with pytest.raises(InvalidPredicateError, match="escapes"):
        parse_predicate(text, spark=True)  # Spark reads it another way
