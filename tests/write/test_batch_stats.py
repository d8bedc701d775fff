"""Statistics gathered while writing: timestamps (every unit, with and without a time zone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.protocol.schema import StructType
from deltalog.write.batch_stats import StatsCollector

#: Per unit: the smallest and largest value (before and after 1970) and their JSON bounds.
CASES = {
    "s": (-2, 1_714_979_289, "1969-12-31T23:59:58.000", "2024-05-06T07:08:09.000"),
    "ms": (-1_877, 1_714_979_289_987, "1969-12-31T23:59:58.123", "2024-05-06T07:08:09.987"),
    "us": (-1_876_544, 1_714_979_289_987_654, "1969-12-31T23:59:58.123", "2024-05-06T07:08:09.987"),
    "ns": (-1_876_543_211, 1_714_979_289_987_654_321, "1969-12-31T23:59:58.123",
           "2024-05-06T07:08:09.987"),
}  # fmt: skip


@pytest.mark.parametrize("unit", sorted(CASES))
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris"])
def test_timestamp_bounds_in_every_unit(unit: str, tz: str | None) -> None:
    low, high, low_json, high_json = CASES[unit]
    column = pa.array([high, None, low], pa.int64()).cast(pa.timestamp(unit, tz=tz))
    schema = StructType.from_arrow(pa.schema([("t", pa.timestamp("us", tz=tz))]))
    collector = StatsCollector(schema, [], {})
    collector.update(pa.table({"t": column}))
    stats = orjson.loads(collector.to_json())
    zone = "Z" if tz is not None or unit == "ns" else ""  # as the footer path (json_value)
    assert stats["minValues"]["t"] == low_json + zone
    assert stats["maxValues"]["t"] == high_json + zone
    assert stats["nullCount"]["t"] == 1


def test_timestamp_statistics_do_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow's ``as_py`` of a zoned timestamp imports pandas: ~0.2 s of each fresh process."""
    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table({"t": pa.array([1_704_067_200_000_000], pa.timestamp("us", "UTC"))}), path
    )
    code = (
        "import sys, pyarrow.parquet as pq\n"
        "from deltalog.protocol.schema import StructType\n"
        "from deltalog.write.batch_stats import StatsCollector\n"
        f"t = pq.ParquetFile({str(path)!r}).read()\n"  # (pa.array(..., zoned type) imports it)
        "assert 'pandas' not in sys.modules\n"
        "c = StatsCollector(StructType.from_arrow(t.schema), [], {})\n"
        "c.update(t)\n"
        "assert '2024-01-01T00:00:00.000Z' in c.to_json(), c.to_json()\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
