"""Adversarial predicates: ``read(spark, uri).filter(text)`` prunes files, yet loses no row.

Each predicate text is run three ways on the same tables (built once per module, many files
with distinct statistics): ``filter(text)`` on the whole snapshot's DataFrame (pruned by the
log), ``read(spark, uri, filter=text)`` (pruned the same way) and ``filter(F.expr(text))``, a
Column condition that is never pruned: Spark's filter over every file, the oracle. Every
mismatch of every predicate is collected and reported at once.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from deltalog import DeltaTable, write_table
from deltalog.spark import read

# Pruning is deltalog's own Python, the same on both Spark lines; this module runs Spark 4.2
# in 3.5's non-ANSI mode (below), so the 3.5 pass skips it (a 2.5-minute module).
pytestmark = [pytest.mark.spark, pytest.mark.one_spark_line]

UTC = dt.UTC
_D = decimal.Decimal
_LONG_A = "a" * 40  # longer than the 32-character prefix statistics keep
_LONG_Z = "z" * 31 + "zz" + "q"
_EMOJI = "\U0001f600" * 20  # 20 code points, 40 UTF-16 units, 80 UTF-8 bytes

_WIDE_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("d", pa.float64()),
        ("f", pa.float32()),
        ("dec", pa.decimal128(10, 2)),
        ("s", pa.string()),
        ("sn", pa.string()),
        ("dt", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("tsn", pa.timestamp("us")),
        ("b", pa.bool_()),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("Upper", pa.int32()),
        ("my col", pa.int32()),
    ]
)


def _ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


# One list of rows per file (each append one file): distinct, overlapping and extreme bounds.
_WIDE_FILES: list[list[tuple[Any, ...]]] = [
    [
        (
            1,
            -5,
            1.5,
            0.1,
            _D("1.50"),
            "apple",
            "05",
            dt.date(2024, 1, 1),
            _ts("2024-01-01 00:00:00"),
            dt.datetime(2024, 1, 1),
            True,
            (1, "a"),
            1,
            10,
        ),
        (
            2,
            -1,
            -0.0,
            0.25,
            _D("-2.00"),
            "",
            "9",
            dt.date(2024, 1, 2),
            _ts("2024-01-01 04:59:59.999999"),
            dt.datetime(2024, 1, 1, 4, 59, 59, 999999),
            False,
            (2, None),
            2,
            20,
        ),
    ],
    [
        (
            3,
            0,
            math.nan,
            math.nan,
            _D("0.00"),
            "Banana",
            "10",
            dt.date(2023, 12, 31),
            _ts("2024-01-01 05:00:00"),
            dt.datetime(2024, 1, 1, 5),
            None,
            None,
            3,
            None,
        ),
        (4, 2147483647, 2.0, 2.0, None, None, None, None, None, None, True, (None, None), None, 40),
    ],
    [
        (
            5,
            -2147483648,
            math.inf,
            math.inf,
            _D("99999999.99"),
            _LONG_A,
            "100",
            dt.date(1969, 12, 31),
            _ts("1969-12-31 23:59:59.998500"),
            dt.datetime(1969, 12, 31, 23, 59, 59, 998500),
            False,
            (5, "e"),
            5,
            50,
        ),
        (
            6,
            7,
            -math.inf,
            -math.inf,
            _D("-99999999.99"),
            _LONG_Z,
            "-3",
            dt.date(2000, 2, 29),
            _ts("2000-02-29 12:00:00.000001"),
            dt.datetime(2000, 2, 29, 12, 0, 0, 1),
            True,
            (6, "f"),
            6,
            60,
        ),
    ],
    [
        (
            -9223372036854775808,
            8,
            None,
            None,
            _D("0.01"),
            "ünïcödé",
            "7.0",
            dt.date(2024, 3, 10),
            _ts("2024-03-10 07:30:00"),
            dt.datetime(2024, 3, 10, 2, 30),
            None,
            (8, "h"),
            8,
            80,
        ),
        (
            9223372036854775807,
            9,
            1e308,
            3.4e38,
            _D("0.10"),
            _EMOJI,
            " 8 ",
            dt.date(2024, 11, 3),
            _ts("2024-11-03 05:30:00"),
            dt.datetime(2024, 11, 3, 1, 30),
            False,
            (9, "i"),
            9,
            90,
        ),
    ],
    [
        (
            10,
            10,
            0.0,
            -0.0,
            _D("5.55"),
            "a'b",
            "1e1",
            dt.date(2024, 1, 5),
            _ts("2024-01-05 00:00:00.000500"),
            dt.datetime(2024, 1, 5, 0, 0, 0, 500),
            True,
            (10, "j"),
            10,
            100,
        ),
        (
            11,
            11,
            0.1,
            0.1,
            _D("5.56"),
            "a\\b",
            "",
            dt.date(2024, 1, 6),
            _ts("2024-01-06 00:00:00.999"),
            dt.datetime(2024, 1, 6, 0, 0, 0, 999000),
            None,
            (11, "k"),
            11,
            110,
        ),
    ],
    [
        (12, None, None, None, None, None, None, None, None, None, None, None, None, None),
        (13, None, None, None, None, None, None, None, None, None, None, None, None, None),
    ],
    [
        (
            14,
            14,
            1e-300,
            1.0000001,
            _D("14.00"),
            "a%b_c",
            "14",
            dt.date(2024, 2, 1),
            _ts("2024-02-01 00:00:00"),
            dt.datetime(2024, 2, 1),
            True,
            (14, "n"),
            14,
            140,
        ),
        (
            15,
            15,
            15.0,
            15.0,
            _D("15.00"),
            "a\tb",
            "15",
            dt.date(2024, 2, 2),
            _ts("2024-02-02 00:00:00"),
            dt.datetime(2024, 2, 2),
            False,
            (15, "o"),
            15,
            150,
        ),
    ],
]


def _wide_batch(rows: list[tuple[Any, ...]]) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    return pa.table(
        [pa.array(list(c), f.type) for c, f in zip(columns, _WIDE_SCHEMA, strict=True)],
        schema=_WIDE_SCHEMA,
    )


_PART_SCHEMA = pa.schema([("ps", pa.string()), ("pi", pa.int32()), ("v", pa.int64())])
_PART_FILES: list[list[tuple[Any, ...]]] = [
    [("a", 1, 1), ("a", 1, 2)],
    [("b", 2, 3)],
    [(None, 3, 4)],
    [("a", None, 5)],
    [(None, None, 6)],
    [("__HIVE_DEFAULT_PARTITION__", 4, 7)],
    [("", 5, 8)],
    [("A", -1, 9)],
    [("ß", 0, 10), ("ß", 0, 11)],
]


def _part_batch(rows: list[tuple[Any, ...]]) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    return pa.table(
        [pa.array(list(c), f.type) for c, f in zip(columns, _PART_SCHEMA, strict=True)],
        schema=_PART_SCHEMA,
    )


@pytest.fixture(autouse=True)
def _not_ansi(spark: Any) -> Iterator[None]:
    """Spark's non-ANSI mode (3.5's default): a bad cast is null, not a failed job.

    A wrong prune shows as lost rows either way; without run-time errors the predicates of a
    test run in one Spark job instead of being halved around each failing one.
    """
    key = "spark.sql.ansi.enabled"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Three tables, each of many files: wide (every type), partitioned, deletion vectors."""
    root = tmp_path_factory.mktemp("prune_adversarial")
    wide = str(root / "wide")
    for rows in _WIDE_FILES:
        write_table(wide, _wide_batch(rows), mode="append")
    part = str(root / "part")
    for rows in _PART_FILES:
        write_table(part, _part_batch(rows), partition_by=["ps", "pi"], mode="append")
    dv = str(root / "dv")
    config = {"delta.enableDeletionVectors": "true"}
    for start in range(0, 50, 10):
        ids = list(range(start, start + 10))
        batch = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"k{i:02d}" for i in ids]})
        write_table(dv, batch, mode="append", configuration=config)
    DeltaTable(dv).delete("id % 3 = 0 OR id BETWEEN 12 AND 27")
    yield {"wide": wide, "part": part, "dv": dv}


def _key(row: Any, width: int) -> str:
    return repr(tuple(row)[:width])  # NaN-safe: compared by text


def _rows(frame: Any) -> list[str] | str:
    try:
        return sorted(_key(r, len(frame.columns)) for r in frame.collect())
    except Exception as exc:  # the oracle's error is an answer too
        return f"error: {type(exc).__name__}"


def _each(frames: list[Any]) -> list[list[str] | str]:
    """The rows of every frame (an error as text), in few Spark jobs: a failed job is halved."""
    out: list[list[str] | str] = [f if isinstance(f, str) else [] for f in frames]
    live = [(k, f) for k, f in enumerate(frames) if not isinstance(f, str)]
    if live:
        _collect(live, out)
    return [sorted(o) if isinstance(o, list) else o for o in out]


def _collect(live: list[tuple[int, Any]], out: list[list[str] | str]) -> None:
    from pyspark.sql import functions as F

    if len(live) == 1:
        out[live[0][0]] = _rows(live[0][1])
        return
    width = len(live[0][1].columns)
    union = None
    for k, f in live:
        tagged = f.withColumn("_k", F.lit(k))
        union = tagged if union is None else union.unionByName(tagged)
    assert union is not None
    try:
        rows = union.collect()
    except Exception:  # one frame fails at run time: find it by halves
        half = len(live) // 2
        _collect(live[:half], out)
        _collect(live[half:], out)
        return
    for row in rows:
        found = out[row["_k"]]
        assert isinstance(found, list)
        found.append(_key(row, width))


def _try(make: Any) -> Any:
    """A frame, or the name of the error making it raised."""
    try:
        return make()
    except Exception as exc:
        return f"error: {type(exc).__name__}"


def _mismatches(spark: Any, uri: str, texts: list[str], *, with_read: bool = True) -> list[str]:
    """Every predicate whose pruned answers differ from Spark's own filter."""
    from pyspark.sql import functions as F

    whole = read(spark, uri)
    expected = _each([_try(lambda t=t: whole.filter(F.expr(t))) for t in texts])
    answers = {"filter": _each([_try(lambda t=t: whole.filter(t)) for t in texts])}
    if with_read:
        answers["read"] = _each([_try(lambda t=t: read(spark, uri, filter=t)) for t in texts])
    out = []
    for how, got in answers.items():
        for text, want, rows in zip(texts, expected, got, strict=True):
            if how == "read" and rows == "error: InvalidPredicateError":
                continue  # deltalog refusing text it cannot read is fine
            if rows != want and not (isinstance(want, str) and isinstance(rows, str)):
                out.append(f"{how}({text!r}): expected {want!r}, got {rows!r}")
    return out


_NUMBERS = [
    "id > 5",
    "id >= 9223372036854775807",
    "id < -9223372036854775807",
    "id = -9223372036854775808",
    "id <= -9223372036854775808",
    "id != 1",
    "id <> 1",
    "NOT id = 1",
    "id IN (1, 13, 99)",
    "id NOT IN (1, 2, 3)",
    "id NOT IN (1, NULL)",
    "id IN (NULL)",
    "id = NULL",
    "NOT (id = NULL)",
    "id BETWEEN 3 AND 6",
    "id NOT BETWEEN 3 AND 12",
    "id IS NULL",
    "id IS NOT NULL",
    "5 < id",
    "-1 >= i",
    "i = 2147483647",
    "i > 2147483646",
    "i < -2147483647",
    "i > 2147483648",
    "i = 5.0",
    "i = '5'",
    "i = '7'",
    "i = ' 7 '",
    "i = '7.0'",
    "i > 7.5",
    "i < 0.5",
    "i = 1e1",
    "id = 10.0",
    "i IN (7, 8.0)",
    "i IS NULL",
    "NOT i IS NULL",
    "i = 8 OR d > 1",
    "i = 8 AND d IS NULL",
    "NOT (i > 0 AND i < 10)",
    "NOT (i > 0 OR s = '')",
    "id <=> 1",
    "i <=> NULL",
    "id + 1 > 5",
    "-id > 5",
    "abs(i) < 2",
    "i % 2 = 0",
    "i == 7",
    "(i = 7)",
    "((i >= 7)) AND NOT NOT (i <= 8)",
    "d > 1",
    "d < 0",
    "d = 0",
    "d = -0.0",
    "d <= -0.0",
    "d < 0.0",
    "d > 0",
    "d >= 0",
    "d = 'NaN'",
    "d <= 'NaN'",
    "d >= 'NaN'",
    "d > 'NaN'",
    "d < 'NaN'",
    "d != 'NaN'",
    "d IN ('NaN')",
    "d NOT IN ('NaN', 1.5)",
    "d = double('NaN')",
    "isnan(d)",
    "d = 'Infinity'",
    "d > 'Infinity'",
    "d < '-Infinity'",
    "d = '-Infinity'",
    "d >= 1e308",
    "d > 1e300",
    "d < -1e300",
    "d = 1e-300",
    "d < 1e-299",
    "d > 0 AND d < 1e-299",
    "d IS NULL",
    "d IS NOT NULL",
    "d BETWEEN -1 AND 1",
    "d = 2",
    "d = '2'",
    "d > 1.4999999",
    "f = 0.1",
    "f < 0.1000000015",
    "f <= 0.1",
    "f > 0.1",
    "f < 1.0000001",
    "f = 1.0000001",
    "f <= 1.0000001",
    "f >= 3.4e38",
    "f > 3.4e38",
    "f = 'NaN'",
    "f < 0",
    "f < 0.0",
    "f = 0",
    "f < 0.26",
    "f < 0.25",
    "f <= 0.25000001",
    "dec = 1.5",
    "dec = 1.50",
    "dec = 1.505",
    "dec < 1.505",
    "dec > 1.495",
    "dec <= 0.005",
    "dec >= 99999999.99",
    "dec > 99999999.985",
    "dec < -99999999.985",
    "dec = 5.555",
    "dec < 0.015",
    "dec = '1.5'",
    "dec < 1",
    "dec > 15",
    "dec IN (0.1, 5.56)",
    "dec = 0.1",
    "dec IS NULL",
    "b = true",
    "b = false",
    "b",
    "NOT b",
    "b IS NULL",
    "b != true",
    "b = 'true'",
    "b = 1",
    "b IN (true)",
]

_STRINGS = [
    "s = 'apple'",
    "s > 'apple'",
    "s < 'apple'",
    "s = ''",
    "s > ''",
    "s >= ''",
    "s != ''",
    "s < 'B'",
    "s >= 'a'",
    "s = 'Banana'",
    "s = 'banana'",
    "lower(s) = 'banana'",
    f"s = '{_LONG_A}'",
    f"s > '{_LONG_A[:32]}'",
    f"s >= '{_LONG_A[:33]}'",
    f"s > '{_LONG_A}'",
    f"s = '{_LONG_Z}'",
    f"s > '{'z' * 32}'",
    f"s >= '{'z' * 33}'",
    f"s = '{_EMOJI}'",
    f"s > '{_EMOJI[:16]}'",
    f"s >= '{_EMOJI[:31]}'",
    "s = 'ünïcödé'",
    "s > 'ü'",
    "s < 'ü'",
    "s > 'z'",
    "s > 'zzz'",
    "s = 'a''b'",
    "s = 'a\\\\b'",
    "s = 'a\\tb'",
    "s = 'a\\'b'",
    "s LIKE 'a\\\\b'",
    's = "apple"',
    "s = 'app' 'le'",
    "s LIKE 'a%'",
    "s LIKE 'a\\%b%'",
    "s LIKE '%b\\_c'",
    "s NOT LIKE 'a%'",
    "s LIKE ''",
    "s LIKE '_'",
    "s LIKE 'A%'",
    "s ILIKE 'A%'",
    "s RLIKE '^a'",
    "NOT s LIKE '%a%'",
    "s IN ('apple', '')",
    "s NOT IN ('apple', '')",
    "s NOT IN ('apple', NULL)",
    "s IS NULL",
    "s IS NOT NULL",
    "s BETWEEN 'a' AND 'b'",
    "s BETWEEN '' AND 'A'",
    "sn = 5",
    "sn > 9",
    "sn < 10",
    "sn = '5'",
    "sn > '9'",
    "sn = 7",
    "sn = 8",
    "sn IN (5, 10)",
    "sn < 0",
    "sn = 10.0",
    "sn BETWEEN 6 AND 12",
    "sn != 5",
    "sn = 1e1",
    "s = 5",
    "s > 1",
]

_TIMES = [
    "dt = '2024-01-01'",
    "dt > '2024-01-01'",
    "dt < '1970-01-01'",
    "dt = DATE '2000-02-29'",
    "dt >= DATE '2024-11-03'",
    "dt BETWEEN '2023-12-31' AND '2024-01-02'",
    "dt IN ('2024-01-05', '2024-03-10')",
    "dt NOT IN ('2024-01-05')",
    "dt = '2024-1-5'",
    "dt = '2024-01-05 10:00:00'",
    "dt < '2024-01-01 10:00:00'",
    "dt > TIMESTAMP '2024-11-02 23:00:00'",
    "dt IS NULL",
    "dt != '2024-01-01'",
    "dt = '20240101'",
    "dt > current_date()",
    "ts = '2024-01-01 00:00:00'",
    "ts >= '2024-01-01 05:00:00'",
    "ts < '2024-01-01 05:00:00'",
    "ts > '2024-01-01 04:59:59.9995'",
    "ts >= '2024-01-01T04:59:59.999999'",
    "ts <= '1969-12-31 23:59:59.9985'",
    "ts < '1969-12-31 23:59:59.999'",
    "ts = '1969-12-31 23:59:59.9985'",
    "ts > '2000-02-29 12:00:00'",
    "ts > '2000-02-29 12:00:00.0000005'",
    "ts = '2000-02-29 12:00:00.000001'",
    "ts = TIMESTAMP '2024-02-01 00:00:00'",
    "ts >= '2024-02-01'",
    "ts = '2024-02-01'",
    "ts > DATE '2024-02-01'",
    "ts = '2024-01-01 00:00:00Z'",
    "ts = '2024-01-01T00:00:00+00:00'",
    "ts = '2024-01-01 01:00:00+01:00'",
    "ts < '2024-01-01 01:00:00 +01:00'",
    "ts = '2024-01-01 00:00:00 UTC'",
    "ts > '2024-01-01 00:00'",
    "ts = '2024-01-01T00:00'",
    "ts = '2024-01-05 00:00:00.0005'",
    "ts = '2024-01-06 00:00:00.999'",
    "ts <= '2024-01-06 00:00:00.998'",
    "ts BETWEEN '2024-03-10 02:30:00' AND '2024-03-10 03:30:00'",
    "ts = '2024-03-10 02:30:00'",
    "ts = '2024-11-03 01:30:00'",
    "ts >= '2024-11-03 01:30:00'",
    "ts IN ('2024-01-01 00:00:00', '2024-02-02 00:00:00')",
    "ts IS NULL",
    "ts != '2024-02-02'",
    "tsn = '2024-01-01 00:00:00'",
    "tsn > '2024-03-10 02:00:00'",
    "tsn = '2024-03-10 02:30:00'",
    "tsn < '1969-12-31 23:59:59.999'",
    "tsn <= '1969-12-31 23:59:59.9985'",
    "tsn = '2024-01-05 00:00:00.0005'",
    "tsn >= '2024-11-03 01:30:00+05:00'",
    "tsn = TIMESTAMP '2024-02-01 00:00:00'",
    "tsn = '2024-02-01'",
    "tsn IS NOT NULL",
]

_NAMES = [
    "ID = 1",
    "Id > 5",
    "upper = 1",
    "UPPER > 5",
    "Upper >= 9",
    "`Upper` = 3",
    "`id` = 1",
    "`my col` > 50",
    "`MY COL` > 50",
    "`my col` IS NULL",
    "`my col` IN (10, 60)",
    "st.x > 5",
    "st.x IS NULL",
    "st IS NULL",
    "st IS NOT NULL",
    "st.y = 'a'",
    "`st`.`x` = 1",
    "D > 1",
    "S = 'apple'",
    "DT = '2024-01-01'",
    "TS = '2024-01-01 00:00:00'",
    "id = 1 AND UPPER = 1",
    "date = 1",
    "`date` = 1",
]

_PARTITIONS = [
    "ps = 'a'",
    "ps != 'a'",
    "ps = ''",
    "ps IS NULL",
    "ps IS NOT NULL",
    "pi IS NULL",
    "ps = '__HIVE_DEFAULT_PARTITION__'",
    "ps != '__HIVE_DEFAULT_PARTITION__'",
    "pi = 1",
    "pi > 1",
    "pi < 0",
    "pi = '1'",
    "pi = 1.0",
    "pi IN (1, NULL)",
    "pi NOT IN (1, 2)",
    "pi NOT IN (1, NULL)",
    "NOT pi = 1",
    "NOT (ps = 'a' AND pi = 1)",
    "ps = 'a' OR pi IS NULL",
    "ps IN ('a', 'b')",
    "ps NOT IN ('a')",
    "ps > 'a'",
    "ps < 'a'",
    "ps LIKE 'a%'",
    "ps NOT LIKE 'a%'",
    "ps LIKE '%'",
    "ps = 'ß'",
    "ps > 'z'",
    "ps = 'A'",
    "PS = 'a'",
    "PI = 1",
    "ps = 'a' AND v = 2",
    "ps = 'a' OR v = 7",
    "NOT (ps = 'a' OR v > 5)",
    "pi <=> NULL",
    "pi = 5 AND ps IS NULL",
    "pi BETWEEN 0 AND 3",
    "pi + 1 = 2",
    "ps = 1",
    "v > 5",
    "v = 7",
    "lower(ps) = 'a'",
    "ps = 'a' AND NOT ps = 'a'",
]

_DV = [
    "id = 12",
    "id = 11",
    "id < 5",
    "id BETWEEN 10 AND 30",
    "id NOT BETWEEN 10 AND 30",
    "s = 'k15'",
    "s > 'k27'",
    "s LIKE 'k2%'",
    "id IN (0, 3, 4)",
    "NOT id IN (0, 3, 4)",
    "id % 3 = 0",
    "id IS NULL",
]


def test_numbers_and_booleans(spark: Any, tables: dict[str, str]) -> None:
    found = _mismatches(spark, tables["wide"], _NUMBERS)
    assert not found, "\n".join(found)


def test_strings(spark: Any, tables: dict[str, str]) -> None:
    found = _mismatches(spark, tables["wide"], _STRINGS)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_dates_and_timestamps(spark: Any, tables: dict[str, str], zone: str) -> None:
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        found = _mismatches(spark, tables["wide"], _TIMES, with_read=zone != "Asia/Kolkata")
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert not found, "\n".join(found)


def test_names(spark: Any, tables: dict[str, str]) -> None:
    found = _mismatches(spark, tables["wide"], _NAMES)
    assert not found, "\n".join(found)


def test_partitions(spark: Any, tables: dict[str, str]) -> None:
    found = _mismatches(spark, tables["part"], _PARTITIONS)
    assert not found, "\n".join(found)


def test_deletion_vectors(spark: Any, tables: dict[str, str]) -> None:
    found = _mismatches(spark, tables["dv"], _DV)
    assert not found, "\n".join(found)


def test_where_is_filter(spark: Any, tables: dict[str, str]) -> None:
    from pyspark.sql import functions as F

    whole = read(spark, tables["wide"])
    for text in ("i > 7", "d <= 'NaN'", "s = ''", "ts >= '2024-01-01 05:00:00'"):
        assert _rows(whole.where(text)) == _rows(whole.filter(F.expr(text))), text
