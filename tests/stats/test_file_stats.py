"""``DeltaTable.files(filter=..., flatten_stats=True)``: stats-based skipping and typed statistics.

The flattened columns are compared with delta-rs's ``get_add_actions(flatten=True)`` on the same
table; skipping is checked against the rows each file really holds (a pruned file never holds a
matching row), on a table we write and on a golden table of delta-spark's.
"""

from __future__ import annotations

import datetime as dt
import decimal
import shutil
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import write_parquet
from testpaths import GOLDEN_DIR

from deltalog import DeltaTable, InvalidPredicateError, col
from deltalog.stats.file_stats import flatten_stats
from deltalog.stats.predicate_input import as_predicate
from deltalog.stats.predicates import matches

GOLDEN = GOLDEN_DIR
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
        ("flag", pa.bool_()),
        ("p", pa.string()),
    ]
)


def _rows(k: int) -> pa.Table:
    """File ``k``: ``i`` in [10k, 10k+4], one null ``s`` in file 1, nested values."""
    base = dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(days=k)
    return pa.table(
        {
            "i": pa.array([10 * k + j for j in range(5)], pa.int32()),
            "s": pa.array([None if k == 1 and j == 0 else f"s{k}{j}" for j in range(5)]),
            "ts": pa.array([base + dt.timedelta(seconds=j, microseconds=123) for j in range(5)]),
            "d": pa.array([base.date() + dt.timedelta(days=j) for j in range(5)], pa.date32()),
            "dec": pa.array([decimal.Decimal(f"{k}.{j}5") for j in range(5)], pa.decimal128(10, 2)),
            "n": pa.array([{"a": k * 100 + j, "b": {"c": f"c{k}"}} for j in range(5)], NESTED),
            "flag": pa.array([j % 2 == 0 for j in range(5)]),
        }
    )


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    """Three files in partitions p=x (files 0, 1) and p=y (file 2)."""
    t = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["p"])
    for k, p in enumerate(["x", "x", "y"]):
        t.append_files([write_parquet(tmp_path, f"p={p}/f{k}.parquet", _rows(k))])
    return t


def _by_path(t: pa.Table) -> pa.Table:
    return t.sort_by("path")


def test_flatten_stats_matches_delta_rs(table: DeltaTable) -> None:
    ours = _by_path(table.files(flatten_stats=True))
    theirs = _by_path(pa.table(deltalake.DeltaTable(table.uri).get_add_actions(flatten=True)))
    flat = [c for c in theirs.column_names if c.split(".")[0] in ("min", "max", "null_count")]
    flat += [c for c in theirs.column_names if c.startswith("partition.") or c == "num_records"]
    assert "min.n.b.c" in flat and "partition.p" in flat and "max.ts" in flat
    assert "min.flag" in flat and "null_count.flag" in flat
    for name in flat:
        assert ours.schema.field(name).type == theirs.schema.field(name).type, name
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name
    # the same set of statistics columns, nothing more
    ours_flat = {c for c in ours.column_names if "." in c or c == "num_records"}
    assert ours_flat == set(flat)
    assert ours.column("min.ts")[0].as_py() == dt.datetime(
        2024, 1, 1, tzinfo=UTC
    )  # truncated to ms
    assert ours.column("null_count.s").to_pylist() == [0, 1, 0]
    assert ours.column("max.dec").to_pylist()[2] == decimal.Decimal("2.45")


def test_filter_prunes_by_partition_and_stats(table: DeltaTable) -> None:
    def paths(f: object) -> list[str]:
        return sorted(p.split("/")[-1] for p in table.files(filter=f).column("path").to_pylist())

    assert paths(None) == ["f0.parquet", "f1.parquet", "f2.parquet"]
    assert paths("i >= 10 AND i < 20") == ["f1.parquet"]
    assert paths(col("i") == 4) == ["f0.parquet"]
    assert paths([("p", "=", "y")]) == ["f2.parquet"]
    assert paths("p = 'x' AND i > 20") == []
    assert paths("p = 'y' OR i = 0") == ["f0.parquet", "f2.parquet"]
    assert paths("NOT (i >= 0)") == []  # every value is >= 0 and none is null
    assert paths("i NOT IN (0, 1, 2, 3, 4)") == ["f0.parquet", "f1.parquet", "f2.parquet"]
    assert paths("s IS NULL") == ["f1.parquet"]
    assert paths("s IS NOT NULL") == ["f0.parquet", "f1.parquet", "f2.parquet"]
    assert paths("d = DATE '2024-01-08'") == []
    assert paths("d >= DATE '2024-01-07'") == ["f2.parquet"]
    # the max timestamp is logged truncated to ms: 00:00:04.000123 must not be pruned
    day1 = "ts < TIMESTAMP '2024-01-02 00:00:00'"
    assert paths(f"ts > TIMESTAMP '2024-01-01 00:00:04.000100' AND {day1}") == ["f0.parquet"]
    assert paths(f"ts > TIMESTAMP '2024-01-01 00:00:04.001' AND {day1}") == []
    assert paths("dec > 2.40") == ["f2.parquet"]
    assert paths("s = 's23'") == ["f2.parquet"]
    assert paths("i = NULL") == []
    # every kept file holds a matching row, for these selective predicates
    rows = table.to_pyarrow_table(filter="i >= 10 AND i < 20")
    assert rows.num_rows == 5


def test_filter_keeps_files_without_stats(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "data-reader-nested-struct", tmp_path / "t")
    t = DeltaTable(str(tmp_path / "t"))
    assert t.files(filter="b = -1").num_rows == t.files().num_rows  # no stats: kept
    assert t.files(flatten_stats=True).column("num_records").null_count == t.files().num_rows


def test_filter_on_golden_table_is_sound_and_prunes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(GOLDEN / "data-skipping-partition-and-data-column", root)
    t = DeltaTable(str(root))
    everything = t.files().column("path").to_pylist()
    assert len(everything) >= 4
    for text in ("part = 1", "id = 1", "part = 0 AND id = 0", "id > 5", "id IS NULL", "id != 1"):
        predicate = as_predicate(text)
        kept = set(t.files(filter=predicate).column("path").to_pylist())
        holding = {
            path for path in everything if matches(predicate, pq.read_table(root / path)).true_count
        }
        assert holding <= kept, text  # never prunes a file holding a matching row
        if text != "id != 1":
            assert len(kept) < len(everything), text  # and does prune here
    flat = t.files(filter="part = 1", flatten_stats=True)
    assert set(flat.column("min.part").to_pylist()) == {1}


def test_flatten_stats_golden_all_types_like_delta_rs(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "data-skipping-basic-stats-all-types", tmp_path / "t")
    ours = _by_path(DeltaTable(str(tmp_path / "t")).files(flatten_stats=True))
    theirs = _by_path(pa.table(deltalake.DeltaTable(str(tmp_path / "t")).get_add_actions(True)))
    for name in theirs.column_names[3:]:
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name
    # "2000-01-01T00:00:00.000-08:00" in the log
    assert ours.column("min.as_timestamp")[0].as_py() == dt.datetime(2000, 1, 1, 8, tzinfo=UTC)


def test_unparseable_stats_fall_back_row_by_row(table: DeltaTable) -> None:
    files = table.files()
    stats = files.column("stats").to_pylist()
    stats[0] = stats[0].replace('"i":0', '"i":NaN', 1)
    stats[1] = "not json"
    odd = files.set_column(files.column_names.index("stats"), "stats", pa.array(stats, pa.string()))
    flat = flatten_stats(odd, table.schema(), ["p"])
    assert flat.column("min.i").to_pylist() == [None, None, 20]
    assert flat.column("num_records").to_pylist() == [5, None, 5]
    assert flat.column("min.s").to_pylist() == ["s00", None, "s20"]


def test_filter_on_unknown_column_is_refused(table: DeltaTable) -> None:
    with pytest.raises(InvalidPredicateError, match="nope"):
        table.files(filter="nope = 1")
    with pytest.raises(InvalidPredicateError):
        table.files(filter="i = 'not a number'")
    assert table.files(with_stats=False, flatten_stats=True).column_names.count("stats") == 0


def test_well_formed_stats_are_parsed_in_bulk(
    table: DeltaTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deltalog.stats.file_stats as fs

    def refuse(*args: object) -> None:
        raise AssertionError("the row-by-row parse ran")

    monkeypatch.setattr(fs, "_slow", refuse)
    files = table.files()
    stats = files.column("stats").to_pylist()
    stats[2] = stats[2].replace('"dec":2.05', '"dec":2.0500000000000003')  # logged as a double
    assert "2.0500000000000003" in stats[2]
    stats[0] = stats[0].replace('"minValues":{', '"minValues":{"flag":false,')
    stats[0] = stats[0].replace('"maxValues":{', '"maxValues":{"flag":true,')
    odd = files.set_column(files.column_names.index("stats"), "stats", pa.array(stats))
    flat = flatten_stats(odd, table.schema(), ["p"])
    assert flat.column("min.dec").to_pylist()[2] == decimal.Decimal("2.05")
    assert flat.column("min.ts").null_count == 0
    assert flat.column("min.flag").to_pylist() == [False, None, None]  # as delta-rs types it
    assert flat.column("max.flag").to_pylist() == [True, None, None]


def test_partition_filter_without_stats_never_loads_them(table: DeltaTable) -> None:
    fresh = DeltaTable(table.uri)
    files = fresh.files(filter="p = 'x'", with_stats=False)
    assert "stats" not in files.column_names and files.num_rows == 2
    assert "files" not in fresh.snapshot.__dict__  # the statistics were not materialised
    flat = fresh.files(filter="p = 'y'", flatten_stats=True)
    assert flat.column("partition.p").to_pylist() == ["y"] and "stats" in flat.column_names
