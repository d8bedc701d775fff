"""MERGE time: delta-spark vs ``deltalog.spark.merge``, side by side in one run.

Usage::

    .venv/bin/python benchmarks/bench_spark_merge.py [--scale F] [--repeat N] [--dv]
                                                    [--out DIR]

One local[2] Spark session with delta-spark (``spark.jars.packages``, or the jars named by
``DELTALOG_DELTA_SPARK_JARS``) writes a target table of ``10,000,000 * scale`` rows once
(delta-spark's writer; ``--dv`` turns ``delta.enableDeletionVectors`` on), then each engine
upserts a source of ``1,000,000 * scale`` rows into a fresh copy of it, engines alternating,
``--repeat`` times (default 3):

* ``delta-spark``: ``DeltaTable.forPath(spark, p).alias("t").merge(source.alias("s"),
  "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()``;
* ``deltalog.spark``: ``deltalog.spark.merge(spark, p, source, "t.id = s.id", ...)`` with the
  same clauses.

Half the source rows update target rows spread over the whole table (every file is touched),
half are new. Columns: ``id`` long, ``part`` string (30 values), ``x`` double, ``name`` string.
Reported: wall and CPU seconds (the driver and every process under it), medians, the ratio
deltalog / delta-spark, the rows each engine's table holds afterwards (checked equal: their
count and the XOR of every row's hash, read by delta-spark), and the load average before and
after (the 2-core machine is shared). Results go to ``<out>/spark_merge.json``
(``spark_merge_dv.json`` with ``--dv``).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import bench_spark_write  # noqa: E402  (its session and CPU accounting)
import harness  # noqa: E402

ENGINES = ("delta-spark", "deltalog.spark")


def _target(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.range(0, rows, numPartitions=2)
        .withColumn("part", (F.col("id") % 30).cast("string"))
        .withColumn("x", F.rand(2))
        .withColumn("name", F.concat(F.lit("user-"), F.col("id").cast("string")))
    )


def _source(spark: Any, rows: int, target_rows: int) -> Any:
    from pyspark.sql import functions as F

    half = rows // 2
    step = max(1, target_rows // max(1, half))
    ids = F.when(F.col("id") < half, F.col("id") * step).otherwise(F.lit(target_rows) + F.col("id"))
    return (
        spark.range(0, rows, numPartitions=2)
        .select(ids.alias("id"))
        .withColumn("part", (F.col("id") % 30).cast("string"))
        .withColumn("x", F.rand(3))
        .withColumn("name", F.concat(F.lit("new-"), F.col("id").cast("string")))
    )


def _merge(engine: str, spark: Any, path: str, source: Any) -> None:
    if engine == "delta-spark":
        from delta.tables import DeltaTable

        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(source.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        return
    import deltalog.spark

    (
        deltalog.spark.merge(spark, path, source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def _fingerprint(spark: Any, path: Path) -> list[int]:
    """The rows delta-spark reads from the table: their count and the XOR of their hashes."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").load(str(path))
    row = table.select(F.count(F.lit(1)), F.bit_xor(F.xxhash64(*table.columns))).first()
    return [int(row[0]), int(row[1])]


def run(args: argparse.Namespace) -> dict[str, Any]:
    spark = bench_spark_write._session()
    target_rows = int(10_000_000 * args.scale)
    source_rows = int(1_000_000 * args.scale)
    tmp = Path(tempfile.mkdtemp(prefix="bench-merge-"))
    master = tmp / "master"
    writer = _target(spark, target_rows).write.format("delta")
    if args.dv:
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.save(str(master))
    source = _source(spark, source_rows, target_rows)
    runs: dict[str, list[dict[str, float]]] = {e: [] for e in ENGINES}
    counts: dict[str, list[int]] = {}
    load_before = os.getloadavg()
    try:
        for attempt in range(args.repeat):
            for engine in ENGINES if attempt % 2 == 0 else ENGINES[::-1]:
                path = tmp / f"{engine}-{attempt}"
                shutil.copytree(master, path)
                before = bench_spark_write._tree_cpu()
                start = time.perf_counter()
                _merge(engine, spark, str(path), source)
                wall = time.perf_counter() - start
                cpu = bench_spark_write._tree_cpu_used(before, bench_spark_write._tree_cpu())
                runs[engine].append({"wall_s": wall, "cpu_s": cpu})
                counts[engine] = _fingerprint(spark, path)
                harness.log(f"{engine} #{attempt}: {wall:.1f}s wall, {cpu:.1f}s cpu")
                shutil.rmtree(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if len({tuple(c) for c in counts.values()}) != 1:
        raise SystemExit(f"the engines' tables differ: {counts}")
    medians = {
        e: {k: statistics.median(r[k] for r in runs[e]) for k in ("wall_s", "cpu_s")}
        for e in ENGINES
    }
    return {
        "target_rows": target_rows,
        "source_rows": source_rows,
        "deletion_vectors": args.dv,
        "runs": runs,
        "medians": medians,
        "ratio_wall": medians["deltalog.spark"]["wall_s"] / medians["delta-spark"]["wall_s"],
        "ratio_cpu": medians["deltalog.spark"]["cpu_s"] / medians["delta-spark"]["cpu_s"],
        "rows_after": {e: c[0] for e, c in counts.items()},
        "rows_equal": True,  # count and hash of every row checked above
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "environment": harness.environment(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dv", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    args = parser.parse_args()
    results = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "spark_merge_dv.json" if args.dv else "spark_merge.json"
    (out / name).write_text(json.dumps(results, indent=2))
    print(json.dumps({k: results[k] for k in results if k != "environment"}, indent=2))


if __name__ == "__main__":
    main()
