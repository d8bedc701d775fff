"""A Spark standalone cluster on 127.0.0.1 for the shipping tests: one master, one worker.

pip's PySpark has no ``sbin/start-master.sh``; ``bin/spark-class`` starts the master and the
worker classes directly. The worker's environment has no ``PYTHONPATH``, so its executors see
only what a test ships them. :func:`bare_python` is a Python for the executors that has
deltalog's dependencies (pyarrow, orjson, pandas, numpy, PySpark) but not deltalog: this
environment's own interpreter started without ``site`` (so the editable install's import hook
is not set up) and with its site-packages directory on ``PYTHONPATH`` instead.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
_ENV_DROPPED = (
    "PYTHONPATH",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
    "SPARK_HOME",
    "SPARK_CONNECT_MODE_ENABLED",  # set for the process by a Connect client's builder.remote()
    "SPARK_REMOTE",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that would put deltalog on a Python's path."""
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROPPED}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", **extra)
    return env


@dataclass
class Cluster:
    """A running master and worker."""

    url: str
    ui: str
    logs: Path


def _alive_workers(ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{ui}/json/", timeout=5) as reply:
            state = json.loads(reply.read())
    except (OSError, ValueError):  # not up yet, or not the master's page (see _bound_port)
        return 0
    return int(state.get("aliveworkers", 0))


def _bound_port(log: Path, service: str) -> int | None:
    """The port Spark says ``service`` listens on, from its log, once it is there.

    A port :func:`free_port` found free can be taken by another process before Spark binds it;
    Spark then takes the next one and logs which, so the log is the truth.
    """
    found = re.search(
        rf"started service '{service}' on port (\d+)", log.read_text(errors="replace")
    )
    return int(found.group(1)) if found else None


def _wait(what: str, ready: object, log: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what} exited ({p.returncode}): {log.read_text()[-3000:]}")
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not start within 180 s: {log.read_text()[-3000:]}")


@contextmanager
def standalone_cluster(work: Path, cores: int = 2) -> Iterator[Cluster]:
    """Start a master and a worker on 127.0.0.1; stop both (and their executors) after."""
    work.mkdir(parents=True, exist_ok=True)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    env = clean_env(SPARK_LOG_DIR=str(work), SPARK_WORKER_DIR=str(work / "work"))
    procs: list[subprocess.Popen[bytes]] = []
    master_log, worker_log = work / "master.log", work / "worker.log"
    try:
        with master_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        *(spark_class, "org.apache.spark.deploy.master.Master"),
                        *("--host", "127.0.0.1", "--port", str(port)),
                        *("--webui-port", str(ui_port)),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )

        def master_up() -> bool:
            return None not in (
                _bound_port(master_log, "sparkMaster"),
                _bound_port(master_log, "MasterUI"),
            )

        _wait("the master", master_up, master_log, procs)
        port, ui_port = _bound_port(master_log, "sparkMaster"), _bound_port(master_log, "MasterUI")
        url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
        with worker_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        *(spark_class, "org.apache.spark.deploy.worker.Worker", url),
                        *("--host", "127.0.0.1", "--cores", str(cores), "--memory", "2g"),
                        *("--webui-port", str(worker_ui), "--work-dir", str(work / "work")),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )
        _wait("the worker", lambda: _alive_workers(ui) >= 1, worker_log, procs)
        yield Cluster(url, ui, work)
    finally:
        for p in reversed(procs):  # each in its own session: its group is its executors too
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def bare_python(directory: Path) -> Path:
    """A ``python`` for executors: deltalog's dependencies, but no deltalog (see the module)."""
    site = sysconfig.get_paths()["purelib"]
    script = directory / "python-without-deltalog"
    script.write_text(
        "#!/bin/sh\n"
        "# This environment's Python without site: its .pth files (the editable deltalog) are\n"
        "# not run; its packages come from PYTHONPATH.\n"
        f'export PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}"\n'
        f'exec {sys.executable} -S "$@"\n'
    )
    script.chmod(0o755)
    return script
