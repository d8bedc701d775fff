"""Getting deltalog onto Spark's executors: the package as a zip, and what to say when it is not.

``deltalog.spark.write`` runs a function in the executors' Python workers, which import
deltalog (and pyarrow, orjson) there. Three ways work (``docs/cluster.md``; tested on a
standalone master and worker in ``tests/spark/test_cluster_shipping.py``):

- deltalog installed in the executors' Python (the cluster's image, or locally
  ``PYSPARK_PYTHON`` set to the driver's Python);
- the package shipped as a **zip**: ``spark.sparkContext.addPyFile(package_zip())``,
  ``--py-files deltalog.zip`` or ``spark.submit.pyFiles``, where the executors' Python has
  pyarrow, orjson and pandas. PySpark puts only ``.zip``, ``.egg`` and ``.jar`` files on the
  workers' ``sys.path``: a wheel given to ``--py-files`` is copied over and never imported;
- a packed virtualenv (venv-pack) with ``spark.archives`` and ``spark.pyspark.python``.

A Spark Connect client has no ``SparkContext``; it ships the zip with
``spark.addArtifacts(str(package_zip()), pyfile=True)`` (tested in
``tests/spark/test_spark_connect.py``).

deltalog is pure Python, so :func:`package_zip` zips the installed package as it is. Its
default zip lives in a temporary directory removed when the interpreter exits: ``addPyFile``
only registers the path, and the executors (in local mode too) copy the file from it when their
first task starts, so it must outlive the call.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import deltalog
from deltalog.errors import SparkWriteError
from deltalog.spark.session import is_connect, master

#: Date stamped on every entry, so the same package always gives the same zip.
_EPOCH = (1980, 1, 1, 0, 0, 0)
#: What a Python worker's failure says when the executors lack deltalog or what it needs.
_MISSING = re.compile(r"No module named '(deltalog|orjson|pyarrow)[.']")


def package_zip(path: str | os.PathLike[str] | None = None) -> Path:
    """Zip the installed deltalog package for the executors (``--py-files``, ``addPyFile``).

    The zip holds ``deltalog/`` at its top level, as zipimport needs, with every module and
    ``py.typed``; byte code and caches are left out, and entries are written in a fixed order
    with a fixed date, so the same package gives the same bytes. The executors still need
    pyarrow, orjson and pandas (PySpark's ``mapInArrow`` needs it) in their own Python.

    Args:
        path: Where to write it (default: ``deltalog-<version>.zip`` in a new temporary
            directory, removed with the zip when this Python exits).

    Returns:
        The zip's path.
    """
    package = Path(deltalog.__file__).resolve().parent
    out = _scratch_dir() / f"deltalog-{deltalog.__version__}.zip" if path is None else Path(path)
    entries: list[tuple[str, Path]] = []
    # followlinks: in a source checkout logstores/ and checkpoints/ are symlinked in.
    for folder, dirs, files in os.walk(package, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        relative = Path(folder).relative_to(package)
        for name in sorted(files):
            if name.endswith(".py") or name == "py.typed":
                entries.append((str(Path("deltalog", relative, name)), Path(folder, name)))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, source in entries:
            info = zipfile.ZipInfo(arcname, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, source.read_bytes())
    return out


def _scratch_dir() -> Path:
    """A new temporary directory, removed when this interpreter exits (not when a fork does).

    Spark reads the zip after :func:`package_zip` returns: ``addPyFile`` registers the path
    and the executors fetch the file from it when a task first needs it, so the directory
    stays for the life of the process.
    """
    folder = tempfile.mkdtemp(prefix="deltalog-zip-")
    atexit.register(_remove_scratch, folder, os.getpid())
    return Path(folder)


def _remove_scratch(folder: str, owner: int) -> None:
    if os.getpid() == owner:  # a forked child inherits the handler, not the directory
        shutil.rmtree(folder, ignore_errors=True)


def missing_on_executors(error: str) -> str | None:
    """The module the executors could not import, if that is what ``error`` says."""
    found = _MISSING.search(error)
    return found.group(1) if found else None


def _shipped_wheels(spark: Any) -> list[str]:
    try:
        listed = str(spark.conf.get("spark.submit.pyFiles", "") or "")
    except Exception:  # Spark Connect refuses some static confs: no hint then
        return []
    return [f for f in listed.split(",") if f.strip().endswith(".whl")]


def executor_import_hint(spark: Any, module: str, uri: str) -> str:
    """What to do when Spark's Python workers cannot import ``module``.

    The advice fits the session: in local mode the workers run whatever ``python3`` is on
    ``PATH`` (set ``PYSPARK_PYTHON``); over Spark Connect the workers are the server's, and the
    client ships the zip with ``spark.addArtifacts(..., pyfile=True)`` (it has no
    ``SparkContext``); on a cluster, install or ship deltalog to the executors.
    """
    connect = is_connect(spark)
    running = master(spark)
    where = "the Spark Connect server's Python workers" if connect else "Spark's Python workers"
    if module != "deltalog":
        head = (
            f"{where[0].upper()}{where[1:]} cannot import {module} (deltalog needs it on the "
            f"executors), so the job writing to {uri} failed before writing anything: "
        )
    else:
        head = (
            f"{where[0].upper()}{where[1:]} cannot import deltalog, so the job writing to "
            f"{uri} failed before writing anything: "
        )
    zip_needs = "(the executors then need pyarrow, orjson and pandas)"
    if connect:
        local = (
            "the server runs in local mode: start it with PYSPARK_PYTHON set to a Python that "
            "has deltalog[spark] in its environment, or "
            if running.startswith("local")
            else "install deltalog[spark] in the executors' Python, or "
        )
        return (
            head
            + local
            + (
                "ship it from this client: spark.addArtifacts(str(deltalog.spark.package_zip()), "
                f"pyfile=True) {zip_needs} (docs/spark.md, Spark Connect)"
            )
        )
    if running.startswith("local"):
        return head + (
            "in local mode Spark starts its workers with whatever python3 is on PATH; set "
            f"PYSPARK_PYTHON={sys.executable} (the Python that has deltalog) before the "
            "session starts, or ship it: spark.sparkContext.addPyFile("
            f"str(deltalog.spark.package_zip())) {zip_needs}"
        )
    advice = head + (
        "install deltalog[spark] in the executors' Python (the cluster's image), or ship it: "
        "spark.sparkContext.addPyFile(str(deltalog.spark.package_zip())), or --py-files with "
        f"the zip `deltalog package-zip` writes {zip_needs}, or a packed virtualenv with "
        "spark.archives (docs/cluster.md)"
    )
    wheels = _shipped_wheels(spark)
    if wheels:
        advice += (
            f"; spark.submit.pyFiles names {', '.join(w.strip() for w in wheels)}: PySpark "
            "puts only .zip, .egg and .jar files on the workers' path, so a wheel is never "
            "imported there"
        )
    return advice


def job_failure(spark: Any, error: Exception, uri: str, what: str) -> SparkWriteError:
    """The error for a failed Spark job of deltalog's: how to fix a missing import, or ``what``.

    Args:
        spark: The session the job ran on.
        error: What the job raised.
        uri: The table's URI.
        what: What the job did, for any other failure ("the Spark job writing to ...").
    """
    missing = missing_on_executors(str(error))
    if missing is not None:
        return SparkWriteError(executor_import_hint(spark, missing, uri))
    return SparkWriteError(f"{what} failed: {error}")
