"""Checkpoints that cannot be used, and checkpoints written below a cleanup boundary.

A checkpoint with a foreign schema, without its protocol row, or with fewer rows than
``_last_checkpoint`` records is not used when the JSON commits it covers are still there:
replay falls back to an older checkpoint or to the commits. A checkpoint written late, below
the boundary log cleanup already moved past, is no version gap.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from tableutil import write_parquet

from deltalog import DeltaTable, VersionNotFoundError, check_table

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _appended(root: Path, n: int) -> DeltaTable:
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["p"])
    for i in range(n):
        table.append_files([write_parquet(root, f"p={i % 3}/f{i}.parquet", pa.table({"id": [i]}))])
    assert table.wait_for_checkpoints(timeout=60)
    return table


def _cp(root: Path, v: int) -> Path:
    return root / "_delta_log" / f"{v:020d}.checkpoint.parquet"


def _keep_rows(path: Path, keep: Callable[[pa.Table], pa.Array]) -> None:
    table = pq.read_table(path)
    pq.write_table(table.filter(keep(table)), path)


def _foreign(root: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2, 3]}), _cp(root, 20))


def _no_protocol(root: Path) -> None:
    _keep_rows(_cp(root, 20), lambda t: pc.is_null(t.column("protocol")))


def _two_adds(root: Path) -> None:
    def keep(t: pa.Table) -> pa.Array:
        adds = pc.is_valid(t.column("add"))
        first_two = pc.less(pc.cumulative_sum(pc.cast(adds, pa.int64())), 3)
        return pc.or_(pc.invert(adds), first_two)

    _keep_rows(_cp(root, 20), keep)


def _no_adds_at_all(root: Path) -> None:
    _keep_rows(_cp(root, 20), lambda t: pc.is_null(t.column("add")))


@pytest.mark.parametrize(
    "damage",
    [_foreign, _no_protocol, _two_adds, _no_adds_at_all],
    ids=["foreign-schema", "no-protocol-row", "two-of-twenty-adds", "no-add-rows"],
)
def test_unusable_checkpoint_falls_back(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    expected = sorted(_appended(tmp_path, 25).files(with_stats=False).column("path").to_pylist())
    damage(tmp_path)
    table = DeltaTable(str(tmp_path))
    assert table.version() == 25
    assert table.snapshot.checkpoint_version == 10
    assert sorted(table.files(with_stats=False).column("path").to_pylist()) == expected
    assert len(table.files().column("stats").drop_null()) == 25
    travelled = DeltaTable(str(tmp_path), version=20)
    assert travelled.snapshot.checkpoint_version == 10
    assert travelled.snapshot.num_files == 20
    assert not check_table(str(tmp_path)).ok  # the damaged checkpoint is still reported


def test_late_checkpoint_below_the_cleanup_boundary(tmp_path: Path) -> None:
    _appended(tmp_path, 25)
    late = DeltaTable(str(tmp_path), version=15)
    log = tmp_path / "_delta_log"
    for v in range(20):  # what cleanup leaves: checkpoint 20 and everything after it
        (log / f"{v:020d}.json").unlink()
    _cp(tmp_path, 10).unlink()
    late.checkpoint()  # a background checkpoint that finished after the cleanup
    assert _cp(tmp_path, 15).exists()

    report = check_table(str(tmp_path))
    assert report.ok, report.findings
    assert not [f for f in report.findings if f.code == "version-gap"]
    for version in (16, 19):
        with pytest.raises(VersionNotFoundError):
            DeltaTable(str(tmp_path), version=version)
    assert DeltaTable(str(tmp_path), version=15).snapshot.num_files == 15
    assert DeltaTable(str(tmp_path), version=20).snapshot.num_files == 20
    assert DeltaTable(str(tmp_path)).version() == 25
