"""Readers never fail because a writer is mid-commit or log cleanup is running.

A directory listing is not a snapshot: taken while a writer creates ``N.json`` and ``N+1.json``
it can show ``N+1`` without ``N``, and a file it shows may be deleted by log cleanup before it
is read. Readers re-list (bounded) instead of reporting a gap or a foreign "not found".
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from tableutil import commit_one

from deltalog import (
    DeltaLogError,
    DeltaTable,
    VersionNotFoundError,
    check_table,
)
from deltalog.logstores import FileStatus
from deltalog.logstores.local import LocalLogStore

SCHEMA = pa.schema([("id", pa.int64())])
RETENTION_0 = {"delta.logRetentionDuration": "interval 0 seconds"}
TIMEOUT = 120.0


# ------------------------------------------------------------------ listing holes (item 2)
def test_a_listing_that_misses_a_commit_being_written_is_taken_again(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path / "t")
    writer = DeltaTable.create(root, SCHEMA)
    for i in range(3):
        commit_one(writer, f"f{i}.parquet")
    original = LocalLogStore.list_from
    torn = [f"{2:020d}.json"]  # the first listing misses version 2, as one taken mid-commit can

    def list_from(self: LocalLogStore, path: str) -> Iterator[FileStatus]:
        entries = list(original(self, path))
        if torn and "_delta_log" in path:
            name = torn.pop()
            entries = [e for e in entries if e.name != name]
        return iter(entries)

    monkeypatch.setattr(LocalLogStore, "list_from", list_from)
    assert DeltaTable(root).version() == 3
    torn.append(f"{2:020d}.json")
    latest = DeltaTable(root).history(limit=1)[0]["timestamp"]
    assert DeltaTable(root, timestamp=latest).version() == 3
    torn.append(f"{2:020d}.json")
    assert check_table(root, data_files=False).clean


@dataclass
class _Counts:
    role: str
    commits: int = 0
    opens: int = 0
    errors: int = 0
    first_error: str | None = None


def _writer(root: str, n: int, start: Any, results: Any) -> None:
    counts = _Counts("writer")
    try:
        table = DeltaTable(root)
        start.wait(timeout=TIMEOUT)
        for i in range(n):
            commit_one(table, f"{multiprocessing.current_process().name}-{i}.parquet")
            counts.commits += 1
    except BaseException:
        counts.errors += 1
        counts.first_error = traceback.format_exc()
    results.put(counts)


def _reader(root: str, start: Any, stop: Any, results: Any) -> None:
    counts = _Counts("reader")
    start.wait(timeout=TIMEOUT)
    while not stop.is_set():
        try:
            table = DeltaTable(root)
            table.files(with_stats=False)
            if counts.opens % 8 == 7 and table.version() > 1:  # time travel too
                DeltaTable(root, version=table.version() // 2)
            counts.opens += 1
        except BaseException:
            counts.errors += 1
            if counts.first_error is None:
                counts.first_error = traceback.format_exc()
    results.put(counts)


def test_readers_never_fail_while_two_writers_commit(tmp_path: Any) -> None:
    """Bounded stress: 2 writer processes, 2 reader processes, 0 errors."""
    root = str(tmp_path / "t")
    DeltaTable.create(root, SCHEMA)
    per_writer = 1500
    ctx = multiprocessing.get_context("spawn")
    start, stop, results = ctx.Barrier(4), ctx.Event(), ctx.Queue()
    writers = [
        ctx.Process(target=_writer, args=(root, per_writer, start, results), name=f"w{w}")
        for w in range(2)
    ]
    readers = [
        ctx.Process(target=_reader, args=(root, start, stop, results), name=f"r{r}")
        for r in range(2)
    ]
    for p in [*writers, *readers]:
        p.start()
    try:
        done = [results.get(timeout=TIMEOUT) for _ in writers]
        stop.set()
        done += [results.get(timeout=TIMEOUT) for _ in readers]
    finally:
        stop.set()
        for p in [*writers, *readers]:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
    commits = sum(c.commits for c in done)
    opens = sum(c.opens for c in done)
    errors = [c.first_error for c in done if c.errors]
    total = sum(c.errors for c in done)
    print(f"stress: {commits} commits, {opens} reader opens, {total} errors")
    assert not errors, errors[0]
    assert commits == 2 * per_writer
    assert opens > 0
    assert DeltaTable(root).version() == commits
    assert check_table(root, data_files=False).clean


# ------------------------------------------------------------------ cleanup races (item 3)
def _cleanup_while_first_read(
    monkeypatch: pytest.MonkeyPatch, root: str, writer: DeltaTable
) -> None:
    """The next read of a commit file first lets the writer move on, checkpoint and clean up."""
    pending = [True]

    def first_read(path: str) -> None:
        if pending and path.endswith(".json") and "_delta_log" in path:
            pending.clear()
            commit_one(writer, "late.parquet")
            writer.checkpoint()
            assert writer.cleanup_log()

    original_read, original_view = LocalLogStore.read, LocalLogStore.read_view

    def read(self: LocalLogStore, path: str) -> bytes:
        first_read(path)
        return original_read(self, path)

    def read_view(self: LocalLogStore, path: str) -> Any:  # how replay reads commits
        first_read(path)
        return original_view(self, path)

    monkeypatch.setattr(LocalLogStore, "read", read)
    monkeypatch.setattr(LocalLogStore, "read_view", read_view)


def _old_table(root: str) -> DeltaTable:
    writer = DeltaTable.create(root, SCHEMA, configuration=RETENTION_0)
    writer = DeltaTable(root, background_checkpoints=False)
    for i in range(3):
        commit_one(writer, f"f{i}.parquet")
    return writer


def test_reader_racing_log_cleanup_rebuilds_from_a_fresh_listing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path / "t")
    writer = _old_table(root)
    _cleanup_while_first_read(monkeypatch, root, writer)
    table = DeltaTable(root)
    assert table.version() == 4
    assert len(table.files()) == 4
    assert check_table(root, data_files=False).clean


def test_time_travel_racing_log_cleanup_is_version_not_found(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path / "t")
    writer = _old_table(root)
    _cleanup_while_first_read(monkeypatch, root, writer)
    with pytest.raises(VersionNotFoundError) as err:
        DeltaTable(root, version=2)
    assert isinstance(err.value, DeltaLogError)
