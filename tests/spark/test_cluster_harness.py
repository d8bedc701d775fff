"""The test harness's standalone cluster comes up when the ports it picked are taken meanwhile.

:func:`cluster.free_port` finds a port free, but another process (a Spark UI, a test server)
can take it before the master binds it; Spark then binds the next port. The harness must use
the ports Spark logs, not the ones it asked for: once a CI run failed here reading a foreign
HTML page as the master's JSON.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
import cluster

# The cluster harness itself; the cluster tests run on the default line only.
pytestmark = [pytest.mark.spark, pytest.mark.one_spark_line]


class _Html(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!DOCTYPE html><html><body>not the master</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def taken_ports() -> Iterator[list[int]]:
    """Two ports on 127.0.0.1 held by an HTTP server that answers HTML to everything."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Html) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield [server.server_address[1] for server in servers]
    for server in servers:
        server.shutdown()
        server.server_close()


def test_master_ports_taken_after_they_were_picked(
    taken_ports: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("java") is None:
        pytest.fail("no java for the Spark standalone cluster")
    picks = iter([*taken_ports, cluster.free_port()])  # master RPC, master UI, worker UI
    monkeypatch.setattr(cluster, "free_port", lambda: next(picks))

    with cluster.standalone_cluster(tmp_path, cores=1) as running:
        assert running.url != f"spark://127.0.0.1:{taken_ports[0]}"
        assert running.ui != f"http://127.0.0.1:{taken_ports[1]}"
        with urllib.request.urlopen(f"{running.ui}/json/", timeout=10) as reply:
            assert json.loads(reply.read())["aliveworkers"] == 1
