"""moto's S3 and DynamoDB, served on 127.0.0.1 with requests handled one at a time.

moto's condition checks (``If-None-Match``, DynamoDB ``ConditionExpression``) are not atomic
when two requests run in parallel threads, so every request runs under one lock: the server
stays a real HTTP endpoint for many clients, and each conditional write is decided atomically,
as the real services do.

Run: ``python tests/servers/moto_server.py --port 0``; prints ``PORT <n>`` when listening.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server


def serialised_app() -> Callable[..., Iterable[bytes]]:
    """moto's WSGI application, one request at a time."""
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def handle(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with lock:
            return list(app(environ, start_response))

    return handle


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = make_server(args.host, args.port, serialised_app(), threaded=True)
    print(f"PORT {server.server_port}", flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
