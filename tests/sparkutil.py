"""PySpark for the tests: one local[2] session per test process, with delta-spark loaded.

Every test that asks for ``spark`` or ``delta_spark`` gets the same process-wide session, which
carries delta-spark's extension and catalog, so no test restarts the JVM. delta-spark's jars are
resolved by Spark's Ivy through ``spark.jars.packages`` from Maven Central (cached under the
home directory, so only the first run downloads), matched to what is installed:
``io.delta:delta-spark_<scala>:<version of the delta-spark Python package>``, Scala 2.12 for
Spark 3.5 and 2.13 for Spark 4. ``DELTALOG_DELTA_SPARK_JARS`` (local jar files, comma-separated)
overrides the download.

``DELTALOG_REQUIRE_SERVERS=1`` (set by ``scripts/test.sh``) turns a missing PySpark or Java into
a failure, and ``DELTALOG_REQUIRE_DELTA_SPARK=1`` (also set there) turns jars that cannot be
resolved into a failure instead of a skip.

The session is kept small for 2 cores: 2 shuffle partitions and 2 snapshot partitions
(delta-spark's default of 50 makes every snapshot a 50-task job).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import pyarrow as pa

JARS_ENV = "DELTALOG_DELTA_SPARK_JARS"
REQUIRE_ENV = "DELTALOG_REQUIRE_DELTA_SPARK"

_BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}
_DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
_unavailable: list[str] = []  # why delta-spark could not be loaded, once known


def spark_line() -> tuple[str, str]:
    """The installed PySpark version and the Scala version its jars are built for."""
    import pyspark

    major = int(pyspark.__version__.split(".")[0])
    return pyspark.__version__, "2.12" if major < 4 else "2.13"


def delta_spark_version() -> str:
    """The installed delta-spark Python package's version (its jars have the same one)."""
    return dist_version("delta-spark")


def delta_package() -> str:
    """Maven coordinates of the delta-spark jar matching the installed Spark line."""
    return f"io.delta:delta-spark_{spark_line()[1]}:{delta_spark_version()}"


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
        package = delta_package()
    except PackageNotFoundError:
        return (
            None,
            "the delta-spark Python package is not installed (pip install 'deltalog[test]')",
        )
    return {"spark.jars.packages": package}, ""


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _missing("pyspark is not installed (pip install 'deltalog[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("no Java runtime for Spark (java not on PATH, JAVA_HOME unset)")


def _delta_unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"delta-spark unavailable: {reason} ({REQUIRE_ENV}=1)")
    pytest.skip(f"delta-spark unavailable: {reason}")


def _session(with_delta: bool) -> Any | None:
    """The process-wide session; started with delta-spark unless its jars cannot be had."""
    current = _active()
    if current is not None:
        return current
    if not _unavailable:
        conf, reason = delta_jars_config()
        if conf is not None:
            try:
                return _new_session({**conf, **_DELTA_CONF})
            except Exception as exc:  # Ivy resolution or JVM start-up failed
                reason = f"{conf} did not start: {str(exc).strip()[:500]}"
        _unavailable.append(reason)
    if with_delta:
        return None
    return _new_session({})


@pytest.fixture
def spark() -> Iterator[Any]:
    """The process-wide local[2] SparkSession (with delta-spark where its jars can be had).

    Function-scoped so that each test gets the live session; getting it is free after the first.
    """
    _require_pyspark()
    yield _session(with_delta=False)


@pytest.fixture
def delta_spark() -> Iterator[Any]:
    """The process-wide local[2] SparkSession with delta-spark's extension and catalog."""
    _require_pyspark()
    session = _session(with_delta=True)
    if session is None or not has_delta(session):
        _delta_unavailable(_unavailable[0] if _unavailable else "session started without it")
    yield session


def mark_spark_items(items: list[pytest.Item]) -> None:
    """Mark every test that uses a Spark session ``spark`` (``-m spark`` selects them)."""
    for item in items:
        if {"spark", "delta_spark"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)


def has_delta(session: Any) -> bool:
    """Whether ``session`` was started with delta-spark's extension."""
    return bool(session.conf.get("spark.sql.extensions", "") == _DELTA_CONF["spark.sql.extensions"])


def spark_arrow(frame: Any) -> pa.Table:
    """A DataFrame's rows as an Arrow table, on PySpark 4 (``toArrow``) and 3.5 alike."""
    import pyarrow as pa

    if hasattr(frame, "toArrow"):  # PySpark 4
        out: pa.Table = frame.toArrow()
        return out
    from pyspark.sql.pandas.types import to_arrow_schema  # PySpark 3.5

    batches = frame._collect_as_arrow()
    return pa.Table.from_batches(batches, schema=None if batches else to_arrow_schema(frame.schema))
