"""moto's S3 and DynamoDB, served on 127.0.0.1 with requests handled one at a time.

moto's condition checks (``If-None-Match``, DynamoDB ``ConditionExpression``) are not atomic
when two requests run in parallel threads, so every request runs under one lock: the server
stays a real HTTP endpoint for many clients, and each conditional write is decided atomically,
as the real services do.

Run: ``python tests/servers/moto_server.py --port 0``; prints ``PORT <n>`` when listening.
With ``--tls``, the same backend (same lock) is also served over HTTPS with werkzeug's ad-hoc
self-signed certificate, and the line is ``PORT <http> TLS <https>``: for clients that can only
speak HTTPS to a region's endpoint, like delta-spark's ``S3DynamoDBLogStore`` (AWS SDK v1, no
endpoint option; see ``interop_tests/s3_dynamodb_spark.py``).
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
    parser.add_argument("--tls", action="store_true", help="also serve HTTPS on a free port")
    args = parser.parse_args(argv)
    app = serialised_app()
    server = make_server(args.host, args.port, app, threaded=True)
    line = f"PORT {server.server_port}"
    if args.tls:
        secure = make_server(args.host, 0, app, threaded=True, ssl_context="adhoc")
        threading.Thread(target=secure.serve_forever, name="moto-tls", daemon=True).start()
        line += f" TLS {secure.server_port}"
    print(line, flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
