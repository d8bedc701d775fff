"""Spark SQL text chooses files only where deltalog reads it as Spark does (no session needed)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltalog.errors import InvalidPredicateError
from deltalog.protocol.schema import StructType, as_struct
from deltalog.spark.spark_predicate import spark_predicate

SCHEMA: StructType = as_struct(
    pa.schema([("s", pa.string()), ("d", pa.float64()), ("i", pa.int32())])
)


@pytest.mark.parametrize(
    "text",
    [
        "s > 9",  # Spark casts s to a number: '10' > 9 holds, though '10' < '9'
        "s = 5 OR i = 1",
        "s IN ('a', 5)",
        "s = TRUE",
        "s = DATE '2024-01-05'",  # '2024-1-5' is that date to Spark
        "d = 'NaN'",  # NaN = NaN in Spark
        "NOT d <= 'nan'",
        "s = 'a\\tb'",  # a tab to Spark
        "s = 'a''b'",
    ],
)
def test_text_spark_reads_otherwise_is_refused(text: str) -> None:
    with pytest.raises(InvalidPredicateError, match="cannot judge"):
        spark_predicate(text, SCHEMA, "UTC")


@pytest.mark.parametrize(
    "text", ["s > '9'", "i > 9", "i = '5'", "d < 1.5", "d = 'Infinity'", "s IS NULL"]
)
def test_text_spark_reads_alike_is_kept(text: str) -> None:
    assert spark_predicate(text, SCHEMA, "UTC").columns()
