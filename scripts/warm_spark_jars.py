"""Resolve every package the tests hand to ``spark.jars.packages`` into Ivy's cache, once.

``scripts/test.sh`` runs the default line's Spark tests and the other test processes at the same
time; Ivy's cache (``~/.ivy2``) has no lock, so a first download in two JVMs at once could
leave a jar half copied. This script, run with each line's Python before the parallel part,
starts one local session with the superset the tests use (delta-spark, hadoop-aws and the SDK v1
DynamoDB client of ``interop_tests/s3_dynamodb_spark.py``), so later resolutions only read.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "interop_tests")]


def main() -> int:
    """Start and stop one session with the tests' packages; print what was resolved."""
    from pyspark.sql import SparkSession
    from s3_dynamodb_spark import packages

    wanted = packages()
    start = time.monotonic()
    session = (
        SparkSession.builder.master("local[1]")
        .appName("deltalog-warm-jars")
        .config("spark.ui.enabled", "false")
        .config("spark.jars.packages", wanted)
        .getOrCreate()
    )
    session.stop()
    print(f"[setup] Spark packages in Ivy's cache ({time.monotonic() - start:.0f} s): {wanted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
