"""Parquet bytes and write time: delta-spark vs ``deltalog.spark.write``, side by side in one run.

Usage::

    .venv/bin/python benchmarks/bench_spark_write.py [--rows N] [--repeat N] [--out DIR]
                                                    [--skip-python]

One local[2] Spark session with delta-spark (``spark.jars.packages``, or the jars named by
``DELTALOG_DELTA_SPARK_JARS``) builds a DataFrame of ``--rows`` (default 5,000,000) rows in 2
partitions and caches it, then each engine writes it as a new unpartitioned table, engines
alternating, ``--repeat`` times (default 3):

* ``delta-spark``: ``df.write.format("delta").save(path)``;
* ``deltalog.spark``: ``deltalog.spark.write(df, path)``.

Columns: ``id`` long (unique), ``part`` string (30 values), ``x`` double (random), ``y`` long
(1,000 values), ``m`` long (20,000 values: parquet-mr keeps its dictionary), ``s`` string
(100,000 values: parquet-mr writes it plain), ``ts`` timestamp (unique; delta-spark writes it as
INT96, 12 bytes a value, deltalog as INT64 microseconds) and ``name`` string (unique). Reported:
data-file bytes (the log excluded), files, row groups, wall seconds and CPU seconds of the write
(the driver process and every process under it: the JVM and Spark's Python workers; a worker
that exits during a write loses its last stretch), medians,
and the ratios deltalog / delta-spark; per column, the compressed bytes and encodings of each
engine's files. Each table is read back by deltalog (row count from the log) and the row
count checked.

Then, unless ``--skip-python``, the same rows as one pyarrow Table (collected from the cached
DataFrame) are written by ``deltalog.write_table`` and delta-rs's ``write_deltalake`` in this
process, alternating, ``--repeat`` times: bytes, files, wall and CPU seconds (of this process:
both engines write in it).

The load average before and after and the machine's CPU use by other processes during the run
(``/proc/stat``) are reported: the 2-core machine is shared. Results go to
``<out>/spark_write.json`` and ``.md``.
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
from collections.abc import Callable
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))  # this checkout's deltalog, in the driver and (below) the workers
import harness  # noqa: E402

SPARK_ENGINES = ("delta-spark", "deltalog.spark")
PYTHON_ENGINES = ("deltalog.write_table", "delta-rs")


def _session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The Python workers import deltalog from this checkout, as the driver does.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    import pyspark

    scala = "2.12" if int(pyspark.__version__.split(".")[0]) < 4 else "2.13"
    jars = os.environ.get("DELTALOG_DELTA_SPARK_JARS", "").strip()
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "3g",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }
    if jars:
        conf["spark.jars"] = jars
    else:
        conf["spark.jars.packages"] = f"io.delta:delta-spark_{scala}:{dist_version('delta-spark')}"
    builder = SparkSession.builder.master("local[2]").appName("bench-spark-write")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    df = (
        spark.range(0, rows, numPartitions=2)
        .withColumn("part", (F.rand(1) * 30).cast("int").cast("string"))
        .withColumn("x", F.rand(2))
        .withColumn("y", (F.rand(3) * 1000).cast("long"))
        .withColumn("m", (F.rand(4) * 20_000).cast("long"))
        .withColumn("s", (F.rand(5) * 100_000).cast("long").cast("string"))
        .withColumn("ts", F.timestamp_seconds(F.col("id") + F.lit(1_700_000_000)))
        .withColumn("name", F.concat(F.lit("user-"), F.col("id").cast("string")))
    )
    return df.cache()


def _tree_cpu() -> dict[int, float]:
    """CPU seconds of this process and of every live process under it, by pid."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    me = os.getpid()
    out = {}
    for pid in parents:
        p = pid
        while p not in (0, 1, me) and p in parents:
            p = parents[p]
        if p == me:
            out[pid] = _cpu_with_children(pid)
    return out


def _tree_cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the process tree used between two :func:`_tree_cpu` readings.

    A process that ended in between (a Spark Python worker) loses its last stretch; one that
    started counts whole.
    """
    total = 0.0
    for pid, cpu in after.items():
        earlier = before.get(pid, 0.0)
        total += cpu - earlier if cpu >= earlier else cpu  # a reused pid: a new process
    return total


def _cpu_with_children(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _layout(path: Path) -> dict[str, Any]:
    """Bytes, files, row groups, and per column bytes and encodings of the data files."""
    import pyarrow.parquet as pq

    files = [
        Path(d) / f
        for d, _, names in os.walk(path)
        if "_delta_log" not in d
        for f in names
        if f.endswith(".parquet")
    ]
    columns: dict[str, dict[str, Any]] = {}
    groups = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        groups += meta.num_row_groups
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                col = group.column(c)
                entry = columns.setdefault(
                    col.path_in_schema, {"bytes": 0, "encodings": set(), "type": col.physical_type}
                )
                entry["bytes"] += col.total_compressed_size
                entry["encodings"].update(col.encodings)
    for entry in columns.values():
        entry["encodings"] = "/".join(sorted(entry["encodings"]))
    return {
        "bytes": sum(f.stat().st_size for f in files),
        "files": len(files),
        "row_groups": groups,
        "columns": columns,
    }


def _rows_in_log(path: Path) -> int:
    import deltalog

    flat = deltalog.DeltaTable(str(path)).files(flatten_stats=True)
    return int(sum(flat.column("num_records").to_pylist()))


def _timed(
    write: Callable[[], Any], target: Path, rows: int, *, tree: bool = True
) -> dict[str, Any]:
    """Run ``write``: wall and CPU seconds (of the process tree, or of this process alone)."""
    shutil.rmtree(target, ignore_errors=True)
    tree0, self0 = _tree_cpu() if tree else {}, harness.self_cpu_s()
    busy0, wall0 = harness.system_busy_s(), time.perf_counter()
    write()
    wall = time.perf_counter() - wall0
    cpu = _tree_cpu_used(tree0, _tree_cpu()) if tree else harness.self_cpu_s() - self0
    busy = harness.system_busy_s() - busy0
    result: dict[str, Any] = {"wall": wall, "cpu": cpu, "others_cpu_s": max(0.0, busy - cpu)}
    result.update(_layout(target))
    result["rows_ok"] = _rows_in_log(target) == rows
    shutil.rmtree(target, ignore_errors=True)
    return result


def run(args: argparse.Namespace) -> dict[str, dict[str, list[dict[str, Any]]]]:
    import deltalog.spark

    if not deltalog.__file__ or not deltalog.__file__.startswith(str(ROOT)):
        raise SystemExit(f"deltalog is imported from {deltalog.__file__}, not from {ROOT}")

    spark = _session()
    df = _frame(spark, args.rows)
    harness.log(f"caching {args.rows:,} rows: {df.count():,}")
    where = spark.range(1).mapInArrow(_where_deltalog, "f string").collect()[0][0]
    harness.log(f"executors import deltalog from {where}")
    if not where.startswith(str(ROOT)):
        raise SystemExit(f"the executors import deltalog from {where}, not from {ROOT}")
    results: dict[str, dict[str, list[dict[str, Any]]]] = {"spark": {e: [] for e in SPARK_ENGINES}}
    with tempfile.TemporaryDirectory(prefix="bench-spark-write-") as tmp:
        writers: dict[str, Callable[[Path], Any]] = {
            "delta-spark": lambda p: df.write.format("delta").save(str(p)),
            "deltalog.spark": lambda p: deltalog.spark.write(df, str(p)),
        }
        for i in range(args.repeat + 1):  # the first round warms both up and is not kept
            order = SPARK_ENGINES if i % 2 == 0 else SPARK_ENGINES[::-1]
            for engine in order:
                harness.log(f"spark round {i}/{args.repeat}: {engine}")
                target = Path(tmp) / engine
                result = _timed(lambda e=engine, t=target: writers[e](t), target, args.rows)
                if i:
                    results["spark"][engine].append(result)
        if not args.skip_python:
            results["python"] = _python_rows(df, args, Path(tmp))
    spark.stop()
    return results


def _where_deltalog(batches: Any) -> Any:
    import pyarrow as pa

    import deltalog

    for _ in batches:
        pass
    yield pa.record_batch([pa.array([deltalog.__file__])], names=["f"])


def _python_rows(df: Any, args: argparse.Namespace, tmp: Path) -> dict[str, list[dict[str, Any]]]:
    import deltalake

    import deltalog

    table = df.toArrow()
    harness.log(f"collected {table.num_rows:,} rows as Arrow ({table.nbytes >> 20} MiB)")
    writers: dict[str, Callable[[Path], Any]] = {
        "deltalog.write_table": lambda p: deltalog.write_table(str(p), table),
        "delta-rs": lambda p: deltalake.write_deltalake(str(p), table),
    }
    out: dict[str, list[dict[str, Any]]] = {e: [] for e in PYTHON_ENGINES}
    for i in range(args.repeat):
        order = PYTHON_ENGINES if i % 2 == 0 else PYTHON_ENGINES[::-1]
        for engine in order:
            harness.log(f"python round {i + 1}/{args.repeat}: {engine}")
            target = tmp / engine
            out[engine].append(
                _timed(lambda e=engine, t=target: writers[e](t), target, table.num_rows, tree=False)
            )
    return out


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def report(results: dict[str, Any], env: dict[str, Any], out: Path) -> None:
    head = ["engine", "MB on disk", "files", "row groups", "wall s", "cpu s", "others' cpu s",
            "rows ok"]  # fmt: skip
    rows, ratios, columns = [], [], []
    pairs = {"spark": SPARK_ENGINES, "python": PYTHON_ENGINES}
    for group, by_engine in results.items():
        med: dict[str, dict[str, float | None]] = {}
        for engine, runs in by_engine.items():
            m = {k: _median(runs, k) for k in ("bytes", "files", "row_groups", "wall", "cpu",
                                                "others_cpu_s")}  # fmt: skip
            med[engine] = m
            rows.append([
                engine, harness.fmt(None if m["bytes"] is None else m["bytes"] / 1e6, ".2f"),
                harness.fmt(m["files"], ".0f"), harness.fmt(m["row_groups"], ".0f"),
                harness.fmt(m["wall"], ".2f"), harness.fmt(m["cpu"], ".2f"),
                harness.fmt(m["others_cpu_s"], ".1f"), str(all(r["rows_ok"] for r in runs)),
            ])  # fmt: skip
        ours, theirs = pairs[group][0], pairs[group][1]
        if group == "spark":
            ours, theirs = theirs, ours
        a, b = med[ours], med[theirs]
        for key, name in (("bytes", "bytes"), ("wall", "time"), ("cpu", "cpu")):
            if a[key] and b[key]:
                ratios.append([f"{ours} / {theirs}", name, f"{a[key] / b[key]:.3f}x"])
        first = {e: by_engine[e][0]["columns"] for e in (ours, theirs) if by_engine[e]}
        if len(first) == 2:
            for name in first[ours]:
                x, y = first[ours][name], first[theirs].get(name, {})
                columns.append([
                    group, name, f"{x['bytes'] / 1e6:.2f}", x["type"], x["encodings"],
                    f"{y.get('bytes', 0) / 1e6:.2f}", y.get("type", ""), y.get("encodings", ""),
                    f"{x['bytes'] / y['bytes']:.3f}x" if y.get("bytes") else "",
                ])  # fmt: skip
    col_head = ["run", "column", "deltalog MB", "type", "encodings", "other MB", "type",
                "encodings", "ratio"]  # fmt: skip
    ratio_head = ["engines", "measure", "ratio"]
    text = "\n\n".join([
        harness.text_table(head, rows), harness.text_table(ratio_head, ratios),
        harness.text_table(col_head, columns),
    ])  # fmt: skip
    print(text)
    print(f"load average before {env['load_before']}, after {env['load_after']}")
    out.mkdir(parents=True, exist_ok=True)
    dump = json.dumps({"env": env, "results": results}, indent=1, default=str)
    (out / "spark_write.json").write_text(dump)
    tables = [harness.md_table(h, r) for h, r in ((head, rows), (ratio_head, ratios),
                                                  (col_head, columns))]  # fmt: skip
    loads = f"load average before {env['load_before']}, after {env['load_after']}"
    (out / "spark_write.md").write_text("\n\n".join([*tables, loads]) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-python", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    args = parser.parse_args()
    env = harness.environment()
    env["load_before"] = os.getloadavg()
    results = run(args)
    env["load_after"] = os.getloadavg()
    harness.note_checkout_change(env)
    report(results, env, Path(args.out))


if __name__ == "__main__":
    main()
