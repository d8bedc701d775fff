"""Start the test servers (moto for S3 + DynamoDB, Azurite, our GCS server) on free ports.

Each server is a child process on 127.0.0.1 that announces its port on stdout; a reader thread
copies its output to a log file and signals readiness, so nothing polls or sleeps.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

SERVERS_DIR = Path(__file__).resolve().parent
REPO_ROOT = SERVERS_DIR.parent.parent
#: Where ``scripts/env.sh`` installs Azurite from npm.
TOOLS_DIR = REPO_ROOT / ".tools"

AWS_KEYS = {"s3.access_key_id": "testing", "s3.secret_access_key": "testing"}
AZURITE_ACCOUNT = "devstoreaccount1"


class ServerStartError(RuntimeError):
    """A test server did not come up."""


@dataclass
class ServerProcess:
    """A running test server."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    #: The HTTPS port of a server started with one too (``start_moto(..., tls=True)``).
    tls_port: int | None = None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def _pump(
    stream: IO[bytes],
    log: IO[bytes],
    pattern: re.Pattern[bytes],
    found: list[int],
    ready: threading.Event,
) -> None:
    """Copy ``stream`` to ``log``; the first line matching ``pattern`` gives its groups."""
    for line in iter(stream.readline, b""):
        log.write(line)
        log.flush()
        if not ready.is_set():
            m = pattern.search(line)
            if m:
                found.extend(int(g) for g in m.groups())
                ready.set()
    ready.set()  # the process ended: wake the waiter either way


def start_server(
    name: str, command: list[str], ready: str, log_dir: Path, timeout: float = 120.0
) -> ServerProcess:
    """Run ``command`` and wait until a stdout line matches ``ready`` (group 1 = port).

    A second group, when ``ready`` has one, is the server's HTTPS port.

    Raises:
        ServerStartError: The process exited or did not announce a port in time.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=str(REPO_ROOT),
    )
    assert process.stdout is not None
    found: list[int] = []
    event = threading.Event()
    thread = threading.Thread(
        target=_pump,
        args=(process.stdout, log, re.compile(ready.encode()), found, event),
        name=f"{name}-log",
        daemon=True,
    )
    thread.start()
    if not event.wait(timeout) or not found:
        process.kill()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise ServerStartError(f"{name} did not start ({' '.join(command)}):\n{tail}")
    return ServerProcess(name, process, found[0], log_path, found[1] if len(found) > 1 else None)


def start_moto(log_dir: Path, *, tls: bool = False) -> ServerProcess:
    """moto in server mode (S3 and DynamoDB on one port), requests serialised.

    With ``tls``, the same backend is also served over HTTPS (self-signed): ``tls_port``.
    """
    command = [sys.executable, str(SERVERS_DIR / "moto_server.py"), "--port", "0"]
    if tls:
        return start_server("moto-tls", [*command, "--tls"], r"PORT (\d+) TLS (\d+)", log_dir)
    return start_server("moto", command, r"PORT (\d+)", log_dir)


def start_gcs(log_dir: Path) -> ServerProcess:
    """Our GCS JSON/XML API test server, which enforces generation preconditions."""
    return start_server(
        "gcs",
        [sys.executable, str(SERVERS_DIR / "gcs_server.py"), "--port", "0"],
        r"PORT (\d+)",
        log_dir,
    )


def azurite_command() -> str | None:
    """The ``azurite-blob`` executable: ``$DELTALOG_AZURITE``, ``.tools/``, or ``PATH``."""
    explicit = os.environ.get("DELTALOG_AZURITE")
    if explicit:
        return explicit
    local = TOOLS_DIR / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


def start_azurite(log_dir: Path) -> ServerProcess:
    """Azurite's Blob service from npm, in memory.

    Raises:
        ServerStartError: Azurite is not installed (``scripts/env.sh`` installs it).
    """
    command = azurite_command()
    if command is None:
        raise ServerStartError(
            "azurite-blob not found: run the README's test command (scripts/test.sh), which "
            "installs it into .tools/ with npm, or set DELTALOG_AZURITE"
        )
    return start_server(
        "azurite",
        [
            command,
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            "0",
            "--inMemoryPersistence",
            "--skipApiVersionCheck",
            "--disableTelemetry",
            "--loose",
        ],
        r"listens on http://127\.0\.0\.1:(\d+)",
        log_dir,
    )
