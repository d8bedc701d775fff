"""``deltalog.spark.write`` spelled as a Spark user guesses it.

``DataFrameWriter.save(path, format, mode, partitionBy, **options)``: the mode and the partition
columns positionally, ``partitionBy=`` (a name or a list), delta-spark's options as keyword
arguments in any case (``mergeSchema=True``) or in ``options={...}``; ``stage`` the same. Every
function of ``deltalog.spark`` takes what Spark runs on first (the session, or the DataFrame to
write), then the table URI.
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any

import pytest

from deltalog import (
    ConflictingOptionsError,
    DeltaTable,
    InvalidOptionError,
    TableAlreadyExistsError,
)
from deltalog.spark import optimize, read, stage, stage_optimize, write

SCHEMA = "id long, p string"


class _Frame:
    """Enough of a DataFrame for what is refused before anything is read (never runs a job)."""

    schema = type("S", (), {"json": staticmethod(lambda: '{"type":"struct","fields":[]}')})()

    def mapInArrow(self, *args: Any) -> Any:
        raise AssertionError("the Spark job must not run")


def _history(uri: str) -> list[dict[str, Any]]:
    return DeltaTable(uri).history()


def _rows(uri: str) -> list[dict[str, Any]]:
    return DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist()


def test_mode_and_partition_columns_positionally(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    frame = spark.createDataFrame([(1, "a")], SCHEMA)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=DeprecationWarning, module="deltalog")
        write(frame, uri, "error", "p")  # a single name, as partitionBy("p")
        write(frame, uri, "append")  # a TypeError before
        write(frame, uri, "APPEND", ["p"])
        assert write(frame, uri, "ignore").ignored
        with pytest.raises(TableAlreadyExistsError):
            write(frame, uri, None)  # None: Spark's default mode, error
    assert DeltaTable(uri).metadata().partition_columns == ["p"]
    modes = [h["operationParameters"]["mode"] for h in _history(uri)]
    assert modes == ["Append", "Append", "ErrorIfExists"]
    assert len(_rows(uri)) == 3


def test_partition_by_and_options_as_keywords(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write(spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA), uri, mode="append",
          partitionBy=["p"])  # fmt: skip
    assert DeltaTable(uri).metadata().partition_columns == ["p"]

    wide = spark.createDataFrame([(3, "a", "x")], SCHEMA + ", extra string")
    write(wide, uri, "append", mergeSchema=True, userMetadata="keyword options")
    assert DeltaTable(uri).schema().names == ["id", "p", "extra"]
    assert _history(uri)[0]["userMetadata"] == "keyword options"
    assert _history(uri)[0]["operationParameters"]["canMergeSchema"] is True

    narrow = spark.createDataFrame([(10, "a")], SCHEMA)
    write(narrow, uri, "overwrite", REPLACEWHERE="p = 'a'")  # names in any case
    assert [r["id"] for r in _rows(uri)] == [2, 10]
    assert _history(uri)[0]["operationParameters"]["predicate"] == "p = 'a'"

    for _ in range(2):  # the second is a retried batch: skipped
        write(narrow, uri, "append", txnAppId="app", txnVersion=7)
    assert [r["id"] for r in _rows(uri)] == [2, 10, 10]

    other = spark.createDataFrame([(20, 1)], "id long, q int")
    write(other, uri, "overwrite", partitionBy="q", options={"overwriteSchema": "true"})
    assert DeltaTable(uri).metadata().partition_columns == ["q"]
    assert _rows(uri) == [{"id": 20, "q": 1}]


def test_stage_is_spelled_as_write(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    staged = stage(spark.createDataFrame([(1, "a")], SCHEMA), uri, "append", partitionBy="p")
    assert staged.commit().version == 0
    assert DeltaTable(uri).metadata().partition_columns == ["p"]


@pytest.mark.parametrize("function", [write, stage])
@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        (
            {"options": {"mergeSchema": True}, "mergeSchema": False},
            ConflictingOptionsError,
            "given in",
        ),
        (
            {"options": {"mergeSchema": "true"}, "MergeSchema": "false"},
            ConflictingOptionsError,
            "twice",
        ),
        ({"partition_by": ["a"], "partitionBy": ["b"]}, ConflictingOptionsError, "disagree"),
        ({"partitionBy": 3}, InvalidOptionError, "partitionBy must be"),
        ({"partition_by": [1]}, InvalidOptionError, "partition_by must be"),
        ({"mergeSchema": 1.5}, InvalidOptionError, "must be a str"),
        ({"mergeSchema": "maybe"}, InvalidOptionError, "'true' or 'false'"),
        ({"nonsense": 1}, InvalidOptionError, "unknown write option 'nonsense'"),
        ({"options": ["mergeSchema"]}, InvalidOptionError, "must be a mapping"),
    ],
)
def test_bad_spellings_are_refused_before_anything_runs(
    tmp_path: Path, function: Any, arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        function(_Frame(), str(tmp_path / "t"), "append", **arguments)
    assert not (tmp_path / "t").exists()


def test_the_same_value_twice_is_one_setting(tmp_path: Path) -> None:
    # Both spellings agree, so the write goes on (to what needs a session: not here).
    with pytest.raises(AttributeError, match="sparkSession"):
        write(
            _Frame(),
            str(tmp_path / "t"),
            "append",
            ["p"],
            partitionBy="p",
            options={"mergeSchema": True},
            mergeSchema="true",
        )


def test_one_argument_order() -> None:
    """The Spark handle, then the table URI; write's mode and partition columns positional."""
    for function in (write, stage):
        parameters = list(inspect.signature(function).parameters.values())
        assert [p.name for p in parameters[:4]] == ["df", "uri", "mode", "partition_by"]
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[:4])
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in parameters[4:])
    for function in (read, optimize, stage_optimize):
        parameters = list(inspect.signature(function).parameters.values())
        assert [p.name for p in parameters[:2]] == ["spark", "uri"]
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in parameters[2:])
