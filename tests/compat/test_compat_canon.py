"""deltalog.compat.canon: canonical texts that every engine's checksum is built from."""

from __future__ import annotations

import zlib
from decimal import Decimal

import pyarrow as pa

from deltalog.compat.canon import canon, column_checksums


def test_a_38_digit_decimal_is_its_exact_unscaled_integer() -> None:
    # Python's default decimal context keeps 28 digits: scaling 38 nines by it rounded them to
    # 10**38, so deltalog, delta-rs and delta-spark disagreed with Kernel (which is exact).
    t = pa.decimal128(38, 10)
    big = Decimal("9999999999999999999999999999.9999999999")
    assert canon(big, t) == "9" * 38
    assert canon(Decimal("-1234567890123456789012345678.0123456789"), t) == (
        "-12345678901234567890123456780123456789"
    )
    assert canon(Decimal("1E-10"), t) == "1"
    data = pa.table({"d": pa.array([big, None], t)})
    assert column_checksums(data)["d"] == {"count": 1, "nulls": 1, "crc": zlib.crc32(b"9" * 38)}
