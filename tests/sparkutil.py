"""PySpark for the tests: one local[2] session per test process, with or without delta-spark.

A JVM holds one SparkContext, so the plain session (``spark`` fixture) and the delta-spark one
(``delta_spark`` fixture) are the same process-wide session: asking for delta-spark restarts it
with delta-spark's extension and catalog, and the plain fixture accepts either.

delta-spark's jars come from, in order:

* ``DELTALOG_DELTA_SPARK_JARS``: local jar files (``delta-spark_2.12-3.3.0.jar`` and
  ``delta-storage-3.3.0.jar``), separated by commas or the OS path separator;
* ``spark.jars.packages`` (``io.delta:delta-spark_2.12:3.3.0``), when Maven Central answers.

Without either the delta-spark tests skip, all with one reason. ``DELTALOG_REQUIRE_SERVERS=1``
(set by ``scripts/test.sh``) turns a missing PySpark or Java into a failure, but not missing
delta-spark jars, which a machine without Maven access cannot have.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DELTA_SPARK_VERSION = "3.3.0"
DELTA_PACKAGE = f"io.delta:delta-spark_2.12:{DELTA_SPARK_VERSION}"
JARS_ENV = "DELTALOG_DELTA_SPARK_JARS"
MAVEN_HOST = "repo1.maven.org"

_BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
}
_DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _missing(reason: str) -> None:
    if os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{reason} (DELTALOG_REQUIRE_SERVERS=1)")
    pytest.skip(reason)


def _new_session(extra: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[2]").appName("deltalog-tests")
    for key, value in {**_BASE_CONF, **extra}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _active() -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def delta_jars_config() -> tuple[dict[str, str] | None, str]:
    """Spark settings that load delta-spark, or ``None`` and the reason there are none."""
    given = os.environ.get(JARS_ENV, "").strip()
    if given:
        jars = [j for j in given.replace(os.pathsep, ",").split(",") if j.strip()]
        missing = [j for j in jars if not Path(j).is_file()]
        if missing:
            return None, f"{JARS_ENV} names jar files that do not exist: {missing}"
        return {"spark.jars": ",".join(jars)}, ""
    try:
        with socket.create_connection((MAVEN_HOST, 443), timeout=3):
            pass
    except OSError as exc:
        return None, (
            f"delta-spark {DELTA_SPARK_VERSION} jars unavailable: Maven Central ({MAVEN_HOST}) "
            f"is unreachable ({exc.__class__.__name__}) and {JARS_ENV} is not set; set it to "
            f"local copies of delta-spark_2.12-{DELTA_SPARK_VERSION}.jar and "
            f"delta-storage-{DELTA_SPARK_VERSION}.jar to run these tests"
        )
    return {"spark.jars.packages": DELTA_PACKAGE}, ""


@pytest.fixture
def spark() -> Iterator[Any]:
    """A local[2] SparkSession (plain, or delta-spark's if that one is running).

    Function-scoped so that a test after a delta-spark restart gets the live session; getting
    the active session is free.
    """
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _missing("pyspark is not installed (pip install 'deltalog[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("no Java runtime for Spark (java not on PATH, JAVA_HOME unset)")
    session = _active() or _new_session({})
    yield session


@pytest.fixture
def delta_spark() -> Iterator[Any]:
    """A local[2] SparkSession with delta-spark's extension and catalog, or a skip."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _missing("pyspark is not installed (pip install 'deltalog[spark]')")
    conf, reason = delta_jars_config()
    if conf is None:
        pytest.skip(reason)
    current = _active()
    if current is not None:
        if current.conf.get("spark.sql.extensions", "") == _DELTA_CONF["spark.sql.extensions"]:
            yield current
            return
        current.stop()  # one SparkContext per JVM: restart it with delta-spark loaded
    yield _new_session({**conf, **_DELTA_CONF})
