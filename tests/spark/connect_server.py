"""A Spark Connect server on 127.0.0.1 for the Connect tests: ``local[2]``, its own JVM.

PySpark 4 ships the server (``jars/spark-connect_2.13-*.jar``). pip's PySpark 3.5 does not: there
the jar comes from Maven Central through ``--packages`` (Spark's Ivy, cached under ``~/.ivy2`` like
delta-spark's jars in :mod:`sparkutil`), ``org.apache.spark:spark-connect_2.12`` of the nearest
3.5 patch release Maven Central serves (:func:`connect_package`: it has no 3.5.2, 3.5.3 or 3.5.6,
so PySpark 3.5.3 runs the 3.5.4 server jar - the Connect protocol is the same across 3.5.x).
``bin/spark-submit`` starts the main class, ``SparkConnectServer``, with the primary resource
``spark-internal``. The server's
environment comes from :func:`cluster.clean_env` (no ``PYTHONPATH``), and its Python workers run
the given interpreter, so they import deltalog only from what a client ships them with
``spark.addArtifacts(..., pyfile=True)``. Readiness is a gRPC channel that connects, polled
while the server process is alive; the whole process group is stopped afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark
from cluster import SPARK_HOME, clean_env, free_port

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: The server settings: small for 2 cores, no UI, UTC like the tests' local session.
CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.connect.grpc.binding.address": "127.0.0.1",
}


#: The ``spark-connect_2.12`` versions Maven Central serves on the 3.5 line.
SERVED_3_5 = ((3, 5, 1), (3, 5, 4), (3, 5, 5), (3, 5, 7))


def server_bundled() -> bool:
    """Whether pip's PySpark here ships the Connect server (PySpark 4; 3.5 needs Maven)."""
    return any((SPARK_HOME / "jars").glob("spark-connect_*.jar"))


def connect_package(version: str = pyspark.__version__) -> str:
    """The Maven coordinates of the Connect server for a PySpark 3.5 ``version``.

    The installed patch release when Maven Central serves it, else the nearest served one
    (the later one of two as near: ``3.5.3`` gives ``3.5.4``, ``3.5.6`` gives ``3.5.7``).
    """
    wanted = tuple(int(part) for part in version.split(".")[:3])
    if wanted[:2] != (3, 5):
        raise ValueError(f"no Spark Connect server package for PySpark {version}")
    nearest = min(SERVED_3_5, key=lambda v: (abs(v[2] - wanted[2]), v < wanted))
    return "org.apache.spark:spark-connect_2.12:" + ".".join(map(str, nearest))


def _ready(address: str, timeout: float) -> bool:
    import grpc

    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


@contextmanager
def connect_server(work: Path, python: Path | str) -> Iterator[str]:
    """Start a Spark Connect server whose workers run ``python``; yield its ``sc://`` URL."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = {**CONF, "spark.connect.grpc.binding.port": str(port)}
    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        *("--class", SERVER_CLASS, "--master", "local[2]"),
        *(() if server_bundled() else ("--packages", connect_package())),
        *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
        "spark-internal",
    ]
    log = work / "connect-server.log"
    env = clean_env(PYSPARK_PYTHON=str(python), SPARK_LOG_DIR=str(work))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=work,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300  # the first 3.5 run downloads the jar
        while not _ready(f"127.0.0.1:{port}", timeout=2):
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the Spark Connect server (PySpark {pyspark.__version__}) exited "
                    f"({proc.returncode}): {log.read_text()[-3000:]}"
                )
            if time.monotonic() > deadline:
                tail = log.read_text()[-3000:]
                raise RuntimeError(f"no Spark Connect server within 300 s: {tail}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:  # its own session: the group holds its Python workers too
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
