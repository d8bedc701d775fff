"""Transactions across engines: delta-rs reads what deltalog's transactions commit, and
deltalog's conflict checker judges commits that delta-rs wrote.
"""

from __future__ import annotations

from pathlib import Path

import deltalake
import orjson
import pyarrow as pa
import pytest

from deltalog import ConcurrentAppendError, DeltaTable, col

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _rows(root: str) -> list[tuple[int, str]]:
    table = deltalake.DeltaTable(root).to_pyarrow_table()
    return sorted(zip(table.column("id").to_pylist(), table.column("p").to_pylist(), strict=True))


def _rs_append(root: str, ids: list[int], part: str) -> None:
    deltalake.write_deltalake(
        root, pa.table({"id": ids, "p": [part] * len(ids)}, schema=SCHEMA), mode="append"
    )


def _commit_info(root: str, version: int) -> dict[str, object]:
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    for line in path.read_bytes().splitlines():
        doc = orjson.loads(line)
        if "commitInfo" in doc:
            info: dict[str, object] = doc["commitInfo"]
            return info
    raise AssertionError(f"no commitInfo in version {version}")


@pytest.fixture
def root(tmp_path: Path) -> str:
    root = str(tmp_path / "t")
    deltalake.write_deltalake(
        root, pa.table({"id": [1, 2], "p": ["a", "b"]}, schema=SCHEMA), partition_by=["p"]
    )
    return root


def test_delta_rs_reads_a_partition_rewrite_and_txn(root: str) -> None:
    """A deltalog read-modify-write of one partition (remove + re-add) reads back in delta-rs."""
    table = DeltaTable(root)
    with table.transaction("DELETE") as tx:
        old = tx.read_files(col("p") == "a")
        tx.remove(old)
        tx.set_transaction("job", 7)
    assert _rows(root) == [(2, "b")]
    rs = deltalake.DeltaTable(root)
    assert rs.version() == table.version() == 1
    assert rs.transaction_version("job") == 7
    history = rs.history(1)[0]
    assert history["operation"] == "DELETE"
    assert history["isolationLevel"] == "WriteSerializable"
    assert history["isBlindAppend"] is False


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_delta_rs_append_into_a_read_partition_conflicts(root: str, level: str) -> None:
    """delta-rs 1.6.6 writes no ``isBlindAppend``; absent means "not blind" (as in delta-spark),
    so its append counts against a read of the same partition under both isolation levels.
    """
    table = DeltaTable(root)
    tx = table.transaction("UPDATE", isolation_level=level)
    old = tx.read_files(col("p") == "a")
    _rs_append(root, [10], "a")  # lands first
    winner = deltalake.DeltaTable(root).version()
    assert "isBlindAppend" not in _commit_info(root, winner)
    tx.remove(old)
    with pytest.raises(ConcurrentAppendError) as err:
        tx.commit()
    assert err.value.winning_version == winner
    assert err.value.winning_operation == "WRITE"
    assert err.value.partition == {"p": "a"}
    assert deltalake.DeltaTable(root).version() == winner
    assert _rows(root) == [(1, "a"), (2, "b"), (10, "a")]


def test_delta_rs_append_elsewhere_does_not_conflict(root: str) -> None:
    """A delta-rs append into another partition: deltalog commits after it, delta-rs reads both."""
    table = DeltaTable(root)
    tx = table.transaction("DELETE", isolation_level="Serializable")
    tx.remove(tx.read_files(col("p") == "a"))
    _rs_append(root, [20], "b")
    assert tx.commit() == 2
    assert tx.attempts == 2
    assert _commit_info(root, 2)["readVersion"] == 0
    assert _rows(root) == [(2, "b"), (20, "b")]
