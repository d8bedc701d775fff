"""The main job: build a partitioned Delta table on local disk from Parquet files and show it.

Until the Spark pipeline lands (issue 6), the "engine" is pyarrow writing Parquet files into
Hive-style partition directories; deltalog commits them, and delta-rs reads the result back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaTable
from deltalog.partitions import hive_partition_dir

SCHEMA = pa.schema(
    [
        ("event_id", pa.int64()),
        ("user", pa.string()),
        ("amount", pa.decimal128(10, 2)),
        ("at", pa.timestamp("us", tz="UTC")),
        ("day", pa.date32()),
        ("region", pa.string()),
    ]
)


def write_batch(root: Path, day: dt.date, region: str, first_id: int, rows: int) -> str:
    """Write one Parquet file into its partition directory; return its relative path."""
    rel_dir = hive_partition_dir({"day": day.isoformat(), "region": region})
    (root / rel_dir).mkdir(parents=True, exist_ok=True)
    rel = f"{rel_dir}/part-{uuid.uuid4()}.snappy.parquet"
    base = dt.datetime.combine(day, dt.time(), dt.UTC)
    table = pa.table(
        {
            "event_id": pa.array(range(first_id, first_id + rows), pa.int64()),
            "user": [f"user-{i % 7}" if i % 11 else None for i in range(rows)],
            "amount": pa.array([None] * 0 + [i * 1.25 for i in range(rows)]).cast(
                pa.decimal128(10, 2)
            ),
            "at": pa.array(
                [base + dt.timedelta(minutes=i) for i in range(rows)], pa.timestamp("us", tz="UTC")
            ),
        }
    )
    pq.write_table(table, root / rel, compression="snappy")
    return rel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", default="demo_output/events", help="table directory")
    args = parser.parse_args()
    root = Path(args.table).resolve()
    if root.exists():
        print(f"[main] removing the previous demo table at {root}")
        shutil.rmtree(root)

    table = DeltaTable.create(str(root), SCHEMA, partition_by=["day", "region"])
    print(f"[main] created {root} at version {table.version()}")
    next_id = 0
    days = [dt.date(2026, 11, d) for d in (18, 19, 20)]
    for day in days:
        paths = []
        for region in ("eu west", "us/east", "ünï"):
            paths.append(write_batch(root, day, region, next_id, 500))
            next_id += 500
        version = table.append_files(paths)
        print(f"[main] appended {len(paths)} files for {day} -> version {version}")

    # Backfill: rewrite the whole table as two compacted files.
    compacted = [write_batch(root, days[0], "eu west", 10_000, 1500)]
    version = table.overwrite_files(compacted)
    print(f"[main] overwrite with {len(compacted)} file(s) -> version {version}")

    print("\n[main] history (newest first):")
    for entry in table.history():
        print(f"  v{entry['version']:<3} {entry['operation']:<13} {entry['operationParameters']}")
    files = table.files()
    print(f"\n[main] {files.num_rows} live files, {sum(files.column('size').to_pylist())} bytes")

    try:
        import deltalake
    except ImportError:
        print("[main] delta-rs (deltalake) not installed; skipping the read-back")
        return
    rows = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    print(
        f"[main] delta-rs reads version {deltalake.DeltaTable(str(root)).version()}: "
        f"{rows.num_rows} rows"
    )
    assert rows.num_rows == 1500, rows.num_rows
    os.sync()


if __name__ == "__main__":
    main()
