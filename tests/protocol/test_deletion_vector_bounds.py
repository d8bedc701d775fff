"""Deletion vectors are bounded by their data file's rows before anything is expanded.

A run container of six bytes stands for 65,536 row indexes, so a DV of a few kilobytes can
claim billions of them. Every crafted DV here (run containers covering 2**32 values, a header
that lies about a run container, container and bucket counts the data cannot hold, a
cardinality that is not the file's or not the bitmap's, rows past the end of the file) must be
refused with :class:`DeletionVectorError` in well under 0.1 s of CPU and with memory in
proportion to the DV's bytes, both inline and in a DV file; valid DVs, delta-spark's golden
ones included, still read exactly.
"""

from __future__ import annotations

import os
import random
import struct
import time
import tracemalloc
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import write_commit, write_parquet, z85
from testpaths import GOLDEN_DIR

from deltalog import DeletionVectorError, DeltaTable
from deltalog.protocol.deletion_vectors import (
    NATIVE_MAGIC,
    PORTABLE_MAGIC,
    live_mask,
    read_deletion_vector,
)

GOLDEN = GOLDEN_DIR
#: CPU seconds and traced bytes (beyond what the DV's own size explains) a refusal may take.
MAX_SECONDS = 0.1
MAX_EXTRA_BYTES = 2 << 20


# ---------------------------------------------------------------- raw bitmap builders
def _runs_bitmap(containers: list[tuple[int, int, list[tuple[int, int]]]]) -> bytes:
    """A 32-bit RoaringBitmap of run containers: (key, header cardinality, [(start, length-1)])."""
    count = len(containers)
    out = struct.pack("<I", 12347 | (count - 1) << 16) + b"\xff" * ((count + 7) // 8)
    out += b"".join(struct.pack("<HH", key, card - 1) for key, card, _ in containers)
    bodies = [
        struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", *r) for r in runs)
        for _, _, runs in containers
    ]
    if count >= 4:
        pos = len(out) + 4 * count
        for body in bodies:
            out += struct.pack("<I", pos)
            pos += len(body)
    return out + b"".join(bodies)


def _full_runs(count: int) -> bytes:
    """``count`` containers, each one run over all 65,536 values: ``count * 2**16`` rows."""
    keys = np.arange(count, dtype="<u2")
    header = np.empty((count, 2), "<u2")
    header[:, 0], header[:, 1] = keys, 0xFFFF
    flags = b"\xff" * ((count + 7) // 8)
    bodies = np.tile(np.array([1, 0, 0xFFFF], "<u2"), count).tobytes()  # 1 run: start 0, len-1
    offsets = b""
    if count >= 4:
        start = 4 + len(flags) + 8 * count
        offsets = (np.arange(count, dtype="<u4") * 6 + start).astype("<u4").tobytes()
    cookie = struct.pack("<I", 12347 | (count - 1) << 16)
    return cookie + flags + header.tobytes() + offsets + bodies


def _array_bitmap(values: list[int], *, key: int = 0) -> bytes:
    """One array container holding ``values`` as given (no sorting: for malformed ones)."""
    header = struct.pack("<HH", key, len(values) - 1)
    offsets = struct.pack("<I", 8 + 8)
    return (
        struct.pack("<II", 12346, 1) + header + offsets + struct.pack(f"<{len(values)}H", *values)
    )


def _portable(*buckets: tuple[int, bytes]) -> bytes:
    return struct.pack("<IQ", PORTABLE_MAGIC, len(buckets)) + b"".join(
        struct.pack("<I", high) + body for high, body in buckets
    )


HUGE = 1 << 40  # a row count that bounds nothing, so the other checks are what refuses

#: name -> (bitmap bytes, descriptor cardinality, data file rows, message).
MALICIOUS: dict[str, tuple[bytes, int, int, str]] = {
    # Run containers covering all 2**32 values of a bucket (925 KB).
    "runs-2^32-honest-cardinality": (_portable((0, _full_runs(65536))), 1 << 32, 10, "deletes"),
    "runs-2^32-larger-than-file-allows": (_portable((0, _full_runs(65536))), 5, 10, "larger"),
    "runs-2^32-past-cardinality": (_portable((0, _full_runs(65536))), 5, HUGE, "cardinality"),
    # The issue's: 4 KB of run containers, 19 million rows.
    "runs-4kb-keys-past-rows": (_portable((0, _full_runs(300))), 299 << 16, 299 << 16, "has"),
    "runs-4kb-past-cardinality": (_portable((0, _full_runs(300))), 5, HUGE, "cardinality"),
    "run-longer-than-header": (
        _portable((0, _runs_bitmap([(0, 1, [(0, 0xFFFF)])]))),
        1,
        HUGE,
        "covers 65536",
    ),
    "runs-overlap": (
        _portable((0, _runs_bitmap([(0, 4, [(0, 1), (1, 1)])]))),
        4,
        HUGE,
        "overlapping",
    ),
    "run-past-container": (
        _portable((0, _runs_bitmap([(0, 3, [(0xFFFE, 2)])]))),
        3,
        HUGE,
        "overlapping",
    ),
    "65536-containers-in-4kb": (
        _portable((0, struct.pack("<I", 12347 | 0xFFFF << 16) + b"\xff" * 4000)),
        5,
        HUGE,
        "truncated",
    ),
    "2^31-containers": (_portable((0, struct.pack("<II", 12346, 1 << 31))), 5, HUGE, "claims"),
    "2^63-buckets": (struct.pack("<IQ", PORTABLE_MAGIC, 1 << 63) + b"\x00" * 64, 5, HUGE, "claims"),
    "2^32-native-buckets": (
        struct.pack("<II", NATIVE_MAGIC, (1 << 32) - 1) + b"\x00" * 64,
        5,
        HUGE,
        "claims",
    ),
    "buckets-past-rows": (
        _portable((0, _array_bitmap([1])), (1, _array_bitmap([1]))),
        2,
        1 << 20,
        "claims",
    ),
    "buckets-descending": (
        _portable((1, _array_bitmap([1])), (0, _array_bitmap([1]))),
        2,
        HUGE,
        "order",
    ),
    "containers-descending": (
        _portable((0, _runs_bitmap([(1, 1, [(0, 0)]), (0, 1, [(0, 0)])]))),
        2,
        HUGE,
        "order",
    ),
    "row-past-file": (_portable((0, _array_bitmap([3, 50]))), 2, 10, "has 10 rows"),
    "duplicate-rows": (_portable((0, _array_bitmap([3, 3]))), 2, 10, "ascending"),
    "cardinality-above-bitmap": (_portable((0, _array_bitmap([1, 2]))), 3, 10, "says 3"),
    "cardinality-below-bitmap": (_portable((0, _array_bitmap([1, 2]))), 1, 10, "cardinality"),
    "cardinality-above-file": (_portable((0, _array_bitmap([1, 2]))), 11, 10, "deletes 11"),
}


def _descriptor(data: bytes, cardinality: int, kind: str) -> tuple[dict[str, Any], bytes]:
    """A descriptor for ``data`` (inline, or at offset 1 of a DV file) and that file's bytes."""
    if kind == "inline":
        return {
            "storageType": "i",
            "pathOrInlineDv": z85(data),
            "sizeInBytes": len(data),
            "cardinality": cardinality,
        }, b""
    blob = b"\x01" + struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    return {
        "storageType": "u",
        "pathOrInlineDv": z85(uuid.UUID(int=7).bytes),
        "offset": 1,
        "sizeInBytes": len(data),
        "cardinality": cardinality,
    }, blob


_PROXIES: list[pa.MemoryPool] = []


def _measured(call: Callable[[], object]) -> tuple[Exception | None, float, int]:
    """What ``call`` raised, the CPU seconds it took and the peak bytes it allocated.

    Peak bytes are Python's (``tracemalloc``) plus Arrow's: the default pool is wrapped in a
    proxy for the call, whose high-water mark counts the buffers of every compute kernel.
    """
    default = pa.default_memory_pool()
    proxy = pa.proxy_memory_pool(default)
    # Buffers made through the proxy can outlive the call (held by a raised exception's
    # frames until the garbage collector frees them): freed after the proxy, they crashed
    # the interpreter. Proxies are therefore never freed.
    _PROXIES.append(proxy)
    pa.set_memory_pool(proxy)
    tracemalloc.start()
    started = time.process_time()
    raised: Exception | None = None
    try:
        call()
    except Exception as exc:  # returned for the test to check
        raised = exc
    finally:
        elapsed = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        pa.set_memory_pool(default)
    return raised, elapsed, peak + proxy.max_memory()


@pytest.mark.parametrize("kind", ["inline", "file"])
@pytest.mark.parametrize("case", list(MALICIOUS))
def test_malicious_deletion_vectors_are_refused_at_once(case: str, kind: str) -> None:
    data, cardinality, rows, message = MALICIOUS[case]
    descriptor, blob = _descriptor(data, cardinality, kind)
    raised, elapsed, peak = _measured(
        lambda: read_deletion_vector(descriptor, lambda _: blob, num_rows=rows)
    )
    assert isinstance(raised, DeletionVectorError), raised
    assert message in str(raised)
    assert elapsed < MAX_SECONDS, f"{elapsed:.3f} s"
    # Inline text is decoded once (a few bytes of work per character); nothing per claimed row.
    assert peak < MAX_EXTRA_BYTES + 16 * len(data), f"{peak} bytes"


def test_a_dv_larger_than_its_file_allows_is_refused_before_it_is_read() -> None:
    reads: list[str] = []
    descriptor = {
        "storageType": "u",
        "pathOrInlineDv": z85(uuid.UUID(int=7).bytes),
        "offset": 1,
        "sizeInBytes": 10**9,
        "cardinality": 1,
    }
    with pytest.raises(DeletionVectorError, match="larger than any bitmap of 10 rows"):
        read_deletion_vector(descriptor, lambda p: reads.append(p) or b"", num_rows=10)
    assert reads == []
    with pytest.raises(DeletionVectorError, match="is not a count"):
        read_deletion_vector({**descriptor, "cardinality": "x"}, lambda _: b"", num_rows=10)


def _mixed(containers: list[tuple[str, int, list[int]]]) -> bytes:
    """A 32-bit RoaringBitmap of (kind, key, sorted low values) containers, with run flags."""
    count = len(containers)
    flags = bytearray((count + 7) // 8)
    header, bodies = b"", []
    for i, (kind, key, low) in enumerate(containers):
        header += struct.pack("<HH", key, len(low) - 1)
        if kind == "run":
            flags[i // 8] |= 1 << (i % 8)
            bodies.append(struct.pack("<HHH", 1, low[0], low[-1] - low[0]))
        elif kind == "bitmap":
            bits = np.zeros(1 << 16, np.uint8)
            bits[low] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
        else:
            bodies.append(struct.pack(f"<{len(low)}H", *low))
    out = struct.pack("<I", 12347 | (count - 1) << 16) + bytes(flags) + header
    if count >= 4:
        pos = len(out) + 4 * count
        for body in bodies:
            out += struct.pack("<I", pos)
            pos += len(body)
    return out + b"".join(bodies)


@pytest.mark.parametrize("kind", ["inline", "file"])
def test_valid_large_deletion_vectors_expand_without_per_row_python_work(kind: str) -> None:
    """Two million deleted rows of every container kind, in two buckets, decoded in numpy."""
    evens = list(range(0, 1 << 16, 2))
    full = list(range(1 << 16))
    low = _mixed(
        [("bitmap", 0, evens), *[("run", k, full) for k in range(1, 31)], ("array", 40, [5, 9])]
    )
    high = _mixed([("array", 0, [1, 2, 3]), ("run", 7, list(range(100, 200)))])
    data = _portable((0, low), (1, high))
    expected = np.concatenate(
        [
            np.arange(0, 1 << 16, 2, dtype=np.uint64),
            np.arange(1 << 16, 31 << 16, dtype=np.uint64),
            np.array([40 << 16 | 5, 40 << 16 | 9], np.uint64),
            np.array([1, 2, 3], np.uint64) + (1 << 32),
            np.arange(100, 200, dtype=np.uint64) + (1 << 32 | 7 << 16),
        ]
    )
    descriptor, blob = _descriptor(data, len(expected), kind)
    started = time.process_time()
    deleted = read_deletion_vector(descriptor, lambda _: blob, num_rows=(1 << 32) + (8 << 16))
    assert time.process_time() - started < 0.5
    assert np.array_equal(deleted.to_numpy(), expected)


def test_live_mask_is_false_exactly_at_the_deleted_rows() -> None:
    rng = random.Random(29)
    for rows in [1, 2, 3, 8, 9, 17, 100]:
        for _ in range(50):
            deleted = sorted(rng.sample(range(rows), rng.randint(0, rows)))
            mask = live_mask(pa.array(deleted, pa.uint64()), rows)
            assert mask.to_pylist() == [i not in deleted for i in range(rows)], (rows, deleted)


# ---------------------------------------------------------------- through the table
def _dv_table(tmp_path: Path, rows: int, dv: dict[str, Any], blob: bytes) -> str:
    """A table whose one data file of ``rows`` rows carries ``dv`` (its file holds ``blob``)."""
    root = tmp_path / "t"
    DeltaTable.create(
        str(root),
        pa.schema([("id", pa.int64())]),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    write_parquet(root, "f.parquet", pa.table({"id": pa.array(range(rows), pa.int64())}))
    if blob:
        (root / f"deletion_vector_{uuid.UUID(int=7)}.bin").write_bytes(blob)
    add = {
        "path": "f.parquet",
        "partitionValues": {},
        "size": os.path.getsize(root / "f.parquet"),
        "modificationTime": 0,
        "dataChange": True,
        "stats": orjson.dumps({"numRecords": rows}).decode(),
        "deletionVector": dv,
    }
    write_commit(root, 1, [orjson.dumps({"add": add})])
    return str(root)


@pytest.mark.parametrize("kind", ["inline", "file"])
def test_reading_a_table_with_the_issues_dv_fails_fast(tmp_path: Path, kind: str) -> None:
    """The issue's 4 KB DV of run containers (46 s and 2.9 GiB before) on a 10-row file."""
    data = _portable((0, _full_runs(300)))
    dv, blob = _descriptor(data, 5, kind)
    table = DeltaTable(_dv_table(tmp_path, 10, dv, blob))
    raised, elapsed, peak = _measured(table.to_pyarrow_table)
    assert isinstance(raised, DeletionVectorError), raised
    assert elapsed < MAX_SECONDS * 5, f"{elapsed:.3f} s"  # includes opening the data file
    assert peak < MAX_EXTRA_BYTES * 4, f"{peak} bytes"


@pytest.mark.parametrize("kind", ["inline", "file"])
def test_reading_a_table_applies_a_large_valid_dv(tmp_path: Path, kind: str) -> None:
    rows = 300_000
    deleted = [*range(0, 70_000, 2), *range(100_000, 250_000), 299_999]
    containers = []
    for key in range((rows >> 16) + 1):
        low = [v & 0xFFFF for v in deleted if v >> 16 == key]
        if low:
            kind_of = "bitmap" if len(low) > 4096 else "array"
            containers.append((kind_of, key, low))
    data = _portable((0, _mixed(containers)))
    dv, blob = _descriptor(data, len(deleted), kind)
    table = DeltaTable(_dv_table(tmp_path, rows, dv, blob))
    ids = table.to_pyarrow_table().column("id").to_numpy()
    assert np.array_equal(ids, np.setdiff1d(np.arange(rows), np.array(deleted)))


# ---------------------------------------------------------------- delta-spark's DVs
@pytest.mark.parametrize(
    ("name", "live", "gone"),
    [
        ("dv-partitioned-with-checkpoint", 35, None),
        ("dv-with-columnmapping", 35, None),
        ("log-replay-dv-key-cases", 47, {0, 7, 14}),
    ],
)
def test_golden_deletion_vectors_still_read(name: str, live: int, gone: set[int] | None) -> None:
    if not GOLDEN.is_dir():
        pytest.skip(f"golden tables not found at {GOLDEN}")
    table = DeltaTable(str(GOLDEN / name))
    written = sum(pq.ParquetFile(u).metadata.num_rows for u in table.file_uris())
    dvs = [dv for dv in table.files().column("deletion_vector").to_pylist() if dv]
    assert dvs and written - sum(dv["cardinality"] for dv in dvs) == live
    rows = table.to_pyarrow_table()
    assert rows.num_rows == live
    if gone is not None:
        assert set(range(written)) - set(rows.column("id").to_pylist()) == gone
