"""Null arrays that view shared zeros: equal to ``pa.nulls``, allocating nothing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltalog.checkpoints.nulls import null_array
from deltalog.checkpoints.schema import ADD, REMOVE

TYPES = [
    pa.int64(),
    pa.int32(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.binary(),
    pa.large_string(),
    pa.timestamp("us", "UTC"),
    pa.decimal128(10, 2),
    pa.date32(),
    pa.null(),
    pa.map_(pa.string(), pa.string()),
    pa.list_(pa.string()),
    pa.struct([("a", pa.list_(pa.int64())), ("b", pa.bool_())]),
    ADD,
    REMOVE,
    pa.dictionary(pa.int32(), pa.string()),  # no layout of its own: pa.nulls
]


@pytest.mark.parametrize("t", TYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 9, 1000])
def test_null_array_is_pa_nulls(t: pa.DataType, n: int) -> None:
    got = null_array(t, n)
    got.validate(full=True)
    assert got.type == t and len(got) == n and got.null_count == n
    assert got.equals(pa.nulls(n, t))
    assert got.to_pylist() == [None] * n
    both = pa.concat_arrays([got, pa.nulls(n, t)])
    both.validate(full=True)
    assert both.null_count == 2 * n
    if n:
        got.slice(1).validate(full=True)
        taken = got.take(pa.array([n - 1, 0], pa.int64()))
        taken.validate(full=True)
        assert taken.null_count == 2
        assert pc.is_null(got).to_pylist() == [True] * n


def test_null_array_allocates_nothing_and_cannot_be_written() -> None:
    before = pa.total_allocated_bytes()
    arrays = [null_array(ADD, 1_000_000) for _ in range(5)]
    assert pa.total_allocated_bytes() == before  # pa.nulls would take ~50 MB here
    assert all(not b.is_mutable for a in arrays for b in a.buffers() if b is not None)
    assert len(null_array(pa.int64(), 100_000_000)) == 100_000_000  # the map grows
