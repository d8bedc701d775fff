"""Crash injection: a writer process is SIGKILLed at each step of a commit, and the table survives.

The writer is a real child process (``tests/crash_writer.py``) that appends small Parquet files
in a loop, one transaction each, on a table with ``delta.checkpointInterval=2`` and synchronous
checkpoints. A patched seam makes it print ``AT <step>`` and block when the chosen step is
reached for the k-th time; the parent reads that line from the child's stdout and sends SIGKILL,
so the kill lands at exactly that point with no sleeps. Each step is killed twice
(occurrences 1 and 4) on the same table, so that damage would accumulate. After every kill:

* the raw state is what the step leaves behind (temp file half written, entry incomplete, ...),
  inspected without going through the log store, whose reads repair;
* the table opens, at the version the step implies;
* ``check_table`` reports no errors and no warnings, its only findings are orphans, and the
  files the kill left behind are among them;
* every commit file parses, versions are contiguous, and the killed commit is either entirely
  there (the kill came after the commit point) or entirely absent;
* a new writer commits exactly the next version;
* every commit the child reported as returned is in the log, with its file live.

Stores: the local filesystem and S3 + DynamoDB (moto in server mode, on 127.0.0.1).

Where each step stops (the hooks are in ``crash_writer.py``):

``after_data_files``
    the data file is written, the transaction not started: it must become an orphan-file;
``mid_temp_write``
    local: ``LocalLogStore._write_temp`` of ``N.json`` wrote half the bytes into its
    ``.N.json.<hex>.tmp``; S3: the PUT of ``_delta_log/.tmp/N.json.<uuid>`` is on the wire with
    its headers (full ``Content-Length``) and half its body sent;
``after_temp_file``
    local: the temp file is written and fsynced, ``os.link`` not called; S3:
    ``_fault("temp_written")``, the temp object exists, no DynamoDB entry;
``after_store_write`` (local)
    ``LocalLogStore.write`` of ``N.json`` returned, ``commit`` has not;
``entry_written`` / ``copied`` / ``acknowledged`` (S3)
    ``_fault`` after the DynamoDB entry (the commit point; ``N.json`` does not exist yet),
    after the copy to ``N.json``, after the entry is marked complete;
``checkpoint_write``
    half of ``N.checkpoint.parquet`` written (local: its temp file; S3: the PUT in flight);
``last_checkpoint_write``
    the checkpoint exists, half of ``_last_checkpoint`` written (local: its temp file; S3:
    the overwriting PUT in flight).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import deltalake
import pyarrow as pa
import pytest
from crash_writer import (
    CONFIGURATION,
    LOCAL_STEPS,
    ROWS,
    S3_DYNAMODB_STEPS,
    SCHEMA,
    parquet_bytes,
    write_data_file,
)
from servers.fixtures import BUCKET, DYNAMO_TABLE, CloudTable, cloud_location
from testpaths import TESTS_DIR

from deltalog import DeltaTable
from deltalog.check import check_table
from deltalog.logstores import LogStore, open_store

CRASH_WRITER = TESTS_DIR / "crash_writer.py"
#: Which occurrence of the step each of the two kills stops at.
OCCURRENCES = (1, 4)
#: Failure guard only: how long a child may take to reach its crash point.
CHILD_TIMEOUT = 120.0
#: Steps after the commit point: the killed commit must be in the table.
AFTER_COMMIT_POINT = {
    "after_store_write",
    "entry_written",
    "copied",
    "acknowledged",
    "checkpoint_write",
    "last_checkpoint_write",
}
ORPHAN_CODES = {"orphan-file", "orphan-log-file"}
MATRIX = [("local", step) for step in LOCAL_STEPS] + [
    ("s3_dynamodb", step) for step in S3_DYNAMODB_STEPS
]


def _name(version: int, suffix: str = "json") -> str:
    return f"{version:020d}.{suffix}"


# --------------------------------------------------------------------------- the child


@dataclass
class ChildRun:
    """What one crash-writer process printed, and how it ended."""

    lines: list[str]
    returncode: int
    stderr: str

    @property
    def committed(self) -> list[tuple[int, str]]:
        out = []
        for line in self.lines:
            if line.startswith("COMMITTED "):
                _, version, path = line.split(" ", 2)
                out.append((int(version), path))
        return out

    @property
    def data_files(self) -> list[str]:
        return [line.split(" ", 1)[1] for line in self.lines if line.startswith("DATA ")]

    @property
    def at(self) -> list[str]:
        """The words of the ``AT`` line: step, then the step's detail."""
        found = [line.split(" ") for line in self.lines if line.startswith("AT ")]
        assert len(found) == 1, f"expected one AT line: {self.lines}"
        return found[0][1:]


def _read_lines(fd: int, deadline: float) -> Any:
    """Lines from ``fd`` as they arrive; ``TimeoutError`` past ``deadline`` (a failure guard)."""
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the crash writer did not reach its crash point in time")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            if buffer:
                yield buffer.decode()
            return
        buffer += chunk


def run_crash_writer(location: CloudTable, step: str, occurrence: int, prefix: str) -> ChildRun:
    """Run the writer until it reports ``AT <step>``, SIGKILL it there, and wait for it."""
    command = [
        sys.executable,
        str(CRASH_WRITER),
        location.uri,
        json.dumps(location.options),
        step,
        str(occurrence),
        prefix,
    ]
    lines: list[str] = []
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=CRASH_WRITER.parent,
        )
        assert proc.stdout is not None and proc.stdin is not None
        try:
            for line in _read_lines(proc.stdout.fileno(), time.monotonic() + CHILD_TIMEOUT):
                lines.append(line)
                if line.startswith("AT "):
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            returncode = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
            proc.stdout.close()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    run = ChildRun(lines, returncode, stderr)
    assert any(line.startswith("AT ") for line in lines), (
        f"the writer never reached {step} #{occurrence} (exit {returncode}):\n"
        + "\n".join(lines)
        + "\n"
        + stderr
    )
    return run


# --------------------------------------------------------------------------- raw storage


class RawTable:
    """The table's files as stored, read around the log store (whose reads repair commits)."""

    def __init__(self, location: CloudTable) -> None:
        self.location = location
        self.s3: Any = None
        self.dynamo: Any = None
        if location.backend == "s3_dynamodb":
            kwargs = {
                "endpoint_url": location.options["s3.endpoint"],
                "region_name": "us-east-1",
                "aws_access_key_id": "testing",
                "aws_secret_access_key": "testing",
            }
            self.s3 = boto3.client("s3", **kwargs)
            self.dynamo = boto3.client("dynamodb", **kwargs)
            self.key = location.uri.removeprefix(f"s3://{BUCKET}/")
        else:
            self.root = Path(location.uri)

    def files(self) -> dict[str, int]:
        """Every file of the table (relative path -> size), ``_delta_log`` included."""
        if self.s3 is None:
            return {
                str(p.relative_to(self.root)): p.stat().st_size
                for p in self.root.rglob("*")
                if p.is_file()
            }
        out: dict[str, int] = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=self.key + "/"
        ):
            for item in page.get("Contents", ()):
                out[item["Key"][len(self.key) + 1 :]] = int(item["Size"])
        return out

    def log_files(self) -> dict[str, int]:
        """Files under ``_delta_log`` (name relative to it, e.g. ``.tmp/...``) -> size."""
        prefix = "_delta_log/"
        return {k[len(prefix) :]: v for k, v in self.files().items() if k.startswith(prefix)}

    def data_files(self) -> set[str]:
        return {k for k in self.files() if not k.startswith("_delta_log/")}

    def read(self, relative: str) -> bytes:
        if self.s3 is None:
            return (self.root / relative).read_bytes()
        return bytes(self.s3.get_object(Bucket=BUCKET, Key=f"{self.key}/{relative}")["Body"].read())

    def relative(self, detail_path: str) -> str:
        """A path the child printed (a local path, or ``/bucket/key`` of a PUT) -> relative."""
        if self.s3 is None:
            return str(Path(detail_path).relative_to(self.root))
        prefix = f"/{BUCKET}/{self.key}/"
        assert detail_path.startswith(prefix), detail_path
        return detail_path[len(prefix) :]

    def entry(self, version: int) -> dict[str, Any] | None:
        """The DynamoDB entry of a commit (S3 + DynamoDB only)."""
        response = self.dynamo.get_item(
            TableName=DYNAMO_TABLE,
            Key={"tablePath": {"S": self.location.uri}, "fileName": {"S": _name(version)}},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def commits(self) -> dict[int, list[dict[str, Any]]]:
        """Every commit file, parsed line by line as JSON (each line one action)."""
        out: dict[int, list[dict[str, Any]]] = {}
        for name in self.log_files():
            if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
                text = self.read(f"_delta_log/{name}").decode()
                actions = [json.loads(line) for line in text.splitlines() if line.strip()]
                for action in actions:
                    assert isinstance(action, dict) and len(action) == 1, (name, action)
                assert actions, f"{name} is empty"
                out[int(name[:20])] = actions
        return out

    def last_checkpoint_version(self) -> int | None:
        if "_last_checkpoint" not in self.log_files():
            return None
        return int(json.loads(self.read("_delta_log/_last_checkpoint"))["version"])


def added_paths(actions: list[dict[str, Any]]) -> set[str]:
    return {a["add"]["path"] for a in actions if "add" in a}


# --------------------------------------------------------------------------- expectations


@dataclass
class Ledger:
    """What the table must hold, accumulated over the kills."""

    latest: int = 0
    committed: dict[str, int] = field(default_factory=dict)  # path -> version
    orphan_data: set[str] = field(default_factory=set)
    parent_commits: int = 0


def check_raw_state(
    raw: RawTable, step: str, run: ChildRun, version: int, pending: str
) -> str | None:
    """Before anything reads the table: the kill left exactly what ``step`` implies.

    Returns:
        The temp log file the kill left behind (relative to the table root), if any.
    """
    files = raw.files()
    logs = raw.log_files()
    at = run.at
    assert at[0] == step
    assert pending in files, f"the data file {pending} was written before the commit"
    commit_there = _name(version) in logs
    if step in ("after_data_files", "mid_temp_write", "after_temp_file", "entry_written"):
        assert not commit_there, f"{step}: {_name(version)} must not exist yet"
    else:
        assert commit_there, f"{step}: {_name(version)} must exist"
    left: str | None = None
    if step in ("mid_temp_write", "checkpoint_write", "last_checkpoint_write"):
        path, half, total = at[1], int(at[2]), int(at[3])
        assert 0 < half < total
        relative = raw.relative(path)
        if raw.s3 is None:
            assert files.get(relative) == half, f"{relative} should hold {half} of {total} bytes"
            left = relative
        elif step != "last_checkpoint_write":  # the PUT was cut off mid-body: nothing stored
            assert relative not in files, f"a PUT cut off mid-body left {relative}"
        # _last_checkpoint is overwritten in place on S3: the old one stays (checked below).
    if step == "checkpoint_write":
        assert _name(version, "checkpoint.parquet") not in logs
    if step == "last_checkpoint_write":
        assert _name(version, "checkpoint.parquet") in logs
        previous = raw.last_checkpoint_version()
        assert previous is None or previous < version
    if raw.s3 is None:
        if step == "after_temp_file":
            left, total = raw.relative(at[1]), int(at[2])
            assert files.get(left) == total, "the temp file was complete"
        if step == "after_store_write":
            assert not [n for n in logs if n.startswith(f".{_name(version)}.")], "temp unlinked"
        return left
    entry = raw.entry(version)
    temps = [f"_delta_log/{n}" for n in logs if n.startswith(f".tmp/{_name(version)}.")]
    if step in ("after_data_files", "mid_temp_write", "after_temp_file"):
        assert entry is None, f"{step}: no DynamoDB entry for {version} yet"
        assert len(temps) == (1 if step == "after_temp_file" else 0), temps
        return temps[0] if temps else None
    if step in ("entry_written", "copied"):
        assert entry is not None and entry["complete"]["S"] == "false"
        assert entry["tempPath"]["S"] in logs, "the entry's temp file exists"
    else:
        assert entry is not None and entry["complete"]["S"] == "true"
        assert "expireTime" in entry
    return None


def check_report(location: CloudTable, raw: RawTable, ledger: Ledger, left: str | None) -> None:
    """``check_table``: clean, only orphans, and the ones the kills left are reported."""
    report = check_table(location.uri, location.options)
    findings = "\n".join(f"{f.severity} {f.code} {f.path}: {f.message}" for f in report.findings)
    assert report.clean, findings
    assert not report.errors and not report.warnings, findings
    assert {f.code for f in report.infos} <= ORPHAN_CODES, findings
    assert report.version == ledger.latest, findings
    reported_data = {_relative(location, f.path) for f in report.infos if f.code == "orphan-file"}
    assert reported_data == ledger.orphan_data, findings
    reported_logs = {
        _relative(location, f.path) for f in report.infos if f.code == "orphan-log-file"
    }
    assert reported_logs == {f"_delta_log/{n}" for n in raw.log_files() if _is_temp(n)}, findings
    if left is not None:
        assert left in reported_logs, f"the temp file {left} must be reported:\n{findings}"


def _is_temp(name: str) -> bool:
    """LocalLogStore's ``.<name>.<hex>.tmp`` files and the DynamoDB protocol's ``.tmp/``."""
    return name.startswith(".")


def _relative(location: CloudTable, path: str | None) -> str:
    assert path is not None
    for prefix in (location.uri.rstrip("/") + "/", str(Path(location.uri)) + "/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _delta_rs_options(location: CloudTable) -> dict[str, str]:
    """delta-rs storage options for reading the table (no commits, so no locking needed)."""
    if location.backend == "local":
        return {}
    return {
        "AWS_ENDPOINT_URL": location.options["s3.endpoint"],
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ALLOW_HTTP": "true",
    }


# --------------------------------------------------------------------------- the test


@pytest.fixture
def location(request: pytest.FixtureRequest, tmp_path: Path) -> CloudTable:
    backend = request.node.callspec.params["backend"]
    if backend == "local":
        return CloudTable("local", str(tmp_path / "table"), {})
    return cloud_location(request, backend)


def _parent_commit(
    table: DeltaTable, ledger: Ledger, store: LogStore, root: str
) -> tuple[int, str]:
    """A new writer (in this process) appends one file through ``table``; (version, path)."""
    relative = f"parent-{ledger.parent_commits:03d}-{uuid.uuid4().hex[:8]}.parquet"
    write_data_file(store, root, relative, parquet_bytes("parent", ledger.parent_commits))
    ledger.parent_commits += 1
    with table.transaction("WRITE") as tx:
        tx.add(relative)
    assert tx.version is not None
    return tx.version, relative


@pytest.mark.parametrize(("backend", "step"), MATRIX, ids=[f"{b}-{s}" for b, s in MATRIX])
def test_sigkill_at_step_leaves_a_consistent_table(
    location: CloudTable, backend: str, step: str
) -> None:
    DeltaTable.create(
        location.uri, SCHEMA, configuration=CONFIGURATION, storage_options=location.options
    )
    raw = RawTable(location)
    ledger = Ledger()
    store, root = open_store(location.uri, location.options)
    for occurrence in OCCURRENCES:
        start = ledger.latest
        run = run_crash_writer(location, step, occurrence, f"k{occurrence}")
        assert run.returncode == -signal.SIGKILL, run.stderr
        assert run.at[0] == step

        # The child's commits that returned: consecutive versions, one file each.
        committed = run.committed
        assert [v for v, _ in committed] == list(range(start + 1, start + 1 + len(committed)))
        for version, path in committed:
            ledger.committed[path] = version
        ledger.latest = start + len(committed)
        assert run.data_files[: len(committed)] == [p for _, p in committed]
        assert len(run.data_files) == len(committed) + 1, "one data file was pending at the kill"
        pending = run.data_files[-1]
        killed = ledger.latest + 1
        present = step in AFTER_COMMIT_POINT

        left = check_raw_state(raw, step, run, killed, pending)

        # (1) The table opens, at the version the step implies.
        if present:
            ledger.latest = killed
            ledger.committed[pending] = killed
        else:
            ledger.orphan_data.add(pending)
        table = DeltaTable(
            location.uri, storage_options=location.options, background_checkpoints=False
        )
        assert table.version() == ledger.latest
        if raw.s3 is not None and present:
            entry = raw.entry(killed)  # repaired by the reader if the writer died before
            assert entry is not None and entry["complete"]["S"] == "true"
            temp = raw.read(f"_delta_log/{entry['tempPath']['S']}")
            assert raw.read(f"_delta_log/{_name(killed)}") == temp, "N.json is its temp file"

        # (5) Every commit file parses; the killed commit is all there or not at all.
        commits = raw.commits()
        assert sorted(commits) == list(range(ledger.latest + 1))
        if present:
            assert added_paths(commits[killed]) == {pending}
        else:
            assert all(pending not in added_paths(a) for a in commits.values())

        # (2) check: clean, only orphans, and what the kill left behind is reported.
        check_report(location, raw, ledger, left)

        # (3) A new writer (the reader that opened the table) commits the next version.
        version, path = _parent_commit(table, ledger, store, root)
        assert version == ledger.latest + 1
        ledger.latest = version
        ledger.committed[path] = version

        # (4) Every commit that returned success is there, its file live (re-listed).
        assert table.update() == ledger.latest
        live = set(table.files().column("path").to_pylist())
        commits = raw.commits()
        for path, version in ledger.committed.items():
            assert path in live, f"{path} (committed at {version}) is not live"
            assert path in added_paths(commits[version])
        assert live == set(ledger.committed)
        assert not live & ledger.orphan_data

    # Checkpoints were written along the way (the checkpoint steps were really reached), and
    # every data file is either committed or a known orphan.
    last = raw.last_checkpoint_version()
    assert last is not None and last >= 2
    assert raw.data_files() == set(ledger.committed) | ledger.orphan_data

    # Another implementation (delta-rs) reads the same table: same version, files and rows.
    other = deltalake.DeltaTable(location.uri, storage_options=_delta_rs_options(location))
    assert other.version() == ledger.latest
    adds = pa.table(other.get_add_actions())
    assert set(adds.column("path").to_pylist()) == set(ledger.committed)
    assert other.to_pyarrow_table().num_rows == ROWS * len(ledger.committed)
