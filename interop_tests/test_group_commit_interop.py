"""Group commit: delta-rs and delta-spark read a table whose commits hold several transactions.

The first transaction's write is held (a patched ``try_write`` waits on an Event) while eight
others queue behind it through the committer's ``on_queued`` seam; released, the eight land as
one commit. One of them (Serializable) read a partition an earlier member appends to, so it
fails alone with ``ConcurrentAppendError``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog.write.transaction as transaction_module
from deltalog import ConcurrentAppendError, DeltaTable
from deltalog.write.group_commit import committer_for

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
WAIT = 60.0
MEMBERS = 8


def _write(root: str, path: str, ids: list[int]) -> str:
    full = Path(root) / path
    full.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), full)
    return path


def _grouped_table(root: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Version 1 one commit; version 2 the group (members 0..7, member 5 conflicting)."""
    DeltaTable.create(root, SCHEMA, partition_by=["p"])
    entered, gate = threading.Event(), threading.Event()
    queued: dict[int, threading.Event] = {n: threading.Event() for n in range(1, MEMBERS + 2)}
    committer = committer_for(DeltaTable(root)._storage)
    committer.on_queued = lambda n: queued[n].set()
    real = transaction_module.try_write

    def held(*args: Any, **kwargs: Any) -> bool:
        if not entered.is_set():
            entered.set()
            assert gate.wait(WAIT)
        return real(*args, **kwargs)

    monkeypatch.setattr(transaction_module, "try_write", held)
    results: dict[str, Any] = {}

    def member(name: str, n: int) -> None:
        table = DeltaTable(root, group_commit=True)
        try:
            level = "Serializable" if name == "conflicting" else None
            with table.transaction(isolation_level=level) as tx:
                if name == "conflicting":  # read p=a, which member 0 appends to first
                    tx.read_files({"p": "a"})
                tx.add(_write(root, f"p={'ab'[n % 2]}/{name}-{n}.parquet", [n]))
            results[name] = tx.version
        except Exception as exc:
            results[name] = exc

    threads = [threading.Thread(target=member, args=("first", 100))]
    threads[0].start()
    assert entered.wait(WAIT)
    for e in queued.values():
        e.clear()
    for n in range(MEMBERS):
        name = "conflicting" if n == 5 else f"m{n}"
        threads.append(threading.Thread(target=member, args=(name, n)))
        threads[-1].start()
        assert queued[n + 1].wait(WAIT)
    gate.set()
    for t in threads:
        t.join(WAIT)
    return results


@pytest.fixture
def grouped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any]]:
    root = str(tmp_path / "t")
    return root, _grouped_table(root, monkeypatch)


def test_delta_rs_reads_a_group_commit(grouped: tuple[str, dict[str, Any]]) -> None:
    root, results = grouped
    assert results["first"] == 1
    assert isinstance(results["conflicting"], ConcurrentAppendError)
    assert {results[f"m{n}"] for n in range(MEMBERS) if n != 5} == {2}
    table = deltalake.DeltaTable(root)
    assert table.version() == 2
    ids = sorted(table.to_pyarrow_table().column("id").to_pylist())
    assert ids == sorted([100, *(n for n in range(MEMBERS) if n != 5)])
    latest = table.history(1)[0]
    params = latest["operationParameters"]
    assert params["numMembers"] == str(MEMBERS - 1)
    assert len(orjson.loads(params["members"])) == MEMBERS - 1
    assert DeltaTable(root).check().ok


def test_delta_spark_reads_a_group_commit(
    delta_spark: Any, grouped: tuple[str, dict[str, Any]]
) -> None:
    root, results = grouped
    assert isinstance(results["conflicting"], ConcurrentAppendError)
    frame = delta_spark.read.format("delta").load(root)
    assert sorted(r.id for r in frame.collect()) == sorted(
        [100, *(n for n in range(MEMBERS) if n != 5)]
    )
    history = delta_spark.sql(f"DESCRIBE HISTORY delta.`{root}`").collect()
    latest = max(history, key=lambda r: r.version)
    assert latest.version == 2
    assert latest.operationParameters["numMembers"] == str(MEMBERS - 1)
    assert latest.isBlindAppend is True
