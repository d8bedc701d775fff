"""A Spark Connect server on 127.0.0.1 for the Connect tests: ``local[2]``, its own JVM.

PySpark 4 ships the server (``jars/spark-connect_2.13-*.jar``); ``bin/spark-submit`` starts its
main class, ``SparkConnectServer``, with the primary resource ``spark-internal``. The server's
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


def server_available() -> bool:
    """Whether pip's PySpark here ships the Connect server (PySpark 4; 3.5 needs Maven)."""
    return any((SPARK_HOME / "jars").glob("spark-connect_*.jar"))


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
        deadline = time.monotonic() + 180
        while not _ready(f"127.0.0.1:{port}", timeout=2):
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the Spark Connect server (PySpark {pyspark.__version__}) exited "
                    f"({proc.returncode}): {log.read_text()[-3000:]}"
                )
            if time.monotonic() > deadline:
                tail = log.read_text()[-3000:]
                raise RuntimeError(f"no Spark Connect server within 180 s: {tail}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:  # its own session: the group holds its Python workers too
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
