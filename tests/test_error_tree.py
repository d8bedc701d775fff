"""Every bad input to the public API fails with a named ``DeltaLogError`` and writes nothing.

Also: option values (which may be pasted secrets) never appear in an error or its chain.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from tableutil import log_names, write_commit, write_parquet

from deltalog import (
    AddFile,
    CorruptLogError,
    DataFileNotFoundError,
    DeltaLogError,
    DeltaTable,
    InvalidInputError,
    InvalidPathError,
    Protocol,
    RetryPolicy,
    StorageConfigurationError,
    StorageError,
    check_table,
)
from deltalog.cli import main

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
ROWS = pa.table({"id": [1]})
SECRET = "SECRETXYZ42"


def _add(**changes: Any) -> AddFile:
    fields: dict[str, Any] = {
        "path": "part=a/b.parquet",
        "partition_values": {"part": "a"},
        "size": 1,
        "modification_time": 0,
        "data_change": True,
        "stats": '{"numRecords":1}',
    }
    fields.update(changes)
    return AddFile(**fields)


def _stage(table: DeltaTable, action: AddFile) -> None:
    tx = table.transaction()
    tx.add(action)
    tx.commit()


def _txn(table: DeltaTable, version: Any) -> None:
    tx = table.transaction()
    tx.set_transaction("app", version)
    tx.add(_add())
    tx.commit()


def _params(table: DeltaTable) -> None:
    tx = table.transaction(parameters={"when": object()})
    tx.add(_add())
    tx.commit()


CASES: dict[str, tuple[Callable[[DeltaTable, Path], object], type[DeltaLogError]]] = {
    "missing-file": (lambda t, r: t.append_files(["part=a/nope.parquet"]), DataFileNotFoundError),
    "outside-root-no-partition-dirs": (
        lambda t, r: t.append_files([str(r.parent / "outside" / "f.parquet")]),
        InvalidPathError,
    ),
    "nul-in-name": (lambda t, r: t.append_files(["part=a/a\x00b.parquet"]), InvalidPathError),
    "version-as-str": (lambda t, r: DeltaTable(t.uri, version="1"), InvalidInputError),  # type: ignore[arg-type]
    "version-negative": (lambda t, r: DeltaTable(t.uri, version=-1), InvalidInputError),
    "huge-negative-timestamp": (
        lambda t, r: DeltaTable(t.uri, timestamp=-(2**63)),
        DeltaLogError,
    ),
    "timestamp-beyond-long": (lambda t, r: DeltaTable(t.uri, timestamp=2**70), InvalidInputError),
    "history-limit-str": (lambda t, r: t.history(limit="2"), InvalidInputError),  # type: ignore[arg-type]
    "add-stats-not-json": (lambda t, r: _stage(t, _add(stats="notjson")), InvalidInputError),
    "add-stats-not-str": (lambda t, r: _stage(t, _add(stats=5)), InvalidInputError),
    "add-stats-not-object": (lambda t, r: _stage(t, _add(stats="[1]")), InvalidInputError),
    "add-size-negative": (lambda t, r: _stage(t, _add(size=-1)), InvalidInputError),
    "add-size-str": (lambda t, r: _stage(t, _add(size="1")), InvalidInputError),
    "add-mtime-str": (lambda t, r: _stage(t, _add(modification_time="x")), InvalidInputError),
    "add-partition-values-none": (
        lambda t, r: _stage(t, _add(partition_values=None)),
        InvalidInputError,
    ),
    "add-partition-value-int": (
        lambda t, r: _stage(t, _add(partition_values={"part": 1})),
        InvalidInputError,
    ),
    "txn-version-beyond-long": (lambda t, r: _txn(t, 2**70), InvalidInputError),
    "txn-version-str": (lambda t, r: _txn(t, "1"), InvalidInputError),
    "parameters-not-json": (lambda t, r: _params(t), InvalidInputError),
    # Issue 15 items 4 and 14, completed: the rest of the public API.
    "uri-int": (lambda t, r: DeltaTable(5), InvalidInputError),  # type: ignore[arg-type]
    "uri-none": (lambda t, r: DeltaTable(None), InvalidInputError),  # type: ignore[arg-type]
    "uri-empty": (lambda t, r: DeltaTable(""), InvalidInputError),
    "check-table-uri-int": (lambda t, r: check_table(5), InvalidInputError),  # type: ignore[arg-type]
    "create-uri-int": (lambda t, r: DeltaTable.create(5, SCHEMA), InvalidInputError),  # type: ignore[arg-type]
    "create-configuration-list": (
        lambda t, r: DeltaTable.create(str(r.parent / "c"), SCHEMA, configuration=["a"]),  # type: ignore[arg-type]
        InvalidInputError,
    ),
    "options-list": (
        lambda t, r: DeltaTable(t.uri, storage_options=["a"]),  # type: ignore[arg-type]
        InvalidInputError,
    ),
    "option-value-int": (
        lambda t, r: DeltaTable(t.uri, storage_options={"a": 1}),  # type: ignore[dict-item]
        InvalidInputError,
    ),
    "open-retry-str": (lambda t, r: DeltaTable(t.uri, retry="x"), InvalidInputError),  # type: ignore[arg-type]
    "retry-policy-str": (lambda t, r: RetryPolicy(max_attempts="x"), InvalidInputError),  # type: ignore[arg-type]
    "tx-parameters-str": (lambda t, r: t.transaction(parameters="x"), InvalidInputError),  # type: ignore[arg-type]
    "tx-retry-str": (lambda t, r: t.transaction(retry="x"), InvalidInputError),  # type: ignore[arg-type]
    "tx-engine-info-int": (lambda t, r: t.transaction(engine_info=5), InvalidInputError),  # type: ignore[arg-type]
    "tx-add-int": (lambda t, r: t.transaction().add(5), InvalidInputError),  # type: ignore[arg-type]
    "tx-add-data-change-str": (
        lambda t, r: t.transaction().add("part=a/f.parquet", data_change="no"),  # type: ignore[arg-type]
        InvalidInputError,
    ),
    "tx-remove-int": (lambda t, r: t.transaction().remove(5), InvalidInputError),  # type: ignore[arg-type]
    "tx-remove-none": (lambda t, r: t.transaction().remove([None]), InvalidInputError),  # type: ignore[list-item]
    "tx-update-metadata-str": (
        lambda t, r: t.transaction().update_metadata("x"),  # type: ignore[arg-type]
        InvalidInputError,
    ),
    "tx-update-protocol-str": (
        lambda t, r: t.transaction().update_protocol("x"),  # type: ignore[arg-type]
        InvalidInputError,
    ),
    "tx-update-protocol-bad-field": (
        lambda t, r: t.transaction().update_protocol(
            Protocol(min_reader_version="x", min_writer_version=2)  # type: ignore[arg-type]
        ),
        InvalidInputError,
    ),
    "tx-domain-int": (lambda t, r: t.transaction().domain_metadata(5, "{}"), InvalidInputError),  # type: ignore[arg-type]
    "append-int": (lambda t, r: t.append_files(5), InvalidInputError),  # type: ignore[arg-type]
    "overwrite-int": (lambda t, r: t.overwrite_files(5), InvalidInputError),  # type: ignore[arg-type]
    "vacuum-now-str": (lambda t, r: t.vacuum(now_ms="x"), InvalidInputError),  # type: ignore[arg-type]
    "vacuum-progress-int": (
        lambda t, r: t.vacuum(dry_run=False, progress=5),  # type: ignore[arg-type]
        InvalidInputError,
    ),
    "wait-timeout-str": (lambda t, r: t.wait_for_checkpoints("x"), InvalidInputError),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_a_named_error_and_writes_nothing(tmp_path: Path, case: str) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["part"])
    write_parquet(root, "part=a/f.parquet", ROWS)
    table.append_files(["part=a/f.parquet"])
    write_parquet(tmp_path, "outside/f.parquet", ROWS)
    before = log_names(root)
    call, expected = CASES[case]
    with pytest.raises(DeltaLogError) as info:
        call(table, root)
    assert isinstance(info.value, expected), repr(info.value)
    assert log_names(root) == before
    assert DeltaTable(str(root)).version() == 1


def test_a_relative_name_with_a_colon_is_relative_to_the_table_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), pa.schema([("id", pa.int64())]))
    name = "2024-01-01T10:00:00.parquet"
    write_parquet(root, name, ROWS)
    decoy = tmp_path / "cwd"
    write_parquet(decoy, name, pa.table({"id": [1, 2, 3]}))  # a different file, in the cwd
    monkeypatch.chdir(decoy)
    assert table.append_files([name]) == 1
    fresh = DeltaTable(str(root))
    assert fresh.file_uris() == [f"{root}/{name}"]
    stats = orjson.loads(fresh.files().column("stats")[0].as_py())
    assert stats["numRecords"] == 1
    assert fresh.check().clean


def test_a_file_reached_through_a_symlinked_root_is_the_same_file(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), pa.schema([("id", pa.int64())]))
    write_parquet(root, "f.parquet", ROWS)
    table.append_files(["f.parquet"])
    alias = tmp_path / "alias"
    os.symlink(root, alias)
    with pytest.raises(DeltaLogError):  # already live: same file, not an external one
        table.append_files([str(alias / "f.parquet")])
    write_parquet(root, "g.parquet", ROWS)
    assert table.append_files([str(alias / "g.parquet")]) == 2
    assert sorted(DeltaTable(str(root)).files().column("path").to_pylist()) == [
        "f.parquet",
        "g.parquet",
    ]
    via_alias = DeltaTable(str(alias))
    write_parquet(root, "h.parquet", ROWS)
    with pytest.raises(DeltaLogError):
        via_alias.append_files([str(root / "f.parquet")])
    assert via_alias.append_files([str(root / "h.parquet")]) == 3
    assert "h.parquet" in DeltaTable(str(root)).files().column("path").to_pylist()


def test_cli_describe_with_a_schema_string_that_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "t"
    metadata = {
        "id": "x",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": "{not json",
        "partitionColumns": [],
        "configuration": {},
    }
    write_commit(
        root,
        0,
        [
            orjson.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            orjson.dumps({"metaData": metadata}),
        ],
    )
    assert main(["describe", str(root)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error" in err
    with pytest.raises(CorruptLogError):
        from deltalog.cli.commands import _describe

        _describe(DeltaTable(str(root)))


@pytest.mark.parametrize(
    "options",
    [
        {"s3.commit_protocol": "conditional-put", "s3.max_attempts": SECRET},
        {"s3.commit_protocol": SECRET},
        {"s3.commit_protocol": "conditional-put", "s3.addressing_style": SECRET},
        {
            "s3.commit_protocol": "conditional-put",
            "s3.endpoint": f"http://KEY:{SECRET}@127.0.0.1:1",
            "s3.max_attempts": "1",
            "s3.access_key_id": "a",
            "s3.secret_access_key": "b",
        },
    ],
    ids=["max-attempts", "commit-protocol", "addressing-style", "endpoint-userinfo"],
)
def test_option_values_never_appear_in_errors(options: dict[str, str]) -> None:
    with pytest.raises(StorageError) as info:
        DeltaTable("s3://bucket/t", storage_options=options)
    assert isinstance(info.value, StorageConfigurationError)
    assert SECRET not in "".join(traceback.format_exception(info.value))
