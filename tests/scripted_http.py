"""A tiny HTTP server on 127.0.0.1 that answers from a script of canned replies.

Tests queue replies (status, headers, body), point an SDK at :attr:`ScriptedServer.endpoint`
and then inspect what the SDK sent (:attr:`ScriptedServer.requests`). It lets the error mapping
and retry logic of the log stores be exercised through the real SDKs over real HTTP, with
failures (throttling, 5xx, dropped connections) that the emulators cannot produce on demand.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import threading
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

import pytest


@dataclass(frozen=True)
class Reply:
    """One canned answer.

    ``drop=True`` closes the connection without answering; ``close=True`` closes it after the
    answer (to send a body shorter than its ``Content-Length``, say).
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    drop: bool = False
    close: bool = False


#: Close the connection after reading the request, without sending a response.
DROP = Reply(status=0, drop=True)

#: Status of the answer to a request that found the script empty.
UNSCRIPTED_STATUS = 418


@dataclass(frozen=True)
class Recorded:
    """A request the server received."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        """The decoded path, without the query."""
        return urllib.parse.unquote(urllib.parse.urlsplit(self.target).path)

    @property
    def query(self) -> dict[str, str]:
        """The query parameters (last value wins)."""
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.target).query, True))

    def header(self, name: str) -> str | None:
        """A request header, by case-insensitive name."""
        return self.headers.get(name.lower())


def read_body(rfile: io.BufferedIOBase, headers: Message) -> bytes:
    """The body of a request whose headers were just read (chunked or ``Content-Length``)."""
    if headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        while True:
            size = int(rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            chunks.append(rfile.read(size))
            rfile.readline()
    length = int(headers.get("Content-Length") or 0)
    return rfile.read(length) if length else b""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: LocalHTTPServer


class TrackedHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler whose open connections its :class:`LocalHTTPServer` knows."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.owner._connections.add(self.connection)

    def finish(self) -> None:
        self.server.owner._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LocalHTTPServer:
    """An HTTP server on a free port of 127.0.0.1, run by a daemon thread.

    The lifecycle :class:`ScriptedServer` and the fault proxy (``servers.fault_proxy``) share:
    ``start``/``stop`` or ``with``; ``stop`` also drops every open connection, so a client
    blocked on one sees it close. Subclasses name their :class:`TrackedHandler` in ``handler``.
    """

    handler: ClassVar[type[TrackedHandler]]

    def __init__(self) -> None:
        self._connections: set[socket.socket] = set()
        self._server = _Server(("127.0.0.1", 0), self.handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        """Start serving."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop every open connection."""
        self._server.shutdown()
        self._server.server_close()
        for conn in list(self._connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class _Handler(TrackedHandler):
    def _handle(self) -> None:
        body = read_body(self.rfile, self.headers)
        scripted = self.server.owner
        assert isinstance(scripted, ScriptedServer)
        request = Recorded(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        reply = scripted._next(request)
        if reply.drop:
            self.close_connection = True
            return
        self.send_response(reply.status)
        headers = {k.lower(): v for k, v in reply.headers.items()}
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if "content-length" not in headers:
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD" and reply.body:
            self.wfile.write(reply.body)
        if reply.close:
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = _handle


class ScriptedServer(LocalHTTPServer):
    """An HTTP server on a free port of 127.0.0.1, answering from a queue of replies.

    A request that finds the queue empty is recorded and answered with status 418, so a test
    that sends more requests than it scripted fails visibly.
    """

    handler = _Handler

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        super().__init__()

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Replies not yet sent."""
        with self._lock:
            return len(self._replies)

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return Reply(UNSCRIPTED_STATUS, {"Content-Type": "text/plain"}, b"unscripted request")


def refused_endpoint() -> tuple[str, socket.socket]:
    """An endpoint whose port is bound but not listening: connecting is refused at once.

    Keep the returned socket open for as long as the endpoint is used, then close it.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return f"http://127.0.0.1:{sock.getsockname()[1]}", sock


def isolate_cloud_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the machine's cloud settings (profiles, regions, endpoints) out of a test."""
    prefixes = ("AWS_", "AZURE_", "GOOGLE_", "DELTA_DYNAMO", "STORAGE_EMULATOR")
    for var in list(os.environ):
        if var.startswith(prefixes) and var != "AWS_CA_BUNDLE":
            monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    # google-cloud-storage >= 3.x fetches bucket metadata in a background thread on first use;
    # that request would race scripted replies.
    monkeypatch.setenv("DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA", "true")
