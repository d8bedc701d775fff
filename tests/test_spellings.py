"""One spelling per concept across DeltaTable, deltalog.spark and check_table.

The overwrite predicate is ``predicate=`` (as delta-rs spells it), partition columns
``partition_by``, store options ``storage_options``. The old spellings (``where=`` of
``overwrite_files``, ``replace_where=`` of ``deltalog.spark.write``/``stage``) still work, with a
DeprecationWarning, and giving both spellings is refused before anything is written.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tableutil import write_parquet

from deltalog import ConflictingOptionsError, DeltaTable, InvalidOptionError, check_table

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.int32())])
DATA = pa.table({"id": pa.array([1, 2], pa.int64())})


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["part"])
    for part in ("1", "2"):
        write_parquet(table.uri, f"part={part}/a.parquet", DATA)
    table.append_files(["part=1/a.parquet", "part=2/a.parquet"])
    write_parquet(table.uri, "part=1/b.parquet", DATA)
    return table


def _paths(table: DeltaTable) -> list[str]:
    return sorted(table.files(with_stats=False).column("path").to_pylist())


def test_overwrite_files_takes_predicate_without_a_warning(table: DeltaTable) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        version = table.overwrite_files(["part=1/b.parquet"], predicate="part = 1")
    assert version == 2
    assert _paths(table) == ["part=1/b.parquet", "part=2/a.parquet"]
    assert table.history(1)[0]["operationParameters"]["predicate"] == "part = '1'"


def test_overwrite_files_where_is_a_deprecated_alias(table: DeltaTable) -> None:
    with pytest.warns(DeprecationWarning, match=r"where=.*predicate=") as caught:
        version = table.overwrite_files(["part=1/b.parquet"], where="part = 1")
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert version == 2
    assert _paths(table) == ["part=1/b.parquet", "part=2/a.parquet"]


def test_overwrite_files_refuses_both_spellings(table: DeltaTable) -> None:
    log = sorted(os.listdir(Path(table.uri) / "_delta_log"))
    with pytest.raises(ConflictingOptionsError, match="predicate= and its deprecated"):
        table.overwrite_files(["part=1/b.parquet"], predicate="part = 1", where="part = 1")
    assert sorted(os.listdir(Path(table.uri) / "_delta_log")) == log
    assert DeltaTable(table.uri).version() == 1


class _Frame:
    """Enough of a DataFrame for what happens before the Spark job (never runs one)."""

    schema = type("S", (), {"json": staticmethod(lambda: '{"type":"struct","fields":[]}')})()

    def mapInArrow(self, *args: Any) -> Any:
        raise AssertionError("the Spark job must not run")


def _spark_functions() -> tuple[Callable[..., Any], Callable[..., Any]]:
    pytest.importorskip("pyspark")
    from deltalog.spark import stage, write

    return write, stage


@pytest.mark.parametrize("which", ["write", "stage"])
def test_spark_predicate_reaches_the_write_settings(tmp_path: Path, which: str) -> None:
    function = dict(zip(("write", "stage"), _spark_functions(), strict=True))[which]
    # An overwrite predicate needs mode="overwrite": refused before anything runs, which shows
    # the keyword became the write's replaceWhere.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidOptionError, match="needs mode='overwrite'"):
            function(_Frame(), str(tmp_path / "t"), mode="append", predicate="p = 'a'")
    with (
        pytest.warns(DeprecationWarning, match=r"replace_where=.*predicate="),
        pytest.raises(InvalidOptionError, match="needs mode='overwrite'"),
    ):
        function(_Frame(), str(tmp_path / "t"), mode="append", replace_where="p = 'a'")
    with pytest.raises(ConflictingOptionsError, match="deprecated"):
        function(
            _Frame(),
            str(tmp_path / "t"),
            mode="overwrite",
            predicate="p = 'a'",
            replace_where="p = 'a'",
        )
    assert not (tmp_path / "t").exists()


def _public_callables() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {"check_table": check_table}
    import deltalog

    for name in deltalog.__all__:  # write_table and any other top-level function
        member = getattr(deltalog, name)
        if inspect.isfunction(member):
            found[name] = member
    for name, member in inspect.getmembers(DeltaTable):
        if not name.startswith("_") and callable(member):
            found[f"DeltaTable.{name}"] = member
    found["DeltaTable.__init__"] = DeltaTable.__init__
    try:
        import deltalog.spark as spark
    except ImportError:
        return found
    for name in spark.__all__:
        member = getattr(spark, name)
        if inspect.isfunction(member):
            found[f"deltalog.spark.{name}"] = member
    return found


#: Other spellings of one concept that must not appear as parameters (the right one in the value).
WRONG = {
    "partition_columns": "partition_by",
    "partitions": "partition_by",
    "partition_cols": "partition_by",
    "partitionBy": "partition_by",
    "options": "storage_options",  # only deltalog.spark's delta-spark write options
    "store_options": "storage_options",
    "replace_where": "predicate",
    "where": "predicate",
}
#: (callable, parameter) pairs that keep another spelling on purpose.
ALLOWED = {
    # delta-spark's write options (mergeSchema, replaceWhere, ...), not store options.
    ("deltalog.spark.write", "options"),
    ("deltalog.spark.stage", "options"),
    # delta-spark's MERGE option (mergeSchema, any case), beside merge_schema=.
    ("deltalog.spark.merge", "options"),
    # Deprecated aliases of predicate=, kept working.
    ("DeltaTable.overwrite_files", "where"),
    ("deltalog.spark.write", "replace_where"),
    ("deltalog.spark.stage", "replace_where"),
    # OPTIMIZE ... WHERE selects partitions to compact, not rows to overwrite.
    ("deltalog.spark.optimize", "where"),
    ("deltalog.spark.stage_optimize", "where"),
}


def test_one_spelling_per_concept() -> None:
    wrong = []
    for name, function in _public_callables().items():
        for parameter in inspect.signature(function).parameters:
            if parameter in WRONG and (name, parameter) not in ALLOWED:
                wrong.append(f"{name}({parameter}=): spell it {WRONG[parameter]}=")
    assert not wrong, wrong


def test_overwriting_functions_take_predicate() -> None:
    functions = _public_callables()
    takers = ["DeltaTable.overwrite_files"]
    takers += [n for n in ("deltalog.spark.write", "deltalog.spark.stage") if n in functions]
    for name in takers:
        parameters = inspect.signature(functions[name]).parameters
        assert "predicate" in parameters, name
        assert parameters["predicate"].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_spark_write_overwrites_by_predicate(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import write

    uri = str(tmp_path / "events")
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string")
    write(frame, uri, partition_by=["p"])
    with warnings.catch_warnings():
        # Only deltalog's own spelling warnings: PySpark 3.5 warns about distutils on its own.
        warnings.filterwarnings(
            "error", message=".*(replace_where|where=)", category=DeprecationWarning
        )
        result = write(
            spark.createDataFrame([(10, "a")], "id long, p string"),
            uri,
            mode="overwrite",
            predicate="p = 'a'",
        )
    assert result.version == 1
    rows = DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [{"id": 2, "p": "b"}, {"id": 10, "p": "a"}]
    with pytest.warns(DeprecationWarning, match="replace_where"):
        write(
            spark.createDataFrame([(11, "a")], "id long, p string"),
            uri,
            mode="overwrite",
            replace_where="p = 'a'",
        )
    rows = DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [{"id": 2, "p": "b"}, {"id": 11, "p": "a"}]
