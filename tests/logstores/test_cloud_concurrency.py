"""Acceptance: writers in separate processes commit to one object-store table; nothing is lost.

For each object store (S3 with conditional PUT, S3 coordinated through DynamoDB, GCS, Azure;
real servers on 127.0.0.1, see ``servers/fixtures.py``), four spawned processes each open their own
``DeltaTable(uri, storage_options=...)``, wait on one barrier, then land 50 blind appends as
fast as they can. Every commit is ``append_files`` of one real one-row Parquet file that the
writer uploaded to the store just before (deltalog reads its footer back for the statistics).
Checkpoints stay on (default interval 10), written by the writers while they race.

The parent checks the writers' reports against the raw ``_delta_log`` read through the log store
and parsed with ``json`` (not deltalog), against the raw checkpoint Parquet file, and against a
freshly opened ``DeltaTable``.
"""

from __future__ import annotations

import io
import json
import logging
import re
import time
import traceback
from collections import Counter
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spawned import run_writers

from deltalog import DeltaTable
from deltalog.logstores import LogStore, open_store

if TYPE_CHECKING:
    from servers.fixtures import CloudTable

WRITERS = 4
ROUNDS = 50
BARRIER_TIMEOUT = 60.0
CHECKPOINT_INTERVAL = 10
SCHEMA = pa.schema([("x", pa.int64()), ("p", pa.string())])
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")


class Commit(NamedTuple):
    """One commit a writer landed: its sequence number, the file it added, the version."""

    writer: int
    seq: int
    path: str
    version: int


class Report(NamedTuple):
    """Everything one writer process sends back."""

    writer: int
    commits: list[Commit]
    failures: list[str]
    warnings: list[str]
    checkpoints_done: bool
    seconds: float
    crashed: str | None


class _Collect(logging.Handler):
    """Keeps the messages of warnings (a failed background checkpoint is only logged)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def _rel(writer: int, seq: int) -> str:
    return f"p={writer}/w{writer}-{seq:03d}.parquet"


def _row(writer: int, seq: int) -> int:
    return writer * 1000 + seq


def _parquet(writer: int, seq: int) -> bytes:
    """One row ``x``; the partition value ``p`` is in the directory name only."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array([_row(writer, seq)], pa.int64())}), buf)
    return buf.getvalue()


# ---------------------------------------------------------------------- writer processes
def _commit(table: DeltaTable, store: LogStore, root: str, writer: int, seq: int) -> Commit:
    """Upload one Parquet file, then commit it as a blind append."""
    rel = _rel(writer, seq)
    store.write(store.join(root, rel), _parquet(writer, seq), overwrite=True)
    return Commit(writer, seq, rel, table.append_files([rel]))


def _child(
    uri: str, options: dict[str, str], writer: int, barrier: Any, results: Any, rounds: int
) -> None:
    """Writer process entry (module level, so that ``spawn`` can import it)."""
    collect = _Collect()
    for name in ("deltalog", "logstores", "checkpoints"):
        logging.getLogger(name).addHandler(collect)
    commits: list[Commit] = []
    failures: list[str] = []
    crashed = None
    done = False
    seconds = 0.0
    try:
        store, root = open_store(uri, options)
        table = DeltaTable(uri, storage_options=options)
        barrier.wait(timeout=BARRIER_TIMEOUT)
        start = time.perf_counter()
        for seq in range(rounds):
            try:
                commits.append(_commit(table, store, root, writer, seq))
            except Exception as exc:
                failures.append(f"seq {seq}: {type(exc).__qualname__}: {exc}"[:500])
        seconds = time.perf_counter() - start
        done = table.wait_for_checkpoints(timeout=120)
    except BaseException:  # reported to the parent; aborting releases writers at the barrier
        barrier.abort()
        crashed = traceback.format_exc()
    results.put(Report(writer, commits, failures, collect.messages, done, seconds, crashed))


def _run(uri: str, options: dict[str, str], timeout: float) -> list[Report]:
    """Run the writers, started together; their reports, by writer."""
    return run_writers(
        _child,
        lambda w, barrier, results: (uri, options, w, barrier, results, ROUNDS),
        WRITERS,
        timeout,
    )


# ---------------------------------------------------------------------- reading the log raw
def _log_files(store: LogStore, root: str) -> list[str]:
    """Names in ``_delta_log`` (not in its subdirectories), through the log store."""
    return [s.name for s in store.list_from(store.join(root, "_delta_log", "0"))]


def _raw_log(store: LogStore, root: str, names: list[str]) -> dict[int, list[dict[str, Any]]]:
    """Every commit file's actions, by version, parsed with ``json``."""
    out: dict[int, list[dict[str, Any]]] = {}
    for name in names:
        m = _COMMIT.match(name)
        if m:
            text = store.read(store.join(root, "_delta_log", name)).decode()
            out[int(m.group(1))] = [json.loads(line) for line in text.splitlines() if line]
    return out


def _checkpoint_adds(store: LogStore, root: str, version: int) -> list[str]:
    """Paths of the ``add`` rows of the classic checkpoint of ``version``, read with pyarrow."""
    data = store.read(store.join(root, "_delta_log", f"{version:020d}.checkpoint.parquet"))
    adds = pq.read_table(io.BytesIO(data), columns=["add"]).column("add").to_pylist()
    return [a["path"] for a in adds if a is not None]


# ---------------------------------------------------------------------- the test
@pytest.mark.timeout(240)
def test_four_processes_blind_append_50_commits_each(cloud_table: CloudTable) -> None:
    uri, options = cloud_table.uri, cloud_table.options
    started = time.perf_counter()
    created = DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options)
    assert created.version() == 0
    reports = _run(uri, options, timeout=220)
    elapsed = time.perf_counter() - started
    total = WRITERS * ROUNDS
    commits = [c for r in reports for c in r.commits]
    attempts_lost = 0

    failures = {r.writer: r.failures for r in reports if r.failures}
    assert not failures, f"commits raised: {failures}"
    assert all(r.checkpoints_done for r in reports), "a writer's checkpoints did not finish"
    warnings = [w for r in reports for w in r.warnings]
    assert not warnings, f"writers logged warnings (failed checkpoints?): {warnings[:5]}"

    # The log, read raw: commit files exactly 0..WRITERS*ROUNDS, one per reported version.
    store, root = open_store(uri, options)
    names = _log_files(store, root)
    log = _raw_log(store, root, names)
    assert sorted(log) == list(range(total + 1)), f"commit files are not exactly 0..{total}"
    versions = sorted(c.version for c in commits)
    assert versions == list(range(1, total + 1)), (
        f"reported versions are not one commit per version 1..{total}: "
        f"{len(versions)} reports, {len(set(versions))} distinct"
    )
    for c in commits:
        actions = log[c.version]
        adds = [a["add"] for a in actions if "add" in a]
        assert [a["path"] for a in adds] == [c.path], f"version {c.version}: adds differ"
        assert adds[0]["partitionValues"] == {"p": str(c.writer)}
        assert not any("remove" in a for a in actions), f"version {c.version} removes"
        (info,) = [a["commitInfo"] for a in actions if "commitInfo" in a]
        assert info["isBlindAppend"] is True
        assert info["readVersion"] < c.version, f"version {c.version}: readVersion"
        assert adds[0]["size"] == len(_parquet(c.writer, c.seq))
        assert json.loads(adds[0]["stats"])["numRecords"] == 1
        attempts_lost += info["readVersion"] < c.version - 1
    # The writers did race: some commit landed above the version after the one it read.
    assert attempts_lost, "every commit landed right after the version it read; no race"

    # Every file is added exactly once and is live.
    expected = {_rel(w, s) for w in range(WRITERS) for s in range(ROUNDS)}
    added = Counter(a["add"]["path"] for acts in log.values() for a in acts if "add" in a)
    assert set(added) == expected
    assert max(added.values()) == 1, [p for p, n in added.items() if n > 1][:5]

    # Checkpoints were written while racing; the newest is of the last version and holds all.
    cps = sorted(int(m.group(1)) for n in names if (m := _CHECKPOINT.match(n)))
    assert cps, "no checkpoint was written"
    assert all(v % CHECKPOINT_INTERVAL == 0 for v in cps), cps
    assert cps[-1] == total, f"no checkpoint of version {total}: {cps}"
    pointer = json.loads(store.read(store.join(root, "_delta_log", "_last_checkpoint")))
    assert pointer["version"] == total
    checkpointed = _checkpoint_adds(store, root, total)
    assert sorted(checkpointed) == sorted(expected)

    # A fresh reader sees all WRITERS*ROUNDS files; sampled files hold the rows their writers wrote.
    fresh = DeltaTable(uri, storage_options=options)
    assert fresh.version() == total
    uris = fresh.file_uris()
    assert sorted(uris) == sorted(store.join(root, p) for p in expected)
    assert fresh.history(limit=1)[0]["version"] == total
    for c in commits[::50]:
        rows = pq.read_table(io.BytesIO(store.read(store.join(root, c.path))))
        assert rows.column("x").to_pylist() == [_row(c.writer, c.seq)]

    busiest = max(r.seconds for r in reports)
    print(
        f"\n[{cloud_table.backend}] {WRITERS}x{ROUNDS} commits, one Parquet file each: "
        f"slowest writer {busiest:.1f}s, create + writers {elapsed:.1f}s, with checks "
        f"{time.perf_counter() - started:.1f}s; {attempts_lost} commits lost a race first; "
        f"{len(cps)} checkpoints, newest {cps[-1]}"
    )
