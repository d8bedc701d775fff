"""Reads skip files and row groups by partition values and statistics, and return the same rows.

Every filtered read is compared with an unpruned read filtered afterwards (the same predicate's
exact evaluation, or pyarrow's own for a pyarrow expression), for many predicates in every form
(SQL text, DNF tuples, :func:`col` trees, pyarrow expressions), on tables with partitions,
column mapping, nulls, long strings, sub-millisecond timestamps, deletion vectors, several row
groups per file, files without statistics, and on the golden tables. A seam
(``deltalog.read._open_data_file``) counts the data files opened, to prove files are skipped.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from testpaths import GOLDEN_DIR

import deltalog.read as read_module
from deltalog import DeltaTable, write_table
from deltalog.read import files_matching
from deltalog.stats.predicates import (
    And,
    Comparison,
    In,
    IsNull,
    Not,
    Or,
    Predicate,
    matches,
)

LONG = "x" * 40
FILES = 8
ROWS_PER_FILE = 50


def _data(start: int, n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    ids = list(range(start, start + n))
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([None if i % 7 == 0 else i * 3 for i in ids], pa.int32()),
            "y": pa.array([float("nan") if i % 11 == 0 else i / 4 for i in ids], pa.float64()),
            "s": pa.array(
                [
                    None if i % 5 == 0 else (LONG + str(i) if i % 3 == 0 else f"k{i:05d}")
                    for i in ids
                ]
            ),
            # microsecond parts: a statistic truncated to milliseconds must not lose them
            "ts": pa.array(
                [
                    base + dt.timedelta(seconds=i, microseconds=rng.choice([0, 1, 999, 500]))
                    for i in ids
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i // 10) for i in ids]),
            "p": pa.array([[None, "a", "b", "c"][(i // 13) % 4] for i in ids]),
        }
    )


def _make(root: Path, configuration: dict[str, str] | None = None) -> DeltaTable:
    for f in range(FILES):
        write_table(
            str(root),
            _data(f * ROWS_PER_FILE, ROWS_PER_FILE, f),
            mode="append",
            partition_by=["p"],
            configuration=configuration if f == 0 else None,
        )
    return DeltaTable(str(root))


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, DeltaTable]:
    base = tmp_path_factory.mktemp("skipping")
    out = {
        "plain": _make(base / "plain"),
        "mapped": _make(base / "mapped", {"delta.columnMapping.mode": "name"}),
        "few-stats": _make(base / "few", {"delta.dataSkippingNumIndexedCols": "1"}),
    }
    dv = _make(base / "dv", {"delta.enableDeletionVectors": "true"})
    dv.delete("id % 4 = 1 OR x > 1000")
    out["dv"] = DeltaTable(str(base / "dv"))
    out["row-groups"] = _row_groups_table(base / "rg")
    return out


def _row_groups_table(root: Path) -> DeltaTable:
    """Files of several row groups each (20 rows a group), with a deletion vector."""
    data = _data(0, 400, 1).drop_columns(["p"])
    table = DeltaTable.create(
        str(root), data.schema, configuration={"delta.enableDeletionVectors": "true"}
    )
    for f in range(4):
        pq.write_table(data.slice(f * 100, 100), root / f"f{f}.parquet", row_group_size=20)
    table.append_files([f"f{f}.parquet" for f in range(4)])
    table = DeltaTable(str(root))
    table.delete("id % 3 = 0")
    return DeltaTable(str(root))


def _sorted(table: pa.Table) -> pa.Table:
    """Sorted by ``id``, floats as text (NaN equals NaN) and one chunk, to compare rows."""
    table = table.sort_by("id") if table.num_rows else table
    for i, field in enumerate(table.schema):
        if pa.types.is_floating(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.string()))
    return table.combine_chunks()


def _check(
    table: DeltaTable, predicate: Any, reference: Any, full: pa.Table | None = None
) -> pa.Table:
    """The filtered read equals the unpruned read filtered afterwards."""
    full = table.to_pyarrow_table() if full is None else full
    if isinstance(reference, pc.Expression):
        expected = full.filter(reference)
    else:
        expected = full.filter(matches(reference, full))
    got = table.to_pyarrow_table(filter=predicate)
    assert _sorted(got).equals(_sorted(expected)), (
        f"{predicate}: {got.num_rows} rows, expected {expected.num_rows}"
    )
    return got


# ---------------------------------------------------------------- generated predicates
_COLUMNS = ("id", "x", "y", "s", "ts", "d", "p")


def _value(rng: random.Random, column: str, full: pa.Table) -> Any:
    values = [v for v in full.column(column).to_pylist() if v is not None and v == v]
    value = rng.choice(values)
    if column in ("id", "x") and rng.random() < 0.3:
        value += rng.choice([-1, 1])
    if column == "ts" and rng.random() < 0.3:
        value += dt.timedelta(microseconds=rng.choice([-1, 1, 999]))
    return value


def _atom(rng: random.Random, full: pa.Table) -> tuple[Predicate, pc.Expression]:
    column = rng.choice([c for c in _COLUMNS if c in full.column_names])
    kind = rng.random()
    field = pc.field(column)
    if kind < 0.55:
        op = rng.choice(["=", "!=", "<", "<=", ">", ">="])
        value = _value(rng, column, full)
        kernel = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
                  ">": "greater", ">=": "greater_equal"}[op]  # fmt: skip
        scalar = pa.scalar(value, full.schema.field(column).type)
        return Comparison(column, op, value), pc.Expression._call(kernel, [field, scalar])
    if kind < 0.7:
        values = [_value(rng, column, full) for _ in range(rng.randint(1, 3))]
        arrow_set = pa.array(values, full.schema.field(column).type)
        return In(column, tuple(values)), field.isin(arrow_set)
    if kind < 0.85:
        low, high = sorted([_value(rng, column, full), _value(rng, column, full)])
        return (
            And(Comparison(column, ">=", low), Comparison(column, "<=", high)),
            (field >= pa.scalar(low, full.schema.field(column).type))
            & (field <= pa.scalar(high, full.schema.field(column).type)),
        )
    negated = rng.random() < 0.5
    return IsNull(column, negated), field.is_valid() if negated else field.is_null()


def _predicate(
    rng: random.Random, full: pa.Table, depth: int = 0
) -> tuple[Predicate, pc.Expression]:
    roll = rng.random()
    if depth >= 3 or roll < 0.4:
        return _atom(rng, full)
    if roll < 0.65:
        (lp, le), (rp, re) = _predicate(rng, full, depth + 1), _predicate(rng, full, depth + 1)
        return And(lp, rp), le & re
    if roll < 0.9:
        (lp, le), (rp, re) = _predicate(rng, full, depth + 1), _predicate(rng, full, depth + 1)
        return Or(lp, rp), le | re
    p, e = _predicate(rng, full, depth + 1)
    if isinstance(p, In):  # Arrow's is_in is false, not null, for a null: not SQL's NOT IN
        return p, e
    return Not(p), ~e


@pytest.mark.parametrize("name", ["plain", "mapped", "few-stats", "dv", "row-groups"])
def test_generated_predicates_read_the_same_rows_as_an_unpruned_read(
    tables: dict[str, DeltaTable], name: str
) -> None:
    table = tables[name]
    full = table.to_pyarrow_table()
    rng = random.Random(sum(map(ord, name)))
    columns = set(full.column_names)
    for _ in range(60):
        predicate, expression = _predicate(rng, full)
        if not predicate.columns() <= columns:
            continue
        _check(table, predicate, predicate, full)
        _check(table, str(predicate), predicate, full)  # the same predicate as SQL text
        _check(table, expression, expression, full)  # and as a pyarrow expression


@pytest.mark.parametrize(
    "predicate",
    [
        "id BETWEEN 100 AND 120",
        "id NOT BETWEEN 10 AND 390",
        "x IN (3, 300, 900) OR p = 'c'",
        "p = 'a' AND x > 200",
        "(p = 'a' AND id < 60) OR (p = 'b' AND id > 300)",
        "s IS NULL",
        "s IS NOT NULL AND id < 30",
        "s = '" + LONG + "3'",
        "s > '" + LONG + "'",
        "p IS NULL AND id > 100",
        "NOT (id >= 50)",
        "p IS NULL",
        "NOT (p = 'a')",
        "p != 'b' OR p IS NULL",
        "p IN ('a', NULL)",
        "p NOT IN ('a', 'c')",
        "y > 10.5",
        "y < 1",
        [("id", ">", 250), ("p", "in", ["a", "b"])],
        [[("id", "<", 5)], [("x", "=", 1194)]],
    ],
)
@pytest.mark.parametrize("name", ["plain", "mapped", "dv"])
def test_named_predicates_read_the_same_rows(
    tables: dict[str, DeltaTable], name: str, predicate: Any
) -> None:
    from deltalog.stats.predicate_input import as_predicate

    _check(tables[name], predicate, as_predicate(predicate))


def test_a_timestamp_maximum_truncated_to_milliseconds_keeps_its_file(tmp_path: Path) -> None:
    # delta-spark writes maxValues truncated to milliseconds: the row at .000999 is above it
    late = dt.datetime(2024, 1, 1, 0, 0, 0, 999, tzinfo=dt.UTC)
    write_table(
        str(tmp_path / "t"), pa.table({"ts": pa.array([late], pa.timestamp("us", tz="UTC"))})
    )
    table = DeltaTable(str(tmp_path / "t"))
    (stats,) = table.files(flatten_stats=True).column("max.ts").to_pylist()
    assert stats < late  # the writer truncated it, as delta-spark does
    assert table.to_pyarrow_table(filter=pc.field("ts") == pa.scalar(late)).num_rows == 1
    assert (
        table.to_pyarrow_table(filter="ts > TIMESTAMP '2024-01-01 00:00:00.000500'").num_rows == 1
    )


# ---------------------------------------------------------------- files are skipped
@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    real = read_module._open_data_file

    def counting(storage: Any, location: str) -> Any:
        seen.append(location)
        return real(storage, location)

    monkeypatch.setattr(read_module, "_open_data_file", counting)
    yield seen


@pytest.mark.parametrize(
    "predicate",
    [
        "id >= 100 AND id < 150",
        [("id", ">=", 100), ("id", "<", 150)],
        (pc.field("id") >= 100) & (pc.field("id") < 150),
        pc.field("id").isin([100, 120, 149]),
    ],
    ids=["sql", "dnf", "arrow", "arrow-in"],
)
def test_a_data_range_opens_only_the_files_whose_statistics_overlap_it(
    tables: dict[str, DeltaTable], opened: list[str], predicate: Any
) -> None:
    table = tables["plain"]
    total = len(table.files())
    got = table.to_pyarrow_table(filter=predicate)
    assert set(got.column("id").to_pylist()) <= set(range(100, 150))
    # ids 100..149 are the third append, in the partitions its rows fall in
    third = files_matching(table._snapshot, "id >= 100 AND id < 150")
    assert 0 < len(opened) <= third.num_rows < total // 2


def test_partition_and_data_conditions_open_only_matching_files(
    tables: dict[str, DeltaTable], opened: list[str]
) -> None:
    table = tables["mapped"]
    total = len(table.files())
    got = table.to_pyarrow_table(filter="(p = 'a' AND id < 60) OR (p = 'b' AND id > 350)")
    assert got.num_rows
    assert len(opened) == 2 < total


def test_row_groups_ruled_out_by_their_statistics_are_not_read(
    tables: dict[str, DeltaTable], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tables["row-groups"]
    groups: list[list[int]] = []
    real = pq.ParquetFile.read_row_groups

    def counting(self: pq.ParquetFile, row_groups: list[int], **kwargs: Any) -> pa.Table:
        groups.append(list(row_groups))
        return real(self, row_groups, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", counting)
    got = table.to_pyarrow_table(filter="id BETWEEN 145 AND 165", columns=["id", "s"])
    assert got.column_names == ["id", "s"]
    assert sorted(got.column("id").to_pylist()) == [i for i in range(145, 166) if i % 3]
    assert groups == [[2, 3]]  # of file 1 (ids 100..199): groups 140..159 and 160..179


def test_files_matching_keeps_files_without_statistics(tables: dict[str, DeltaTable]) -> None:
    table = tables["few-stats"]  # statistics of "id" only
    assert files_matching(table._snapshot, "x = 3").num_rows == len(table.files())
    assert files_matching(table._snapshot, "id = 3").num_rows < len(table.files())
    with_stats = files_matching(table._snapshot, "id = 3", with_stats=True)
    assert "stats" in with_stats.column_names


# ---------------------------------------------------------------- golden tables
GOLDEN = [
    "data-skipping-basic-stats-all-types",
    "data-skipping-basic-stats-all-types-checkpoint",
    "data-skipping-basic-stats-all-types-columnmapping-id",
    "data-skipping-basic-stats-all-types-columnmapping-name",
    "data-skipping-partition-and-data-column",
    "data-skipping-change-stats-collected-across-versions",
    "dv-with-columnmapping",
    "dv-partitioned-with-checkpoint",
    "kernel-timestamp-TIMESTAMP_MICROS",
    "kernel-timestamp-TIMESTAMP_MILLIS",
    "kernel-timestamp-PST",
    "kernel-timestamp-INT96",
    "data-reader-primitives",
    "data-reader-partition-values",
    "basic-decimal-table",
    "table-with-columnmapping-mode-name",
    "type-widening",
]


def _golden_predicates(full: pa.Table) -> Iterator[Predicate]:
    for field in full.schema:
        t = field.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
                or pa.types.is_temporal(t) or pa.types.is_decimal(t)):  # fmt: skip
            continue
        values = sorted(
            {v for v in full.column(field.name).to_pylist() if v is not None and v == v}
        )
        yield IsNull(field.name)
        yield IsNull(field.name, negated=True)
        for value in values[:: max(1, len(values) // 4)] + values[-1:]:
            for op in ("=", "!=", "<", "<=", ">", ">="):
                yield Comparison(field.name, op, value)
        if values:
            yield In(field.name, tuple(values[:2]))


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_tables_read_the_same_rows_with_skipping(name: str) -> None:
    path = GOLDEN_DIR / name
    if not (path / "_delta_log").is_dir():
        pytest.skip(f"{name} is not in this copy of the golden tables")
    table = DeltaTable(str(path))
    full = table.to_pyarrow_table()
    checked = 0
    for predicate in _golden_predicates(full):
        expected = full.filter(matches(predicate, full))
        got = table.to_pyarrow_table(filter=predicate)
        assert _canonical(got) == _canonical(expected), str(predicate)
        checked += 1
    assert checked


def _canonical(table: pa.Table) -> list[str]:
    return sorted(repr(row) for row in table.to_pylist())
