"""delta-spark as an engine in this process, through a SparkSession that is already running.

:class:`SessionSparkEngine` observes tables with :func:`deltalog.compat.spark_probe.observe_all`
in the caller's session instead of starting a PySpark process with a JVM of its own: a test
suite that has a delta-spark session anyway (deltalog's interop tests) saves the JVM's start
and delta-spark's warm-up. The session must carry delta-spark's SQL extension and catalog; its
own Hadoop settings apply (``storage_options`` are not used).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deltalog.compat.spark_engine import SparkEngine, pyspark_version


class SessionSparkEngine(SparkEngine):
    """delta-spark through the given session (named ``delta-spark`` like the process one)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def describe(self) -> str:
        """``delta-spark (this process's session, PySpark 4.2.0)``."""
        return f"delta-spark (this process's session, PySpark {pyspark_version()})"

    def command(self, request: Path, output: Path) -> list[str]:
        """Never used: the engine runs here."""
        raise NotImplementedError("SessionSparkEngine runs in this process")

    def run_here(
        self, tables: Sequence[Mapping[str, Any]], storage_options: Mapping[str, str]
    ) -> list[dict[str, Any]] | None:
        """Every table version of the request, observed through the session."""
        from deltalog.compat.spark_probe import observe_all

        del storage_options
        _make_active(self.spark)  # this thread's: delta-spark asks for the active session
        return observe_all(self.spark, tables)


def _make_active(spark: Any) -> None:
    """Make ``spark`` the JVM's active session in the calling thread (as PySpark itself does)."""
    if spark is None:
        return
    get_class = getattr(type(spark), "_get_j_spark_session_class", None)  # PySpark 4
    jvm = spark._jvm
    session_class = get_class(jvm) if get_class is not None else jvm.SparkSession
    session_class.setActiveSession(spark._jsparkSession)
