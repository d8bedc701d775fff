"""Statistics parsed in pieces side by side (``deltalog.stats.bulk_json``) match one serial pass.

The pieces are made tiny here so that a few dozen files make many of them: chunks parsed where
they lie (no null), chunks with nulls (joined as lines), runs of small chunks joined together.
"""

from __future__ import annotations

import datetime as dt
import decimal
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tableutil import write_parquet

import deltalog.stats.bulk_json as bj
from deltalog import DeltaTable
from deltalog.protocol.column_mapping import to_physical_batch
from deltalog.stats.file_stats import flatten_stats

UTC = dt.UTC
NESTED = pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))])
SCHEMA = pa.schema(
    [
        ("i", pa.int32()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("d", pa.date32()),
        ("dec", pa.decimal128(10, 2)),
        ("n", NESTED),
        ("p", pa.string()),
    ]
)


def _rows(k: int) -> pa.Table:
    base = dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(days=k)
    return pa.table(
        {
            "i": pa.array([10 * k + j for j in range(3)], pa.int32()),
            "s": pa.array([None if k == 1 and j == 0 else f"s{k}{j}" for j in range(3)]),
            "ts": pa.array([base + dt.timedelta(seconds=j, microseconds=123) for j in range(3)]),
            "d": pa.array([base.date() + dt.timedelta(days=j) for j in range(3)], pa.date32()),
            "dec": pa.array([decimal.Decimal(f"{k}.{j}5") for j in range(3)], pa.decimal128(10, 2)),
            "n": pa.array([{"a": k * 100 + j, "b": {"c": f"c{k}"}} for j in range(3)], NESTED),
        }
    )


def _table(root: Path, configuration: dict[str, str] | None = None) -> DeltaTable:
    t = DeltaTable.create(str(root), SCHEMA, partition_by=["p"], configuration=configuration)
    for k in range(3):
        rows = _rows(k)
        if configuration:  # the files carry the physical names
            batch = to_physical_batch(rows.to_batches()[0], t.schema(), field_ids=False)
            rows = pa.Table.from_batches([batch])
        t.append_files([write_parquet(root, f"p=x/f{k}.parquet", rows)])
    return t


def _many(files: pa.Table) -> pa.Table:
    """40 rows cycling over the table's files' stats, in chunks of 1 to 9 rows; every 7th row
    has no stats, every 5th only ``numRecords`` (missing keys)."""
    stats = files.column("stats").to_pylist()
    rows: list[str | None] = []
    for k in range(40):
        if k % 7 == 3:
            rows.append(None)
        elif k % 5 == 4:
            rows.append('{"numRecords":3}')
        else:
            rows.append(stats[k % len(stats)])
    sizes = [9, 1, 2, 8, 3, 1, 1, 6, 9]
    chunks, start = [], 0
    for size in sizes:
        chunks.append(pa.array(rows[start : start + size], pa.string()))
        start += size
    assert start == len(rows)
    picked = [k % files.num_rows for k in range(40)]
    out = files.take(picked).combine_chunks()
    return out.set_column(
        out.column_names.index("stats"), "stats", pa.chunked_array(chunks, pa.string())
    )


def _serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bj, "PARSERS", 1)
    monkeypatch.setattr(bj, "PIECE_ROWS", 1 << 20)


def _tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bj, "PARSERS", 3)
    monkeypatch.setattr(bj, "PIECE_ROWS", 4)
    monkeypatch.setattr(bj, "MIN_PIECE_ROWS", 4)
    monkeypatch.setattr(bj, "SMALL_CHUNK", 3)


def _flat(t: DeltaTable, files: pa.Table) -> dict[str, list[Any]]:
    out = flatten_stats(files, t.schema(), ["p"])
    return {name: out.column(name).to_pylist() for name in out.column_names if name != "stats"}


@pytest.mark.parametrize("mapping", [None, "name"])
def test_pieces_side_by_side_give_the_serial_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mapping: str | None
) -> None:
    config = {"delta.columnMapping.mode": mapping} if mapping else None
    t = _table(tmp_path / "t", config)
    files = _many(t.files())
    with monkeypatch.context() as m:
        _serial(m)
        serial = _flat(t, files)
    _tiny(monkeypatch)
    pieces = list(bj._pieces(files.column("stats")))
    assert len(pieces) > 5 and sum(len(p) for p in pieces) == 40
    assert any(p.null_count for p in pieces) and any(not p.null_count for p in pieces)
    assert _flat(t, files) == serial
    # the values themselves, not only their agreement
    assert serial["num_records"][:5] == [3, 3, 3, None, 3]
    assert serial["min.i"][:5] == [0, 10, 20, None, None]
    assert serial["min.n.b.c"][:3] == ["c0", "c1", "c2"]
    assert serial["max.n.a"][:3] == [2, 102, 202]
    assert serial["null_count.s"][:3] == [0, 1, 0]
    assert serial["min.dec"][1] == decimal.Decimal("1.05")
    assert serial["max.ts"][2] == dt.datetime(2024, 1, 3, 0, 0, 2, tzinfo=UTC)  # ms in stats
    assert serial["min.d"][2] == dt.date(2024, 1, 3)
    if mapping:  # looked up by physical names, named by logical ones
        assert '"col-' in files.column("stats")[0].as_py()


def test_pieces_are_parsed_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path / "t")
    files = _many(t.files())
    _tiny(monkeypatch)
    monkeypatch.setattr(bj, "PIECE_ROWS", 20)
    monkeypatch.setattr(bj, "MIN_PIECE_ROWS", 20)
    monkeypatch.setattr(bj, "SMALL_CHUNK", 100)  # two pieces of 20 joined rows
    monkeypatch.setattr(bj, "PARSERS", 2)
    both = threading.Barrier(2, timeout=30)
    read = bj._read

    def meet(*args: Any, **kwargs: Any) -> pa.Table | None:
        both.wait()  # both pieces must be in the reader at once
        return read(*args, **kwargs)

    monkeypatch.setattr(bj, "_read", meet)
    assert flatten_stats(files, t.schema(), ["p"]).num_rows == 40


def test_text_without_nulls_is_read_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path / "t")
    files = t.files()

    def no_copy(strings: pa.Array) -> pa.Buffer:
        raise AssertionError("the text was copied")

    monkeypatch.setattr(bj, "_lines", no_copy)
    flat = flatten_stats(files, t.schema(), ["p"])
    assert flat.column("min.i").to_pylist() == [0, 10, 20]


@pytest.mark.parametrize(
    "odd",
    [
        "",  # not an object
        '{"numRecords":3}{"numRecords":4}',  # two objects
        '{"numRecords":3,\n"minValues":{"i":7}}',  # a line break of its own
        '{"numRecords":3',  # cut short
    ],
)
def test_a_string_that_is_not_one_object_is_parsed_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str
) -> None:
    t = _table(tmp_path / "t")
    files = t.files()
    stats = files.column("stats").to_pylist()
    stats[1] = odd
    column = pa.chunked_array([pa.array(stats, pa.string())])
    files = files.set_column(files.column_names.index("stats"), "stats", column)
    with monkeypatch.context() as m:
        _serial(m)
        m.setattr(bj, "_in_place", lambda strings: None)  # lines only, as before
        before = _flat(t, files)
    assert _flat(t, files) == before
    assert before["min.i"][0] == 0 and before["min.i"][2] == 20
    assert before["min.i"][1] == (7 if "\n" in odd else None)
