"""Deletion vectors decoded straight to per-row flags: the same rows and the same refusals.

:func:`~deltalog.protocol.roaring.decode_deleted_flags` unpacks bitmap containers in place
instead of making their row indexes; it must agree with
:func:`~deltalog.protocol.roaring.decode_bitmap` on every container kind (array, bitmap, run;
portable and native formats; delta-spark's golden DVs) and refuse what it refuses.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from tableutil import z85
from test_deletion_vector_bounds import MALICIOUS, _descriptor
from test_deletion_vector_writer import _golden_dvs

from deltalog import DeletionVectorError
from deltalog.protocol.deletion_vectors import (
    live_mask,
    live_mask_of_flags,
    live_ranges,
    read_deleted_flags,
)
from deltalog.protocol.roaring import decode_bitmap, decode_deleted_flags
from deltalog.protocol.roaring_writer import encode_bitmap


def _flags_agree(data: bytes, rows: int) -> None:
    values = decode_bitmap(data, num_rows=rows).to_pylist()
    flags = decode_deleted_flags(data, num_rows=rows, cardinality=len(values))
    assert flags.dtype == np.bool_ and len(flags) == rows
    assert np.flatnonzero(flags).tolist() == values


def test_flags_of_every_container_kind_are_the_decoded_rows() -> None:
    rng = random.Random(37)
    shapes = [
        [3, 4, 7, 70_000],  # array containers
        list(range(0, 20_000, 2)),  # a bitmap container
        [*range(65_530, 65_536), *range(65_536, 70_000, 3)],  # bitmap after an array
        [*range(100, 5_000), *range(70_000, 70_010)],  # runs (the writer picks them)
        list(range(131_072)),  # two full containers
    ]
    shapes += [sorted(rng.sample(range(200_000), rng.randint(1, 30_000))) for _ in range(20)]
    for values in shapes:
        data = encode_bitmap(pa.array(values, pa.uint64()))
        for rows in (values[-1] + 1, values[-1] + 70_000):
            _flags_agree(data, rows)


def test_flags_of_delta_spark_dvs_are_the_decoded_rows() -> None:
    found = _golden_dvs()
    assert found
    for data in found:
        values = decode_bitmap(data).to_pylist()
        _flags_agree(data, (values[-1] + 1) if values else 10)


@pytest.mark.parametrize("case", [c for c, v in MALICIOUS.items() if v[2] <= 1 << 24])
def test_flags_refuse_what_the_decoder_refuses(case: str) -> None:
    data, cardinality, rows, message = MALICIOUS[case]
    descriptor, blob = _descriptor(data, cardinality, "file")
    with pytest.raises(DeletionVectorError, match=message):
        read_deleted_flags(descriptor, lambda _: blob, num_rows=rows)


def test_a_bitmap_container_past_the_row_count_is_refused() -> None:
    data = encode_bitmap(pa.array(range(0, 20_000, 2), pa.uint64()))
    with pytest.raises(DeletionVectorError, match="has 19998 rows"):
        decode_deleted_flags(data, num_rows=19_998)
    with pytest.raises(DeletionVectorError, match="cardinality"):
        decode_deleted_flags(data, num_rows=20_000, cardinality=9_999)
    inline = {"storageType": "i", "pathOrInlineDv": z85(data), "sizeInBytes": len(data)}
    assert read_deleted_flags(inline, lambda _: b"", num_rows=20_000).sum() == 10_000


def test_masks_and_live_ranges_of_flags_are_those_of_the_rows() -> None:
    rng = random.Random(38)
    for rows in [1, 7, 100, 1000]:
        for _ in range(30):
            deleted = sorted(rng.sample(range(rows), rng.randint(0, rows)))
            cuts = sorted(rng.sample(range(1, rows), rng.randint(0, min(rows - 1, 6))))
            spans = list(zip([0, *cuts], [*cuts, rows], strict=True))
            kept = [s for s in spans if rng.random() < 0.6]
            flags = np.zeros(rows, np.bool_)
            flags[deleted] = True
            array = pa.array(deleted, pa.uint64())
            assert live_mask_of_flags(flags).equals(live_mask(array, rows))
            assert live_mask_of_flags(flags, kept).equals(live_mask(array, rows, kept))
            gone = set(deleted)
            expected = [i for i, (a, b) in enumerate(spans) if set(range(a, b)) - gone]
            assert live_ranges(flags, spans) == expected
