"""delta-spark as an engine: one PySpark process for all tables of a run.

The process is :mod:`deltalog.compat.spark_probe`, with delta-spark's jars matched to the
installed PySpark line.

The jars are ``io.delta:delta-spark_<scala>:<version>`` through ``spark.jars.packages``: the
version of the installed ``delta-spark`` Python package, else :data:`DEFAULT_DELTA` for the
PySpark line (4.x: Scala 2.13 and 4.4.0; 3.5: Scala 2.12 and 3.3.2).
``DELTALOG_DELTA_SPARK_JARS`` (comma-separated jar files) replaces the download; a Maven
mirror in ``~/.m2/settings.xml`` becomes ``spark.jars.repositories``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path

from deltalog.compat.engines import Engine

JARS_ENV = "DELTALOG_DELTA_SPARK_JARS"
#: PySpark major.minor -> (Scala version, delta-spark version) when delta-spark is not installed.
DEFAULT_DELTA = {"3.5": ("2.12", "3.3.2"), "4": ("2.13", "4.4.0")}
HOW_TO_GET = "pip install pyspark delta-spark, and a Java runtime (java on PATH or JAVA_HOME)"


def pyspark_version() -> str | None:
    """The installed PySpark's version, or ``None``."""
    try:
        return dist_version("pyspark")
    except PackageNotFoundError:
        return None


def delta_coordinates(pyspark: str) -> str:
    """``io.delta:delta-spark_<scala>:<version>`` for a PySpark version."""
    major, minor = (int(x) for x in pyspark.split(".")[:2])
    scala, default = DEFAULT_DELTA["4"] if major >= 4 else DEFAULT_DELTA["3.5"]
    try:
        version = dist_version("delta-spark")
    except PackageNotFoundError:
        version = default
    del minor
    return f"io.delta:delta-spark_{scala}:{version}"


def maven_mirrors(settings: Path | None = None) -> list[str]:
    """The mirror URLs of ``~/.m2/settings.xml`` (none when there is no such file)."""
    path = settings or Path.home() / ".m2" / "settings.xml"
    try:
        text = path.read_text()
    except OSError:
        return []
    return [
        url.strip()
        for block in re.findall(r"<mirror>(.*?)</mirror>", text, re.S)
        for url in re.findall(r"<url>(.*?)</url>", block, re.S)
    ]


def spark_jar_conf() -> dict[str, str]:
    """Spark settings that load delta-spark (see the module docstring)."""
    given = os.environ.get(JARS_ENV, "").strip()
    if given:
        jars = [j.strip() for j in given.replace(os.pathsep, ",").split(",") if j.strip()]
        return {"spark.jars": ",".join(jars)}
    conf = {"spark.jars.packages": delta_coordinates(pyspark_version() or "4.0")}
    mirrors = maven_mirrors()
    if mirrors:
        conf["spark.jars.repositories"] = ",".join(mirrors)
    return conf


class SparkEngine(Engine):
    """delta-spark on the installed PySpark, in one process for all tables."""

    name = "delta-spark"
    how_to_get = HOW_TO_GET
    can_append = True

    def unavailable(self) -> str | None:
        """Why delta-spark cannot run: no PySpark or no Java."""
        if importlib.util.find_spec("pyspark") is None:
            return f"PySpark is not installed: {HOW_TO_GET}"
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            return f"no Java runtime for Spark: {HOW_TO_GET}"
        given = os.environ.get(JARS_ENV, "").strip()
        if given:
            missing = [j for j in given.split(",") if j.strip() and not Path(j.strip()).is_file()]
            if missing:
                return f"{JARS_ENV} names jar files that do not exist: {missing}"
        return None

    def describe(self) -> str:
        """``delta-spark (io.delta:delta-spark_2.13:4.4.0 on PySpark 4.2.0)``."""
        jars = spark_jar_conf()
        what = jars.get("spark.jars.packages") or jars.get("spark.jars", "")
        return f"delta-spark ({what} on PySpark {pyspark_version()})"

    def command(self, request: Path, output: Path) -> list[str]:
        """``python -m deltalog.compat.spark_probe REQUEST OUTPUT``."""
        return [sys.executable, "-m", "deltalog.compat.spark_probe", str(request), str(output)]

    def environment(self) -> dict[str, str]:
        """This environment, deltalog importable, PySpark's workers on this Python."""
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        return env
