"""The read path: rows with partition values typed, filters, schema evolution, deletion vectors.

Row-for-row agreement with delta-spark on the golden tables is in
``interop_tests/test_read_golden_delta_spark.py``; here: the API on tables we write, the
deletion-vector decoder on bitmaps of every container kind, and named errors.
"""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import z85
from testpaths import GOLDEN_DIR

from deltalog import (
    DeletionVectorError,
    DeltaTable,
    InvalidPredicateError,
    MissingDataFileError,
    col,
)
from deltalog.protocol.deletion_vectors import (
    NATIVE_MAGIC,
    PORTABLE_MAGIC,
    decode_bitmap,
    dv_file_path,
    read_deletion_vector,
    z85_decode,
)

GOLDEN = GOLDEN_DIR


# ------------------------------------------------------------------ a test-only serializer
def _roaring32(values: list[int], runs: bool) -> bytes:
    """Standard 32-bit RoaringBitmap serialization (array/bitmap containers, or runs)."""
    keys = sorted({v >> 16 for v in values})
    containers = [[v & 0xFFFF for v in values if v >> 16 == k] for k in keys]
    header = b"".join(
        struct.pack("<HH", k, len(c) - 1) for k, c in zip(keys, containers, strict=True)
    )
    bodies = []
    for c in containers:
        if runs:
            pairs, start = [], c[0]
            for a, b in zip(c, [*c[1:], None], strict=True):
                if b != a + 1:
                    pairs.append((start, a - start))
                    start = b
            bodies.append(
                struct.pack("<H", len(pairs)) + b"".join(struct.pack("<HH", *p) for p in pairs)
            )
        elif len(c) > 4096:
            bits = bytearray(8192)
            for v in c:
                bits[v // 8] |= 1 << (v % 8)
            bodies.append(bytes(bits))
        else:
            bodies.append(struct.pack(f"<{len(c)}H", *c))
    if runs:
        cookie = struct.pack("<I", 12347 | (len(keys) - 1) << 16)
        flags = bytes([0xFF] * ((len(keys) + 7) // 8))
        offsets = b""
        if len(keys) >= 4:
            pos = 4 + len(flags) + 4 * len(keys) + 4 * len(keys)
            for body in bodies:
                offsets += struct.pack("<I", pos)
                pos += len(body)
        return cookie + flags + header + offsets + b"".join(bodies)
    pos = 8 + 8 * len(keys)
    offsets = b""
    for body in bodies:
        offsets += struct.pack("<I", pos)
        pos += len(body)
    return struct.pack("<II", 12346, len(keys)) + header + offsets + b"".join(bodies)


def _bitmap(values: list[int], *, runs: bool = False, native: bool = False) -> bytes:
    buckets = sorted({v >> 32 for v in values})
    if native:
        out = struct.pack("<iI", NATIVE_MAGIC, (buckets[-1] + 1) if buckets else 0)
        for b in range(buckets[-1] + 1 if buckets else 0):
            body = (
                _roaring32([v & 0xFFFFFFFF for v in values if v >> 32 == b], runs)
                if b in buckets
                else _roaring32([], runs)
            )
            out += struct.pack("<I", len(body)) + body
        return out
    out = struct.pack("<IQ", PORTABLE_MAGIC, len(buckets))
    for b in buckets:
        out += struct.pack("<I", b) + _roaring32(
            [v & 0xFFFFFFFF for v in values if v >> 32 == b], runs
        )
    return out


CASES = {
    "array": [3, 4, 7, 11, 18, 29, 70000],
    "bitmap": list(range(0, 20000, 2)),
    "runs": [*range(100, 5000), *range(70000, 70010)],
    "high-buckets": [5, (1 << 32) + 7, (3 << 32) + 9],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("native", [False, True], ids=["portable", "native"])
def test_bitmaps_of_every_container_kind_decode(case: str, native: bool) -> None:
    values = CASES[case]
    if native and case == "high-buckets":
        values = values[:2]
    data = _bitmap(values, runs=case == "runs", native=native)
    assert decode_bitmap(data).to_pylist() == values
    assert decode_bitmap(data, num_rows=values[-1] + 1, cardinality=len(values)).to_pylist() == (
        values
    )
    inline = {
        "storageType": "i",
        "pathOrInlineDv": z85(data),
        "sizeInBytes": len(data),
        "cardinality": len(values),
    }
    assert read_deletion_vector(inline, lambda _: b"", num_rows=1 << 40).to_pylist() == values


def test_on_disk_deletion_vectors_are_checked(tmp_path: Path) -> None:
    data = _bitmap([1, 2])
    blob = b"\x01" + struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab" + z85(b"\x11" * 16),
        "offset": 1,
        "sizeInBytes": len(data),
        "cardinality": 2,
    }
    assert dv_file_path(dv) == "ab/deletion_vector_11111111-1111-1111-1111-111111111111.bin"
    assert read_deletion_vector(dv, lambda _: blob, num_rows=3).to_pylist() == [1, 2]
    with pytest.raises(DeletionVectorError, match="checksum"):
        read_deletion_vector(dv, lambda _: blob[:-1] + b"\x00", num_rows=3)
    with pytest.raises(DeletionVectorError, match="descriptor says 3"):
        read_deletion_vector({**dv, "cardinality": 3}, lambda _: blob, num_rows=3)
    with pytest.raises(DeletionVectorError, match="magic"):
        decode_bitmap(b"\x00" * 12)
    with pytest.raises(DeletionVectorError):
        z85_decode("abc")


# ------------------------------------------------------------------ tables
def test_golden_deletion_vectors_leave_out_deleted_rows(tmp_path: Path) -> None:
    root = tmp_path / "dv"
    shutil.copytree(GOLDEN / "dv-partitioned-with-checkpoint", root)
    table = DeltaTable(str(root))
    files = table.files()
    written = sum(pq.ParquetFile(u).metadata.num_rows for u in table.file_uris())
    deleted = sum(dv["cardinality"] for dv in files.column("deletion_vector").to_pylist() if dv)
    assert (written, deleted) == (37, 2)  # what reading the files alone would return
    rows = table.to_pyarrow_table()
    assert rows.num_rows == 35


def _partitioned(tmp_path: Path) -> str:
    root = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("day", pa.date32())])
    table = DeltaTable.create(root, schema, partition_by=["p", "day"])
    for p, day in ((1, "2026-11-20"), (2, "2026-11-21")):
        os.makedirs(os.path.join(root, f"p={p}", f"day={day}"))
        pq.write_table(
            pa.table({"id": [p * 10, p * 10 + 1]}),
            os.path.join(root, f"p={p}", f"day={day}", "f.parquet"),
        )
        table.append_files([f"p={p}/day={day}/f.parquet"])
    return root


def test_rows_have_typed_partition_columns_filters_and_columns(tmp_path: Path) -> None:
    root = _partitioned(tmp_path)
    table = DeltaTable(root)
    rows = table.to_pyarrow_table()
    assert rows.schema.field("p").type == pa.int32()
    assert rows.schema.field("day").type == pa.date32()
    assert sorted(rows.column("id").to_pylist()) == [10, 11, 20, 21]
    only = table.to_pyarrow_table(filter=col("p") == 2, columns=["id", "day"])
    assert only.column_names == ["id", "day"]
    assert sorted(only.column("id").to_pylist()) == [20, 21]
    by_data = table.to_pyarrow_table(filter=col("id") > 10)
    assert sorted(by_data.column("id").to_pylist()) == [11, 20, 21]
    assert table.to_pyarrow_dataset(filter="p = 1").to_table().num_rows == 2


def test_bad_read_input_gets_named_errors(tmp_path: Path) -> None:
    root = _partitioned(tmp_path)
    table = DeltaTable(root)
    with pytest.raises(InvalidPredicateError, match="nope"):
        table.to_pyarrow_table(columns=["nope"])
    with pytest.raises(InvalidPredicateError, match="nope"):
        table.to_pyarrow_table(filter=col("nope") == 1)
    os.remove(os.path.join(root, "p=1", "day=2026-11-20", "f.parquet"))
    with pytest.raises(MissingDataFileError):
        DeltaTable(root).to_pyarrow_table()
