"""Child process of the crash-injection tests: append Parquet files until a step, then freeze.

Run as ``python crash_writer.py URI OPTIONS_JSON STEP OCCURRENCE PREFIX``. The writer loops:
write one small Parquet data file into the table, commit it in a transaction (a
``DeltaTable`` with ``background_checkpoints=False``, so checkpoints are written inside
``commit``), print ``COMMITTED <version> <path>``. Seams of the log stores are patched so that
when ``STEP`` is reached for the ``OCCURRENCE``-th time the process prints ``AT <step> <detail>``
and blocks reading stdin: the parent then kills it with SIGKILL at exactly that point. If the
parent goes away instead, stdin reaches EOF and the process exits with status 4.

Lines on stdout:

``DATA <path>``
    a data file was written (not committed yet);
``COMMITTED <version> <path>``
    ``commit()`` returned ``version`` for the transaction adding ``path``;
``AT <step> <detail...>``
    the crash point; ``detail`` says which file (and, for mid-write steps, how many bytes of
    how many were written);
``GAVE-UP``
    the step was not reached within :data:`MAX_COMMITS` commits (exit status 5);
``HOOK-FAILED <message>``
    a hook found the request other than expected (exit status 6).

Steps (see ``tests/write/test_crash_injection.py`` for what each leaves behind):

local store
    ``after_data_files``, ``mid_temp_write``, ``after_temp_file``, ``after_store_write``,
    ``checkpoint_write``, ``last_checkpoint_write``;
S3 + DynamoDB
    ``after_data_files``, ``mid_temp_write``, ``after_temp_file`` (``_fault("temp_written")``),
    ``entry_written``, ``copied``, ``acknowledged``, ``checkpoint_write``,
    ``last_checkpoint_write``.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO_ROOT))

from deltalog import DeltaTable  # noqa: E402
from deltalog.logstores import LocalLogStore, LogStore, open_store  # noqa: E402
from deltalog.logstores.external import ExternalCoordinatedLogStore  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.string())])
#: Table properties: a checkpoint after every second commit; log cleanup off, so that every
#: commit stays readable for the checks.
CONFIGURATION = {"delta.checkpointInterval": "2", "delta.enableExpiredLogCleanup": "false"}
MAX_COMMITS = 30
ROWS = 64

LOCAL_STEPS = (
    "after_data_files",
    "mid_temp_write",
    "after_temp_file",
    "after_store_write",
    "checkpoint_write",
    "last_checkpoint_write",
)
S3_DYNAMODB_STEPS = (
    "after_data_files",
    "mid_temp_write",
    "after_temp_file",
    "entry_written",
    "copied",
    "acknowledged",
    "checkpoint_write",
    "last_checkpoint_write",
)
#: ``ExternalCoordinatedLogStore._fault`` step -> crash step.
FAULT_STEPS = {
    "temp_written": "after_temp_file",
    "entry_written": "entry_written",
    "copied": "copied",
    "acknowledged": "acknowledged",
}

_COMMIT = re.compile(r"\d{20}\.json")
_CHECKPOINT = re.compile(r"\d{20}\.checkpoint\.parquet")
#: LocalLogStore's temp files: ``.<name>.<32 hex>.tmp`` next to ``<name>``.
_LOCAL_TEMP = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{32}\.tmp")
#: Which mid-write step a write of a ``_delta_log`` file belongs to.
_MID_WRITE = {"commit": "mid_temp_write", "checkpoint": "checkpoint_write"}


def parquet_bytes(writer: str, seq: int) -> bytes:
    """A small, real Parquet file of :data:`SCHEMA`."""
    table = pa.table(
        {
            "id": pa.array(range(seq * ROWS, (seq + 1) * ROWS), pa.int64()),
            "writer": [writer] * ROWS,
        },
        schema=SCHEMA,
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_data_file(store: LogStore, root: str, relative: str, data: bytes) -> None:
    """Write a data file into the table: plain file I/O locally, through the store otherwise."""
    local = store.local_path(root)
    if local is not None:
        path = os.path.join(local, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
        return
    store.write(LogStore.join(root, relative), data, overwrite=True)


def log_file_kind(name: str) -> str | None:
    """``commit``, ``checkpoint`` or ``last_checkpoint`` for a ``_delta_log`` file name."""
    if _COMMIT.fullmatch(name):
        return "commit"
    if _CHECKPOINT.fullmatch(name):
        return "checkpoint"
    if name == "_last_checkpoint":
        return "last_checkpoint"
    return None


class CrashPoint:
    """Counts arrivals at ``step`` and freezes the process at arrival number ``occurrence``."""

    def __init__(self, step: str, occurrence: int) -> None:
        self.step = step
        self.occurrence = occurrence
        self.count = 0

    def due(self, step: str) -> bool:
        """Count an arrival at ``step``; whether the process must freeze here."""
        if step != self.step:
            return False
        self.count += 1
        return self.count == self.occurrence

    def reached(self, step: str, detail: str) -> None:
        """Freeze if this arrival at ``step`` is the chosen one."""
        if self.due(step):
            freeze(step, detail)


def freeze(step: str, detail: str) -> None:
    """Announce the crash point and block until SIGKILL (exit 4 if the parent vanished)."""
    print(f"AT {step} {detail}", flush=True)
    sys.stdin.buffer.read()  # the parent never writes: only SIGKILL or EOF end this
    os._exit(4)


def hook_failed(message: str) -> None:
    """Stop the writer with a message the parent shows (an exception could be retried away)."""
    print(f"HOOK-FAILED {message}", flush=True)
    os._exit(6)


def install_local_hooks(crash: CrashPoint) -> None:
    """Patch ``LocalLogStore``: mid-temp-write, after-temp-file and after-store-write points."""
    original_write_temp = LocalLogStore._write_temp
    original_write = LocalLogStore.write

    def write_temp(self: LocalLogStore, tmp: str, data: bytes, *, fsync: bool) -> None:
        m = _LOCAL_TEMP.fullmatch(os.path.basename(tmp))
        in_log = os.path.basename(os.path.dirname(tmp)) == "_delta_log"
        kind = log_file_kind(m.group("name")) if m and in_log else None
        mid_step = "last_checkpoint_write" if kind == "last_checkpoint" else _MID_WRITE.get(kind)
        if mid_step is not None and crash.due(mid_step):
            # The real temp file, half written (no fsync: a real writer dies before it).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            half = memoryview(data)[: len(data) // 2]
            while half:
                half = half[os.write(fd, half) :]
            freeze(mid_step, f"{tmp} {len(data) // 2} {len(data)}")
        original_write_temp(self, tmp, data, fsync=fsync)
        if kind == "commit":
            crash.reached("after_temp_file", f"{tmp} {len(data)}")

    def write(self: LocalLogStore, path: str, data: bytes, *, overwrite: bool = False) -> None:
        original_write(self, path, data, overwrite=overwrite)
        if not overwrite and log_file_kind(os.path.basename(path)) == "commit":
            crash.reached("after_store_write", path)

    LocalLogStore._write_temp = write_temp  # type: ignore[method-assign]
    LocalLogStore.write = write  # type: ignore[method-assign]


def s3_log_put_step(url: str) -> str | None:
    """The mid-write step an S3 PUT of ``url`` (path-style) belongs to, if any."""
    path = unquote(urlsplit(url).path)
    directory, _, name = path.rpartition("/")
    if directory.endswith("/_delta_log/.tmp"):
        return "mid_temp_write" if _COMMIT.fullmatch(name.rsplit(".", 1)[0]) else None
    if not directory.endswith("/_delta_log"):
        return None
    kind = log_file_kind(name)
    if kind == "last_checkpoint":
        return "last_checkpoint_write"
    return "checkpoint_write" if kind == "checkpoint" else None


def install_s3_hooks(crash: CrashPoint) -> None:
    """Patch the protocol's ``_fault`` seam and botocore's HTTP connection.

    The mid-write steps stop *on the wire*: botocore has already computed the checksums and the
    signature over the whole body and sent the request line and headers (with the full
    ``Content-Length``); the body goes out through a generator that yields the first half,
    which urllib3 sends on the socket, and then freezes. The server holds a PUT with half its
    body when the SIGKILL closes the connection.
    """
    from botocore.awsrequest import AWSConnection

    def fault(self: ExternalCoordinatedLogStore, at: str) -> None:
        crash.reached(FAULT_STEPS[at], at)

    original_request = AWSConnection.request

    def request(
        self: Any, method: str, url: str, body: Any = None, headers: Any = None, *a: Any, **k: Any
    ) -> Any:
        step = s3_log_put_step(url) if method == "PUT" else None
        if step is not None and crash.due(step):
            # botocore hands S3 bodies over as a file (and sends "Expect: 100-continue").
            data = bytes(body) if isinstance(body, bytes | bytearray) else body.read()
            length = int({str(key).lower(): v for key, v in headers.items()}["content-length"])
            if length != len(data):
                hook_failed(f"Content-Length {length} != body {len(data)} for {url}")

            def halves() -> Iterator[bytes]:
                yield data[: len(data) // 2]
                freeze(step, f"{unquote(urlsplit(url).path)} {len(data) // 2} {len(data)}")
                yield data[len(data) // 2 :]  # never reached

            return original_request(self, method, url, halves(), headers, *a, **k)
        return original_request(self, method, url, body, headers, *a, **k)

    ExternalCoordinatedLogStore._fault = fault  # type: ignore[method-assign]
    AWSConnection.request = request  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    uri, options_json, step, occurrence, prefix = argv
    options: dict[str, str] = json.loads(options_json)
    crash = CrashPoint(step, int(occurrence))
    if uri.startswith("s3://"):
        if step not in S3_DYNAMODB_STEPS:
            raise SystemExit(f"unknown S3 step {step!r}")
        install_s3_hooks(crash)
    else:
        if step not in LOCAL_STEPS:
            raise SystemExit(f"unknown local step {step!r}")
        install_local_hooks(crash)

    store, root = open_store(uri, options)
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    for seq in range(MAX_COMMITS):
        relative = f"{prefix}-{seq:03d}-{uuid.uuid4().hex[:8]}.parquet"
        write_data_file(store, root, relative, parquet_bytes(prefix, seq))
        print(f"DATA {relative}", flush=True)
        crash.reached("after_data_files", relative)
        with table.transaction("WRITE") as tx:
            tx.add(relative)
        print(f"COMMITTED {tx.version} {relative}", flush=True)
    print("GAVE-UP", flush=True)
    return 5


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
