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
from deltalog.write.dictionary_encoding import estimate_distinct
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
    wide = rng.integers(0, 1_000_000, rows)
    return pa.table(
        {
            "id": np.arange(rows),
            "x": rng.random(rows),
            "few": pa.array(rng.integers(0, 30, rows)).cast(pa.string()),
            "mid_long": mid,  # 30,000 values: parquet-mr keeps the dictionary
            "mid_str": pa.array(mid).cast(pa.string()),
            "wide_str": pa.array(wide).cast(pa.string()),  # nearly unique: plain
            "flag": rng.integers(0, 2, rows) == 1,
        }
    )


def test_dictionary_where_parquet_mrs_first_page_test_keeps_one(tmp_path: Path) -> None:
    encodings = _encodings(_write(tmp_path, _cardinality_table()))
    dictionary = {name for name, used in encodings.items() if "RLE_DICTIONARY" in used}
    assert dictionary == {"few", "mid_long", "mid_str"}
    for name in ("id", "x", "wide_str", "flag"):
        assert "PLAIN" in encodings[name]


def test_a_dictionary_for_the_row_group_where_the_first_page_test_fails(tmp_path: Path) -> None:
    # 100,000 values in a million rows: 18,000 distinct in the first 20,000 (parquet-mr writes
    # the column plain), but one dictionary for the row group takes half the bytes.
    rows = 1 << 20
    rng = np.random.default_rng(11)
    table = pa.table(
        {
            "k100": pa.array(rng.integers(0, 100_000, rows)).cast(pa.string()),
            "k300": rng.integers(0, 300_000, rows),  # 2.4 MB of dictionary: past the limit
        }
    )
    meta = _write(tmp_path / "ours", table)
    assert meta.num_row_groups == 1
    encodings = _encodings(meta)
    assert "RLE_DICTIONARY" in encodings["k100"]
    assert "RLE_DICTIONARY" not in encodings["k300"]
    pq.write_table(table.select(["k100"]), tmp_path / "plain.parquet", use_dictionary=False)
    plain = pq.ParquetFile(tmp_path / "plain.parquet").metadata.row_group(0).column(0)
    assert meta.row_group(0).column(0).total_compressed_size < 0.6 * plain.total_compressed_size


def test_distinct_values_estimated_from_the_repeats_in_a_sample() -> None:
    assert estimate_distinct(20_000, 20_000) == float("inf")
    assert estimate_distinct(20_000, 18_127) == pytest.approx(100_000, rel=0.01)
    assert estimate_distinct(20_000, 14_600) == pytest.approx(30_000, rel=0.01)
    assert estimate_distinct(10, 1) == pytest.approx(1, abs=0.01)


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
