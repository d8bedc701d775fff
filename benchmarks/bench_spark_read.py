"""Reading a table in Spark: delta-spark's ``format("delta")`` vs ``deltalog.spark.read``.

Usage::

    .venv/bin/python benchmarks/bench_spark_read.py [--scale S] [--repeat N] [--out DIR]

One local[2] Spark session with delta-spark (the session of ``bench_spark_write.py``) writes,
once, with delta-spark, a table of ``15,000,000 * --scale`` rows partitioned by ``p`` (20
values) in 200 data files (10 per partition): ``id`` long (unique, ascending, so the
statistics of an ``id`` range prune files), ``p`` int (``id`` in twentieths of the rows),
``x`` double (uniform 0..1), ``y`` long (0..999) and ``s`` string (10,000 values). Then, in
the same session, the engines alternate workload by workload, ``--repeat`` times (default 3;
a first round warms both up and is not kept):

* ``count``: ``load(path).count()`` vs ``deltalog.spark.read(spark, path).count()`` and
  ``deltalog.spark.count(spark, path)`` (from the log's ``numRecords``, as delta-spark's);
* ``part_agg``: ``p = 3 AND x < 0.5``, then ``sum(y), count(*)``: delta-spark's
  ``load(path).filter(...)``, deltalog's ``read(..., filter=...)`` (files pruned on the driver,
  rows filtered by Spark) and ``read(...).filter(...)`` (every file read, Spark filters);
* ``id_agg``: ``id`` in a 1% range (stats prune all files but about two), then the same
  aggregate, the same three ways.

Reported: wall and CPU seconds (this process and every process under it: the JVM and Spark's
Python workers), medians, the ratio to delta-spark, and whether each result equals
delta-spark's. The load average before and after and the CPU others used meanwhile
(``/proc/stat``) are reported: the 2-core machine is shared. Results go to
``<out>/spark_read.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spark_write as base  # (also puts this checkout on sys.path)
import harness

ROWS = 15_000_000
PARTITIONS = 20
FILES = 200
PART_FILTER = "p = 3 AND x < 0.5"


def _write_table(spark: Any, path: Path, rows: int) -> None:
    from pyspark.sql import functions as F

    df = (
        spark.range(0, rows, numPartitions=FILES)
        .withColumn("p", (F.col("id") * PARTITIONS / rows).cast("int"))
        .withColumn("x", F.rand(2))
        .withColumn("y", (F.rand(3) * 1000).cast("long"))
        .withColumn("s", F.concat(F.lit("s-"), (F.rand(5) * 10_000).cast("long").cast("string")))
    )
    # spark.range's 200 tasks hold 200 ascending id ranges, each inside one ``p``: one file a
    # task, 10 per partition value.
    df.write.format("delta").partitionBy("p").save(str(path))


def _workloads(spark: Any, path: str, rows: int) -> dict[str, dict[str, Callable[[], Any]]]:
    from pyspark.sql import functions as F

    import deltalog.spark

    lo, hi = rows // 2, rows // 2 + rows // 100
    id_filter = f"id >= {lo} AND id < {hi}"

    def agg(df: Any) -> tuple[Any, ...]:
        return tuple(df.agg(F.sum("y"), F.count(F.lit(1))).collect()[0])

    def ds() -> Any:
        return spark.read.format("delta").load(path)

    def dl(**kw: Any) -> Any:
        return deltalog.spark.read(spark, path, **kw)

    return {
        "count": {
            "delta-spark": lambda: ds().count(),
            "deltalog.spark": lambda: dl().count(),
            "deltalog.spark.count": lambda: deltalog.spark.count(spark, path),
        },
        "part_agg": {
            "delta-spark": lambda: agg(ds().filter(PART_FILTER)),
            "deltalog.spark filter=": lambda: agg(dl(filter=PART_FILTER)),
            "deltalog.spark .filter()": lambda: agg(dl().filter(PART_FILTER)),
        },
        "id_agg": {
            "delta-spark": lambda: agg(ds().filter(id_filter)),
            "deltalog.spark filter=": lambda: agg(dl(filter=id_filter)),
            "deltalog.spark .filter()": lambda: agg(dl().filter(id_filter)),
        },
    }


def _timed(fn: Callable[[], Any]) -> dict[str, Any]:
    tree0 = base._tree_cpu()
    busy0, wall0 = harness.system_busy_s(), time.perf_counter()
    value = fn()
    wall = time.perf_counter() - wall0
    cpu = base._tree_cpu_used(tree0, base._tree_cpu())
    busy = harness.system_busy_s() - busy0
    return {"wall": wall, "cpu": cpu, "others_cpu_s": max(0.0, busy - cpu), "value": value}


def run(args: argparse.Namespace) -> dict[str, dict[str, list[dict[str, Any]]]]:
    import deltalog

    if not deltalog.__file__ or not deltalog.__file__.startswith(str(base.ROOT)):
        raise SystemExit(f"deltalog is imported from {deltalog.__file__}, not from {base.ROOT}")
    rows = int(ROWS * args.scale)
    spark = base._session()
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-spark-read-") as tmp:
        path = Path(tmp) / "table"
        t0 = time.perf_counter()
        _write_table(spark, path, rows)
        files = len(deltalog.DeltaTable(str(path)).files(flatten_stats=True))
        harness.log(f"wrote {rows:,} rows in {files} files in {time.perf_counter() - t0:.1f} s")
        for name, engines in _workloads(spark, str(path), rows).items():
            results[name] = {e: [] for e in engines}
            order = list(engines)
            for i in range(args.repeat + 1):  # round 0 warms up and is not kept
                for engine in order if i % 2 == 0 else order[::-1]:
                    harness.log(f"{name} round {i}/{args.repeat}: {engine}")
                    result = _timed(engines[engine])
                    if i:
                        results[name][engine].append(result)
    spark.stop()
    return results


def report(results: dict[str, dict[str, list[dict[str, Any]]]], env: dict[str, Any],
           out: Path) -> None:  # fmt: skip
    head = ["workload", "engine", "wall s", "cpu s", "others' cpu s", "x delta-spark (wall)",
            "x delta-spark (cpu)", "result", "equal"]  # fmt: skip
    rows = []
    for name, by_engine in results.items():
        ref = by_engine["delta-spark"]
        ref_wall = statistics.median(r["wall"] for r in ref)
        ref_cpu = statistics.median(r["cpu"] for r in ref)
        for engine, runs in by_engine.items():
            wall = statistics.median(r["wall"] for r in runs)
            cpu = statistics.median(r["cpu"] for r in runs)
            others = statistics.median(r["others_cpu_s"] for r in runs)
            equal = all(r["value"] == ref[0]["value"] for r in runs)
            rows.append([
                name, engine, f"{wall:.2f}", f"{cpu:.2f}", f"{others:.1f}",
                f"{wall / ref_wall:.2f}x", f"{cpu / ref_cpu:.2f}x", str(runs[0]["value"]),
                str(equal),
            ])  # fmt: skip
    loads = f"load average before {env['load_before']}, after {env['load_after']}"
    print(harness.text_table(head, rows))
    print(loads)
    out.mkdir(parents=True, exist_ok=True)
    dump = json.dumps({"env": env, "results": results}, indent=1, default=str)
    (out / "spark_read.json").write_text(dump)
    (out / "spark_read.md").write_text(harness.md_table(head, rows) + "\n\n" + loads + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="rows = 15,000,000 * scale")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(base.ROOT / "benchmarks" / "out"))
    args = parser.parse_args()
    env = harness.environment()
    env["scale"] = args.scale
    env["load_before"] = os.getloadavg()
    results = run(args)
    env["load_after"] = os.getloadavg()
    harness.note_checkout_change(env)
    report(results, env, Path(args.out))


if __name__ == "__main__":
    main()
