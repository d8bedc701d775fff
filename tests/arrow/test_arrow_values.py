"""Arrow constants built from buffers equal what converting the Python values gives."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from deltalog.arrow import values as av


@pytest.mark.parametrize(
    ("start", "stop", "step"), [(0, 0, 1), (0, 5, 1), (3, 20, 4), (10, -3, -3), (0, 100_000, 7)]
)
@pytest.mark.parametrize("width", [64, 32])
def test_int_range_and_zeros(start: int, stop: int, step: int, width: int) -> None:
    t = pa.int64() if width == 64 else pa.int32()
    assert av.int_range(start, stop, step, width=width).equals(
        pa.array(range(start, stop, step), t)
    )
    n = len(range(start, stop, step))
    assert av.zeros(n, width=width).equals(pa.array([0] * n, t))


@pytest.mark.parametrize("values", [[], ["a"], ["part", "x=é", "", "\x00z"]])
def test_strings_and_scalars(values: list[str]) -> None:
    got = av.strings(values)
    got.validate(full=True)
    assert got.equals(pa.array(values, pa.string()))
    for v in values:
        assert av.string(v).equals(pa.scalar(v, pa.string()))
    assert av.int64(-(2**63)).equals(pa.scalar(-(2**63), pa.int64()))
    assert av.true().equals(pa.scalar(True))


_UTC = dt.UTC
_PLUS2 = dt.timezone(dt.timedelta(hours=2))
_D = decimal.Decimal
SCALAR_CASES = [
    (True, pa.bool_()),
    (False, pa.bool_()),
    (5, pa.int8()),
    (-129, pa.int8()),
    (127, pa.int8()),
    (2**63 - 1, pa.int64()),
    (-(2**63), pa.int64()),
    (255, pa.uint8()),
    (2**32 - 1, pa.uint32()),
    (0.1, pa.float32()),
    (0.1, pa.float64()),
    (3, pa.float64()),
    (-0.0, pa.float64()),
    (float("inf"), pa.float32()),
    ("é\x00x", pa.string()),
    ("", pa.string()),
    (dt.date(1, 1, 1), pa.date32()),
    (dt.date(9999, 12, 31), pa.date32()),
    (dt.date(1969, 12, 31), pa.date32()),
    (dt.datetime(2024, 1, 1, 5, 6, 7, 123456), pa.timestamp("us", tz="UTC")),
    (dt.datetime(2024, 1, 1, 5, tzinfo=_PLUS2), pa.timestamp("us", tz="UTC")),
    (dt.datetime(2024, 1, 1, 5, tzinfo=_PLUS2), pa.timestamp("us")),
    (dt.datetime(1, 1, 1), pa.timestamp("us", tz="UTC")),
    (dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC), pa.timestamp("us", tz="UTC")),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 1), pa.timestamp("us")),
    (_D("2.40"), pa.decimal128(10, 2)),
    (_D("2.4"), pa.decimal128(10, 2)),
    (_D("2.405"), pa.decimal128(10, 2)),
    (_D("-12345678.99"), pa.decimal128(10, 2)),
    (_D("123456789.99"), pa.decimal128(10, 2)),
    (5, pa.decimal128(10, 2)),
    (_D("NaN"), pa.decimal128(10, 2)),
    (_D("1E+2"), pa.decimal128(5, 0)),
    (_D("9" * 38), pa.decimal128(38, 0)),
    (_D("1E+38"), pa.decimal128(38, 0)),
    (_D("0." + "1" * 37), pa.decimal128(38, 37)),
    (_D("-0.00"), pa.decimal128(4, 2)),
]


@pytest.mark.parametrize(("value", "arrow_type"), SCALAR_CASES, ids=repr)
def test_scalar_is_what_pa_scalar_makes(value: object, arrow_type: pa.DataType) -> None:
    """Buffer-built literals equal pyarrow's conversion, and fail where it fails."""
    try:
        expected: object = pa.scalar(value, arrow_type)
    except (pa.ArrowInvalid, OverflowError):
        expected = pa.ArrowInvalid
    if expected is pa.ArrowInvalid:
        with pytest.raises(pa.ArrowInvalid):
            av.scalar(value, arrow_type)
        return
    got = av.scalar(value, arrow_type)
    assert got.type == arrow_type
    assert got.equals(expected)
    assert got.as_py() == expected.as_py()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "value", [_D("1E+999999"), _D("-1E+999998"), _D("1E-999999"), _D("123.456E+30")]
)
@pytest.mark.parametrize("scale", [0, 2])
def test_scalar_refuses_decimals_beyond_the_type_at_once(
    value: decimal.Decimal, scale: int
) -> None:
    with pytest.raises(pa.ArrowInvalid):  # not decimal.Overflow, nor a million-digit integer
        av.scalar(value, pa.decimal128(10, scale))


def test_scalar_rejects_what_does_not_fit_a_float() -> None:
    with pytest.raises(pa.ArrowInvalid):
        av.scalar(2**70, pa.float64())
    with pytest.raises(pa.ArrowInvalid):
        av.scalar(1e300, pa.float32())  # pa.scalar gives inf; a filter refuses both
