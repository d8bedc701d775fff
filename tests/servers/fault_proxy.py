"""An HTTP proxy for tests that lets the server apply a request and then fails the reply.

:class:`FaultProxy` sits on 127.0.0.1 in front of a test server (moto, our GCS server,
Azurite). Each request is passed to a rule, which returns ``None`` (relay the request and the
server's answer) or a :class:`Fault`. A fault with ``apply=True`` (the default) first forwards
the request, so the server **does** apply it, and then lies to the client: it closes the
connection without an answer, or answers with a 5xx status instead of the real reply. The client
cannot tell whether its request took effect, which is what a commit protocol must survive.

Everything is synchronous: the reply (or the fault) is decided only after the server's answer
arrived, so tests never wait or sleep. :func:`random_faults` builds a seeded rule that fails a
fraction of the requests a predicate selects; :func:`proxied` points a table location's storage
options at a proxy.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pytest
from scripted_http import LocalHTTPServer, Recorded, TrackedHandler, read_body

from servers.fixtures import CloudTable, cloud_location

#: Headers that belong to one connection and are never forwarded.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
    }
)


@dataclass(frozen=True)
class Fault:
    """How to fail one request.

    Attributes:
        status: The status sent instead of the server's answer; ``0`` closes the connection
            without any answer (a dropped connection).
        apply: Forward the request first, so that the server applies it (``False``: the
            server never sees it).
    """

    status: int = 0
    apply: bool = True

    @property
    def name(self) -> str:
        """``drop`` or the status, prefixed ``lost-`` when the server never saw the request."""
        kind = "drop" if self.status == 0 else str(self.status)
        return kind if self.apply else f"lost-{kind}"


#: Applied by the server, then the connection is closed without an answer.
DROP_AFTER = Fault(0)
#: Applied by the server, then answered ``503 Service Unavailable``.
UNAVAILABLE_AFTER = Fault(503)
#: Applied by the server, then answered ``500 Internal Server Error``.
ERROR_AFTER = Fault(500)

#: Decides the fate of one request: ``None`` relays it faithfully.
Rule = Callable[[Recorded], Fault | None]


def random_faults(
    fraction: float,
    selects: Callable[[Recorded], bool],
    *,
    faults: Iterable[Fault] = (DROP_AFTER, UNAVAILABLE_AFTER, ERROR_AFTER),
    seed: int = 0,
) -> Rule:
    """A rule failing ``fraction`` of the requests ``selects`` picks, with one of ``faults``.

    The choices come from one ``random.Random(seed)`` shared by all requests (under a lock), so
    a single-threaded client sees the same faults on every run.
    """
    rng = random.Random(seed)
    lock = threading.Lock()
    kinds = list(faults)

    def rule(request: Recorded) -> Fault | None:
        if not selects(request):
            return None
        with lock:
            if rng.random() >= fraction:
                return None
            return rng.choice(kinds)

    return rule


class _Handler(TrackedHandler):
    def _handle(self) -> None:
        proxy = self.server.owner
        assert isinstance(proxy, FaultProxy)
        body = read_body(self.rfile, self.headers)
        request = Recorded(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        fault = proxy._decide(request)
        answer = proxy._forward(request) if fault is None or fault.apply else None
        if fault is not None:
            proxy._note(fault)
            if fault.status == 0:
                self.close_connection = True
                return
            self._reply(fault.status, [], b"")  # no body: every SDK reads the status alone
            return
        assert answer is not None
        status, headers, data = answer
        self._reply(status, headers, data)

    def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response_only(status)
        has_length = False
        for name, value in headers:
            lower = name.lower()
            if lower in _HOP_BY_HOP:
                continue
            if lower == "content-length":
                if self.command != "HEAD":  # HEAD keeps the object's size
                    continue
                has_length = True
            self.send_header(name, value)
        if not has_length and status not in (204, 304):
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD" and data:
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _handle


class FaultProxy(LocalHTTPServer):
    """A proxy on a free port of 127.0.0.1 that forwards to ``upstream`` and injects faults.

    Args:
        upstream: The server's endpoint, ``http://127.0.0.1:<port>``.
        rule: Decides each request's fault (default: none). May be replaced at any time
            through :attr:`rule`.

    Attributes:
        injected: How many faults of each kind (:attr:`Fault.name`) were injected.
        forwarded: How many requests reached the server.
    """

    handler = _Handler

    def __init__(self, upstream: str, rule: Rule | None = None) -> None:
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"expected http://host:port, got {upstream!r}")
        self.upstream = upstream
        self._host, self._port = parts.hostname, parts.port
        self.rule = rule
        self.injected: Counter[str] = Counter()
        self.forwarded = 0
        self._lock = threading.Lock()
        super().__init__()

    def _decide(self, request: Recorded) -> Fault | None:
        rule = self.rule
        return None if rule is None else rule(request)

    def _note(self, fault: Fault) -> None:
        with self._lock:
            self.injected[fault.name] += 1

    def _forward(self, request: Recorded) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send ``request`` to the server on a fresh connection; its status, headers, body.

        A fresh connection per request: a request is never sent twice because a kept-alive
        connection turned out stale.
        """
        headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
        if request.body or request.method in ("PUT", "POST", "PATCH"):
            headers["content-length"] = str(len(request.body))
        conn = http.client.HTTPConnection(self._host, self._port, timeout=60)
        try:
            conn.request(request.method, request.target, body=request.body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            with self._lock:
                self.forwarded += 1
            return response.status, response.getheaders(), data
        except OSError as exc:
            return 502, [("Content-Type", "text/plain")], f"proxy: {exc}".encode()
        finally:
            conn.close()


def proxied(options: dict[str, str], upstream: str, proxy: FaultProxy) -> dict[str, str]:
    """``options`` with every mention of the ``upstream`` endpoint pointing at ``proxy``."""
    return {k: v.replace(upstream, proxy.endpoint) for k, v in options.items()}


#: The session fixture of the server behind each backend of ``servers.fixtures``.
SERVER_FIXTURES = {
    "s3": "moto_server",
    "s3_dynamodb": "moto_server",
    "gcs": "gcs_server",
    "azure": "azurite_server",
}


@contextlib.contextmanager
def proxied_location(
    request: pytest.FixtureRequest, backend: str, rule: Rule | None = None
) -> Iterator[tuple[CloudTable, CloudTable, FaultProxy]]:
    """A fresh table location on ``backend``: reached directly, and through a new proxy.

    Yields ``(direct, through_proxy, proxy)``; the two locations differ only in their options.
    """
    direct = cloud_location(request, backend)
    upstream = request.getfixturevalue(SERVER_FIXTURES[backend]).endpoint
    with FaultProxy(upstream, rule) as proxy:
        yield direct, direct._replace(options=proxied(direct.options, upstream, proxy)), proxy


def reads_bytes_of(name: str) -> Callable[[Recorded], bool]:
    """Selects the requests that read the content of the object whose key ends in ``name``.

    S3 and Azure ``GET`` the object; GCS's media downloads are under ``/download/``, while a
    ``GET`` under ``/storage/v1/`` reads the object's metadata only.
    """

    def selects(request: Recorded) -> bool:
        return (
            request.method == "GET"
            and request.path.endswith(name)
            and not request.path.startswith("/storage/v1/")
        )

    return selects
