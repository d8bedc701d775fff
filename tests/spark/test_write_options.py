"""``deltalog.spark.write`` modes and options, checked before any Spark job runs.

Everything here is refused (or skipped) before the DataFrame is executed, so a stand-in
DataFrame (a schema and a session conf) is enough: no Spark session, fast. That nothing was
written is checked on the log and the table directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltalog import (
    ConflictingOptionsError,
    DeltaTable,
    InvalidInputError,
    InvalidOptionError,
    InvalidWriteModeError,
    PartitioningMismatchError,
    SchemaEvolutionError,
    TableAlreadyExistsError,
)
from deltalog.spark import write
from deltalog.spark.options import resolve


@dataclass
class _Conf:
    values: dict[str, str] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass
class _Session:
    conf: _Conf


@dataclass
class _Schema:
    fields: list[tuple[str, str]]

    def json(self) -> str:
        return json.dumps(
            {
                "type": "struct",
                "fields": [
                    {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in self.fields
                ],
            }
        )


class _Frame:
    """Enough of a DataFrame for everything that happens before the Spark job."""

    def __init__(self, *fields: tuple[str, str], conf: dict[str, str] | None = None) -> None:
        self.schema = _Schema(list(fields))
        self.sparkSession = _Session(_Conf(dict(conf or {})))

    def mapInArrow(self, *args: Any) -> Any:
        raise AssertionError("the Spark job must not run")


def _snapshot(root: Path) -> tuple[list[str], list[str]]:
    files = sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )
    return files, sorted(os.listdir(root / "_delta_log"))


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    DeltaTable.create(str(root), schema, partition_by=["p"])
    return root


FRAME = (("id", "long"), ("p", "string"))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"mode": "upsert"}, InvalidWriteModeError),
        ({"mode": "append", "options": {"mergeSchemaa": "true"}}, InvalidOptionError),
        ({"mode": "append", "options": {"mergeSchema": "yes"}}, InvalidOptionError),
        ({"mode": "append", "options": {"txnVersion": "-1", "txnAppId": "a"}}, InvalidOptionError),
        ({"mode": "append", "options": {"txnAppId": "a"}, "app_id": "b"}, ConflictingOptionsError),
        (
            {"mode": "append", "options": {"mergeschema": "true", "MERGESCHEMA": "false"}},
            ConflictingOptionsError,
        ),
        (
            {"mode": "append", "options": {"mergeSchema": "false"}, "schema_mode": "merge"},
            ConflictingOptionsError,
        ),
        ({"mode": "append", "replace_where": "p = 'a'"}, InvalidOptionError),
        ({"mode": "overwrite", "partition_overwrite_mode": "sometimes"}, InvalidOptionError),
        (
            {
                "mode": "overwrite",
                "options": {"replaceWhere": "p = 'a'"},
                "partition_overwrite_mode": "dynamic",
            },
            InvalidOptionError,
        ),
        ({"mode": "append", "app_id": "x"}, InvalidInputError),
        ({"mode": "append", "app_id": "x", "app_version": -1}, InvalidInputError),
        # An existing table: the default mode refuses it; other partitioning is refused.
        ({}, TableAlreadyExistsError),
        ({"mode": "ErrorIfExists"}, TableAlreadyExistsError),
        ({"mode": "append", "partition_by": ["id"]}, PartitioningMismatchError),
        # overwriteSchema with dynamic partition overwrite, as delta-spark refuses it.
        (
            {
                "mode": "overwrite",
                "options": {"overwriteSchema": "true", "partitionOverwriteMode": "DYNAMIC"},
            },
            InvalidOptionError,
        ),
    ],
)
def test_refused_before_anything_is_written(
    table: Path, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    before = _snapshot(table)
    with pytest.raises(error) as info:
        write(_Frame(*FRAME), str(table), **kwargs)  # type: ignore[arg-type]
    assert info.type is error
    assert _snapshot(table) == before


def test_type_change_with_merge_schema_is_refused_before_the_job(table: Path) -> None:
    before = _snapshot(table)
    frame = _Frame(("id", "string"), ("p", "string"), ("new", "long"))
    with pytest.raises(SchemaEvolutionError) as info:
        write(frame, str(table), mode="append", options={"MergeSchema": True})  # type: ignore[arg-type]
    assert info.value.column == "id"
    # The session's autoMerge switch means the same.
    conf = {"spark.databricks.delta.schema.autoMerge.enabled": "true"}
    with pytest.raises(SchemaEvolutionError):
        write(_Frame(("id", "string"), conf=conf), str(table), mode="append")  # type: ignore[arg-type]
    assert _snapshot(table) == before


def test_ignore_on_an_existing_table_writes_nothing(table: Path) -> None:
    before = _snapshot(table)
    result = write(_Frame(*FRAME), str(table), mode="IGNORE")  # type: ignore[arg-type]
    assert result.ignored and not result.skipped
    assert (result.version, result.files_added, result.rows) == (0, 0, 0)
    assert _snapshot(table) == before


def test_options_resolve_case_insensitively_with_keyword_aliases() -> None:
    settings = resolve(
        "Overwrite",
        {
            "REPLACEWHERE": "p = 'a'",
            "txnappid": "job",
            "TxnVersion": 7,
            "userMetadata": "note",
            "maxRecordsPerFile": "100",
            "overwriteSchema": False,
        },
        replace_where="p = 'a'",  # the same value twice is fine
        app_version=7,
    )
    assert settings.mode == "overwrite"
    assert settings.replace_where == "p = 'a'"
    assert (settings.app_id, settings.app_version) == ("job", 7)
    assert settings.user_metadata == "note"
    assert settings.max_records_per_file == 100
    assert settings.overwrite_schema is False and settings.merge_schema is None
    assert resolve("default", None).mode == "error"
    assert resolve("errorifexists", None, schema_mode="merge").merge_schema is True
    assert resolve("append", None, schema_mode="overwrite").overwrite_schema is True
    assert resolve("append", {"partitionOverwriteMode": "Dynamic"}).partition_overwrite_mode == (
        "dynamic"
    )
