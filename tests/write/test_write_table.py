"""``deltalog.write_table``: modes, inputs, predicates, schema modes, commit properties.

Every refusal is checked to leave the table as it was: no commit, and no data file on disk that
the write created (``parquet_on_disk`` before and after).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pytest
from tableutil import parquet_on_disk, write_commit

import deltalog
from deltalog import (
    AppendOnlyError,
    CommitProperties,
    ConstraintViolationError,
    DeltaTable,
    InvalidOptionError,
    InvalidPredicateError,
    InvalidWriteModeError,
    LossyConversionError,
    PartitioningMismatchError,
    ReplaceWhereMismatchError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UnsupportedParquetTypeError,
    write_table,
)


def _rows(root: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
    table = DeltaTable(str(root), **kwargs).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: orjson.dumps(r, default=str))


def _rs_rows(root: str | Path) -> list[dict[str, Any]]:
    table = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: orjson.dumps(r, default=str))


def _rs_sql_rows(root: str | Path) -> list[dict[str, Any]]:
    """delta-rs's rows through DataFusion, which maps columns (its ``to_pyarrow_table`` reads a
    column-mapped table's columns as nulls in 1.6.6)."""
    builder = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(root)))
    table = pa.table(builder.execute("SELECT * FROM t").read_all())
    return sorted(table.to_pylist(), key=lambda r: orjson.dumps(r, default=str))


def _commit(root: str | Path, version: int) -> list[dict[str, Any]]:
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _info(root: str | Path, version: int) -> dict[str, Any]:
    return next(a["commitInfo"] for a in _commit(root, version) if "commitInfo" in a)


BASE = pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]})


def test_modes_create_append_overwrite_error_ignore(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    assert write_table(root, BASE, partition_by="p").version == 0
    info = _info(root, 0)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"]["mode"] == "ErrorIfExists"
    assert info["operationParameters"]["partitionBy"] == '["p"]'
    files = parquet_on_disk(root)
    with pytest.raises(TableAlreadyExistsError):
        write_table(root, BASE)
    ignored = write_table(root, BASE, mode="ignore")
    assert ignored.ignored and ignored.version == 0
    assert parquet_on_disk(root) == files
    appended = write_table(root, BASE.slice(0, 1), mode="append")
    assert (appended.version, appended.rows, appended.files_added) == (1, 1, 1)
    assert _info(root, 1)["isBlindAppend"] is True
    assert len(_rows(root)) == 4
    over = write_table(root, BASE.slice(2), mode="overwrite")
    assert over.version == 2 and over.files_removed == 3
    assert _rows(root) == [{"id": 3, "p": "a", "v": 3.0}]
    assert _rows(root) == _rs_rows(root)
    assert _rows(root, version=1) == _rows(root, version=1)
    assert DeltaTable(root).check().ok


def test_unknown_mode_and_bad_options_write_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidWriteModeError):
        write_table(str(root), BASE, mode="upsert")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError):
        write_table(str(root), BASE, mode="append", predicate="p = 'a'")
    with pytest.raises(InvalidOptionError):
        write_table(str(root), BASE, schema_mode="overwrite")
    with pytest.raises(InvalidOptionError):
        write_table(str(root), BASE, compression="lzo")
    assert not root.exists()


def test_inputs_of_every_kind(tmp_path: Path) -> None:
    class Stream:  # anything with __arrow_c_stream__ (polars, DuckDB, ...)
        def __init__(self, table: pa.Table) -> None:
            self.table = table

        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            return self.table.__arrow_c_stream__(requested_schema)

    class Array:  # anything with __arrow_c_array__
        def __arrow_c_array__(self, requested_schema: object = None) -> object:
            return BASE.to_batches()[0].__arrow_c_array__(requested_schema)

    frame = pd.DataFrame({"id": [1], "p": ["a"], "v": [1.0]}, index=[10])
    inputs: list[Any] = [
        BASE,
        BASE.to_batches()[0],
        pa.RecordBatchReader.from_batches(BASE.schema, BASE.to_batches()),
        pads.dataset(BASE),
        BASE.to_batches(),
        frame,
        Stream(BASE),
        Array(),
    ]
    for i, data in enumerate(inputs):
        root = tmp_path / f"t{i}"
        write_table(str(root), data)
        expected = 1 if isinstance(data, pd.DataFrame) else 3
        rows = _rows(root)
        assert len(rows) == expected, type(data)
        assert set(rows[0]) == {"id", "p", "v"}  # a pandas index is not written
    with pytest.raises(deltalog.InvalidInputError):
        write_table(str(tmp_path / "bad"), {"id": [1]})


def test_overwrite_partitions_with_a_predicate(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE, partition_by=["p"])
    before = parquet_on_disk(root)
    new = pa.table({"id": [9], "p": ["a"], "v": [9.0]})
    result = write_table(root, new, mode="overwrite", predicate="p = 'a'")
    assert result.files_removed == 1
    assert _info(root, 1)["operationParameters"]["predicate"] == "p = 'a'"
    assert _rows(root) == [{"id": 2, "p": "b", "v": 2.0}, {"id": 9, "p": "a", "v": 9.0}]
    assert _rows(root) == _rs_rows(root)
    # a row outside the predicate: refused, nothing committed, its file deleted
    bad = pa.table({"id": [10, 11], "p": ["a", "b"], "v": [1.0, 1.0]})
    files = parquet_on_disk(root)
    with pytest.raises(ReplaceWhereMismatchError):
        write_table(root, bad, mode="overwrite", predicate=[("p", "=", "a")])
    assert DeltaTable(root).version() == 1
    assert parquet_on_disk(root) == files
    assert before <= files | before


def test_overwrite_rows_with_a_predicate_on_data_columns(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE, partition_by=["p"])
    new = pa.table({"id": [20], "p": ["b"], "v": [20.0]})
    write_table(root, new, mode="overwrite", predicate="v >= 2.0")
    assert _rows(root) == [{"id": 1, "p": "a", "v": 1.0}, {"id": 20, "p": "b", "v": 20.0}]
    assert _rows(root) == _rs_rows(root)
    assert DeltaTable(root).check().ok
    with pytest.raises(InvalidPredicateError):
        write_table(root, new, mode="overwrite", predicate="nope > 1")
    assert DeltaTable(root).version() == 1


def test_schema_merge_and_overwrite(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE, partition_by=["p"])
    wider = pa.table({"id": [4], "p": ["c"], "v": [4.0], "extra": ["x"]})
    with pytest.raises(SchemaMismatchError, match="extra"):
        write_table(root, wider, mode="append")
    write_table(root, wider, mode="append", schema_mode="merge")
    assert DeltaTable(root).schema().names == ["id", "p", "v", "extra"]
    assert {r["extra"] for r in _rows(root)} == {None, "x"}
    with pytest.raises(PartitioningMismatchError):
        write_table(root, BASE, mode="append", partition_by=["id"])
    other = pa.table({"k": ["x", "y"], "n": [1, 2]})
    write_table(root, other, mode="overwrite", schema_mode="overwrite", partition_by=["k"])
    table = DeltaTable(root)
    assert table.schema().names == ["k", "n"]
    assert table.metadata().partition_columns == ["k"]
    assert _rows(root) == _rs_rows(root) == [{"k": "x", "n": 1}, {"k": "y", "n": 2}]


def test_columns_match_by_name_in_any_order_and_case_missing_ones_are_null(
    tmp_path: Path,
) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE)
    write_table(root, pa.table({"V": [5.0], "ID": [5]}), mode="append")
    assert {"id": 5, "p": None, "v": 5.0} in _rows(root)


def test_type_mismatch_and_unsupported_types_write_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE)
    files = parquet_on_disk(root)
    with pytest.raises(SchemaMismatchError, match="'v'"):
        write_table(root, pa.table({"id": [1], "p": ["a"], "v": ["x"]}), mode="append")
    with pytest.raises(LossyConversionError, match="'id'"):  # a long that does not fit
        write_table(root, pa.table({"id": pa.array([2**64 - 1], pa.uint64())}), mode="append")
    write_table(root, pa.table({"id": pa.array([7], pa.uint32())}), mode="append")  # fits
    assert DeltaTable(root).version() == 1
    assert len(parquet_on_disk(root)) == len(files) + 1
    fresh = tmp_path / "fresh"
    with pytest.raises(UnsupportedParquetTypeError, match="unsigned"):
        write_table(str(fresh), pa.table({"u": pa.array([1], pa.uint8())}))
    with pytest.raises(UnsupportedParquetTypeError):
        write_table(str(fresh), pa.table({"t": pa.array([1], pa.time64("us"))}))
    assert not fresh.exists()


def test_nanosecond_timestamps_convert_when_lossless_else_refused(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    exact = pd.DataFrame({"ts": pd.to_datetime(["2024-01-01 00:00:00.123456"], utc=True)})
    assert exact["ts"].dtype.unit == "ns" or str(exact["ts"].dtype).startswith("datetime64")
    write_table(root, exact)
    schema = DeltaTable(root).schema()
    assert schema.field("ts").type.to_json() == "timestamp"
    got = DeltaTable(root).to_pyarrow_table().column("ts")[0].as_py()
    assert got == dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=dt.UTC)
    assert _rs_rows(root)[0]["ts"] == got
    files = parquet_on_disk(root)
    lossy = pa.table({"ts": pa.array([1_000_000_001], pa.timestamp("ns", tz="UTC"))})
    with pytest.raises(LossyConversionError, match="sub-microsecond"):
        write_table(root, lossy, mode="append")
    assert DeltaTable(root).version() == 0 and parquet_on_disk(root) == files
    fresh = tmp_path / "fresh"
    with pytest.raises(LossyConversionError):
        write_table(str(fresh), lossy)
    assert not (fresh / "_delta_log").exists() and not parquet_on_disk(fresh)


def test_naive_timestamps_make_timestamp_ntz_and_fit_a_timestamp_column(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    naive = pa.table({"ts": pa.array([dt.datetime(2024, 5, 6, 7, 8, 9)], pa.timestamp("us"))})
    write_table(root, naive)
    table = DeltaTable(root)
    assert table.schema().field("ts").type.to_json() == "timestamp_ntz"
    assert "timestampNtz" in (table.protocol().writer_features or ())
    assert _rs_rows(root) == _rows(root)


def test_not_null_violation_deletes_every_file_written(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
    DeltaTable.create(root, schema, partition_by=["p"])

    def batches() -> Any:
        for i in range(5):  # the last batch holds a null id: files of the others exist by then
            ids = [i, None] if i == 4 else [i, i + 100]
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array([f"p{i}"] * 2)], ["id", "p"])

    reader = pa.RecordBatchReader.from_batches(
        pa.schema([("id", pa.int64()), ("p", pa.string())]), batches()
    )
    with pytest.raises(ConstraintViolationError, match="id"):
        write_table(root, reader, mode="append")
    assert DeltaTable(root).version() == 0
    assert parquet_on_disk(root) == set()


def test_a_failure_while_encoding_deletes_the_files(tmp_path: Path, monkeypatch: Any) -> None:
    from deltalog.write import data_writer

    root = str(tmp_path / "t")
    write_table(root, BASE, partition_by=["p"])
    files = parquet_on_disk(root)
    real = data_writer._File.finish
    calls = []

    def failing(self: Any, *args: Any) -> Any:
        calls.append(self.location)
        if len(calls) == 2:  # the first file is finished and on disk
            raise OSError("disk full")
        return real(self, *args)

    monkeypatch.setattr(data_writer._File, "finish", failing)
    with pytest.raises(OSError, match="disk full"):
        write_table(root, BASE, mode="append")
    assert DeltaTable(root).version() == 0
    assert parquet_on_disk(root) == files


def test_append_only_refuses_overwrite(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE, configuration={"delta.appendOnly": "true"})
    files = parquet_on_disk(root)
    with pytest.raises(AppendOnlyError):
        write_table(root, BASE, mode="overwrite")
    write_table(root, BASE, mode="append")
    assert len(parquet_on_disk(root)) == len(files) + 1


def test_idempotent_app_ids_and_user_metadata(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    props = CommitProperties(user_metadata="first", app_id="job", version=1)
    write_table(root, BASE, commit_properties=props)
    assert _info(root, 0)["userMetadata"] == "first"
    assert DeltaTable(root).snapshot.txns["job"].version == 1
    files = parquet_on_disk(root)
    again = write_table(root, BASE, mode="append", commit_properties=props)
    assert again.skipped and DeltaTable(root).version() == 0
    assert parquet_on_disk(root) == files
    # delta-rs's CommitProperties work too
    rs = deltalake.CommitProperties(
        custom_metadata={"userMetadata": "rs"},
        app_transactions=[deltalake.Transaction(app_id="job", version=2)],
    )
    assert write_table(root, BASE, mode="append", commit_properties=rs).version == 1
    assert _info(root, 1)["userMetadata"] == "rs"
    assert DeltaTable(root).snapshot.txns["job"].version == 2


def test_a_delta_table_object_moves_to_the_version_written(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE)
    table = DeltaTable(root)
    write_table(table, BASE, mode="append")
    assert table.version() == 1


def test_file_size_and_row_limits(tmp_path: Path) -> None:
    big = pa.table({"id": list(range(10_000)), "s": [f"value-{i:08d}" for i in range(10_000)]})
    write_table(str(tmp_path / "rows"), big, max_rows_per_file=3_000)
    assert DeltaTable(str(tmp_path / "rows")).files().num_rows == 4
    write_table(str(tmp_path / "size"), big, target_file_size=20_000)
    sized = DeltaTable(str(tmp_path / "size")).files()
    assert sized.num_rows > 1
    assert _rows(tmp_path / "size") == _rows(tmp_path / "rows")


def test_escaped_partition_values_round_trip(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    values = ["a/b", "c=d", "50%", "sp ace", "ünï", "", None, "x:y", "q?#"]
    data = pa.table({"id": list(range(len(values))), "p": values})
    write_table(root, data, partition_by=["p"])
    expected = [{"id": i, "p": None if v == "" else v} for i, v in enumerate(values)]
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(_rows(root), key=key) == expected
    assert sorted(_rs_rows(root), key=key) == expected
    assert DeltaTable(root).check().ok


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_writes_physical_names(tmp_path: Path, mode: str) -> None:
    import pyarrow.parquet as pq

    root = str(tmp_path / "t")
    config = {"delta.columnMapping.mode": mode}
    write_table(root, BASE, partition_by=["p"], configuration=config)
    write_table(root, BASE, mode="append")
    table = DeltaTable(root)
    physical = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in table.schema()}
    one = sorted(parquet_on_disk(root))[0]
    file_schema = pq.read_schema(one)
    assert physical["id"] in file_schema.names and "id" not in file_schema.names
    if mode == "id":
        assert file_schema.field(physical["id"]).metadata[b"PARQUET:field_id"]
    add = next(a["add"] for a in _commit(root, 0) if "add" in a)
    assert set(add["partitionValues"]) == {physical["p"]}
    assert physical["id"] in orjson.loads(add["stats"])["minValues"]
    assert _rows(root) == _rs_sql_rows(root)
    assert len(_rows(root)) == 6


def test_row_tracking_and_in_commit_timestamps(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    config = {"delta.enableRowTracking": "true", "delta.enableInCommitTimestamps": "true"}
    write_table(root, BASE, configuration=config)
    write_table(root, BASE, mode="append")
    for version in (0, 1):
        assert "inCommitTimestamp" in _info(root, version)
        adds = [a["add"] for a in _commit(root, version) if "add" in a]
        assert all("baseRowId" in a for a in adds)
    assert DeltaTable(root).check().ok


def test_a_reader_larger_than_the_buffer_is_written_in_bounded_memory(tmp_path: Path) -> None:
    from deltalog.write.data_writer import DataWriter
    from deltalog.write.parquet_options import ParquetOptions

    root = str(tmp_path / "t")
    rows, batches, parts = 20_000, 100, 10
    peak = [0]

    def generate() -> Any:
        for b in range(batches):
            peak[0] = max(peak[0], pa.total_allocated_bytes())
            ids = pa.array(range(b * rows, (b + 1) * rows), pa.int64())
            yield pa.record_batch(
                [ids, pa.array([f"p{i % parts}" for i in range(rows)]), pa.array([1.5] * rows)],
                ["id", "p", "v"],
            )

    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64())])
    options = ParquetOptions(buffer_bytes=4 << 20)
    DeltaTable.create(root, schema, partition_by=["p"])
    table = DeltaTable(root)
    writer = DataWriter(
        table._storage.store, table._storage.root, table.schema(), ["p"], {}, options=options
    )
    start = pa.total_allocated_bytes()
    for batch in generate():
        writer.write(batch)
    adds = writer.close()
    total = rows * batches * (8 + 8 + 6)  # ~44 MB of Arrow data went through
    assert peak[0] - start < 16 << 20, (peak[0] - start, total)
    assert sum(orjson.loads(a.stats or "{}")["numRecords"] for a in adds) == rows * batches


def test_check_constraints_are_enforced(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    config = {"delta.constraints.positive": "v > 0 AND p IN ('a', 'b')"}
    write_table(root, BASE, configuration=config)
    files = parquet_on_disk(root)
    bad = pa.table({"id": [9, 10], "p": ["a", "a"], "v": [1.0, -1.0]})
    with pytest.raises(ConstraintViolationError, match="positive"):
        write_table(root, bad, mode="append")
    null = pa.table({"id": [9], "p": ["a"], "v": pa.array([None], pa.float64())})
    with pytest.raises(ConstraintViolationError):  # null is a violation, as in delta-spark
        write_table(root, null, mode="append")
    assert DeltaTable(root).version() == 0 and parquet_on_disk(root) == files
    write_table(root, BASE.slice(0, 1), mode="append")
    assert DeltaTable(root).version() == 1
    with pytest.raises(ConstraintViolationError):  # a new table's constraints too
        write_table(str(tmp_path / "new"), bad, configuration=config)
    assert not (tmp_path / "new" / "_delta_log").exists()


def test_a_check_constraint_deltalog_cannot_evaluate_refuses_the_write(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    DeltaTable.create(root, BASE.schema, configuration={"delta.constraints.len": "length(p) < 3"})
    protocol = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 3}}
    write_commit(root, 1, [orjson.dumps(protocol)])  # as ALTER TABLE ADD CONSTRAINT leaves it
    with pytest.raises(deltalog.UnsupportedFeatureError, match="len"):
        write_table(root, BASE, mode="append")
    assert parquet_on_disk(root) == set()
    with pytest.raises(deltalog.UnsupportedFeatureError):  # other writers refuse as before
        DeltaTable(root).snapshot.check_writable()


def test_a_conflicting_commit_deletes_the_overwrite_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer replaces a partition between the overwrite's read and its commit (a seam,
    no sleeps): a file the overwrite read is gone, so it conflicts (a blind append would not)."""
    from deltalog.writer import staged

    root = str(tmp_path / "t")
    write_table(root, BASE, partition_by=["p"])
    real = staged.StagedWrite.commit
    raced: list[int] = []

    def commit_after_a_rival(self: Any) -> Any:
        if not raced:
            raced.append(-1)  # the rival's own commit goes straight through
            rival = write_table(root, BASE.slice(0, 1), mode="overwrite", predicate="p = 'a'")
            raced[0] = rival.version or 0
        return real(self)

    monkeypatch.setattr(staged.StagedWrite, "commit", commit_after_a_rival)
    files_before_rival = parquet_on_disk(root)
    with pytest.raises(deltalog.ConcurrentModificationError):  # a named subclass
        write_table(root, BASE, mode="overwrite")
    assert raced == [1] and DeltaTable(root).version() == 1
    rival = {f for f in parquet_on_disk(root) if f not in files_before_rival}
    assert len(rival) == 1  # the rival's file stays; the overwrite's files are gone
    assert DeltaTable(root).check().ok


def test_a_predicate_on_a_missing_column_writes_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE, partition_by=["p"])
    files = parquet_on_disk(root)
    for predicate in ("nope = 1", [("nope", "=", 1)], pa.compute.field("nope") == 1):
        with pytest.raises(InvalidPredicateError, match="nope"):
            write_table(root, BASE, mode="overwrite", predicate=predicate)
    assert DeltaTable(root).version() == 0 and parquet_on_disk(root) == files


def test_a_merge_widens_narrower_data_instead_of_changing_the_column(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    write_table(root, BASE)
    narrow = pa.table({"id": pa.array([9], pa.int8()), "v": pa.array([1.0], pa.float32()),
                       "new": ["n"]})  # fmt: skip
    write_table(root, narrow, mode="append", schema_mode="merge")
    schema = DeltaTable(root).schema()
    assert [f.type.to_json() for f in schema.fields] == ["long", "string", "double", "string"]
    assert {"id": 9, "p": None, "v": 1.0, "new": "n"} in _rows(root)


def test_polars_and_duckdb_data(tmp_path: Path) -> None:
    """Both hand Arrow over through ``__arrow_c_stream__`` (string views included)."""
    polars = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    root = str(tmp_path / "t")
    write_table(root, polars.DataFrame({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    relation = duckdb.sql("SELECT 3::BIGINT AS id, 'c' AS p")
    write_table(root, relation, mode="append")
    assert _rows(root) == [{"id": 1, "p": "a"}, {"id": 2, "p": "b"}, {"id": 3, "p": "c"}]
