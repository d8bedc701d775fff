"""Column mapping (name and id modes): files, partition values and stats by physical name."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import log_names, write_parquet

from deltalog import ColumnMappingError, DeltaTable, PartitionValueError, col
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import (
    MAX_COLUMN_ID,
    PARQUET_FIELD_ID,
    arrow_with_field_ids,
    assign_column_mapping,
    field_id,
    logical_to_physical,
    map_new_columns,
    physical_name,
    physical_schema,
    to_physical_batch,
)
from deltalog.protocol.schema import StructField, StructType, as_struct

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("day", pa.string())])


def _mapped(tmp_path: Path, mode: str) -> DeltaTable:
    return DeltaTable.create(
        str(tmp_path),
        SCHEMA,
        partition_by=["day"],
        configuration={"delta.columnMapping.mode": mode},
    )


def _physical_file(table: DeltaTable, root: Path, relative: str, *, ids: bool) -> str:
    """A Parquet file with the table's physical data columns (and field ids when ``ids``)."""
    schema = table.schema()
    data = pa.table({"id": [1, 2], "v": ["a", None]})
    batch = to_physical_batch(data.to_batches()[0], schema, field_ids=ids)
    return write_parquet(root, relative, pa.Table.from_batches([batch]))


def test_new_mapped_table_gets_ids_physical_names_and_max_id(tmp_path: Path) -> None:
    table = _mapped(tmp_path, "name")
    schema = table.schema()
    ids = [field_id(f) for f in schema.fields]
    assert ids == [1, 2, 3]
    assert all(physical_name(f).startswith("col-") for f in schema.fields)
    assert len({physical_name(f) for f in schema.fields}) == 3
    assert table.metadata().configuration[MAX_COLUMN_ID] == "3"
    assert (table.protocol().min_reader_version, table.protocol().min_writer_version) == (2, 5)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_append_files_logs_physical_names_and_reads_logical(tmp_path: Path, mode: str) -> None:
    table = _mapped(tmp_path, mode)
    phys = logical_to_physical(table.schema())
    # The partition directory may use the logical name; the log keys it physically.
    rel = _physical_file(table, tmp_path, "day=d1/f.parquet", ids=mode == "id")
    table.append_files([rel])
    files = table.files()
    (values,) = files.column("partition_values").to_pylist()
    assert dict(values) == {phys["day"]: "d1"}
    stats = orjson.loads(files.column("stats")[0].as_py())
    assert stats["minValues"] == {phys["id"]: 1, phys["v"]: "a"}
    assert stats["nullCount"] == {phys["id"]: 0, phys["v"]: 1}
    rows = DeltaTable(str(tmp_path)).to_pyarrow_table()
    assert rows.column_names == ["id", "v", "day"]
    assert rows.to_pylist() == [
        {"id": 1, "v": "a", "day": "d1"},
        {"id": 2, "v": None, "day": "d1"},
    ]
    # Partition predicates see the physically keyed values.
    with table.transaction("DELETE") as tx:
        assert tx.read_files(col("day") == "d1").num_rows == 1
        assert tx.read_files(col("day") == "d2").num_rows == 0


def test_logical_names_in_a_file_are_refused(tmp_path: Path) -> None:
    table = _mapped(tmp_path, "name")
    rel = write_parquet(tmp_path, "day=d1/logical.parquet", pa.table({"id": [1], "v": ["a"]}))
    with pytest.raises(ColumnMappingError) as info:
        table.append_files([rel])
    assert "logical name" in str(info.value) and info.value.path is not None
    assert log_names(tmp_path) == ["00000000000000000000.json"]


def test_id_mode_needs_the_field_ids(tmp_path: Path) -> None:
    table = _mapped(tmp_path, "id")
    no_ids = _physical_file(table, tmp_path, "day=d1/a.parquet", ids=False)
    with pytest.raises(ColumnMappingError, match="field_id"):
        table.append_files([no_ids])
    schema = table.schema()
    wrong = physical_schema(schema)
    wrong = StructType(
        tuple(
            StructField(f.name, f.type, f.nullable, {**f.metadata, "delta.columnMapping.id": 99})
            for f in wrong.fields
        )
    )
    data = pa.table({physical_name(schema.field("id")): [1]})
    pq.write_table(data.cast(arrow_with_field_ids(data.schema, wrong)), tmp_path / "b.parquet")
    with pytest.raises(ColumnMappingError, match="99"):
        table.append_files(["b.parquet"])
    assert table.version() == 0
    good = _physical_file(table, tmp_path, "day=d1/c.parquet", ids=True)
    footer = pq.read_schema(tmp_path / good)
    assert footer.field(0).metadata[PARQUET_FIELD_ID] == b"1"
    assert table.append_files([good]) == 1


def test_add_actions_need_physical_partition_keys(tmp_path: Path) -> None:
    table = _mapped(tmp_path, "name")
    phys = logical_to_physical(table.schema())
    with pytest.raises(PartitionValueError, match="logged as"):
        table.transaction().add(AddFile("x.parquet", {"day": "d1"}, 1, 1, True))
    with table.transaction() as tx:
        tx.add(AddFile("y.parquet", {phys["day"]: "d1"}, 1, 1, True))
    assert table.version() == 1


def test_new_columns_get_new_ids_and_renames_keep_physical_names(tmp_path: Path) -> None:
    table = _mapped(tmp_path, "name")
    old = table.schema()
    rel = _physical_file(table, tmp_path, "day=d1/f.parquet", ids=False)
    table.append_files([rel])
    renamed = StructType(
        (
            StructField("key", old.field("id").type, True, old.field("id").metadata),
            *[f for f in old.fields if f.name != "id"],
            StructField("extra", as_struct(pa.schema([("x", pa.int32())])).fields[0].type),
        )
    )
    with table.transaction("ADD COLUMNS") as tx:  # no file removed: no rewrite needed
        tx.update_metadata(schema=renamed)
    schema = table.schema()
    assert physical_name(schema.field("key")) == physical_name(old.field("id"))
    assert field_id(schema.field("extra")) == 4
    assert physical_name(schema.field("extra")).startswith("col-")
    assert table.metadata().configuration[MAX_COLUMN_ID] == "4"
    rows = DeltaTable(str(tmp_path)).to_pyarrow_table(columns=["key", "extra"])
    assert rows.to_pylist() == [{"key": 1, "extra": None}, {"key": 2, "extra": None}]


def test_assign_keeps_existing_and_never_reuses_ids() -> None:
    schema = as_struct(pa.schema([("a", pa.int64()), ("s", pa.struct([("x", pa.string())]))]))
    mapped, highest = assign_column_mapping(schema, {MAX_COLUMN_ID: "7"})
    assert highest == 10
    assert [field_id(f) for f in mapped.fields] == [8, 9]
    nested = mapped.field("s").type
    assert isinstance(nested, StructType) and field_id(nested.fields[0]) == 10
    again, same = assign_column_mapping(mapped, {MAX_COLUMN_ID: "10"})
    assert again == mapped and same == 10
    # Turning mapping on for an existing table: current names become physical names.
    kept, config = map_new_columns(
        schema, {"delta.columnMapping.mode": "name"}, previous={"delta.columnMapping.mode": "none"}
    )
    assert [physical_name(f) for f in kept.fields] == ["a", "s"]
    assert config[MAX_COLUMN_ID] == "3"
    plain, unchanged = map_new_columns(schema, {})
    assert plain == schema and unchanged == {}
