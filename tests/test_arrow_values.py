"""Arrow constants built from buffers equal what converting the Python values gives."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltalog import arrow_values as av


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
