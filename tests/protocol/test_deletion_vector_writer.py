"""Writing deletion vectors: the bitmap encoder, Z85, DV files and descriptors.

Every DV delta-spark wrote into the golden tables is re-encoded byte for byte from its decoded
row indexes; bitmaps of every container kind round-trip through deltalog's decoder; DV files
and inline descriptors read back through :func:`read_deletion_vector`.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from testpaths import GOLDEN_DIR

from deltalog.errors import DeletionVectorError
from deltalog.protocol.deletion_vector_writer import (
    DeletionVectorFile,
    deleted_union,
    inline_descriptor,
    z85_encode,
)
from deltalog.protocol.deletion_vectors import (
    dv_file_path,
    read_deletion_vector,
    z85_decode,
)
from deltalog.protocol.roaring import decode_bitmap
from deltalog.protocol.roaring_writer import encode_bitmap


def _golden_dvs() -> list[bytes]:
    found = []
    for path in sorted(GOLDEN_DIR.glob("**/deletion_vector_*.bin")):
        blob = path.read_bytes()
        position = 1
        while position < len(blob):
            size = int.from_bytes(blob[position : position + 4], "big")
            found.append(blob[position + 4 : position + 4 + size])
            position += 8 + size
    return found


def test_delta_spark_bitmaps_are_reencoded_byte_for_byte() -> None:
    dvs = _golden_dvs()
    if not dvs:
        pytest.skip(f"no golden deletion vectors under {GOLDEN_DIR}")
    assert len(dvs) >= 20
    for data in dvs:
        assert encode_bitmap(decode_bitmap(data)) == data


@pytest.mark.parametrize(
    "values",
    [
        [],
        [0],
        [3, 4, 7, 11, 18, 29],
        list(range(100_000)),  # runs: two run containers
        list(range(0, 200_000, 2)),  # bitmap containers (> 4096 values each)
        [*range(4096), 70_000, 70_001, *range(131_072, 140_000, 3)],
        [5, 1 << 32, (1 << 32) + 7, (3 << 32) + 1],  # several buckets, an empty one between
        sorted(random.Random(7).sample(range(3_000_000), 60_000)),
    ],
    ids=["empty", "one", "array", "runs", "bitmap", "mixed", "buckets", "random"],
)
def test_bitmaps_round_trip(values: list[int]) -> None:
    data = encode_bitmap(pa.array(values, pa.uint64()))
    assert decode_bitmap(data, cardinality=len(values)).to_pylist() == values


def test_containers_take_the_smallest_form() -> None:
    contiguous = encode_bitmap(pa.array(range(65_536), pa.uint64()))
    assert len(contiguous) < 40  # one run, not an 8 KiB bitmap
    sparse = encode_bitmap(pa.array(range(0, 8_000, 2), pa.uint64()))
    assert len(sparse) < 2 * 4_000 + 40  # an array container: 2 bytes a value


@pytest.mark.parametrize(
    "bad", [[2, 1], [1, 1], [-1, 3]], ids=["descending", "duplicate", "negative"]
)
def test_bad_row_indexes_are_refused(bad: list[int]) -> None:
    with pytest.raises(DeletionVectorError):
        encode_bitmap(pa.array(bad, pa.int64()))


def test_z85_round_trips_and_pads() -> None:
    for size in range(0, 13):
        data = bytes(random.Random(size).randrange(256) for _ in range(size))
        text = z85_encode(data)
        assert len(text) == (size + 3) // 4 * 5
        assert z85_decode(text, size) == data
    assert z85_encode(bytes.fromhex("864FD26FB559F75B")) == "HelloWorld"  # the spec's example


def test_dv_files_and_inline_descriptors_read_back(tmp_path: Path) -> None:
    first = pa.array([1, 5, 9], pa.uint64())
    second = pa.array(range(10, 5000), pa.uint64())
    dv_file = DeletionVectorFile("ab", uuid.UUID(int=7))
    one = dv_file.add(encode_bitmap(first), len(first))
    two = dv_file.add(encode_bitmap(second), len(second))
    assert one["offset"] == 1 and two["offset"] == 1 + 8 + one["sizeInBytes"]
    assert dv_file_path(one) == dv_file.relative_path
    assert dv_file.relative_path == f"ab/deletion_vector_{uuid.UUID(int=7)}.bin"
    blob = dv_file.to_bytes()
    assert blob[0] == 1
    assert read_deletion_vector(one, lambda _: blob, num_rows=10).to_pylist() == [1, 5, 9]
    assert read_deletion_vector(two, lambda _: blob, num_rows=5000).to_pylist() == list(
        range(10, 5000)
    )
    inline = inline_descriptor(encode_bitmap(first), 3)
    assert inline["storageType"] == "i" and "offset" not in inline
    assert read_deletion_vector(inline, lambda _: b"", num_rows=10).to_pylist() == [1, 5, 9]


def test_union_of_deleted_rows_ascends() -> None:
    current = pa.array([2, 8], pa.uint64())
    assert deleted_union(current, pa.array([9, 0, 5], pa.int64())).to_pylist() == [0, 2, 5, 8, 9]
    assert deleted_union(None, pa.array([3, 1], pa.int64())).to_pylist() == [1, 3]
