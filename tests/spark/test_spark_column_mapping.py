"""deltalog.spark on column-mapped tables: new tables, overwrites, compaction, physically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from deltalog import DeltaTable
from deltalog.protocol.column_mapping import PARQUET_FIELD_ID, field_id, logical_to_physical
from deltalog.protocol.paths import decode_path
from deltalog.spark import optimize, write

DDL = "id long, s struct<a:int,b:string>, day string"


def _footers(root: str) -> list[Any]:
    return [
        pq.read_schema(os.path.join(root, decode_path(p)))
        for p in DeltaTable(root).files().column("path").to_pylist()
    ]


def test_spark_write_optimize_on_an_id_mapped_table(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    rows = [(1, (10, "x"), "d1"), (2, None, "d2")]
    result = write(
        spark.createDataFrame(rows, DDL),
        root,
        partition_by=["day"],
        configuration={"delta.columnMapping.mode": "id"},
    )
    assert result.version == 0
    table = DeltaTable(root)
    schema = table.schema()
    phys = logical_to_physical(schema)
    assert table.metadata().configuration["delta.columnMapping.maxColumnId"] == "5"
    for footer in _footers(root):
        assert footer.names == [phys["id"], phys["s"]]
        assert (
            footer.field(0).metadata[PARQUET_FIELD_ID] == str(field_id(schema.field("id"))).encode()
        )
        nested = footer.field(1).type.field(0)
        nested_id = field_id(schema.field("s").type.fields[0])  # type: ignore[union-attr]
        assert nested.metadata[PARQUET_FIELD_ID] == str(nested_id).encode()
    values = table.files().column("partition_values").to_pylist()
    assert sorted(dict(v)[phys["day"]] for v in values) == ["d1", "d2"]

    # A dynamic partition overwrite replaces d2 only (partition values read physically).
    write(
        spark.createDataFrame([(3, (30, "z"), "d2")], DDL),
        root,
        mode="overwrite",
        partition_overwrite_mode="dynamic",
    )
    write(spark.createDataFrame([(4, None, "d1")], DDL), root, mode="append")
    assert DeltaTable(root).files().num_rows == 3
    done = optimize(spark, root)
    assert done.files_removed == 2 and done.files_added == 1
    for footer in _footers(root):
        assert footer.names == [phys["id"], phys["s"]]
        assert PARQUET_FIELD_ID in (footer.field(0).metadata or {})
    rows_read = DeltaTable(root).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows_read == [
        {"id": 1, "s": {"a": 10, "b": "x"}, "day": "d1"},
        {"id": 3, "s": {"a": 30, "b": "z"}, "day": "d2"},
        {"id": 4, "s": None, "day": "d1"},
    ]

    # mergeSchema adds a column: it gets the next id and a new physical name, and the
    # executors write that name (read back as the logical one).
    write(
        spark.createDataFrame([(5, None, "d1", "new")], DDL + ", extra string"),
        root,
        mode="append",
        options={"mergeSchema": "true"},
    )
    merged = DeltaTable(root)
    extra = merged.schema().field("extra")
    assert field_id(extra) == 6
    assert merged.metadata().configuration["delta.columnMapping.maxColumnId"] == "6"
    extra_phys = logical_to_physical(merged.schema())["extra"]
    assert extra_phys != "extra"
    assert any(extra_phys in footer.names for footer in _footers(root))
    last = merged.to_pyarrow_table().sort_by("id").to_pylist()
    assert [r["extra"] for r in last] == [None, None, None, "new"]
