"""A small checkpoint is read once: its statistics come with its actions.

Opening a table reads the checkpoint's actions without their statistics, which a big
checkpoint then reads only if asked (``stats`` as JSON, ``stats_parsed`` typed). For a file of
at most ``SMALL_CHECKPOINT_BYTES`` a second and third read cost more than the columns: one read
takes all, and the answers are the same as from the separate reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import DeltaTable, write_table
from deltalog.checkpoints import reader
from deltalog.log import replay


@pytest.fixture
def checkpointed(tmp_path: Path) -> str:
    uri = str(tmp_path / "t")
    for start in range(0, 60, 10):
        batch = pa.table({"id": list(range(start, start + 10)), "p": [start // 30] * 10})
        write_table(uri, batch, mode="append", partition_by=["p"])
    DeltaTable(uri).checkpoint()
    write_table(uri, pa.table({"id": [100], "p": [9]}), mode="append", partition_by=["p"])
    return uri


def _parquet_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = reader._read_parquet

    def counting(store: Any, path: str, *args: Any, **kwargs: Any) -> None:
        seen.append(path)
        original(store, path, *args, **kwargs)

    monkeypatch.setattr(reader, "_read_parquet", counting)
    return seen


def _answers(uri: str) -> tuple[Any, ...]:
    table = DeltaTable(uri)
    pruned = table.files(filter="id >= 45", with_stats=False)
    listed = table.files()
    flat = table.files(flatten_stats=True)
    rows = table.to_pyarrow_table(filter="id >= 45 AND id < 55")
    return (
        sorted(pruned.column("path").to_pylist()),
        sorted(
            zip(listed.column("path").to_pylist(), listed.column("stats").to_pylist(), strict=True)
        ),
        flat.sort_by("path").to_pylist(),
        sorted(rows.column("id").to_pylist()),
    )


def test_a_small_checkpoint_is_read_once(
    checkpointed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _parquet_reads(monkeypatch)
    answers = _answers(checkpointed)
    checkpoints = [p for p in seen if ".checkpoint." in p]
    assert len(checkpoints) == 1, checkpoints
    assert answers[3] == list(range(45, 55))
    assert len(answers[0]) == 3  # the files of ids 40-49, 50-59 and 100
    assert all(stats for _, stats in answers[1])


def test_a_big_checkpoint_reads_statistics_only_when_asked(
    checkpointed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _answers(checkpointed)
    monkeypatch.setattr(replay, "SMALL_CHECKPOINT_BYTES", 0)
    seen = _parquet_reads(monkeypatch)
    table = DeltaTable(checkpointed)
    assert table.version() == 6
    assert len([p for p in seen if ".checkpoint." in p]) == 1  # the actions only
    assert _answers(checkpointed) == small  # the same answers from separate reads
    assert len([p for p in seen if ".checkpoint." in p]) > 2
