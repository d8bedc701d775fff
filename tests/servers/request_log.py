"""Counting the requests a client sends to the test servers, by what they do to which file.

:class:`RequestLog` is a :data:`~servers.fault_proxy.Rule` that never injects a fault: put in
front of a server with :class:`~servers.fault_proxy.FaultProxy`, it records every request that
passes while :attr:`RequestLog.recording` is set. :func:`kind_of` names a request the same way
on every store (moto's S3 and DynamoDB, our GCS server, Azurite), e.g. ``"PUT commit"``,
``"LIST log"``, ``"HEAD data"``, ``"DynamoDB PutItem"``, so that tests and
``benchmarks/bench_requests.py`` can assert and report requests per commit.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections import Counter

from scripted_http import Recorded

from servers.fault_proxy import Fault

_COMMIT = re.compile(r"^\d{20}\.json$")
_CHECKSUM = re.compile(r"^\d{20}\.crc$")
_GCS_NAME = re.compile(rb'"name"\s*:\s*"([^"]+)"')
_CHECKPOINT = re.compile(r"^\d{20}\.checkpoint(\.\d+\.\d+)?(\.[0-9a-f-]+)?\.parquet$")


def _file_kind(key: str) -> str:
    """What the object ``key`` is: commit, checksum, checkpoint, temp, data, ..."""
    name = key.rstrip("/").rsplit("/", 1)[-1]
    if "/_delta_log/.tmp/" in f"/{key}":
        return "temp"
    if _COMMIT.match(name):
        return "commit"
    if _CHECKSUM.match(name):
        return "checksum"
    if _CHECKPOINT.match(name) or "/_sidecars/" in key:
        return "checkpoint"
    if name == "_last_checkpoint":
        return "last_checkpoint"
    if "/_delta_log" in f"/{key}":
        return "log-other"
    return "data"


def kind_of(request: Recorded) -> str:
    """``"<VERB> <file kind>"`` for one request to S3, DynamoDB, GCS or Azure Blob storage.

    Verbs: ``PUT`` (an upload: S3/Azure PUT, GCS upload), ``GET`` (content), ``HEAD``
    (metadata only: also GCS's object GET without ``alt=media``), ``LIST``, ``DELETE``;
    DynamoDB requests are ``DynamoDB <operation>``.
    """
    target = request.header("x-amz-target")
    if target:
        return f"DynamoDB {target.rsplit('.', 1)[-1]}"
    query = request.query
    path = request.path
    listed = query.get("prefix")
    if listed is not None or query.get("comp") == "list" or "list-type" in query:
        return f"LIST {'log' if '_delta_log' in (listed or '') else 'other'}"
    if path.startswith("/upload/storage/v1/"):  # GCS upload: name in the query or metadata
        found = _GCS_NAME.search(request.body[:4096])
        name = query.get("name") or (found.group(1).decode() if found else "")
        return f"PUT {_file_kind(name)}"
    if path.startswith("/storage/v1/b/") and "/o/" in path:  # GCS object metadata or delete
        key = path.split("/o/", 1)[1]
        verb = "DELETE" if request.method == "DELETE" else "HEAD"
        return f"{verb} {_file_kind(key)}"
    if path.startswith("/download/storage/v1/b/"):
        return f"GET {_file_kind(path.split('/o/', 1)[1])}"
    if path.startswith("/storage/v1/b"):
        return f"{request.method} bucket"
    key = path.split("/", 2)[-1]  # S3 path style and Azurite: /bucket/key, /account/container/key
    verb = {"POST": "PUT"}.get(request.method, request.method)
    if request.method == "POST" and "delete" in query:
        verb = "DELETE"
    return f"{verb} {_file_kind(urllib.parse.unquote(key))}"


class RequestLog:
    """A fault-proxy rule that records requests (as :func:`kind_of` names them) while on.

    Attributes:
        recording: Whether requests are being recorded.
        kinds: The recorded requests' kinds, in arrival order.
    """

    def __init__(self) -> None:
        self.recording = False
        self.kinds: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: Recorded) -> Fault | None:
        if self.recording:
            kind = kind_of(request)
            with self._lock:
                self.kinds.append(kind)
        return None

    def take(self) -> list[str]:
        """The kinds recorded so far, and start afresh."""
        with self._lock:
            out, self.kinds = self.kinds, []
        return out

    def counts(self) -> Counter[str]:
        """How many requests of each kind were recorded."""
        with self._lock:
            return Counter(self.kinds)
