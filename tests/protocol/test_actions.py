from __future__ import annotations

import orjson
import pytest

from deltalog.errors import MalformedCommitError
from deltalog.protocol.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    UnknownAction,
    parse_actions,
    serialize_actions,
)

ADD_LINE = (
    b'{"add":{"path":"a%20b/part-0.parquet","partitionValues":{"p":"a b","q":null},"size":10,'
    b'"modificationTime":5,"dataChange":true,"stats":"{\\"numRecords\\":1}",'
    b'"futureField":{"x":[1,2]}}}'
)


def test_unknown_fields_and_actions_survive_round_trip() -> None:
    data = (
        ADD_LINE
        + b'\n{"someFutureAction":{"k":1}}\n'
        + b'{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["x"],'
        + b'"writerFeatures":["x"],"extraProto":true}}\n'
    )
    actions = parse_actions(data)
    assert isinstance(actions[0], AddFile)
    assert actions[0].extra == {"futureField": {"x": [1, 2]}}
    assert actions[0].partition_values == {"p": "a b", "q": None}
    assert isinstance(actions[1], UnknownAction)
    assert isinstance(actions[2], Protocol) and actions[2].extra == {"extraProto": True}
    assert serialize_actions(actions) == data


def test_field_order_matches_delta_spark() -> None:
    remove = RemoveFile(
        path="x",
        deletion_timestamp=1,
        data_change=True,
        extended_file_metadata=True,
        partition_values={},
        size=3,
        stats="{}",
    )
    keys = list(orjson.loads(remove.to_line())["remove"])
    assert keys == [
        "path",
        "deletionTimestamp",
        "dataChange",
        "extendedFileMetadata",
        "partitionValues",
        "size",
        "stats",
    ]
    meta = Metadata(id="i", schema_string="{}", created_time=1)
    assert list(orjson.loads(meta.to_line())["metaData"]) == [
        "id",
        "format",
        "schemaString",
        "partitionColumns",
        "configuration",
        "createdTime",
    ]


def test_commit_info_keeps_everything() -> None:
    line = b'{"commitInfo":{"timestamp":1,"operation":"WRITE","weird":[{"a":null}]}}\n'
    (info,) = parse_actions(line)
    assert isinstance(info, CommitInfo)
    assert info.timestamp == 1 and info.operation == "WRITE"
    assert serialize_actions([info]) == line


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"{not json}\n", "not JSON"),
        (b'{"add":{"path":"x"}}\n', "missing required field 'partitionValues'"),
        (
            b'{"add":{"path":1,"partitionValues":{},"size":1,"modificationTime":1,'
            b'"dataChange":true}}\n',
            "invalid value",
        ),
        (
            b'{"add":{"path":"x","partitionValues":{},"size":true,"modificationTime":1,'
            b'"dataChange":true}}\n',
            "'size'",
        ),
        (b"[1,2]\n", "JSON object"),
        (b'{"add":{},"remove":{}}\n', "exactly one action"),
        (b'{"txn":"x"}\n', "must be a JSON object"),
        (b'{"commitInfo":{"op":"\xff\xfe"}}\n', "not UTF-8"),
    ],
)
def test_malformed_lines_are_named(data: bytes, needle: str) -> None:
    with pytest.raises(MalformedCommitError) as info:
        parse_actions(b'{"commitInfo":{}}\n' + data, version=7, path="p/7.json")
    assert needle in str(info.value)
    assert "line 2" in str(info.value)
    assert info.value.version == 7


def test_blank_lines_are_ignored() -> None:
    assert parse_actions(b"\n\n" + ADD_LINE + b"\n\n")[0].KEY == "add"


def test_dv_unique_id() -> None:
    add = AddFile(
        path="x",
        partition_values={},
        size=1,
        modification_time=1,
        data_change=True,
        deletion_vector={
            "storageType": "u",
            "pathOrInlineDv": "ab",
            "offset": 4,
            "sizeInBytes": 1,
            "cardinality": 1,
        },
    )
    assert add.dv_id == "uab@4"
    assert RemoveFile(path="x").dv_id is None
