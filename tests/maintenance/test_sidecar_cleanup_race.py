"""V2 sidecar reuse against log cleanup, in every interleaving of the two.

A writer checkpoints version 4, planning to reuse the sidecars of the checkpoint at 2. Another
process writes a checkpoint at 3 without them and runs log cleanup (retention 0, so the
checkpoint at 2 goes and its sidecars lose their last reference). The cleanup lists the
checkpoints (and decides what to delete) in one gap of the writer's steps and deletes in the
same or a later gap; both are driven through seams (:func:`deltalog.checkpoints.v2._step`, a
wrapper around the plan, around ``referenced_sidecars``) and a shared fake clock, never by
sleeping. Whatever the interleaving, the sidecars' age at the plan (an hour or three days)
and the time the cleanup's clock is ahead of the plan (a minute, or three days for a writer
that was paused):

* ``_last_checkpoint`` ends on a complete checkpoint of version 4, and no incomplete
  checkpoint is left; deltalog and delta-rs read the right files;
* deltalog reads version 4 at every step; with a short pause, no checkpoint referencing a
  missing sidecar is ever visible and delta-rs reads it at every step too;
* a young sidecar is still reused, an old one is not.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pyarrow as pa
import pytest

import deltalog.maintenance.checkpointing as checkpointing
import deltalog.maintenance.sidecar_reuse as sidecar_reuse
import deltalog.maintenance.sidecars as sidecars
from deltalog import DeltaTable
from deltalog.checkpoints import v2
from deltalog.log.segment import classify
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.logstores.local import LocalLogStore
from deltalog.maintenance.retention import cleanup_log
from deltalog.maintenance.sidecar_reuse import forget_sidecars
from deltalog.maintenance.sidecars import sidecar_actions, sidecars_present
from deltalog.protocol.actions import AddFile

HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS
RETENTION_0 = {"delta.logRetentionDuration": "interval 0 seconds"}
#: The writer's steps; the cleanup acts in the gap after one of them.
POINTS = ("planned", "sidecars_written", "checked", "published", "verified", "done")
GAPS = [(i, j) for i, j in itertools.product(POINTS, POINTS) if POINTS.index(i) <= POINTS.index(j)]
EXPECTED = sorted([*(f"a{i}.parquet" for i in range(4)), "b0.parquet", "c0.parquet", "c1.parquet"])
WAIT = 60


def _add(path: str) -> AddFile:
    stats = orjson.dumps({"numRecords": 1, "minValues": {"id": 0}, "maxValues": {"id": 0}})
    return AddFile(
        path=path,
        partition_values={},
        size=10,
        modification_time=1_700_000_000_000,
        data_change=True,
        stats=stats.decode(),
    )


def _commit(table: DeltaTable, adds: list[AddFile]) -> None:
    with table.transaction("WRITE") as tx:
        tx.add(adds)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Versions 0-4, a checkpoint at 2 with a full sidecar (a0-a3) and a small one (b0)."""
    root = tmp_path_factory.mktemp("race") / "t"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
        table = DeltaTable.create(
            str(root),
            pa.schema([("id", pa.int64())]),
            configuration={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "1000"},
        )
        _commit(table, [_add(f"a{i}.parquet") for i in range(4)])
        _commit(table, [_add("b0.parquet")])
        DeltaTable(str(root)).checkpoint()
        _commit(table, [_add("c0.parquet")])
        _commit(table, [_add("c1.parquet")])
    return root


def _sidecar_names(root: Path, checkpoint: str) -> set[str]:
    lines = [orjson.loads(x) for x in (root / "_delta_log" / checkpoint).read_bytes().splitlines()]
    return {line["sidecar"]["path"] for line in lines if "sidecar" in line}


def _delta_rs_files(root: Path) -> list[str]:
    return sorted(uri.rsplit("/", 1)[-1] for uri in deltalake.DeltaTable(str(root)).file_uris())


def _broken(storage: TableStorage) -> list[str]:
    """The checkpoints in the log that reference a missing sidecar."""
    listing = classify(storage.list_log())
    return [
        cp.files[0].name
        for cps in listing.checkpoints.values()
        for cp in cps
        if sidecar_actions(storage, cp.files[0])[0] and not sidecars_present(storage, cp)
    ]


class Race:
    """Runs the cleanup in the writer's gaps ``list_after`` and ``delete_after``."""

    def __init__(
        self,
        list_after: str,
        delete_after: str,
        probe: Callable[[str], None],
        clean: Callable[[], Any],
    ) -> None:
        self.list_after = list_after
        self.delete_after = delete_after
        self.probe = probe
        self.clean = clean
        self.seen: set[str] = set()
        self.writes = 0  # the writer's attempts at writing the checkpoint
        self.go = threading.Event()
        self.decided = threading.Event()
        self.release = threading.Event()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.writer: threading.Thread | None = None

    def cleaner(self) -> None:
        try:
            assert self.go.wait(WAIT)
            self.clean()
        except BaseException as exc:  # re-raised by the test
            self.error = exc
        finally:
            self.decided.set()
            self.done.set()

    def at_decision(self, point: str) -> None:
        """The cleanup listed the checkpoints and knows what it will delete."""
        if point == "decided" and self.list_after != self.delete_after:
            self.decided.set()
            assert self.release.wait(WAIT)

    def at(self, point: str) -> None:
        """The writer reached ``point``: let the cleanup act in the gap after it."""
        if threading.current_thread() is not self.writer:
            return  # another writer
        self.writes += point == "sidecars_written"
        self.probe(f"before the gap after {point}")
        if point in self.seen:
            return  # the writer trying again
        self.seen.add(point)
        if point == self.list_after:
            self.go.set()
            assert (self.done if point == self.delete_after else self.decided).wait(WAIT)
        elif point == self.delete_after:
            self.release.set()
            assert self.done.wait(WAIT)
        self.probe(f"in the gap after {point}")

    def finish(self) -> None:
        """The writer is done (or gave up): the cleanup's remaining steps."""
        for point in POINTS:
            if point not in self.seen:
                self.at(point)


@pytest.fixture
def race_root(template: Path, tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "t"
    shutil.copytree(template, root)
    forget_sidecars()
    yield root
    forget_sidecars()


@pytest.mark.parametrize(("list_after", "delete_after"), GAPS)
@pytest.mark.parametrize(
    ("age_ms", "pause_ms"),
    [(HOUR_MS, 60_000), (3 * DAY_MS, 60_000), (HOUR_MS, 3 * DAY_MS), (3 * DAY_MS, 3 * DAY_MS)],
    ids=["young-short", "old-short", "young-paused", "old-paused"],
)
def test_sidecar_reuse_against_log_cleanup(
    race_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    list_after: str,
    delete_after: str,
    age_ms: int,
    pause_ms: int,
) -> None:
    root = race_root
    log = root / "_delta_log"
    monkeypatch.setattr(checkpointing, "MAX_SIDECAR_ADDS", 4)
    (base,) = [n for n in os.listdir(log) if n.startswith(f"{2:020d}.checkpoint.")]
    old_sidecars = _sidecar_names(root, base)
    start = time.time()
    for name in old_sidecars:
        then = start - age_ms / 1000
        os.utime(log / "_sidecars" / name, (then, then))
    # One clock for everyone, the store's included: real time, plus the pause once the
    # cleanup has started.
    ahead = [0.0]
    mono = time.monotonic()
    monkeypatch.setattr(
        sidecar_reuse,
        "_clock",
        lambda: (time.time() + ahead[0], time.monotonic() - mono + ahead[0]),
    )
    real_write_temp = LocalLogStore._write_temp

    def write_temp(self: LocalLogStore, tmp: str, data: bytes, **kw: Any) -> None:
        real_write_temp(self, tmp, data, **kw)
        now = time.time() + ahead[0]
        os.utime(tmp, (now, now))

    monkeypatch.setattr(LocalLogStore, "_write_temp", write_temp)
    snap4: Snapshot = DeltaTable(str(root)).snapshot
    snap3: Snapshot = DeltaTable(str(root), version=3).snapshot
    storage = TableStorage.open(str(root))
    seen_broken: list[tuple[str, list[str]]] = []

    def probe(when: str) -> None:
        """Readers at this moment: deltalog always reads, delta-rs unless a pause broke it."""
        broken = _broken(storage)
        if broken:
            seen_broken.append((when, broken))
        ours = DeltaTable(str(root))  # with a broken checkpoint: another one, or older
        assert sorted(ours.files().column("path").to_pylist()) == EXPECTED, when
        if pause_ms < HOUR_MS:
            assert _delta_rs_files(root) == EXPECTED, when

    def clean() -> None:
        ahead[0] = pause_ms / 1000
        other = TableStorage.open(str(root))
        checkpointing.write_snapshot_checkpoint(other, snap3, reuse=False)
        cleanup_log(other, RETENTION_0, now_ms=int(sidecar_reuse._clock()[0] * 1000))

    race = Race(list_after, delete_after, probe, clean)
    real_plan = checkpointing.plan_reuse

    def plan(*args: Any, **kwargs: Any) -> Any:
        out = real_plan(*args, **kwargs)
        race.at("planned")
        return out

    monkeypatch.setattr(checkpointing, "plan_reuse", plan)
    monkeypatch.setattr(v2, "_step", race.at)
    monkeypatch.setattr(sidecars, "_step", race.at_decision)
    cleaner = threading.Thread(target=race.cleaner)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            checkpointing.write_snapshot_checkpoint(TableStorage.open(str(root)), snap4)
        except BaseException as exc:  # re-raised by the test
            failures.append(exc)

    race.writer = threading.Thread(target=write)
    cleaner.start()
    race.writer.start()
    race.writer.join(WAIT)
    assert not race.writer.is_alive()
    race.writer = threading.current_thread()  # the main thread plays the gaps left
    race.finish()
    cleaner.join(WAIT)
    assert not failures and race.error is None, (failures, race.error)

    pointer = orjson.loads((log / "_last_checkpoint").read_bytes())
    assert pointer["version"] == 4
    named = pointer["v2Checkpoint"]["path"]
    assert (log / named).exists()
    assert _broken(storage) == []
    assert sorted(DeltaTable(str(root)).files().column("path").to_pylist()) == EXPECTED
    assert _delta_rs_files(root) == EXPECTED
    at_4 = [n for n in os.listdir(log) if n.startswith(f"{4:020d}.checkpoint.")]
    assert at_4 == [named]  # a late or broken one was taken back
    if pause_ms < HOUR_MS:
        assert seen_broken == []  # never visible, not even for a moment
        assert race.writes == 1  # and the first attempt stood
    reused = _sidecar_names(root, named) & old_sidecars
    if age_ms > sidecar_reuse.REUSE_MAX_AGE_MS:
        assert not reused  # too old to be reused: written again
    elif pause_ms < HOUR_MS:
        assert reused  # still reused when nothing got in the way
