"""Which of a MERGE target's files Spark's own Parquet reader reads (no Spark session needed).

:func:`deltalog.spark.merge_native.split_target` sends a file to Spark's reader only when
:mod:`deltalog.spark.parquet_read` finds it plain and its statistics give ``numRecords`` (the
row count a new deletion vector needs); :meth:`NativeTarget.resolve` maps Spark's file URI back
to the path the log names. Merges over such tables are compared with delta-spark in
``interop_tests/test_spark_merge_native_interop.py``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from deltalog import DeltaTable, write_table
from deltalog.spark.merge_native import NativeTarget, split_target


def _split(uri: str, files: pa.Table | None = None) -> NativeTarget:
    table = DeltaTable(uri)
    snapshot = table.snapshot
    return split_target(
        table._storage.root,
        snapshot.files if files is None else files,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
        snapshot.protocol,
    )


def _write(uri: str, data: pa.Table, **options: object) -> None:
    write_table(uri, data, mode="append", **options)  # type: ignore[arg-type]


def test_plain_files_go_native_and_resolve_to_their_logged_paths(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, pa.table({"id": [1, 2, 3], "p": ["a b", "x:y%", "a b"]}), partition_by=["p"])
    target = _split(uri)
    logged = DeltaTable(uri).snapshot.files.column("path").to_pylist()
    assert target.split.rest.num_rows == 0
    assert len(target.split.native) == len(logged) == 2
    for local in target.split.native:
        path, rows = target.resolve("file:" + quote(local))
        assert path in logged
        assert rows == (2 if "a b" in local else 1)
    # a file read through mapInArrow is named by its logged path, its count unknown
    assert target.resolve(logged[0]) == (logged[0], None)


def test_files_without_num_records_go_through_map_in_arrow(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, pa.table({"id": [1, 2]}))
    _write(uri, pa.table({"id": [3]}))
    files = DeltaTable(uri).snapshot.files
    stats = files.column("stats").to_pylist()
    no_count = files.set_column(
        files.column_names.index("stats"), "stats", pa.array([None, stats[1]], pa.string())
    )
    target = _split(uri, no_count)
    assert target.split.rest.column("path").to_pylist() == [files.column("path")[0].as_py()]
    assert len(target.split.native) == 1


def test_a_column_named_metadata_keeps_every_file_on_map_in_arrow(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, pa.table({"id": [1], "_Metadata": ["m"]}))
    target = _split(uri)
    assert target.split.native == []
    assert target.split.rest.num_rows == 1
