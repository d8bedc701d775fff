"""Assembling the rows read from a file: data columns are passed on without a copy."""

from __future__ import annotations

import pyarrow as pa

from deltalog.protocol.schema import StructType
from deltalog.read import _assemble


def test_a_column_of_one_chunk_is_not_copied() -> None:
    """``ChunkedArray.combine_chunks`` copies even one chunk (45 MB in an optimize of 1M rows)."""
    data = pa.table({"id": pa.array(range(1000), pa.int64()), "s": ["x"] * 1000})
    schema = StructType.from_arrow(data.schema)
    out = _assemble(schema, [], data.schema, None, data, data.num_rows)
    assert out.equals(data)
    for name in ("id", "s"):
        before = data.column(name).chunk(0).buffers()
        after = out.column(name).chunk(0).buffers()
        assert [b.address for b in after if b] == [b.address for b in before if b]


def test_several_chunks_are_combined_into_one() -> None:
    data = pa.concat_tables([pa.table({"id": pa.array([1, 2], pa.int64())})] * 3)
    schema = StructType.from_arrow(data.schema)
    out = _assemble(schema, [], data.schema, None, data, data.num_rows)
    assert out.column("id").num_chunks == 1
    assert out.column("id").to_pylist() == [1, 2] * 3
