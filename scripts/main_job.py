"""The main job: a PySpark pipeline committing into a local, partitioned Delta table.

On Spark ``local[2]`` it:

1. creates a table partitioned by ``day`` from a first batch;
2. runs two writers at once, released together by a barrier: a streaming-style appender that
   commits micro-batches for today (idempotent through ``app_id``/``app_version``; one batch is
   deliberately re-sent and skipped) and a backfill that rewrites the three previous days one by
   one with ``replace_where``. They touch different partitions, so neither ever conflicts;
3. registers the output of a plain ``df.write.parquet(...)`` job as one more commit;
4. prints the history, the checkpoint, and the row counts per partition from the log's stats;
5. reads the table back with deltalog (and delta-rs where it is installed) and checks it sees
   exactly the same counts;
6. writes the table's report page and prints where the table is and the commands to look at it.

Spark says only what goes wrong: its log4j output is at ERROR level
(``scripts/spark-log4j2.properties``), without stage progress bars, and PySpark's notice
about pandas 3 is silenced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from deltalog import DeltaTable
from deltalog.cli import main as deltalog_cli
from deltalog.report import write_report
from deltalog.spark import write

# PySpark 4.2 warns on every pandas conversion that it "does not yet fully support pandas >=
# 3.0.0"; the job's conversions (mapInArrow results) are ones it does support.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")

TODAY = dt.date(2026, 11, 21)
BACKFILL_DAYS = [TODAY - dt.timedelta(days=n) for n in (3, 2, 1)]
STREAM_BATCHES = 12
ROWS_PER_BATCH = 5_000
ROWS_PER_BACKFILL_DAY = 20_000
APP_ID = "events-stream"


def log(who: str, message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] [{who}] {message}", flush=True)


#: Lines the JVM prints at start whatever the log level: the JVM's notice of Spark 4's vector
#: module, and Spark's note, as PySpark counts as a shell, that the shell's level is WARN.
_NOTICES = (
    b"WARNING: Using incubator modules",
    b"Setting default log level to",
    b"To adjust logging level use sc.setLogLevel",
)


def _forward(stream: Any) -> None:
    """Copy the JVM's stderr (log4j at ERROR level, Python workers) to ours, minus notices."""
    for line in iter(stream.readline, b""):
        if not line.startswith(_NOTICES):
            sys.stderr.buffer.write(line)
            sys.stderr.flush()


def spark_session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    log4j = Path(__file__).resolve().with_name("spark-log4j2.properties")
    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("deltalog-main-job")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.as_uri()}")
        .set("spark.sql.shuffle.partitions", "4")
        .set("spark.sql.session.timeZone", "UTC")
    )
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_forward, args=(gateway.proc.stderr,), daemon=True).start()
    spark = SparkSession(SparkContext(conf=conf, gateway=gateway))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def events(spark: Any, day: dt.date, first_id: int, rows: int, source: str) -> Any:
    """``rows`` synthetic events for ``day``, ids from ``first_id``."""
    from pyspark.sql import functions as F

    start = dt.datetime.combine(day, dt.time(), dt.UTC)
    return spark.range(first_id, first_id + rows, numPartitions=2).select(
        F.col("id").alias("event_id"),
        F.concat(F.lit("user-"), (F.col("id") % 97).cast("string")).alias("user"),
        F.when(F.col("id") % 13 == 0, None)
        .otherwise((F.col("id") % 1000) * F.lit(1.25))
        .cast("decimal(10,2)")
        .alias("amount"),
        (F.lit(int(start.timestamp())) + F.col("id") % 86_400).cast("timestamp").alias("at"),
        F.lit(source).alias("source"),
        F.lit(day).alias("day"),
    )


def streamer(spark: Any, uri: str, barrier: threading.Barrier, errors: list[BaseException]) -> None:
    try:
        barrier.wait()
        for batch in range(1, STREAM_BATCHES + 1):
            df = events(spark, TODAY, 1_000_000 + batch * ROWS_PER_BATCH, ROWS_PER_BATCH, "stream")
            result = write(df, uri, mode="append", app_id=APP_ID, app_version=batch)
            log("stream", f"micro-batch {batch:>2} -> v{result.version} ({result.rows} rows)")
            if batch == 5:  # the driver crashed after committing, and the batch is re-sent
                again = write(df, uri, mode="append", app_id=APP_ID, app_version=batch)
                log("stream", f"micro-batch {batch:>2} re-sent -> skipped={again.skipped}")
                assert again.skipped
    except BaseException as exc:
        errors.append(exc)
        raise


def backfill(spark: Any, uri: str, barrier: threading.Barrier, errors: list[BaseException]) -> None:
    try:
        barrier.wait()
        for n, day in enumerate(BACKFILL_DAYS):
            df = events(
                spark, day, 5_000_000 + n * ROWS_PER_BACKFILL_DAY, ROWS_PER_BACKFILL_DAY, "backfill"
            )
            result = write(df, uri, mode="overwrite", predicate=f"day = '{day}'")
            log(
                "backfill",
                f"day {day} replaced -> v{result.version} ({result.rows} rows, "
                f"{result.files_removed} files replaced)",
            )
    except BaseException as exc:
        errors.append(exc)
        raise


def counts_from_log(table: DeltaTable) -> Counter[str]:
    """Rows per ``day`` partition, from the ``numRecords`` stats of the live files."""
    files = table.files().select(["partition_values", "stats"]).to_pylist()
    out: Counter[str] = Counter()
    for f in files:
        day = dict(f["partition_values"])["day"]
        out[str(day)] += int(orjson.loads(f["stats"])["numRecords"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", default="demo_output/events", help="table directory")
    args = parser.parse_args()
    root = Path(args.table).resolve()
    if root.exists():
        log("main", f"removing the previous demo table at {root}")
        shutil.rmtree(root)
    uri = str(root)

    log("main", "starting Spark (local[2])")
    started = time.monotonic()
    spark = spark_session()
    log("main", f"Spark {spark.version} started in {time.monotonic() - started:.1f} s")

    # 1. The table: created by the first write, from the DataFrame's schema.
    first = events(spark, BACKFILL_DAYS[0], 0, 30_000, "initial").unionByName(
        events(spark, BACKFILL_DAYS[1], 30_000, 30_000, "initial")
    )
    result = write(first, uri, partition_by=["day"])
    log("main", f"created {uri}; initial load -> v{result.version} ({result.rows} rows)")

    # 2. Two concurrent writers.
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=streamer, args=(spark, uri, barrier, errors), name="stream"),
        threading.Thread(target=backfill, args=(spark, uri, barrier, errors), name="backfill"),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"a writer failed: {errors[0]!r}")

    # 3. A plain Spark Parquet job's output, registered as one commit.
    legacy_dir = root / "import-0001"
    events(spark, TODAY, 9_000_000, 2_500, "import").write.partitionBy("day").parquet(
        str(legacy_dir)
    )
    table = DeltaTable(uri)
    version = table.append_files([str(legacy_dir)])
    log("main", f"registered the Spark output {legacy_dir.name}/ -> v{version}")

    # 4. What the log says.
    table = DeltaTable(uri)
    print("\nhistory (newest first):", flush=True)
    deltalog_cli(["history", uri])
    checkpoint = orjson.loads((root / "_delta_log" / "_last_checkpoint").read_bytes())
    print(f"\ncheckpoint: version {checkpoint['version']} ({checkpoint.get('size')} actions)")
    expected = counts_from_log(table)
    print(f"\nrows per partition at v{table.version()} (from the log's stats):")
    for day in sorted(expected):
        print(f"  day={day}  {expected[day]:>7,}")
    print(f"  total       {sum(expected.values()):>7,}")

    want = {str(d): ROWS_PER_BACKFILL_DAY for d in BACKFILL_DAYS}
    want[str(TODAY)] = STREAM_BATCHES * ROWS_PER_BATCH + 2_500
    assert expected == want, (expected, want)

    # 5. Read back: deltalog's reader, and delta-rs where it is installed.
    import pyarrow.compute as pc

    def per_day(rows: Any) -> dict[str, int]:
        counts = pc.value_counts(rows.column("day").combine_chunks()).to_pylist()
        return {str(r["values"]): r["counts"] for r in counts}

    ours = per_day(table.to_pyarrow_table(columns=["day"]))
    assert ours == dict(expected), (ours, expected)
    print(f"\ndeltalog reads version {table.version()}: {sum(ours.values()):,} rows, as counted")
    try:
        import deltalake
    except ImportError:
        print("delta-rs (deltalake) is not installed here: its read-back is skipped")
    else:
        theirs = deltalake.DeltaTable(uri)
        seen = per_day(theirs.to_pyarrow_table(columns=["day"]))
        print(f"delta-rs reads version {theirs.version()}: {sum(seen.values()):,} rows")
        for day in sorted(seen):
            print(f"  day={day}  {seen[day]:>7,}")
        assert theirs.version() == table.version()
        assert seen == dict(expected), (seen, expected)
        print("delta-rs sees exactly the row counts deltalog committed.")
    spark.stop()

    # 6. Where the table is, and how to look at it.
    page = root.with_name(root.name + "-report.html")
    write_report(uri, page)
    cli = Path(sys.executable).with_name("deltalog")
    command = str(cli) if cli.exists() else f"{sys.executable} -m deltalog"
    print(f"\nThe table is at {uri} (version {table.version()}).")
    print(f"Its report (open it in a browser): {page}")
    print(f"Look at it with the deltalog command ({command}):")
    if cli.exists():
        print(f"  (or put {cli.parent} first on your PATH and type deltalog ...)")
    for args in ("describe", "history", "files --stats", "check", f"report -o {page}"):
        verb, _, rest = args.partition(" ")
        print(f"  {command} {verb} {uri}{' ' + rest if rest else ''}")


if __name__ == "__main__":
    main()
