"""``files(flatten_stats=True)`` and ``files(filter=...)`` against delta-rs on a 100k-file log.

Usage::

    .venv/bin/python benchmarks/bench_flatten_stats.py [--files N] [--repeat N] [--data DIR]

Writes a table whose log holds ``N`` add actions (100 commits, statistics on a long, a string, a
timestamp, a date, a decimal and a nested int; one partition column; no data files), opens it
once per engine and times, median of ``--repeat`` runs: deltalog's
``files(flatten_stats=True)`` against delta-rs's ``get_add_actions(flatten=True)``, and deltalog's
stats-pruned ``files(filter=...)``. Prints one line per measurement (seconds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in [
            ("id", "long"),
            ("name", "string"),
            ("ts", "timestamp"),
            ("d", "date"),
            ("amount", "decimal(10,2)"),
            (
                "nested",
                {
                    "type": "struct",
                    "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}],
                },
            ),
            ("p", "string"),
        ]
    ],
}


def build(root: Path, files: int, commits: int = 100) -> None:
    """A log of ``files`` adds spread over ``commits`` commits."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    per = files // commits
    for v in range(commits + 1):
        lines = []
        if v == 0:
            lines.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
            lines.append(
                {
                    "metaData": {
                        "id": "bench",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": orjson.dumps(SCHEMA).decode(),
                        "partitionColumns": ["p"],
                        "configuration": {},
                        "createdTime": 0,
                    }
                }
            )
        else:
            for k in range(per):
                i = (v - 1) * per + k
                ts = base + dt.timedelta(minutes=i)
                stats = {
                    "numRecords": 100,
                    "minValues": {
                        "id": i * 100,
                        "name": f"n{i:08d}",
                        "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                        "d": ts.date().isoformat(),
                        "amount": i / 100,
                        "nested": {"x": i},
                    },
                    "maxValues": {
                        "id": i * 100 + 99,
                        "name": f"n{i:08d}z",
                        "ts": (ts + dt.timedelta(seconds=59))
                        .isoformat(timespec="milliseconds")
                        .replace("+00:00", "Z"),
                        "d": ts.date().isoformat(),
                        "amount": round(i / 100 + 1, 2),
                        "nested": {"x": i + 5},
                    },
                    "nullCount": {
                        "id": 0,
                        "name": i % 7,
                        "ts": 0,
                        "d": 0,
                        "amount": 0,
                        "nested": {"x": 0},
                    },
                }
                lines.append(
                    {
                        "add": {
                            "path": f"p={i % 10}/part-{i:08d}.parquet",
                            "partitionValues": {"p": str(i % 10)},
                            "size": 1000,
                            "modificationTime": 0,
                            "dataChange": True,
                            "stats": orjson.dumps(stats).decode(),
                        }
                    }
                )
        (log / f"{v:020d}.json").write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")


CPU: dict[float, float] = {}  # median wall time -> median CPU time of the same runs


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs (its median CPU time: ``CPU[wall]``)."""
    times, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    wall = statistics.median(times)
    CPU[wall] = statistics.median(cpus)
    return wall


def main(argv: list[str] | None = None) -> int:
    """Build the table and print the timings."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        root = Path(tmp) / "t"
        build(root, args.files)
        import deltalake

        from deltalog import DeltaTable

        ours = DeltaTable(str(root))
        ours.files()  # replay and load the stats column once, outside the timing
        theirs = deltalake.DeltaTable(str(root))
        n = ours.files(flatten_stats=True).num_rows
        assert n == len(theirs.get_add_actions(flatten=True)) == args.files
        t_ours = median_time(lambda: ours.files(flatten_stats=True), args.repeat)
        t_rs = median_time(lambda: theirs.get_add_actions(flatten=True), args.repeat)
        t_filter = median_time(
            lambda: ours.files(filter="id >= 500000 AND id < 510000 AND p = '3'"), args.repeat
        )
        kept = ours.files(filter="id >= 500000 AND id < 510000 AND p = '3'").num_rows
        t_open_ours = median_time(
            lambda: DeltaTable(str(root)).files(flatten_stats=True), args.repeat
        )
        t_open_rs = median_time(
            lambda: deltalake.DeltaTable(str(root)).get_add_actions(flatten=True), args.repeat
        )
        print(f"files={n}  (CPU: process time, all threads)")
        rows = [
            ("deltalog open + files(flatten_stats)  ", t_open_ours),
            ("delta-rs open + get_add_actions(True) ", t_open_rs),
            ("deltalog files(flatten_stats=True)    ", t_ours),
            ("delta-rs get_add_actions(flatten=True)", t_rs),
        ]
        for label, wall in rows:
            print(f"{label}  {wall:.3f} s  CPU {CPU[wall]:.3f} s")
        c_open = CPU[t_open_ours] / CPU[t_open_rs]
        print(f"open + flatten ratio {t_open_ours / t_open_rs:.2f}x (CPU {c_open:.2f}x)")
        print(f"flatten after open ratio {t_ours / t_rs:.2f}x")
        print(f"deltalog files(filter=id range & p)     {t_filter:.3f} s  ({kept} files kept)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
