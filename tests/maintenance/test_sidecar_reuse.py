"""Sidecar reuse in V2 checkpoints: what a reader sees through them, what is reused and kept."""

from __future__ import annotations

import hashlib
import math
import os
import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog.maintenance.checkpointing as checkpointing
import deltalog.maintenance.sidecar_reuse as sidecar_reuse
from deltalog import DeltaTable
from deltalog.checkpoints.checksum import json_checksum
from deltalog.log.storage import TableStorage
from deltalog.maintenance.retention import cleanup_log
from deltalog.maintenance.sidecar_reuse import REUSE_ENV, forget_sidecars
from deltalog.protocol.actions import AddFile

SCHEMA = pa.schema([("id", pa.int64())])
DAY = 24 * 3600


def _table(root: Path, interval: int) -> DeltaTable:
    return DeltaTable.create(
        str(root),
        SCHEMA,
        configuration={
            "delta.checkpointPolicy": "v2",
            "delta.checkpointInterval": str(interval),
        },
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


def _commit(table: DeltaTable, adds: list[AddFile], removes: Sequence[str] = ()) -> int:
    with table.transaction("WRITE") as tx:
        if removes:
            tx.remove(list(removes))
        if adds:
            tx.add(adds)
    table.wait_for_checkpoints()
    return table.version()


def _log(root: Path) -> Path:
    return root / "_delta_log"


def _pointer(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((_log(root) / "_last_checkpoint").read_bytes())
    return data


def _sidecars_of(root: Path, name: str) -> list[dict[str, Any]]:
    lines = [orjson.loads(x) for x in (_log(root) / name).read_bytes().splitlines()]
    return [line["sidecar"] for line in lines if "sidecar" in line]


def _file_rows(table: pa.Table) -> set[tuple[Any, ...]]:
    return {
        (r["path"], r["size"], r["modification_time"], r["stats"])
        for r in table.select(["path", "size", "modification_time", "stats"]).to_pylist()
    }


def _through_checkpoint(root: Path) -> DeltaTable:
    """The table read from a copy holding only the last checkpoint and the commits after it."""
    copy = root.with_name(root.name + "-via-checkpoint")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy)
    version = _pointer(root)["version"]
    for v in range(version):
        (_log(copy) / f"{v:020d}.json").unlink()
    table = DeltaTable(str(copy))
    assert table.snapshot.checkpoint_version == version
    return table


def _through_json(root: Path) -> DeltaTable:
    """The table rebuilt from its commits alone (every checkpoint removed in a copy)."""
    copy = root.with_name(root.name + "-via-json")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy)
    for entry in _log(copy).iterdir():
        if ".checkpoint." in entry.name or entry.name == "_last_checkpoint":
            entry.unlink()
    table = DeltaTable(str(copy))
    assert table.snapshot.checkpoint_version is None
    return table


def _check_counts(root: Path) -> list[dict[str, Any]]:
    """The last checkpoint's claimed counts against its sidecars; its sidecar actions."""
    pointer = _pointer(root)
    assert pointer["checksum"] == json_checksum(pointer)
    name = pointer["v2Checkpoint"]["path"]
    sidecars = _sidecars_of(root, name)
    assert pointer["v2Checkpoint"]["sidecarFiles"] == sidecars
    adds = rows = size = 0
    for s in sidecars:
        path = _log(root) / "_sidecars" / s["path"]
        assert path.stat().st_size == s["sizeInBytes"]
        size += s["sizeInBytes"]
        data = pq.read_table(path)
        rows += data.num_rows
        adds += data.num_rows - data.column("add").null_count
    lines = (_log(root) / name).read_bytes().splitlines()
    assert pointer["numOfAddFiles"] == adds
    assert pointer["size"] == len(lines) + rows
    assert pointer["sizeInBytes"] == (_log(root) / name).stat().st_size + size
    tags = orjson.loads(lines[0])["checkpointMetadata"]["tags"]
    assert tags["numOfAddFiles"] == str(adds) and tags["sidecarNumActions"] == str(rows)
    return sidecars


def _digests(root: Path) -> dict[str, str]:
    directory = _log(root) / "_sidecars"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_rounds_read_the_same_through_the_checkpoint_as_through_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 8)
    rng = random.Random(seed)
    root = tmp_path / "t"
    table = _table(root, interval=3)
    live: dict[str, int] = {}
    serial = 0
    seen: dict[str, str] = {}
    shared = 0
    previous: set[str] = set()
    for _ in range(60):
        adds, removes = [], []
        for _ in range(rng.randrange(0, 6)):
            serial += 1
            adds.append(_add(f"f{serial}.parquet", rng.randrange(1, 10_000)))
        choice = rng.random()
        if live and choice < 0.3:  # removes
            removes = rng.sample(sorted(live), min(len(live), rng.randrange(1, 3)))
        elif live and choice < 0.45:  # a live file added again with new size and stats
            path = rng.choice(sorted(live))
            adds.append(_add(path, rng.randrange(10_000, 20_000)))
        elif live and choice < 0.55:  # removed and added back in one commit
            path = rng.choice(sorted(live))
            removes, adds = [path], [*adds, _add(path, rng.randrange(20_000, 30_000))]
        if not adds and not removes:
            serial += 1
            adds = [_add(f"f{serial}.parquet", 1)]
        version = _commit(table, adds, removes)
        for r in removes:
            live.pop(r, None)
        live.update({a.path: a.size for a in adds})
        if version % 3:
            continue
        if rng.random() < 0.3:  # also read the sidecars' keys back from Parquet
            forget_sidecars()
        sidecars = {s["path"] for s in _check_counts(root)}
        shared += len(sidecars & previous)
        previous = sidecars
        for name, digest in _digests(root).items():  # never rewritten once written
            assert seen.setdefault(name, digest) == digest
        via_cp = _through_checkpoint(root)
        via_json = _through_json(root)
        assert via_cp.version() == via_json.version() == version
        assert _file_rows(via_cp.files()) == _file_rows(via_json.files())
        assert sorted(via_cp.files().column("path").to_pylist()) == sorted(live)
        tomb_cp = set(via_cp.snapshot.tombstones.column("path").to_pylist())
        tomb_json = set(via_json.snapshot.tombstones.column("path").to_pylist())
        assert tomb_cp == tomb_json
    assert shared > 0  # sidecars were carried from one checkpoint to the next


def test_a_sidecar_with_a_removed_or_readded_file_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    table = _table(tmp_path, interval=2)
    _commit(table, [_add(f"a{i}.parquet", 100 + i) for i in range(4)])
    _commit(table, [_add(f"b{i}.parquet", 200 + i) for i in range(4)])  # checkpoint at 2
    first = _check_counts(tmp_path)
    assert len(first) == 2
    by_file = {
        s["path"]: {
            r["path"]
            for r in pq.read_table(_log(tmp_path) / "_sidecars" / s["path"])
            .column("add")
            .to_pylist()
        }
        for s in first
    }
    a_side = next(n for n, paths in by_file.items() if "a0.parquet" in paths)
    b_side = next(n for n, paths in by_file.items() if "b0.parquet" in paths)
    before = _digests(tmp_path)
    forget_sidecars()  # a new writer: it learns the sidecars from storage
    other = DeltaTable(str(tmp_path))
    _commit(other, [], ["a1.parquet"])
    _commit(other, [_add("c0.parquet", 300)])  # checkpoint at 4
    second = _check_counts(tmp_path)
    names = [s["path"] for s in second]
    assert b_side in names and a_side not in names
    assert second[names.index(b_side)] == next(s for s in first if s["path"] == b_side)
    assert _digests(tmp_path)[b_side] == before[b_side]
    tombstones = [
        n
        for n in names
        if pq.read_table(_log(tmp_path) / "_sidecars" / n).column("remove").null_count
        < pq.read_metadata(_log(tmp_path) / "_sidecars" / n).num_rows
    ]
    assert len(tombstones) == 1  # tombstones in a sidecar of their own, never reused
    # b2 added again (new size): its sidecar is not reused at the next checkpoint either.
    _commit(other, [_add("b2.parquet", 999)])
    _commit(other, [_add("c1.parquet", 301)])  # checkpoint at 6
    third = [s["path"] for s in _check_counts(tmp_path)]
    assert b_side not in third
    assert tombstones[0] not in third  # a sidecar holding tombstones is never referenced again
    report = DeltaTable(str(tmp_path)).check(data_files=False)
    # The commit re-adding a live path (b2) writes no .crc: its running totals would count
    # the file twice.
    assert report.findings == []
    assert report.checked["checkpoints"] == 3
    via_cp = _through_checkpoint(tmp_path)
    files = dict(zip(*via_cp.files().select(["path", "size"]).to_pydict().values(), strict=True))
    assert files == {
        "a0.parquet": 100,
        "a2.parquet": 102,
        "a3.parquet": 103,
        "b0.parquet": 200,
        "b1.parquet": 201,
        "b2.parquet": 999,
        "b3.parquet": 203,
        "c0.parquet": 300,
        "c1.parquet": 301,
    }


def test_sidecar_count_and_rewrites_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 16
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", cap)
    table = _table(tmp_path, interval=1)
    n = 0
    most = 0
    for i in range(150):
        _commit(table, [_add(f"f{i}_{j}.parquet", 1 + j) for j in range(1 + i % 3)])
        n += 1 + i % 3
        count = len(_check_counts(tmp_path))
        most = max(most, count)
        assert count <= math.ceil(n / cap) + math.log2(cap) + 1
    assert most > 1
    written = sum(pq.read_metadata(p).num_rows for p in (_log(tmp_path) / "_sidecars").iterdir())
    assert written <= n * (math.log2(cap) + 2)  # each row rewritten O(log cap) times
    assert sorted(_through_checkpoint(tmp_path).files().column("path").to_pylist()) == sorted(
        _through_json(tmp_path).files().column("path").to_pylist()
    )


def _age(path: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def test_log_cleanup_keeps_every_referenced_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    table = _table(tmp_path, interval=2)
    _commit(table, [_add(f"a{i}.parquet", 1 + i) for i in range(8)])
    _commit(table, [_add("b0.parquet", 50)])  # checkpoint at 2: a0-a3, a4-a7, b0
    at_2 = {s["path"] for s in _check_counts(tmp_path)}
    _commit(table, [], ["a0.parquet"])
    _commit(table, [_add("b1.parquet", 51)])  # checkpoint at 4: reuses a4-a7
    at_4 = {s["path"] for s in _check_counts(tmp_path)}
    kept, dropped = at_2 & at_4, at_2 - at_4
    assert kept and dropped
    for entry in [*_log(tmp_path).iterdir(), *(_log(tmp_path) / "_sidecars").iterdir()]:
        if entry.is_file():
            _age(entry, 40)
    deleted = cleanup_log(TableStorage.open(str(tmp_path)), dict(table.snapshot.configuration))
    assert any(".checkpoint." in d and d.startswith("00000000000000000002") for d in deleted)
    remaining = {p.name for p in (_log(tmp_path) / "_sidecars").iterdir()}
    assert at_4 <= remaining  # shared with the deleted checkpoint, still referenced
    assert not dropped & remaining
    assert sorted(DeltaTable(str(tmp_path)).files().column("path").to_pylist()) == sorted(
        [f"a{i}.parquet" for i in range(1, 8)] + ["b0.parquet", "b1.parquet"]
    )


def test_a_reused_sidecar_that_vanished_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    table = _table(tmp_path, interval=2)
    _commit(table, [_add(f"a{i}.parquet", 1 + i) for i in range(8)])
    _commit(table, [_add("b0.parquet", 50)])  # checkpoint at 2
    real = checkpointing.plan_reuse
    vanished: list[str] = []

    def plan_then_delete(*args: Any, **kwargs: Any) -> Any:
        plan = real(*args, **kwargs)
        if plan.reused and not vanished:  # log cleanup deletes one behind our back
            name = str(plan.reused[0].action["path"])
            (_log(tmp_path) / "_sidecars" / name).unlink()
            vanished.append(name)
        return plan

    monkeypatch.setattr(checkpointing, "plan_reuse", plan_then_delete)
    _commit(table, [_add("b1.parquet", 51)])
    _commit(table, [_add("b2.parquet", 52)])  # checkpoint at 4
    assert vanished
    sidecars = _check_counts(tmp_path)
    assert vanished[0] not in {s["path"] for s in sidecars}
    assert _pointer(tmp_path)["version"] == 4
    via_cp = _through_checkpoint(tmp_path)
    assert via_cp.files().num_rows == 11


def test_reuse_off_writes_one_sidecar_per_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REUSE_ENV, "0")
    table = _table(tmp_path, interval=2)
    _commit(table, [_add("a0.parquet", 1), _add("a1.parquet", 2)])
    _commit(table, [], ["a0.parquet"])  # checkpoint at 2
    first = _check_counts(tmp_path)
    _commit(table, [_add("a2.parquet", 3)])
    _commit(table, [_add("a3.parquet", 4)])  # checkpoint at 4
    second = _check_counts(tmp_path)
    assert len(first) == len(second) == 1 and first != second
    data = pq.read_table(_log(tmp_path) / "_sidecars" / second[0]["path"])
    assert data.column("remove").null_count == data.num_rows - 1  # adds and tombstone together


def test_a_top_level_file_whose_reused_sidecar_vanished_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reused sidecar deleted just after the top-level file was written: that file is
    deleted again (never left beside the whole rewrite), and the checkpoint is written whole."""
    from deltalog.logstores.local import LocalLogStore

    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    table = _table(tmp_path, interval=2)
    _commit(table, [_add(f"a{i}.parquet", 1 + i) for i in range(8)])
    _commit(table, [_add("b0.parquet", 50)])  # checkpoint at 2
    reused = {s["path"] for s in _check_counts(tmp_path)}
    real_write = LocalLogStore.write
    taken: list[str] = []

    def write_then_delete(self: LocalLogStore, path: str, data: bytes, **kw: Any) -> None:
        real_write(self, path, data, **kw)
        if ".checkpoint." in path and path.endswith(".json") and not taken:
            for name in sorted(reused):  # log cleanup deletes them behind our back
                (_log(tmp_path) / "_sidecars" / name).unlink(missing_ok=True)
            taken.append(path)

    monkeypatch.setattr(LocalLogStore, "write", write_then_delete)
    _commit(table, [_add("b1.parquet", 51)])
    _commit(table, [_add("b2.parquet", 52)])  # checkpoint at 4
    assert taken and not Path(taken[0]).exists()
    at_4 = [n for n in os.listdir(_log(tmp_path)) if n.startswith(f"{4:020d}.checkpoint.")]
    assert len(at_4) == 1 and _pointer(tmp_path)["v2Checkpoint"]["path"] == at_4[0]
    assert _through_checkpoint(tmp_path).files().num_rows == 11


@pytest.mark.parametrize(
    ("wall", "mono"),
    [(19, 19), (-5, 19), (19, 0)],
    ids=["both-clocks", "wall-clock-set-back", "process-suspended"],
)
def test_publish_guard_counts_the_larger_elapsed_time(
    monkeypatch: pytest.MonkeyPatch, wall: float, mono: float
) -> None:
    """A sidecar an hour old at the start is too old 19 hours later, whichever clock says so."""
    hour = 3600.0
    now = [1_000_000.0, 500.0]
    monkeypatch.setattr(sidecar_reuse, "_clock", lambda: (now[0], now[1]))
    guard = sidecar_reuse.PublishGuard()
    start_ms = int(now[0] * 1000)
    assert guard.reusable_since_ms == start_ms - sidecar_reuse.REUSE_MAX_AGE_MS
    an_hour_old = start_ms - int(hour * 1000)
    assert guard.young_enough([an_hour_old, start_ms])
    now[0] += wall * hour
    now[1] += mono * hour
    assert not guard.young_enough([start_ms, an_hour_old])
    assert guard.young_enough([start_ms + int(19 * hour * 1000)])
