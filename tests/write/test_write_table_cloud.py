"""``write_table`` on the object stores (moto S3, S3 + DynamoDB, the GCS server, Azurite) and in
memory: data files are assembled in memory and uploaded once; delta-rs reads the S3 table."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from servers.fixtures import CloudTable

from deltalog import DeltaTable, ReplaceWhereMismatchError, write_table

DATA = pa.table({"id": list(range(100)), "p": [f"v/{i % 3}" for i in range(100)]})


def test_write_table_on_every_object_store(cloud_table: CloudTable) -> None:
    uri, options = cloud_table.uri, cloud_table.options
    write_table(uri, DATA, partition_by=["p"], storage_options=options, max_rows_per_file=20)
    write_table(uri, DATA.slice(0, 10), mode="append", storage_options=options)
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == 1
    assert table.to_pyarrow_table().num_rows == 110
    assert table.check().ok
    before = _objects(table)
    assert len(before) == len(table.file_uris())
    good = pa.table({"id": list(range(20)), "p": ["v/0"] * 20})
    bad = pa.table({"id": [1], "p": ["v/1"]})
    reader = pa.RecordBatchReader.from_batches(good.schema, [*good.to_batches(), *bad.to_batches()])
    with pytest.raises(ReplaceWhereMismatchError):  # after 4 files were uploaded
        write_table(
            uri, reader, mode="overwrite", predicate="p = 'v/0'", storage_options=options,
            max_rows_per_file=5,
        )  # fmt: skip
    assert _objects(table) == before


def _objects(table: DeltaTable) -> set[str]:
    """Every data object under the table root, committed or not."""
    store, root = table._storage.store, table._storage.root
    return {s.path for s in store.list_tree(root) if s.path.endswith(".parquet")}


def test_write_table_in_memory() -> None:
    uri = "memory://write-table-test"
    write_table(uri, DATA, partition_by=["p"])
    rows: Any = DeltaTable(uri).to_pyarrow_table(filter="p = 'v/1'").num_rows
    assert rows == 33
