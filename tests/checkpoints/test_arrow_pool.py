"""The memory pool deltalog's readers decode into (``checkpoints/arrow_pool.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.checkpoints import arrow_pool


@pytest.fixture(autouse=True)
def _fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("DELTALOG_ARROW_POOL", raising=False)
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    arrow_pool.decode_pool.cache_clear()
    yield
    arrow_pool.decode_pool.cache_clear()


def _has(backend: str) -> bool:
    try:
        getattr(pa, f"{backend}_memory_pool")()
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not _has("jemalloc"), reason="this pyarrow was built without jemalloc")
def test_jemalloc_by_default() -> None:
    assert arrow_pool.decode_pool().backend_name == "jemalloc"


def test_a_users_arrow_default_pool_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
    assert arrow_pool.decode_pool().backend_name == pa.default_memory_pool().backend_name


@pytest.mark.parametrize("choice", ["system", "default", "no-such-allocator"])
def test_deltalog_arrow_pool_overrides(monkeypatch: pytest.MonkeyPatch, choice: str) -> None:
    monkeypatch.setenv("DELTALOG_ARROW_POOL", choice)
    expected = "system" if choice == "system" else pa.default_memory_pool().backend_name
    assert arrow_pool.decode_pool().backend_name == expected


@pytest.mark.skipif(not _has("jemalloc"), reason="this pyarrow was built without jemalloc")
def test_open_parquet_reads_the_same_rows_into_the_decode_pool(tmp_path: Path) -> None:
    table = pa.table({"path": [f"part-{i:05d}.parquet" for i in range(50_000)]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=10_000)
    pool = arrow_pool.decode_pool()
    assert pool.backend_name != pa.default_memory_pool().backend_name
    before = pool.bytes_allocated()
    with pa.OSFile(str(tmp_path / "t.parquet")) as fh:
        pf = arrow_pool.open_parquet(fh, pre_buffer=False)
        got = pa.Table.from_batches(list(pf.iter_batches(batch_size=7_000, row_groups=[1, 3])))
    assert got.column("path").to_pylist() == [
        f"part-{i:05d}.parquet" for i in [*range(10_000, 20_000), *range(30_000, 40_000)]
    ]
    # The batches' buffers came from the decode pool, not the process's default one.
    assert pool.bytes_allocated() - before >= 20_000 * len("part-00000.parquet")
    del got
