"""Schema evolution through ``DeltaTable.append_files(..., schema_mode="merge")`` and races.

No Spark: Parquet files written with pyarrow, tables read back with deltalog and delta-rs.
Races are interleaved by hand: a transaction is staged, another writer commits, then the first
commits (no sleeps, no threads).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from tableutil import log_names, write_parquet

from deltalog import (
    DeltaTable,
    InvalidInputError,
    MetadataChangedError,
    SchemaEvolutionError,
    SchemaMismatchError,
    Transaction,
)
from deltalog.protocol.schema import StructType
from deltalog.write.schema_merge import TYPE_CHANGES_KEY, merge_schemas

BASE = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int32())]))])
WIDER = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("extra", pa.float64()),
    ]
)


def _table(tmp_path: Path, **kwargs: object) -> tuple[str, DeltaTable]:
    uri = str(tmp_path / "t")
    return uri, DeltaTable.create(uri, BASE, **kwargs)  # type: ignore[arg-type]


def _base_file(uri: str, name: str, ids: list[int]) -> str:
    rows = pa.table({"id": ids, "s": [{"a": i} for i in ids]}, schema=BASE)
    return write_parquet(uri, name, rows)


def _wide_file(uri: str, name: str, ids: list[int]) -> str:
    rows = pa.table(
        {
            "id": ids,
            "s": [{"a": i, "b": f"b{i}"} for i in ids],
            "extra": [i / 2 for i in ids],
        },
        schema=WIDER,
    )
    return write_parquet(uri, name, rows)


def _commit_actions(uri: str, version: int) -> list[dict[str, object]]:
    path = Path(uri) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_merge_adds_columns_in_the_data_commit_and_readers_agree(tmp_path: Path) -> None:
    uri, table = _table(tmp_path)
    table.append_files([_base_file(uri, "old.parquet", [1, 2])])
    # Without schema_mode the new columns are refused, and nothing is committed.
    wide = _wide_file(uri, "new.parquet", [3])
    with pytest.raises(SchemaMismatchError):
        table.append_files([wide])
    assert table.update() == 1

    version = table.append_files([wide], schema_mode="merge")
    assert version == 2
    kinds = [next(iter(a)) for a in _commit_actions(uri, 2)]
    assert kinds == ["commitInfo", "metaData", "add"]  # schema and data in one commit
    schema = DeltaTable(uri).schema()
    assert schema.names == ["id", "s", "extra"]
    assert schema.field("extra").nullable
    assert schema.field("s").type.to_json()["fields"][1]["name"] == "b"  # type: ignore[index]

    expected = [
        {"id": 1, "s": {"a": 1, "b": None}, "extra": None},
        {"id": 2, "s": {"a": 2, "b": None}, "extra": None},
        {"id": 3, "s": {"a": 3, "b": "b3"}, "extra": 1.5},
    ]
    assert DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist() == expected
    from deltalake import DeltaTable as RsTable

    assert RsTable(uri).to_pyarrow_table().sort_by("id").to_pylist() == expected


def test_type_change_without_type_widening_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    uri, table = _table(tmp_path)
    bad = pa.table({"id": pa.array(["x"]), "s": [{"a": 1}]})
    name = write_parquet(uri, "bad.parquet", bad)
    before = log_names(uri)
    with pytest.raises(SchemaEvolutionError) as info:
        table.append_files([name], schema_mode="merge")
    assert info.value.column == "id"
    assert log_names(uri) == before
    with pytest.raises(InvalidInputError):
        table.append_files([name], schema_mode="overwrite")  # type: ignore[arg-type]


def test_widening_on_a_type_widening_table(tmp_path: Path) -> None:
    uri = str(tmp_path / "w")
    schema = pa.schema([("id", pa.int32())])
    table = DeltaTable.create(uri, schema, configuration={"delta.enableTypeWidening": "true"})
    assert "typeWidening" in (table.protocol().writer_features or [])
    table.append_files(
        [write_parquet(uri, "a.parquet", pa.table({"id": pa.array([1], pa.int32())}))]
    )
    wide = write_parquet(uri, "b.parquet", pa.table({"id": pa.array([2**40], pa.int64())}))
    table.append_files([wide], schema_mode="merge")
    field = DeltaTable(uri).schema().field("id")
    assert field.type.to_json() == "long"
    assert field.metadata[TYPE_CHANGES_KEY] == [{"fromType": "integer", "toType": "long"}]
    assert DeltaTable(uri).to_pyarrow_table().column("id").to_pylist() == [1, 2**40]


def _merge_transaction(uri: str, wide: str) -> Transaction:
    """A staged merge-schema append (metadata + file), not committed yet."""
    table = DeltaTable(uri)
    tx = table.transaction("WRITE", parameters={"mode": "Append"})
    tx.update_metadata(schema=merge_schemas(table.schema(), StructType.from_arrow(WIDER)))
    tx.add([wide])
    return tx


def test_merge_append_racing_a_plain_append_resolves_as_in_delta_spark(tmp_path: Path) -> None:
    uri, table = _table(tmp_path)
    # 1. The plain blind append lands first: the merge-schema append still commits (a loser
    #    that changes metadata over a winner's blind append does not conflict).
    loser = _merge_transaction(uri, _wide_file(uri, "w1.parquet", [10]))
    assert DeltaTable(uri).append_files([_base_file(uri, "p1.parquet", [1])]) == 1
    assert loser.commit() == 2
    assert "extra" in DeltaTable(uri).schema().names
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == [1, 10]

    # 2. The merge-schema commit lands first: the plain append that read the old metadata
    #    fails with MetadataChangedError, as delta-spark's ConflictChecker fails it.
    plain = DeltaTable(uri).transaction("WRITE", parameters={"mode": "Append"})
    plain.add([_wide_file(uri, "p2.parquet", [2])])
    table = DeltaTable(uri)
    more = pa.schema([*WIDER, ("more", pa.string())])
    rows = pa.table(
        {"id": [11], "s": [{"a": 11, "b": "x"}], "extra": [1.0], "more": ["m"]}, schema=more
    )
    assert table.append_files([write_parquet(uri, "w2.parquet", rows)], schema_mode="merge") == 3
    before = log_names(uri)
    with pytest.raises(MetadataChangedError) as info:
        plain.commit()
    assert info.value.winning_version == 3
    assert log_names(uri) == before


def test_a_new_column_that_needs_a_feature_upgrades_the_protocol_in_the_same_commit(
    tmp_path: Path,
) -> None:
    uri, table = _table(tmp_path)
    assert (table.protocol().min_reader_version, table.protocol().min_writer_version) == (1, 2)
    ntz = pa.schema([*BASE, ("local", pa.timestamp("us"))])
    rows = pa.table({"id": [1], "s": [{"a": 1}], "local": [dt.datetime(2024, 5, 6, 7, 8)]}, ntz)
    version = table.append_files([write_parquet(uri, "ntz.parquet", rows)], schema_mode="merge")
    kinds = [next(iter(a)) for a in _commit_actions(uri, version)]
    assert kinds == ["commitInfo", "protocol", "metaData", "add"]
    protocol = DeltaTable(uri).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert protocol.reader_features == ["timestampNtz"]
    assert protocol.writer_features == ["appendOnly", "invariants", "timestampNtz"]
    from deltalake import DeltaTable as RsTable

    assert RsTable(uri).to_pyarrow_table().column("local").to_pylist() == [
        dt.datetime(2024, 5, 6, 7, 8)
    ]
