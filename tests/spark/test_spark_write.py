"""``deltalog.spark.write``: Spark's executors write the data files, deltalog commits them.

Every test uses the process-wide local[2] session (``spark`` fixture) and small DataFrames.
Races between writers are made deterministic with :func:`deltalog.spark.stage`: staging runs
the Spark job and pins the read version, so "stage A, stage/commit B, commit A" is exactly the
interleaving under test, with no sleeps or threads.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from servers.fixtures import CloudTable
from tableutil import parquet_on_disk

from deltalog import (
    AppendOnlyError,
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConstraintViolationError,
    DeltaTable,
    InvalidInputError,
    InvalidPredicateError,
    PartitioningMismatchError,
    ProtocolChangedError,
    ReplaceWhereMismatchError,
    SchemaMismatchError,
    TransactionClosedError,
    UnsupportedFeatureError,
)
from deltalog.logstores import open_store
from deltalog.spark import stage, write
from deltalog.spark.task import TaskPlan

SERIALIZABLE = {"delta.isolationLevel": "Serializable"}
STRING_PREFIX = 32  # deltalog/stats/footers.py: string bounds are cut to a 32-character prefix

# --------------------------------------------------------------------------- helpers


def _live_paths(uri: str) -> set[str]:
    """Local paths of the table's live data files, per deltalog."""
    return {os.path.normpath(p) for p in DeltaTable(uri).file_uris()}


def _stats(add_stats: str | None) -> dict[str, Any]:
    assert add_stats, "every add must carry stats"
    return orjson.loads(add_stats)


def _rows_by_partition(uri: str) -> dict[str | None, list[int]]:
    """``{p: sorted ids}`` read through deltalog's file list and pyarrow (not delta-rs)."""
    table = DeltaTable(uri)
    out: dict[str | None, list[int]] = {}
    root = table.uri.rstrip("/")
    for f in table.files().to_pylist():
        p = dict(f["partition_values"])["p"]
        ids = pq.read_table(f"{root}/{unquote(f['path'])}", columns=["id"])["id"].to_pylist()
        out.setdefault(p, []).extend(ids)
    return {p: sorted(ids) for p, ids in out.items()}


def _log_paths(uri: str, version: int, kind: str) -> list[str]:
    """Paths of the ``add`` or ``remove`` actions in commit ``version`` (local tables)."""
    log = Path(uri) / "_delta_log" / f"{version:020d}.json"
    actions = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    return [a[kind]["path"] for a in actions if kind in a]


def _df(spark: Any, p: str | None, ids: list[int]) -> Any:
    return spark.createDataFrame([(i, f"v{i}", p) for i in ids], "id long, v string, p string")


# --------------------------------------------------------------------------- 1. acceptance

N_ROWS = 200_000
N_PARTS = 20
DATA_COLUMNS = ["id", "i", "s", "d", "dt", "ts", "dec", "b"]
TS_BASE_US = 1_600_000_000_000_000
LONG_MAX = "z" * 40  # in partition 3: a maximum longer than 32 chars -> no string bounds
LONG_MIN_PREFIX = "a" * 35  # in partition 4: a minimum that gets cut to 32 chars

ACCEPTANCE_SQL = [
    "id",
    "CAST(id % 20 AS INT) AS p",
    "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id % 1000 AS INT) END AS i",
    f"""CASE WHEN id % 7 = 0 THEN NULL
             WHEN id % 5000 = 3 THEN '{LONG_MAX}'
             WHEN id % 5000 = 4 THEN concat('{LONG_MIN_PREFIX}', CAST(id AS STRING))
             ELSE concat('v', lpad(CAST(id AS STRING), 7, '0')) END AS s""",
    # all null in partition 5: no bounds there, nullCount == numRecords
    "CASE WHEN id % 13 = 0 OR id % 20 = 5 THEN NULL"
    " ELSE CAST(id AS DOUBLE) * 0.5D - 1000.25D END AS d",
    "CASE WHEN id % 17 = 0 THEN NULL ELSE date_add(DATE'2020-01-01', CAST(id % 3000 AS INT)) END"
    " AS dt",
    f"CASE WHEN id % 19 = 0 THEN NULL ELSE timestamp_micros({TS_BASE_US} + id * 1234567) END AS ts",
    "CASE WHEN id % 23 = 0 THEN NULL"
    " ELSE CAST(CAST(id % 100000 - 50000 AS DECIMAL(12, 2)) / 100 AS DECIMAL(10, 2)) END AS dec",
    "CASE WHEN id % 29 = 0 THEN NULL ELSE id % 3 = 0 END AS b",
]


def _expected_columns(ids: np.ndarray) -> dict[str, pa.Array]:
    """The acceptance DataFrame's columns, computed without Spark, for the given ids."""
    py_ids = ids.tolist()

    def s(i: int) -> str | None:
        if i % 7 == 0:
            return None
        if i % 5000 == 3:
            return LONG_MAX
        if i % 5000 == 4:
            return LONG_MIN_PREFIX + str(i)
        return f"v{i:07d}"

    epoch_2020 = (dt.date(2020, 1, 1) - dt.date(1970, 1, 1)).days
    return {
        "id": pa.array(ids, pa.int64()),
        "p": pa.array((ids % N_PARTS).astype(np.int32)),
        "i": pa.array((ids % 1000).astype(np.int32), mask=ids % 11 == 0),
        "s": pa.array([s(i) for i in py_ids], pa.string()),
        "d": pa.array(ids * 0.5 - 1000.25, mask=(ids % 13 == 0) | (ids % 20 == 5)),
        "dt": pa.array((epoch_2020 + ids % 3000).astype(np.int32), mask=ids % 17 == 0).cast(
            pa.date32()
        ),
        "ts": pa.array(TS_BASE_US + ids * 1234567, mask=ids % 19 == 0).cast(
            pa.timestamp("us", tz="UTC")
        ),
        "dec": pa.array(
            [
                None if i % 23 == 0 else decimal.Decimal(i % 100000 - 50000).scaleb(-2)
                for i in py_ids
            ],
            pa.decimal128(10, 2),
        ),
        "b": pa.array(ids % 3 == 0, mask=ids % 29 == 0),
    }


def _bound(value: Any, t: pa.DataType) -> Any:
    """A min/max as the stats JSON should hold it (stats rules of deltalog/stats/footers.py)."""
    if pa.types.is_timestamp(t):
        utc = value.astimezone(dt.UTC)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    if pa.types.is_date(t):
        return value.isoformat()
    if pa.types.is_decimal(t):
        f = float(value)
        return f if decimal.Decimal(repr(f)) == value else None
    if pa.types.is_floating(t):
        return float(value)
    return value


def _expected_stats(data: pa.Table) -> dict[str, Any]:
    """numRecords / minValues / maxValues / nullCount computed from the file's data."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in data.column_names:
        column = data[name]
        t = column.type
        nulls[name] = column.null_count
        if pa.types.is_boolean(t):
            continue  # booleans get no bounds
        mm = pc.min_max(column).as_py()
        lo, hi = mm["min"], mm["max"]
        if lo is None:
            continue  # all null
        if pa.types.is_string(t):
            if len(hi) > STRING_PREFIX:
                continue  # a prefix is no upper bound: no bounds at all
            lo = lo[:STRING_PREFIX]
        lo, hi = _bound(lo, t), _bound(hi, t)
        if lo is None or hi is None:
            continue
        mins[name] = lo
        maxs[name] = hi
    return {"numRecords": data.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def test_acceptance_partitioned_job_stats_match_file_data_and_delta_rs_reads_it(
    spark: Any, tmp_path: Path
) -> None:
    uri = str(tmp_path / "acceptance")
    df = spark.range(0, N_ROWS, 1, numPartitions=N_PARTS).selectExpr(*ACCEPTANCE_SQL)

    result = write(df, uri, partition_by=["p"], mode="append")

    table = DeltaTable(uri)
    assert result.version == table.version()
    assert result.rows == N_ROWS and not result.skipped
    assert table.snapshot.partition_columns == ["p"]
    files = table.files().to_pylist()
    uris = table.file_uris()
    assert len(files) == len(uris) == result.files_added
    # 20 Spark tasks of 10,000 consecutive ids, each spanning all 20 values of p: one file
    # per (task, partition value), like delta-spark.
    assert len(files) == N_PARTS * N_PARTS
    assert parquet_on_disk(tmp_path / "acceptance") == {os.path.normpath(u) for u in uris}

    expected_types = {
        "id": pa.int64(),
        "i": pa.int32(),
        "s": pa.string(),
        "d": pa.float64(),
        "dt": pa.date32(),
        "ts": pa.timestamp("us", tz="UTC"),
        "dec": pa.decimal128(10, 2),
        "b": pa.bool_(),
    }
    rows_per_partition: dict[int, int] = {}
    pieces = []
    seen_no_string_bounds = seen_cut_min = seen_all_null = False
    for f, location in zip(files, uris, strict=True):
        assert location.endswith(unquote(f["path"]))
        p = int(dict(f["partition_values"])["p"])
        assert f["path"].startswith(f"p={p}/")
        data = pq.read_table(location)
        assert data.column_names == DATA_COLUMNS  # partition column not in the file
        assert {n: data.schema.field(n).type for n in DATA_COLUMNS} == expected_types
        assert f["size"] == os.path.getsize(location)
        stats = _stats(f["stats"])
        assert stats == _expected_stats(data), f["path"]
        assert pc.all(pc.equal(pc.remainder(data["id"], N_PARTS), p)).as_py()
        rows_per_partition[p] = rows_per_partition.get(p, 0) + stats["numRecords"]
        seen_no_string_bounds |= p == 3 and "s" not in stats["minValues"]
        seen_cut_min |= p == 4 and stats["minValues"]["s"] == "a" * STRING_PREFIX
        seen_all_null |= p == 5 and stats["nullCount"]["d"] == stats["numRecords"]
        assert "b" not in stats["minValues"] and "b" not in stats["maxValues"]
        pieces.append(data.append_column("p", pa.array([p] * data.num_rows, pa.int32())))
    # The edge cases of the stats rules were really exercised.
    assert seen_no_string_bounds and seen_cut_min and seen_all_null

    assert sum(rows_per_partition.values()) == N_ROWS
    assert rows_per_partition == {p: N_ROWS // N_PARTS for p in range(N_PARTS)}

    # Every row round-trips exactly: the files, and delta-rs's reading of the table.
    from deltalake import DeltaTable as RsTable

    expected = pa.table(_expected_columns(np.arange(N_ROWS, dtype=np.int64)))
    from_files = pa.concat_tables(pieces).sort_by("id")
    by_delta_rs = RsTable(uri).to_pyarrow_table()
    assert by_delta_rs.num_rows == N_ROWS
    by_delta_rs = by_delta_rs.sort_by("id")
    for name in ["p", *DATA_COLUMNS]:
        want = expected[name]
        assert from_files[name].cast(want.type).equals(want), name
        assert by_delta_rs[name].cast(want.type).equals(want), name


# --------------------------------------------------------------------------- 2. races


A_IDS = [0, 1, 2, 3]
B_IDS = [10, 11, 12, 13]


def _base_table(spark: Any, tmp_path: Path, configuration: dict[str, str] | None) -> str:
    """A table with string partition column p and rows in partitions 'a' and 'b'."""
    uri = str(tmp_path / "races")
    rows = [(i, f"v{i}", "a") for i in A_IDS] + [(i, f"v{i}", "b") for i in B_IDS]
    df = spark.createDataFrame(rows, "id long, v string, p string")
    result = write(df, uri, partition_by=["p"], configuration=configuration, mode="append")
    assert _rows_by_partition(uri) == {"a": A_IDS, "b": B_IDS}
    assert DeltaTable(uri).metadata().configuration == dict(configuration or {})
    assert result.version == 0  # created by its first write, as delta-spark does
    return uri


def _stage_overwrite_a(spark: Any, uri: str, ids: list[int], how: str) -> Any:
    """Stage an overwrite of partition 'a' with ``ids``, by replace_where or dynamically."""
    kwargs: dict[str, Any] = (
        {"replace_where": "p = 'a'"}
        if how == "replace_where"
        else {"partition_overwrite_mode": "dynamic"}
    )
    return stage(_df(spark, "a", ids), uri, mode="overwrite", **kwargs)


def _paths_in(uri: str, p: str) -> list[str]:
    """Paths (as in the log) of the live files of partition ``p``."""
    return [
        f["path"]
        for f in DeltaTable(uri).files().to_pylist()
        if dict(f["partition_values"])["p"] == p
    ]


@pytest.mark.parametrize("how", ["replace_where", "dynamic"])
@pytest.mark.parametrize(
    "configuration", [None, SERIALIZABLE], ids=["WriteSerializable", "Serializable"]
)
def test_overwrite_of_a_races_append_to_b_and_both_commit(
    spark: Any, tmp_path: Path, how: str, configuration: dict[str, str] | None
) -> None:
    # Disjoint partitions never conflict, under either isolation level.
    uri = _base_table(spark, tmp_path, configuration)
    original_a = _paths_in(uri, "a")

    overwrite = _stage_overwrite_a(spark, uri, [100, 101], how)
    append = stage(_df(spark, "b", [200]), uri, mode="append")
    assert overwrite.read_version == append.read_version == 0
    appended = append.commit()
    assert appended.version == 1

    result = overwrite.commit()

    assert result.version == 2
    assert result.files_removed == len(original_a) and result.rows == 2
    assert sorted(_log_paths(uri, 2, "remove")) == sorted(original_a)
    assert _rows_by_partition(uri) == {"a": [100, 101], "b": [*B_IDS, 200]}
    assert DeltaTable(uri).version() == 2
    commit_info = DeltaTable(uri).history(1)[0]
    assert commit_info["operation"] == "WRITE"
    assert commit_info["readVersion"] == 0


@pytest.mark.parametrize("how", ["replace_where", "dynamic"])
def test_serializable_append_into_overwritten_partition_fails_the_overwrite(
    spark: Any, tmp_path: Path, how: str
) -> None:
    uri = _base_table(spark, tmp_path, SERIALIZABLE)
    overwrite = _stage_overwrite_a(spark, uri, [100, 101], how)
    written = [os.path.join(uri, unquote(a.path)) for a in overwrite.adds]
    assert written and all(os.path.exists(p) for p in written)

    appended = write(_df(spark, "a", [300]), uri, mode="append")
    assert appended.version == 1
    before = _rows_by_partition(uri)
    live_before = _live_paths(uri)

    with pytest.raises(ConcurrentAppendError) as info:
        overwrite.commit()

    assert info.value.winning_version == 1
    assert info.value.partition == {"p": "a"}
    assert not any(os.path.exists(p) for p in written)  # its files are deleted
    table = DeltaTable(uri)
    assert table.version() == 1  # nothing committed by the loser
    assert _rows_by_partition(uri) == before == {"a": [*A_IDS, 300], "b": B_IDS}
    assert _live_paths(uri) == live_before == parquet_on_disk(Path(uri))


@pytest.mark.parametrize("how", ["replace_where", "dynamic"])
def test_write_serializable_overwrite_and_same_partition_append_both_commit(
    spark: Any, tmp_path: Path, how: str
) -> None:
    # delta-spark's WriteSerializable (the default level): a blind append may be serialised
    # after a concurrent overwrite even in the same partition, so the overwrite commits and the
    # appended rows survive it (as if the overwrite had run first, then the append). Only
    # Serializable makes the overwrite fail with ConcurrentAppendException.
    uri = _base_table(spark, tmp_path, None)
    original_a = _paths_in(uri, "a")
    overwrite = _stage_overwrite_a(spark, uri, [100, 101], how)
    appended = write(_df(spark, "a", [300]), uri, mode="append")
    assert appended.version == 1
    (appended_path,) = _log_paths(uri, 1, "add")

    result = overwrite.commit()

    assert result.version == 2
    assert _rows_by_partition(uri) == {"a": [100, 101, 300], "b": B_IDS}
    # The overwrite removed exactly the files it read (the original 'a' files), not the
    # appended one it never saw.
    assert result.files_removed == len(original_a)
    assert sorted(_log_paths(uri, 2, "remove")) == sorted(original_a)
    assert appended_path in _paths_in(uri, "a")


@pytest.mark.parametrize(
    "configuration", [None, SERIALIZABLE], ids=["WriteSerializable", "Serializable"]
)
def test_two_overwrites_of_the_same_partition_conflict(
    spark: Any, tmp_path: Path, configuration: dict[str, str] | None
) -> None:
    uri = _base_table(spark, tmp_path, configuration)
    first = stage(_df(spark, "a", [100]), uri, mode="overwrite", replace_where="p = 'a'")
    second = stage(_df(spark, "a", [200]), uri, mode="overwrite", replace_where="p = 'a'")
    second_files = [os.path.join(uri, unquote(a.path)) for a in second.adds]
    assert first.commit().version == 1

    with pytest.raises(ConcurrentModificationError) as info:
        second.commit()

    # The winner both added a file in p='a' (which the loser's read predicate covers; the
    # winner is no blind append, so this counts under WriteSerializable too) and removed the
    # files the loser read. delta-spark's ConflictChecker checks added files before deleted
    # ones, so the first failing check is ConcurrentAppendException, not
    # ConcurrentDeleteReadException.
    assert isinstance(info.value, ConcurrentAppendError | ConcurrentDeleteReadError)
    assert type(info.value) is ConcurrentAppendError
    assert info.value.winning_version == 1
    assert not any(os.path.exists(p) for p in second_files)
    assert DeltaTable(uri).version() == 1
    assert _rows_by_partition(uri) == {"a": [100], "b": B_IDS}


# --------------------------------------------------------------------------- 3. idempotency


def test_app_id_and_version_make_writes_idempotent(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "idem")
    root = tmp_path / "idem"
    batch = _df(spark, "a", [1, 2, 3])

    first = write(batch, uri, partition_by=["p"], app_id="stream", app_version=1, mode="append")
    assert not first.skipped and first.rows == 3
    files = parquet_on_disk(root)
    version = DeltaTable(uri).version()
    assert first.version == version

    again = write(batch, uri, app_id="stream", app_version=1, mode="append")
    assert again.skipped
    assert (again.files_added, again.rows) == (0, 0)
    assert again.version == version
    assert parquet_on_disk(root) == files  # nothing written at all
    assert DeltaTable(uri).version() == version

    second = write(_df(spark, "a", [4]), uri, app_id="stream", app_version=2, mode="append")
    assert not second.skipped and second.version == version + 1
    assert DeltaTable(uri).snapshot.txns["stream"].version == 2

    older = write(_df(spark, "a", [5]), uri, app_id="stream", app_version=1, mode="append")
    assert older.skipped
    assert _rows_by_partition(uri) == {"a": [1, 2, 3, 4]}

    # Two writers of the same micro-batch, staged at the same version, committed in turn: the
    # second finds the first's txn on catching up and becomes a no-op (its files deleted).
    a = stage(_df(spark, "a", [6, 7]), uri, app_id="stream", app_version=3, mode="append")
    b = stage(_df(spark, "a", [6, 7]), uri, app_id="stream", app_version=3, mode="append")
    b_files = [os.path.join(uri, unquote(x.path)) for x in b.adds]
    assert b_files and all(os.path.exists(p) for p in b_files)
    committed = a.commit()
    assert not committed.skipped and committed.version == version + 2

    duplicate = b.commit()

    assert duplicate.skipped
    assert (duplicate.files_added, duplicate.rows) == (0, 0)
    assert duplicate.version == committed.version  # the version that holds app_version 3
    assert not any(os.path.exists(p) for p in b_files)
    assert DeltaTable(uri).version() == committed.version
    assert _rows_by_partition(uri) == {"a": [1, 2, 3, 4, 6, 7]}
    assert _live_paths(uri) == parquet_on_disk(root)


# --------------------------------------------------------------------------- 4. schema checks


@pytest.fixture
def schema_table(spark: Any, tmp_path: Path) -> str:
    uri = str(tmp_path / "schema")
    df = spark.createDataFrame([(1, "one", 1.5, "a")], "id long, Name string, x double, p string")
    write(df, uri, partition_by=["p"], mode="append")
    return uri


def _nothing_written(uri: str, call: Any, error: type[Exception]) -> pytest.ExceptionInfo[Any]:
    files = parquet_on_disk(Path(uri))
    version = DeltaTable(uri).version()
    with pytest.raises(error) as info:
        call()
    assert parquet_on_disk(Path(uri)) == files
    assert DeltaTable(uri).version() == version
    return info


def test_extra_column_is_refused_and_nothing_written(spark: Any, schema_table: str) -> None:
    df = spark.createDataFrame(
        [(2, "two", 2.5, "a", 9)], "id long, Name string, x double, p string, extra int"
    )
    info = _nothing_written(
        schema_table, lambda: write(df, schema_table, mode="append"), SchemaMismatchError
    )
    assert "extra" in str(info.value)


def test_wrong_type_is_refused(spark: Any, schema_table: str) -> None:
    df = spark.createDataFrame(
        [("2", "two", 2.5, "a")], "id string, Name string, x double, p string"
    )
    info = _nothing_written(
        schema_table, lambda: write(df, schema_table, mode="append"), SchemaMismatchError
    )
    assert "'id'" in str(info.value)


def test_missing_partition_column_is_refused(spark: Any, schema_table: str) -> None:
    df = spark.createDataFrame([(2, "two", 2.5)], "id long, Name string, x double")
    _nothing_written(
        schema_table, lambda: write(df, schema_table, mode="append"), SchemaMismatchError
    )


def test_column_names_match_case_insensitively_and_files_get_the_tables_spelling(
    spark: Any, schema_table: str
) -> None:
    df = spark.createDataFrame([(2, "two", 2.5, "a")], "ID long, name string, X double, P string")
    result = write(df, schema_table, mode="append")
    assert result.files_added == 1
    (path,) = _log_paths(schema_table, result.version, "add")
    (latest,) = [f for f in DeltaTable(schema_table).files().to_pylist() if f["path"] == path]
    assert path.startswith("p=a/")
    assert pq.read_schema(os.path.join(schema_table, unquote(path))).names == ["id", "Name", "x"]
    stats = _stats(latest["stats"])
    assert stats["minValues"] == {"id": 2, "Name": "two", "x": 2.5}


def test_missing_nullable_column_is_fine(spark: Any, schema_table: str) -> None:
    df = spark.createDataFrame([(2, "two", "a")], "id long, Name string, p string")
    result = write(df, schema_table, mode="append")
    assert result.rows == 1
    (path,) = _log_paths(schema_table, result.version, "add")
    assert pq.read_schema(os.path.join(schema_table, unquote(path))).names == ["id", "Name"]

    from deltalake import DeltaTable as RsTable

    rows = RsTable(schema_table).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [
        {"id": 1, "Name": "one", "x": 1.5, "p": "a"},
        {"id": 2, "Name": "two", "x": None, "p": "a"},
    ]


def test_partition_by_mismatch_is_invalid_input(spark: Any, schema_table: str) -> None:
    df = spark.createDataFrame([(2, "two", 2.5, "a")], "id long, Name string, x double, p string")
    info = _nothing_written(
        schema_table,
        lambda: write(df, schema_table, partition_by=["Name"], mode="append"),
        PartitioningMismatchError,
    )
    assert issubclass(info.type, InvalidInputError)
    # The table's own partitioning (any case) is accepted.
    assert write(df, schema_table, partition_by=["P"], mode="append").rows == 1


def test_replace_where_with_rows_outside_it_writes_nothing(spark: Any, schema_table: str) -> None:
    df = spark.createDataFrame(
        [(2, "two", 2.5, "a"), (3, "three", 3.5, "b")], "id long, Name string, x double, p string"
    )
    info = _nothing_written(
        schema_table,
        lambda: write(df, schema_table, mode="overwrite", replace_where="p = 'a'"),
        ReplaceWhereMismatchError,
    )
    assert '"p":"b"' in str(info.value)  # the partition it wrote outside


def test_replace_where_on_an_unknown_column_is_an_invalid_predicate(
    spark: Any, schema_table: str
) -> None:
    df = spark.createDataFrame([(2, "two", 2.5, "a")], "id long, Name string, x double, p string")
    info = _nothing_written(
        schema_table,
        lambda: write(df, schema_table, mode="overwrite", replace_where="nope = 2"),
        InvalidPredicateError,
    )
    assert info.type is InvalidPredicateError


# Bad modes, options and argument combinations: tests/spark/test_write_options.py (no Spark needed).


# --------------------------------------------------------------------------- 5. partition values

SPECIAL_VALUES = [
    "a b",
    "x/y",
    "k=v",
    "50%",
    "12:30:00",
    "ünïcødé ✓ 日本",
    "a#b?c",
    "%2F",
    "[x]{y}^*'\"\\",
    "",  # Spark writes an empty string partition value as null
    None,
]
#: The directories Spark would name (ExternalCatalogUtils.escapePathName escapes
#: " # % ' * / : = ? \ { [ ] ^ and control characters, nothing else).
SPARK_DIRECTORIES = {
    "p=a b",
    "p=x%2Fy",
    "p=k%3Dv",
    "p=50%25",
    "p=12%3A30%3A00",
    "p=ünïcødé ✓ 日本",
    "p=a%23b%3Fc",
    "p=%252F",
    "p=%5Bx%5D%7By}%5E%2A%27%22%5C",
    "p=__HIVE_DEFAULT_PARTITION__",
}


def test_special_characters_in_partition_values_round_trip(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "special")
    rows = [(i, v) for i, v in enumerate(SPECIAL_VALUES)] + [(100, "a b"), (101, None)]
    df = spark.createDataFrame(rows, "id long, p string")

    result = write(df, uri, partition_by=["p"], mode="append")
    assert result.rows == len(rows)

    expected: dict[str | None, list[int]] = {}
    for i, v in rows:
        expected.setdefault(None if v == "" else v, []).append(i)
    table = DeltaTable(uri)
    by_deltalog: dict[str | None, list[int]] = {}
    for f, location in zip(table.files().to_pylist(), table.file_uris(), strict=True):
        assert os.path.isfile(location), location
        p = dict(f["partition_values"])["p"]
        ids = pq.read_table(location)["id"].to_pylist()
        assert _stats(f["stats"])["numRecords"] == len(ids)
        by_deltalog.setdefault(p, []).extend(ids)
    assert {k: sorted(v) for k, v in by_deltalog.items()} == expected
    # Every file lives in its partition's own directory, named as Spark names it.
    assert len({os.path.dirname(u) for u in table.file_uris()}) == len(expected)
    assert {n for n in os.listdir(uri) if n != "_delta_log"} == SPARK_DIRECTORIES

    from deltalake import DeltaTable as RsTable

    by_delta_rs: dict[str | None, list[int]] = {}
    for row in RsTable(uri).to_pyarrow_table().to_pylist():
        by_delta_rs.setdefault(row["p"], []).append(row["id"])
    assert {k: sorted(v) for k, v in by_delta_rs.items()} == expected
    # A replace_where on such a value, and a dynamic overwrite of the null partition, replace
    # exactly their partitions.
    write(_df_id_p(spark, [(200, "x/y")]), uri, mode="overwrite", replace_where="p = 'x/y'")
    dynamic = write(
        _df_id_p(spark, [(300, None)]), uri, mode="overwrite", partition_overwrite_mode="dynamic"
    )
    assert dynamic.files_removed == 1
    expected["x/y"] = [200]
    expected[None] = [300]
    by_delta_rs = {}
    for row in RsTable(uri).to_pyarrow_table().to_pylist():
        by_delta_rs.setdefault(row["p"], []).append(row["id"])
    assert {k: sorted(v) for k, v in by_delta_rs.items()} == expected


def _df_id_p(spark: Any, rows: list[tuple[int, str | None]]) -> Any:
    return spark.createDataFrame(rows, "id long, p string")


# --------------------------------------------------------------------------- 6. full overwrite


def test_overwrite_replaces_the_whole_table(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "full")
    write(_df(spark, "a", [1, 2]), uri, partition_by=["p"], mode="append")
    write(_df(spark, "b", [3]), uri, mode="append")
    write(_df(spark, None, [4]), uri, mode="append")
    old = DeltaTable(uri).files().column("path").to_pylist()

    result = write(_df(spark, "c", [10, 11, 12]), uri, mode="overwrite")

    assert result.files_removed == len(old) >= 3
    assert result.rows == 3
    live = DeltaTable(uri).files().column("path").to_pylist()
    assert not set(live) & set(old)
    assert _rows_by_partition(uri) == {"c": [10, 11, 12]}
    assert sorted(_log_paths(uri, result.version, "remove")) == sorted(old)

    from deltalake import DeltaTable as RsTable

    rows = RsTable(uri).to_pyarrow_table().sort_by("id").to_pylist()
    assert [(r["id"], r["p"]) for r in rows] == [(10, "c"), (11, "c"), (12, "c")]


@pytest.mark.parametrize("explicit", [None, "static"])
def test_session_partition_overwrite_mode_applies_unless_overridden(
    spark: Any, tmp_path: Path, explicit: str | None
) -> None:
    uri = str(tmp_path / "session-mode")
    write(_df(spark, "a", [1]), uri, partition_by=["p"], mode="append")
    write(_df(spark, "b", [2]), uri, mode="append")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        write(_df(spark, "a", [10]), uri, mode="overwrite", partition_overwrite_mode=explicit)
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    if explicit is None:  # the session's dynamic mode: only partition 'a' is replaced
        assert _rows_by_partition(uri) == {"a": [10], "b": [2]}
    else:  # static: the whole table
        assert _rows_by_partition(uri) == {"a": [10]}


# --------------------------------------------------------------------------- 7. object stores


def test_executors_write_to_object_stores(spark: Any, cloud_table: CloudTable) -> None:
    uri, options = cloud_table.uri, cloud_table.options
    df = spark.range(0, 30, 1, numPartitions=2).selectExpr(
        "id", "CAST(id * 2 AS INT) AS n", "concat('p', CAST(id % 3 AS STRING)) AS p"
    )

    first = write(df, uri, partition_by=["p"], storage_options=options, mode="append")
    second = write(df.limit(5), uri, storage_options=options, mode="append")

    assert first.rows == 30 and second.rows == 5
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == second.version == first.version + 1
    files = table.files().to_pylist()
    assert len(files) == first.files_added + second.files_added
    counts: dict[str, int] = {}
    for f in files:
        stats = _stats(f["stats"])
        counts[dict(f["partition_values"])["p"]] = (
            counts.get(dict(f["partition_values"])["p"], 0) + stats["numRecords"]
        )
        assert f["path"].startswith(f"p={dict(f['partition_values'])['p']}/")
    assert sum(counts.values()) == 35
    assert set(counts) == {"p0", "p1", "p2"}

    store, _ = open_store(uri, options)
    for f, location in zip(files, table.file_uris(), strict=True):
        assert store.stat(location).size == f["size"]
        data = pq.read_table(pa.BufferReader(store.read(location)))
        assert data.num_rows == _stats(f["stats"])["numRecords"]
        assert data.column_names == ["id", "n"]


# --------------------------------------------------------------------------- 8. maxRecordsPerFile


def test_max_records_per_file_splits_files(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "split")
    df = spark.range(0, 5500, 1, numPartitions=2).selectExpr("id", "CAST(id % 2 AS STRING) AS p")
    spark.conf.set("spark.sql.files.maxRecordsPerFile", "1000")
    try:
        result = write(df, uri, partition_by=["p"], mode="append")
    finally:
        spark.conf.unset("spark.sql.files.maxRecordsPerFile")

    table = DeltaTable(uri)
    counts = []
    for f, location in zip(table.files().to_pylist(), table.file_uris(), strict=True):
        n = _stats(f["stats"])["numRecords"]
        assert n == pq.read_metadata(location).num_rows
        counts.append(n)
    # 2 tasks x 2 partition values x 1375 rows -> 1000 + 375 each.
    assert sorted(counts) == [375] * 4 + [1000] * 4
    assert result.files_added == 8 and result.rows == 5500
    # Unset again: the next write is not split.
    assert write(df, uri, mode="append").files_added == 4


# --------------------------------------------------------------------------- 9. creation


def test_new_table_is_created_by_its_first_write_in_one_commit(spark: Any, tmp_path: Path) -> None:
    # As delta-spark does: version 0 holds commitInfo (WRITE), protocol, metaData and the adds.
    uri = str(tmp_path / "new")
    df = _df(spark, "a", [1, 2]).union(_df(spark, "b", [3]))

    result = write(df, uri, partition_by=["p"], mode="append")

    assert result.version == 0 and result.rows == 3
    log = Path(uri) / "_delta_log" / f"{0:020d}.json"
    kinds = [next(iter(orjson.loads(line))) for line in log.read_bytes().splitlines()]
    assert kinds[:3] == ["commitInfo", "protocol", "metaData"]
    assert kinds[3:] == ["add"] * result.files_added
    assert sorted(_log_paths(uri, 0, "add")) == sorted(
        DeltaTable(uri).files().column("path").to_pylist()
    )
    assert _rows_by_partition(uri) == {"a": [1, 2], "b": [3]}
    assert DeltaTable(uri).metadata().partition_columns == ["p"]
    history = DeltaTable(uri).history()
    assert len(history) == 1
    assert history[-1]["operation"] == "WRITE"
    # partitionBy is the writer's own, "[]" when it gives none.
    assert history[-1]["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert "readVersion" not in history[-1]
    # history's timestamp is the commit file's time (what time travel searches); the writer's
    # clock stays in commitTimestamp.
    assert history[-1]["timestamp"] == log.stat().st_mtime_ns // 1_000_000
    assert isinstance(history[-1]["commitTimestamp"], int)
    assert DeltaTable(uri, timestamp=history[-1]["timestamp"]).version() == 0

    write(_df(spark, "a", [4]), uri, mode="append")
    assert DeltaTable(uri).history(1)[0]["operationParameters"] == {
        "mode": "Append",
        "partitionBy": "[]",
    }


def test_two_writers_creating_the_same_table_the_second_loses(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "race-create")
    first = stage(_df(spark, "a", [1]), uri, partition_by=["p"], mode="append")
    second = stage(_df(spark, "b", [2]), uri, partition_by=["p"], mode="append")
    assert first.read_version == second.read_version == -1
    second_files = [os.path.join(uri, unquote(a.path)) for a in second.adds]
    assert second_files and all(os.path.exists(p) for p in second_files)
    assert first.commit().version == 0

    with pytest.raises(ProtocolChangedError) as info:
        second.commit()

    assert info.value.winning_version == 0
    assert not any(os.path.exists(p) for p in second_files)  # its files are deleted
    assert DeltaTable(uri).version() == 0
    assert _rows_by_partition(uri) == {"a": [1]}
    assert _live_paths(uri) == parquet_on_disk(Path(uri))


def test_empty_append_commits_nothing_and_is_not_skipped(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "empty")
    write(_df(spark, "a", [1]), uri, partition_by=["p"], mode="append")
    files = parquet_on_disk(Path(uri))

    result = write(spark.createDataFrame([], "id long, v string, p string"), uri, mode="append")

    assert not result.skipped  # skipped is only for an app_id/app_version already committed
    assert (result.files_added, result.files_removed, result.rows) == (0, 0, 0)
    assert result.version == 0
    assert DeltaTable(uri).version() == 0
    assert parquet_on_disk(Path(uri)) == files


def test_overwrite_of_an_append_only_table_is_refused(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "append-only")
    write(
        _df(spark, "a", [1]),
        uri,
        partition_by=["p"],
        configuration={"delta.appendOnly": "true"},
        mode="append",
    )
    for kwargs in ({}, {"replace_where": "p = 'a'"}, {"partition_overwrite_mode": "dynamic"}):
        _nothing_written(
            uri,
            lambda kw=kwargs: write(_df(spark, "a", [2]), uri, mode="overwrite", **kw),
            AppendOnlyError,
        )
    assert write(_df(spark, "a", [3]), uri, mode="append").version == 1  # appends are fine
    assert _rows_by_partition(uri) == {"a": [1, 3]}


# --------------------------------------------------------------------------- 10. replace_where


def test_replace_where_reads_timestamps_in_the_session_time_zone(
    spark: Any, tmp_path: Path
) -> None:
    uri = str(tmp_path / "tz")
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:

        def frame(rows: list[tuple[int, str]]) -> Any:
            # The text is cast in the session time zone: New York midnight is 05:00 UTC.
            return spark.createDataFrame(rows, "id long, t string").selectExpr(
                "id", "CAST(t AS TIMESTAMP) AS ts"
            )

        base = frame([(1, "2024-01-01 00:00:00"), (2, "2024-01-02 00:00:00")])
        write(base, uri, partition_by=["ts"], mode="append")
        # Read in UTC, "2024-01-01 00:00:00" would select no partition and the written rows
        # would fall outside it.
        first = write(
            frame([(10, "2024-01-01 00:00:00")]),
            uri,
            mode="overwrite",
            replace_where="ts = '2024-01-01 00:00:00'",
        )
        # A literal with an offset keeps it.
        second = write(
            frame([(20, "2024-01-02 00:00:00")]),
            uri,
            mode="overwrite",
            replace_where="ts = '2024-01-02 05:00:00+00:00'",
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)

    assert first.files_removed == second.files_removed == 1
    table = DeltaTable(uri)
    by_partition: dict[str, list[int]] = {}
    for f, location in zip(table.files().to_pylist(), table.file_uris(), strict=True):
        ids = pq.read_table(location)["id"].to_pylist()
        by_partition.setdefault(dict(f["partition_values"])["ts"], []).extend(ids)
    assert by_partition == {
        "2024-01-01T05:00:00.000000Z": [10],
        "2024-01-02T05:00:00.000000Z": [20],
    }


def test_replace_where_checks_the_rows_actually_written(
    spark: Any, schema_table: str, tmp_path: Path
) -> None:
    # A non-deterministic column: 'a' on its first evaluation, then 'b'. A check in a job of its
    # own could see only 'a' while the write job writes 'b'; the written files are checked.
    from pyspark.sql import functions as F

    marker = str(tmp_path / "first-call")

    def first_a_then_b(_: Any) -> str:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return "b"
        return "a"

    flip = F.udf(first_a_then_b, "string").asNondeterministic()
    df = spark.createDataFrame(
        [(2, "two", 2.5), (3, "three", 3.5), (4, "four", 4.5)], "id long, Name string, x double"
    ).withColumn("p", flip(F.col("id")))
    before = DeltaTable(schema_table).files().to_pylist()

    info = _nothing_written(
        schema_table,
        lambda: write(df, schema_table, mode="overwrite", replace_where="p = 'a'"),
        ReplaceWhereMismatchError,
    )

    assert os.path.exists(marker)  # the job did run (and wrote 'a' and 'b' rows)
    assert '"p":"b"' in str(info.value)
    assert DeltaTable(schema_table).files().to_pylist() == before
    assert _live_paths(schema_table) == parquet_on_disk(Path(schema_table))


# --------------------------------------------------------------------------- 11. constraints


def _nothing_committed(uri: str, call: Any, error: type[Exception]) -> pytest.ExceptionInfo[Any]:
    """``call`` raises ``error`` from a failed Spark job and commits nothing.

    Files written by the job's other tasks may stay behind, unreferenced (as with delta-spark,
    whose aborted tasks keep theirs too; VACUUM deletes them).
    """
    version = DeltaTable(uri).version()
    live = _live_paths(uri)
    with pytest.raises(error) as info:
        call()
    assert DeltaTable(uri).version() == version
    assert _live_paths(uri) == live
    return info


def _field(name: str, t: Any, nullable: bool = True, **metadata: str) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": nullable, "metadata": metadata}


NOT_NULL_CASES = {
    "top-level": (
        [_field("id", "long", False), _field("v", "string")],
        [],
        {},
        "id long, v string",
        [(None, "x")],
        [(1, "x")],
        "id",
    ),
    "nested": (
        [
            _field("id", "long"),
            _field(
                "s",
                {"type": "struct", "fields": [_field("x", "long", False), _field("y", "string")]},
            ),
        ],
        [],
        {},
        "id long, s struct<x: long, y: string>",
        [(1, (2, "ok")), (2, (None, "y"))],
        [(1, (2, "ok")), (2, None)],  # a null struct holds no x to check
        "s.x",
    ),
    "partition": (
        [_field("id", "long"), _field("p", "string", False)],
        ["p"],
        {},
        "id long, p string",
        [(1, "a"), (2, None)],
        [(1, "a")],
        "p",
    ),
    "not-indexed": (
        [_field("id", "long"), _field("b", "string", False)],
        [],
        {"delta.dataSkippingNumIndexedCols": "1"},  # b gets no stats to find nulls in
        "id long, b string",
        [(1, "x"), (2, None)],
        [(1, "x")],
        "b",
    ),
}


@pytest.mark.parametrize("case", list(NOT_NULL_CASES))
def test_not_null_columns_are_enforced(spark: Any, tmp_path: Path, case: str) -> None:
    fields, partition_by, configuration, ddl, bad, good, column = NOT_NULL_CASES[case]
    uri = str(tmp_path / "not-null")
    DeltaTable.create(
        uri,
        {"type": "struct", "fields": fields},
        partition_by=partition_by,
        configuration=configuration,
    )

    info = _nothing_committed(
        uri,
        lambda: write(spark.createDataFrame(bad, ddl), uri, mode="append"),
        ConstraintViolationError,
    )

    assert type(info.value) is ConstraintViolationError  # not wrapped in SparkWriteError
    assert "NOT NULL" in str(info.value) and column.split(".")[-1] in str(info.value)
    result = write(spark.createDataFrame(good, ddl), uri, mode="append")
    assert (result.version, result.rows) == (1, len(good))


def test_char_and_varchar_lengths_are_enforced_and_chars_padded(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "char")
    schema = {
        "type": "struct",
        "fields": [
            _field("id", "long"),
            _field("v", "string", __CHAR_VARCHAR_TYPE_STRING="varchar(3)"),
            _field("c", "string", __CHAR_VARCHAR_TYPE_STRING="char(5)"),
        ],
    }
    DeltaTable.create(uri, orjson.dumps(schema).decode())
    ddl = "id long, v string, c string"
    for bad, column in (((1, "abcd", "x"), "v"), ((1, "abc", "abcdef"), "c")):
        info = _nothing_committed(
            uri,
            lambda row=bad: write(spark.createDataFrame([row], ddl), uri, mode="append"),
            ConstraintViolationError,
        )
        assert f"'{column}'" in str(info.value)

    good = spark.createDataFrame([(1, "abc", "ab"), (2, None, None)], ddl).coalesce(1)
    result = write(good, uri, mode="append")

    assert result.version == 1
    table = DeltaTable(uri)
    rows = pa.concat_tables(pq.read_table(u) for u in table.file_uris()).sort_by("id")
    assert rows.to_pylist() == [
        {"id": 1, "v": "abc", "c": "ab   "},
        {"id": 2, "v": None, "c": None},
    ]
    (stats,) = [_stats(s) for s in table.files().column("stats").to_pylist()]
    assert stats["minValues"]["c"] == "ab   "


# --------------------------------------------------------------------------- 12. files


def test_one_task_writing_more_partitions_than_it_keeps_open(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "many")
    n_parts = 200
    assert n_parts > TaskPlan.max_open_files
    # One task sees the ids in order, p = id % 200, in batches of 50 rows: partitions 0..9 come
    # back (in the last batch) after their files were finished to make room, and get a second
    # file each.
    df = (
        spark.range(0, n_parts + 10, 1, numPartitions=2)
        .selectExpr("id", f"CAST(id % {n_parts} AS INT) AS p")
        .coalesce(1)
    )

    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")  # several batches
    try:
        result = write(df, uri, partition_by=["p"], mode="append")
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)

    assert result.rows == n_parts + 10
    table = DeltaTable(uri)
    ids: list[int] = []
    files_per_partition: dict[int, int] = {}
    for f, location in zip(table.files().to_pylist(), table.file_uris(), strict=True):
        p = int(dict(f["partition_values"])["p"])
        got = pq.read_table(location)["id"].to_pylist()
        assert got and all(i % n_parts == p for i in got)
        assert _stats(f["stats"])["numRecords"] == len(got)
        ids.extend(got)
        files_per_partition[p] = files_per_partition.get(p, 0) + 1
    assert sorted(ids) == list(range(n_parts + 10))  # every row exactly once
    assert set(files_per_partition) == set(range(n_parts))
    assert min(files_per_partition.values()) >= 1
    assert sum(files_per_partition.values()) == result.files_added > n_parts
    assert _live_paths(uri) == parquet_on_disk(Path(uri))


def test_spark_reads_ancient_dates_and_timestamps_from_written_files(
    spark: Any, tmp_path: Path
) -> None:
    # Without org.apache.spark.version in the footer, Spark's reader (rebase mode EXCEPTION)
    # refuses dates before 1582-10-15 and timestamps before 1900.
    uri = str(tmp_path / "ancient")
    df = spark.sql(
        "SELECT 1L AS id, DATE'1500-01-01' AS d, TIMESTAMP'1800-01-01 00:00:00' AS ts,"
        " TIMESTAMP'0900-06-01 12:00:00' AS pts"
    )

    write(df, uri, partition_by=["pts"], mode="append")

    table = DeltaTable(uri)
    (f,) = table.files().to_pylist()
    (location,) = table.file_uris()
    footer = pq.read_metadata(location).metadata
    assert footer[b"org.apache.spark.version"] == spark.version.encode()
    back = spark.read.parquet(location).selectExpr(
        "id", "CAST(d AS STRING) AS d", "CAST(ts AS STRING) AS ts"
    )
    assert [r.asDict() for r in back.collect()] == [
        {"id": 1, "d": "1500-01-01", "ts": "1800-01-01 00:00:00"}
    ]
    # Years before 1000 are zero-padded in partition values; bounds are ISO dates/times.
    assert dict(f["partition_values"]) == {"pts": "0900-06-01T12:00:00.000000Z"}
    stats = _stats(f["stats"])
    assert stats["minValues"] == {"id": 1, "d": "1500-01-01", "ts": "1800-01-01T00:00:00.000Z"}


# --------------------------------------------------------------------------- 13. NaN partitions


def test_dynamic_overwrite_replaces_a_nan_partition_of_several_columns(
    spark: Any, tmp_path: Path
) -> None:
    uri = str(tmp_path / "nan")
    nan = float("nan")
    ddl = "id long, p double, q string"
    write(
        spark.createDataFrame([(1, nan, "x"), (2, 1.0, "x"), (3, nan, "y")], ddl),
        uri,
        partition_by=["p", "q"],
        mode="append",
    )

    result = write(
        spark.createDataFrame([(10, nan, "x")], ddl),
        uri,
        mode="overwrite",
        partition_overwrite_mode="dynamic",
    )

    assert result.files_removed == 1
    table = DeltaTable(uri)
    got: dict[tuple[str, str], list[int]] = {}
    for f, location in zip(table.files().to_pylist(), table.file_uris(), strict=True):
        values = dict(f["partition_values"])
        got.setdefault((values["p"], values["q"]), []).extend(
            pq.read_table(location)["id"].to_pylist()
        )
    assert got == {("NaN", "x"): [10], ("1.0", "x"): [2], ("NaN", "y"): [3]}


# --------------------------------------------------------------------------- review fixes


def test_a_staged_write_commits_once_and_never_deletes_committed_files(
    spark: Any, tmp_path: Path
) -> None:
    uri = str(tmp_path / "twice")
    first = stage(_df_id_p(spark, [(1, "a")]), uri, partition_by=["p"], mode="append")
    assert first.commit().version == 0
    with pytest.raises(TransactionClosedError):
        first.commit()
    later = stage(_df_id_p(spark, [(2, "b")]), uri, mode="append")
    assert later.commit().version == 1
    with pytest.raises(TransactionClosedError):
        later.commit()
    later.abort()  # after a commit: a no-op, the committed files stay
    for location in DeltaTable(uri).file_uris():
        assert Path(unquote(location.removeprefix("file://"))).exists()
    assert _rows_by_partition(uri) == {"a": [1], "b": [2]}

    aborted = stage(_df_id_p(spark, [(3, "c")]), uri, mode="append")
    aborted.abort()
    with pytest.raises(TransactionClosedError):
        aborted.commit()
    assert DeltaTable(uri).version() == 1


@pytest.mark.parametrize("zone", ["+05:00", "GMT+05:00", "UTC+5", "PST", "Z"])
def test_replace_where_accepts_every_kind_of_spark_session_zone(
    spark: Any, tmp_path: Path, zone: str
) -> None:
    uri = str(tmp_path / "zones")
    write(_df_id_p(spark, [(1, "a"), (2, "b")]), uri, partition_by=["p"], mode="append")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        result = write(_df_id_p(spark, [(10, "a")]), uri, mode="overwrite", replace_where="p = 'a'")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert result.files_removed >= 1
    assert _rows_by_partition(uri) == {"a": [10], "b": [2]}


def test_offset_session_zone_applies_to_timestamp_literals(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "offset")
    rows = [(1, dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.UTC))]
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    write(
        spark.createDataFrame(rows, "id long, t timestamp"), uri, partition_by=["t"], mode="append"
    )
    spark.conf.set("spark.sql.session.timeZone", "+05:00")
    try:
        # 05:00 at +05:00 is midnight UTC: the partition written above.
        result = write(
            spark.createDataFrame(
                [(2, dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.UTC))], "id long, t timestamp"
            ),
            uri,
            mode="overwrite",
            replace_where="t = '2024-01-01 05:00:00'",
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert result.files_removed == 1


def test_nested_char_varchar_tables_are_refused_before_writing(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "nested_varchar")
    nested = {"type": "struct", "fields": [_field("c", "string")]}
    schema = {
        "type": "struct",
        "fields": [
            _field("id", "long"),
            _field("s", nested, __CHAR_VARCHAR_TYPE_STRING="struct<c:varchar(3)>"),
        ],
    }
    DeltaTable.create(uri, schema)
    before = parquet_on_disk(tmp_path / "nested_varchar")
    df = spark.createDataFrame([(1, ("abcdef",))], "id long, s struct<c: string>")
    with pytest.raises(UnsupportedFeatureError, match="nested CHAR/VARCHAR"):
        write(df, uri, mode="append")
    assert parquet_on_disk(tmp_path / "nested_varchar") == before
    assert DeltaTable(uri).version() == 0
