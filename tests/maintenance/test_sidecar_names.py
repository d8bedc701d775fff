"""V2 sidecars are named as delta-spark names them; sidecars named ``<uuid>.parquet`` (deltalog
0.1) are still read, reused and cleaned up."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

import deltalog.checkpoints.v2 as v2
import deltalog.maintenance.checkpointing as checkpointing
from deltalog import DeltaTable
from deltalog.log.storage import TableStorage
from deltalog.maintenance.retention import cleanup_log
from deltalog.maintenance.sidecar_reuse import REUSE_ENV, forget_sidecars
from deltalog.protocol.actions import AddFile
from deltalog.protocol.paths import parse_log_name

SCHEMA = pa.schema([("id", pa.int64())])
DAY = 24 * 3600
# delta-spark's FileNames.newV2CheckpointSidecarFile: version, part (from 1), parts, UUID.
SPARK_NAME = re.compile(
    r"^(?P<version>\d{20})\.checkpoint\.(?P<part>\d{10})\.(?P<parts>\d{10})\."
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.parquet$"
)
OLD_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.parquet$")


def _table(root: Path) -> DeltaTable:
    return DeltaTable.create(
        str(root),
        SCHEMA,
        configuration={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"},
    )


def _add(path: str, size: int) -> AddFile:
    stats = orjson.dumps({"numRecords": size, "minValues": {"id": 0}, "maxValues": {"id": size}})
    return AddFile(
        path=path,
        partition_values={},
        size=size,
        modification_time=1_700_000_000_000 + size,
        data_change=True,
        stats=stats.decode(),
    )


def _commit(table: DeltaTable, adds: list[AddFile], removes: Sequence[str] = ()) -> None:
    with table.transaction("WRITE") as tx:
        if removes:
            tx.remove(list(removes))
        if adds:
            tx.add(adds)
    table.wait_for_checkpoints()


def _log(root: Path) -> Path:
    return root / "_delta_log"


def _sidecars(root: Path) -> list[str]:
    """The sidecar paths the checkpoint ``_last_checkpoint`` points at, in order."""
    pointer: dict[str, Any] = orjson.loads((_log(root) / "_last_checkpoint").read_bytes())
    name = pointer["v2Checkpoint"]["path"]
    lines = [orjson.loads(x) for x in (_log(root) / name).read_bytes().splitlines()]
    return [line["sidecar"]["path"] for line in lines if "sidecar" in line]


def _paths(table: DeltaTable) -> list[str]:
    return sorted(table.files().column("path").to_pylist())


def test_one_sidecar_without_reuse_is_part_1_of_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REUSE_ENV, "0")
    table = _table(tmp_path)
    _commit(table, [_add(f"a{i}.parquet", 1 + i) for i in range(3)])
    _commit(table, [_add("b.parquet", 9)])  # checkpoint at 2
    (name,) = _sidecars(tmp_path)
    m = SPARK_NAME.match(name)
    assert m, name
    assert (int(m["version"]), int(m["part"]), int(m["parts"])) == (2, 1, 1)
    assert parse_log_name(name) is None  # never taken for a checkpoint of _delta_log
    assert (_log(tmp_path) / "_sidecars" / name).is_file()


def test_new_sidecars_of_a_reusing_checkpoint_are_numbered_among_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    table = _table(tmp_path)
    _commit(table, [_add(f"a{i}.parquet", 1 + i) for i in range(8)])
    _commit(table, [_add("b0.parquet", 50)])  # checkpoint at 2: a0-a3, a4-a7, b0
    at_2 = _sidecars(tmp_path)
    parsed = [SPARK_NAME.match(n) for n in at_2]
    assert all(parsed), at_2
    assert [(int(m["version"]), int(m["part"]), int(m["parts"])) for m in parsed if m] == [
        (2, 1, 3),
        (2, 2, 3),
        (2, 3, 3),
    ]
    _commit(table, [], ["a0.parquet"])
    _commit(table, [_add(f"c{i}.parquet", 60 + i) for i in range(5)])  # checkpoint at 4
    at_4 = _sidecars(tmp_path)
    reused = [n for n in at_4 if n in at_2]
    new = [n for n in at_4 if n not in at_2]
    assert reused  # a4-a7, unchanged: named for checkpoint 2 still
    triples = [SPARK_NAME.match(n) for n in new]
    assert all(triples), new
    assert {int(m["version"]) for m in triples if m} == {4}
    assert sorted(int(m["part"]) for m in triples if m) == list(range(1, len(new) + 1))
    assert {int(m["parts"]) for m in triples if m} == {len(new)}


def _age_everything(root: Path, days: float) -> None:
    then = time.time() - days * DAY
    for entry in [*_log(root).iterdir(), *(_log(root) / "_sidecars").iterdir()]:
        if entry.is_file():
            os.utime(entry, (then, then))


def test_uuid_named_sidecars_are_still_read_reused_and_cleaned_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    with monkeypatch.context() as old:  # deltalog 0.1 named sidecars <uuid>.parquet
        old.setattr(v2, "sidecar_name", lambda version, part, parts, unique: f"{unique}.parquet")
        table = _table(tmp_path)
        _commit(table, [_add(f"a{i}.parquet", 1 + i) for i in range(8)])
        _commit(table, [_add("b0.parquet", 50)])  # checkpoint at 2
    at_2 = _sidecars(tmp_path)
    assert len(at_2) == 3 and all(OLD_NAME.match(n) for n in at_2)
    expected = [f"a{i}.parquet" for i in range(8)] + ["b0.parquet"]
    reader = DeltaTable(str(tmp_path))
    assert reader.snapshot.checkpoint_version == 2
    assert _paths(reader) == sorted(expected)

    forget_sidecars()  # a writer of this version, which learns the old sidecars from storage
    writer = DeltaTable(str(tmp_path))
    _commit(writer, [], ["a0.parquet"])
    _commit(writer, [_add("b1.parquet", 51)])  # checkpoint at 4: reuses the a4-a7 sidecar
    at_4 = _sidecars(tmp_path)
    kept = [n for n in at_4 if n in at_2]
    assert len(kept) == 1 and OLD_NAME.match(kept[0])
    assert all(SPARK_NAME.match(n) for n in at_4 if n not in at_2)
    expected = sorted([*expected[1:], "b1.parquet"])
    assert _paths(DeltaTable(str(tmp_path))) == expected

    _commit(writer, [], ["a4.parquet"])  # the old sidecar holds a removed file now
    _commit(writer, [_add("b2.parquet", 52)])  # checkpoint at 6: no old name left
    at_6 = _sidecars(tmp_path)
    assert all(SPARK_NAME.match(n) for n in at_6), at_6
    _age_everything(tmp_path, 40)
    deleted = cleanup_log(TableStorage.open(str(tmp_path)), dict(writer.snapshot.configuration))
    gone = {d.split("/", 1)[1] for d in deleted if d.startswith("_sidecars/")}
    assert gone == (set(at_2) | set(at_4)) - set(at_6)  # old and new names alike
    assert {p.name for p in (_log(tmp_path) / "_sidecars").iterdir()} == set(at_6)
    expected = sorted([p for p in expected if p != "a4.parquet"] + ["b2.parquet"])
    after = DeltaTable(str(tmp_path))
    assert after.snapshot.checkpoint_version == 6
    assert _paths(after) == expected
    assert after.check(data_files=False).findings == []
