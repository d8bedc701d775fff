"""Quickstart: write a Delta table from pyarrow and pandas, overwrite a partition, read it back.

Run: ``python examples/python_quickstart.py [table path]`` (default: a temporary directory).
No Spark needed; the table is readable by delta-spark and delta-rs as well.
"""

from __future__ import annotations

import sys
import tempfile

import pandas as pd
import pyarrow as pa

import deltalog


def main(path: str) -> None:
    """Write, overwrite, read and time travel the table at ``path``."""
    # 1. Create the table from a pyarrow table, partitioned by day.
    readings = pa.table(
        {
            "day": ["2024-06-01", "2024-06-01", "2024-06-02"],
            "sensor": ["a", "b", "a"],
            "celsius": [21.5, 19.0, 23.25],
        }
    )
    created = deltalog.write_table(path, readings, partition_by=["day"])
    print(f"created version {created.version}: {created.rows} rows in {created.files_added} files")

    # 2. Append from pandas.
    late = pd.DataFrame({"day": ["2024-06-02"], "sensor": ["b"], "celsius": [22.0]})
    deltalog.write_table(path, late, mode="append")

    # 3. Overwrite one partition: the day's rows are replaced, the others stay.
    recalibrated = pa.table({"day": ["2024-06-01"], "sensor": ["a"], "celsius": [21.0]})
    deltalog.write_table(path, recalibrated, mode="overwrite", predicate="day = '2024-06-01'")

    # 4. Read: everything, filtered, as pandas.
    table = deltalog.DeltaTable(path)
    print(f"version {table.version()} holds {table.to_pyarrow_table().num_rows} rows")
    warm = table.to_pandas(filter="celsius >= 22 AND sensor IN ('a', 'b')")
    print(warm.sort_values("celsius").to_string(index=False))
    assert sorted(warm["celsius"]) == [22.0, 23.25]

    # 5. Time travel: the table as it was before the overwrite.
    before = deltalog.DeltaTable(path, version=1).to_pandas()
    assert len(before) == 4
    for entry in table.history():
        print(entry["version"], entry["operation"], entry["operationParameters"].get("mode"))
    assert table.check().ok
    print("quickstart done")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="deltalog-quickstart-"))
