"""A process forked after deltalog used its thread pools can still read and vacuum."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import write_parquet

from deltalog import DeltaTable


def _child(root: str, out: multiprocessing.Queue[object]) -> None:
    table = DeltaTable(root)  # reads commits on the read-ahead pool
    listed = list(table._storage.store.list_tree(root))  # lists on the local I/O pool
    out.put((table.files().num_rows, len(listed) > 0))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_pools_work_in_a_forked_child(tmp_path: Path) -> None:
    root = str(tmp_path)
    table = DeltaTable.create(root, pa.schema([("id", pa.int64())]))
    for i in range(3):
        table.append_files([write_parquet(tmp_path, f"f{i}.parquet", pa.table({"id": [i]}))])
    assert DeltaTable(root).files().num_rows == 3  # the parent's pools now have threads
    assert list(table._storage.store.list_tree(root))
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[object] = ctx.Queue()
    child = ctx.Process(target=_child, args=(root, out))
    child.start()
    try:
        assert out.get(timeout=60) == (3, True)  # a child stuck on a dead pool never answers
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
