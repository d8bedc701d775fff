"""A predicate built in Python reaches Spark as text Spark reads as the same predicate.

``read(spark, uri, filter=col("s") == "it's")`` chooses files by the predicate and has Spark
filter the rows by its text. The generic SQL rendering doubles a quote, which Spark reads as two
adjacent literals joined (``'it''s'`` is ``its``): the wrong rows, silently.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import write_table
from deltalog.errors import InvalidPredicateError
from deltalog.spark import read
from deltalog.spark.spark_predicate import spark_text
from deltalog.stats.predicate_sql import parse_predicate
from deltalog.stats.predicates import TRUE, col

AWKWARD = ["it's", "its", "a\\b", "ab", "a\\'b", "%", "''", "`x`"]


@pytest.mark.parametrize("value", AWKWARD)
def test_quotes_and_backslashes_are_escaped_as_spark_unescapes_them(value: str) -> None:
    text = spark_text(col("s") == value)
    body = text.split(" = ", 1)[1]
    assert body.startswith("'") and body.endswith("'")
    # Spark's unescaping: a backslash takes the next character as it is.
    inner, out, i = body[1:-1], [], 0
    while i < len(inner):
        if inner[i] == "\\":
            i += 1
        else:
            assert inner[i] != "'", text  # an unescaped quote would end the literal
        out.append(inner[i])
        i += 1
    assert "".join(out) == value


def test_every_kind_of_predicate_renders() -> None:
    s, x = col("s"), col("x y")
    assert spark_text(TRUE) == "TRUE"
    assert spark_text(s.isin(["a'", "b"])) == "`s` IN ('a\\'', 'b')"
    assert spark_text(~s.isin(["a"])) == "(NOT `s` IN ('a'))"
    assert spark_text((x > 1) & (s == None)) == "(`x y` > 1 AND `s` IS NULL)"  # noqa: E711
    assert spark_text((x != 2.5) | (s != None)) == "(`x y` != 2.5 OR `s` IS NOT NULL)"  # noqa: E711
    assert spark_text(col("f") > math.inf) == "`f` > CAST('Infinity' AS DOUBLE)"
    assert spark_text(col("f") == math.nan) == "`f` = CAST('NaN' AS DOUBLE)"
    assert spark_text(col("b") == True) == "`b` = TRUE"  # noqa: E712
    assert spark_text(col("n") == b"\x01") == "`n` = X'01'"


def test_a_name_with_a_backquote_is_escaped() -> None:
    assert spark_text(col("a`b") == 1) == "`a``b` = 1"


def test_the_text_parses_as_spark_text() -> None:
    predicate = (col("p") >= 3) & ((col("id") < 10) | col("s").isin(["x", "it's"]))
    text = spark_text(predicate)
    assert text == "(`p` >= 3 AND (`id` < 10 OR `s` IN ('x', 'it\\'s')))"
    plain = spark_text(col("p") >= 3) + " AND " + spark_text(col("s").isin(["x"]))
    assert parse_predicate(plain, spark=True).columns() == {"p", "s"}


def test_unknown_predicate_kinds_are_refused() -> None:
    from deltalog.stats.predicates import Predicate

    class Odd(Predicate):
        def _columns(self) -> set[str]:
            return set()

        def _mask(self, table: pa.Table) -> pa.Array:
            raise NotImplementedError

    with pytest.raises(InvalidPredicateError):
        spark_text(Odd())


@pytest.mark.spark
def test_spark_reads_the_rows_the_python_predicate_names(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_table(uri, pa.table({"id": list(range(len(AWKWARD))), "s": AWKWARD}))
    for i, value in enumerate(AWKWARD):
        rows = read(spark, uri, filter=col("s") == value).collect()
        assert [(r["id"], r["s"]) for r in rows] == [(i, value)], value
    rows = read(spark, uri, filter=col("s").isin(["it's", "a\\b"])).collect()
    assert sorted(r["id"] for r in rows) == [0, 2]
    # The same with delta-rs's DNF tuples.
    rows = read(spark, uri, filter=[("s", "=", "it's")]).collect()
    assert [r["id"] for r in rows] == [0]


@pytest.mark.spark
def test_column_names_resolve_without_case_as_spark_does(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "c")
    for start in (0, 10):
        batch = pa.table({"id": list(range(start, start + 10)), "Name": ["n"] * 10})
        write_table(uri, batch, mode="append")
    frame = read(spark, uri, filter="ID >= 15 AND name = 'n'", columns=["NAME", "Id"])
    assert frame.columns == ["Name", "id"]
    assert sorted(r["id"] for r in frame.collect()) == [15, 16, 17, 18, 19]
    assert len(frame.inputFiles()) == 1  # pruned by the statistics of `id`
    whole = read(spark, uri)
    assert len(whole.filter("iD < 3").inputFiles()) == 1
    assert whole.filter("iD < 3").count() == 3
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        with pytest.raises(InvalidPredicateError):
            read(spark, uri, filter="ID >= 15")
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


@pytest.mark.spark
def test_dml_and_replace_where_resolve_names_without_case(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import delete, update, write

    uri = str(tmp_path / "d")
    write_table(uri, pa.table({"id": list(range(10)), "Name": ["n"] * 10}))
    assert delete(spark, uri, "ID = 1").metrics["numDeletedRows"] == 1
    assert update(spark, uri, "ID + 0 = 2", {"NAME": "'x'"}).metrics["numUpdatedRows"] == 1
    frame = spark.createDataFrame([(3, "y")], "id long, Name string")
    write(frame, uri, mode="overwrite", predicate="ID = 3")
    rows = sorted((r["id"], r["Name"]) for r in read(spark, uri).collect())
    assert rows == [(0, "n"), (2, "x"), (3, "y")] + [(i, "n") for i in range(4, 10)]
