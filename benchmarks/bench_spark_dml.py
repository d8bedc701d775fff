"""DELETE of 1% of a table's rows: delta-spark's ``DELETE`` vs ``deltalog.spark.delete``.

Usage::

    .venv/bin/python benchmarks/bench_spark_dml.py [--rows N] [--files N] [--repeat N] [--out DIR]

One local[2] Spark session with delta-spark (the session of ``bench_spark_write.py``) writes a
table of ``--rows`` rows (default 10,000,000, the merge benchmark's target) in ``--files``
files (default 8) with delta-spark, once without and once with deletion vectors
(``delta.enableDeletionVectors``). For each, a fresh copy of the table is made per run and each
engine deletes the rows ``y = 7`` (``y`` uniform in 0..99: 1% of the rows, in every file),
engines alternating, ``--repeat`` times (default 3):

* ``delta-spark``: ``DELETE FROM delta.`<path>` WHERE y = 7``;
* ``deltalog.spark``: ``deltalog.spark.delete(spark, path, "y = 7")``.

Reported: wall and CPU seconds (this process and every process under it: the JVM and Spark's
Python workers) as medians, the ratio deltalog / delta-spark, and the rows left (checked equal
between engines: their count and the XOR of every row's hash, read by delta-spark). The load
average before and after is reported: the machine is shared.
Results go to ``<out>/spark_dml.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spark_write as base  # (also puts this checkout on sys.path)

ENGINES = ("delta-spark", "deltalog.spark")


def _write_master(spark: Any, path: Path, rows: int, files: int, dvs: bool) -> None:
    from pyspark.sql import functions as F

    df = (
        spark.range(0, rows, numPartitions=files)
        .withColumn("y", (F.rand(3) * 100).cast("long"))
        .withColumn("x", F.rand(2))
        .withColumn("name", F.concat(F.lit("user-"), F.col("id").cast("string")))
    )
    df.write.format("delta").save(str(path))
    if dvs:
        spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
        )


def _fingerprint(spark: Any, path: Path) -> list[int]:
    """The rows delta-spark reads from the table: their count and the XOR of their hashes."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").load(str(path))
    row = table.select(F.count(F.lit(1)), F.bit_xor(F.xxhash64(*table.columns))).first()
    return [int(row[0]), int(row[1])]


def _run(spark: Any, engine: str, path: Path) -> tuple[float, float]:
    import deltalog.spark

    cpu = base._tree_cpu()
    start = time.perf_counter()
    if engine == "delta-spark":
        spark.sql(f"DELETE FROM delta.`{path}` WHERE y = 7")
    else:
        deltalog.spark.delete(spark, str(path), "y = 7")
    wall = time.perf_counter() - start
    return wall, base._tree_cpu_used(cpu, base._tree_cpu())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    spark = base._session()
    results: dict[str, Any] = {"rows": args.rows, "files": args.files, "runs": {}}
    scratch = Path(tempfile.mkdtemp(prefix="bench-spark-dml-"))
    try:
        for dvs in (False, True):
            label = "deletion-vectors" if dvs else "copy-on-write"
            master = scratch / f"master-{label}"
            _write_master(spark, master, args.rows, args.files, dvs)
            timings: dict[str, list[tuple[float, float]]] = {e: [] for e in ENGINES}
            left: dict[str, list[int]] = {}
            for attempt in range(args.repeat):
                for engine in ENGINES if attempt % 2 == 0 else ENGINES[::-1]:
                    copy = scratch / f"{label}-{engine}-{attempt}"
                    shutil.copytree(master, copy)
                    timings[engine].append(_run(spark, engine, copy))
                    left[engine] = _fingerprint(spark, copy)
                    shutil.rmtree(copy)
            assert len({tuple(v) for v in left.values()}) == 1, left
            summary = {
                e: {
                    "wall_s": statistics.median(w for w, _ in t),
                    "cpu_s": statistics.median(c for _, c in t),
                }
                for e, t in timings.items()
            }
            summary["ratio"] = {
                k: summary["deltalog.spark"][k] / summary["delta-spark"][k]
                for k in ("wall_s", "cpu_s")
            }
            summary["rows_left"] = left["delta-spark"][0]
            summary["rows_equal"] = True  # count and hash of every row, checked above
            results["runs"][label] = summary
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()
    results["load_before"] = load_before
    results["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spark_dml.json").write_text(json.dumps(results, indent=2))
    lines = [
        f"# Spark DELETE of 1%: {args.rows} rows, {args.files} files",
        "",
        "| table | engine | wall s | CPU s |",
        "|---|---|---|---|",
    ]
    for label, summary in results["runs"].items():
        for engine in (*ENGINES, "ratio"):
            s = summary[engine]
            lines.append(f"| {label} | {engine} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} |")
    lines.append(f"\nload average before {load_before}, after {results['load_after']}")
    (args.out / "spark_dml.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
