"""The data writer's threads: big batches split ahead; a last row group and its footer, one job."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from deltalog.errors import ConstraintViolationError
from deltalog.logstores import open_store
from deltalog.protocol.partitions import hive_partition_dir
from deltalog.protocol.paths import encode_path
from deltalog.protocol.schema import StructType
from deltalog.stats.footers import FooterInfo, compute_stats
from deltalog.write import data_writer
from deltalog.write.data_writer import DataWriter
from deltalog.write.parquet_options import ParquetOptions

PARTS = ["a/b", "c d", "x=1", "%", "", None, *[f"p{i}" for i in range(31)]]


def _table(rows: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "p": pa.array([PARTS[(i * 7919) % len(PARTS)] for i in range(rows)], pa.string()),
            "s": [f"v{(i * 31) % 1000:04d}" for i in range(rows)],
        }
    )


def test_a_large_batch_is_split_ahead_on_the_splitter_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Piece 1 is split while the caller places piece 0 (a barrier both must reach)."""
    monkeypatch.setattr(data_writer, "SPLIT_ROWS", 100)
    both = threading.Barrier(2, timeout=10)  # a deadlock guard: it breaks when run serially
    threads: list[str] = []
    real_split = data_writer.split_by_partition

    def split(*args: Any) -> Iterator[Any]:
        threads.append(threading.current_thread().name)
        if len(threads) == 2:
            both.wait()  # the second piece, split while the first is being placed
        yield from real_split(*args)

    real_place = getattr(DataWriter, "_place", None)

    def place(self: DataWriter, groups: Any) -> None:
        if not getattr(self, "_placed_one", False):
            self._placed_one = True  # type: ignore[attr-defined]
            both.wait()
        assert real_place is not None
        real_place(self, groups)

    monkeypatch.setattr(data_writer, "split_by_partition", split)
    monkeypatch.setattr(DataWriter, "_place", place, raising=False)
    table = _table(1_000)
    store, location = open_store(str(tmp_path))
    schema = StructType.from_arrow(table.schema)
    with DataWriter(store, location, schema, ["p"], {}) as writer:
        writer.write(table.combine_chunks().to_batches()[0])
    assert len(threads) == 10
    assert all(name.startswith("deltalog-split") for name in threads)
    assert sum(orjson.loads(a.stats)["numRecords"] for a in writer.adds) == 1_000


class _Inline:
    """An executor running each job at once on the caller: the split without the splitter."""

    def submit(self, job: Any, *args: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(job(*args))
        return done

    def shutdown(self, **_: Any) -> None:
        pass


def _write_files(root: Path, table: pa.Table, *, inline: bool) -> dict[int, Any]:
    """File number -> (partition value, rows read back, stats) of each file written."""
    store, location = open_store(str(root))
    schema = StructType.from_arrow(table.schema)
    options = ParquetOptions(max_rows_per_file=150, row_group_rows=64)
    with DataWriter(store, location, schema, ["p"], {}, options=options) as writer:
        if inline:
            writer._splitter = _Inline()  # type: ignore[assignment]
        for batch in table.to_batches(max_chunksize=1_500):  # 4 batches of 5 pieces
            writer.write(batch)
    files = {}
    for add in writer.adds:
        directory = hive_partition_dir({"p": add.partition_values["p"]})
        assert add.path.startswith(encode_path(directory) + "/part-")  # the protocol's escaping
        local = root / unquote(add.path)
        parquet = pq.ParquetFile(local)
        footer = compute_stats(FooterInfo(parquet.schema_arrow, parquet.metadata))
        assert orjson.loads(add.stats) == orjson.loads(footer)
        counter = int(re.search(r"part-(\d+)-", add.path).group(1))  # type: ignore[union-attr]
        files[counter] = (add.partition_values["p"], pq.read_table(local), add.stats)
    return files


def test_many_partitions_across_pieces_and_batches_give_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same files, rows (in input order) and stats as splitting on the caller."""
    monkeypatch.setattr(data_writer, "SPLIT_ROWS", 300)
    table = _table(6_000)
    files = _write_files(tmp_path / "ahead", table, inline=False)
    assert files == _write_files(tmp_path / "inline", table, inline=True)
    by_partition: dict[str | None, list[pa.Table]] = {}
    for number in sorted(files):
        value, rows, _ = files[number]
        assert rows.column_names == ["id", "s"] and 0 < rows.num_rows <= 150
        by_partition.setdefault(value, []).append(rows)
    assert set(by_partition) == {p or None for p in PARTS}  # "" is written as null
    for value, parts in by_partition.items():
        chosen = pc.equal(pc.fill_null(table["p"], ""), value or "")
        got, expected = pa.concat_tables(parts), table.filter(chosen).select(["id", "s"])
        if value is None:  # "" and null rows: a piece's "" rows come first (as before)
            got = got.sort_by("id")
        assert got.equals(expected)


def test_a_bad_piece_ahead_raises_from_its_write_and_abort_deletes_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_writer, "SPLIT_ROWS", 100)
    schema = StructType.from_arrow(
        pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
    )
    ids = list(range(1_000))
    batch = pa.record_batch(
        [pa.array([None if i == 650 else i for i in ids], pa.int64()), [str(i % 7) for i in ids]],
        names=["id", "p"],
    )
    store, location = open_store(str(tmp_path))
    writer = DataWriter(store, location, schema, ["p"], {})
    writer.write(batch.slice(0, 600))  # fine
    with pytest.raises(ConstraintViolationError, match="NOT NULL"):
        writer.write(batch)  # piece 6 of 10 is bad
    writer.abort()
    assert not list(tmp_path.rglob("*.parquet"))


def test_at_close_the_files_last_row_groups_are_encoded_in_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two files finished at close keep both pool threads busy (no footer job waits idle)."""
    both = threading.Barrier(2, timeout=10)  # a deadlock guard: it breaks when run serially
    real_encode = data_writer._File.encode

    def encode(self: Any, table: pa.Table, options: ParquetOptions) -> None:
        both.wait()  # each file's one row group: both must be encoding at once
        real_encode(self, table, options)

    monkeypatch.setattr(data_writer._File, "encode", encode)
    store, location = open_store(str(tmp_path))
    schema = StructType.from_arrow(pa.schema([("id", pa.int64()), ("p", pa.string())]))
    with DataWriter(store, location, schema, ["p"], {}, options=ParquetOptions(threads=2)) as w:
        w.write(pa.table({"id": [1, 2, 3, 4], "p": ["a", "b", "a", "b"]}))
    assert sorted(orjson.loads(a.stats)["numRecords"] for a in w.adds) == [2, 2]
