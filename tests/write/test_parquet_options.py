"""Data files laid out as delta-spark's parquet-mr lays them out: dictionaries, pages, codec."""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.logstores import open_store
from deltalog.protocol.schema import StructType
from deltalog.write.data_writer import DataWriter
from deltalog.write.parquet_options import (
    DICTIONARY_PAGE_BYTES,
    PAGE_ROWS,
    ParquetOptions,
    dictionary_columns,
)

ROWS = 200_000


def _write(root: Path, table: pa.Table, options: ParquetOptions | None = None) -> pq.FileMetaData:
    store, location = open_store(str(root))
    schema = StructType.from_arrow(table.schema)
    with DataWriter(store, location, schema, [], {}, options=options) as writer:
        for batch in table.to_batches(max_chunksize=10_000):
            writer.write(batch)
    assert len(writer.adds) == 1
    return pq.ParquetFile(root / writer.adds[0].path).metadata


def _encodings(meta: pq.FileMetaData) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            out.setdefault(column.path_in_schema, set()).update(column.encodings)
    return out


def _cardinality_table(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(3)
    mid = rng.integers(0, 30_000, rows)
    wide = rng.integers(0, 100_000, rows)
    return pa.table(
        {
            "id": np.arange(rows),
            "x": rng.random(rows),
            "few": pa.array(rng.integers(0, 30, rows)).cast(pa.string()),
            "mid_long": mid,  # 30,000 values: parquet-mr keeps the dictionary
            "mid_str": pa.array(mid).cast(pa.string()),
            "wide_str": pa.array(wide).cast(pa.string()),  # 100,000: its first page is plain
            "flag": rng.integers(0, 2, rows) == 1,
        }
    )


def test_dictionary_where_parquet_mrs_first_page_test_keeps_one(tmp_path: Path) -> None:
    encodings = _encodings(_write(tmp_path, _cardinality_table()))
    dictionary = {name for name, used in encodings.items() if "RLE_DICTIONARY" in used}
    assert dictionary == {"few", "mid_long", "mid_str"}
    for name in ("id", "x", "wide_str", "flag"):
        assert "PLAIN" in encodings[name]


def test_a_dictionary_past_its_page_limit_falls_back_to_plain(tmp_path: Path) -> None:
    # Repeats in the first page (a dictionary pays there), 2 MiB of distinct values later.
    head = [f"{i % 100:064d}" for i in range(PAGE_ROWS)]
    tail = [f"{i:064d}" for i in range(2 * DICTIONARY_PAGE_BYTES // 64)]
    encodings = _encodings(_write(tmp_path, pa.table({"s": head + tail})))
    assert {"RLE_DICTIONARY", "PLAIN"} <= encodings["s"]


def test_unique_columns_cost_less_than_with_pyarrows_dictionary_everywhere(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    table = pa.table({"id": np.arange(ROWS), "x": rng.random(ROWS)})
    store, location = open_store(str(tmp_path / "ours"))
    with DataWriter(store, location, StructType.from_arrow(table.schema), [], {}) as writer:
        writer.write(table.to_batches()[0])
    ours = (tmp_path / "ours" / writer.adds[0].path).stat().st_size
    pq.write_table(table, tmp_path / "default.parquet", row_group_size=ROWS)
    assert ours * 1.1 < (tmp_path / "default.parquet").stat().st_size


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        (pa.array([decimal.Decimal(i % 7) for i in range(1000)], pa.decimal128(10, 2)), True),
        (pa.array([decimal.Decimal(i) for i in range(1000)], pa.decimal128(10, 2)), False),
        (pa.array([i % 3 for i in range(1000)], pa.int8()), True),
        (pa.array([str(i) for i in range(1000)], pa.string_view()), False),
        (pa.array([str(i % 4) for i in range(1000)], pa.large_string()), True),
        (pa.array([None] * 1000, pa.string()), True),
        (pa.array(["a", "b"] * 500).dictionary_encode(), True),
        (pa.array([[i] for i in range(1000)]), True),
    ],
)
def test_dictionary_decision_per_type(column: pa.Array, expected: bool) -> None:
    chosen = dictionary_columns(pa.table({"c": column}))
    assert bool(chosen) is expected


def test_the_codec_and_pages(tmp_path: Path) -> None:
    meta = _write(tmp_path / "z", _cardinality_table(50_000), ParquetOptions(codec="gzip"))
    assert {meta.row_group(0).column(c).compression for c in range(7)} == {"GZIP"}
    table = pa.table({"id": np.arange(3 * PAGE_ROWS)})
    store, location = open_store(str(tmp_path / "p"))
    with DataWriter(store, location, StructType.from_arrow(table.schema), [], {}) as writer:
        writer.write(table.to_batches()[0])
    reader = pq.ParquetFile(tmp_path / "p" / writer.adds[0].path)
    pages = reader.metadata.row_group(0).column(0)
    assert pages.num_values == 3 * PAGE_ROWS
    assert reader.read().num_rows == 3 * PAGE_ROWS
