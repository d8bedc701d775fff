"""Non-file checkpoint actions through the JSON reader equal ``pa.array`` of the dicts."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from deltalog.checkpoints.errors import CheckpointFormatError
from deltalog.checkpoints.json_rows import action_rows
from deltalog.checkpoints.schema import classic_schema
from deltalog.checkpoints.writer import CheckpointContent, checkpoint_sections

ACTIONS: list[tuple[str, dict[str, Any]]] = [
    (
        "protocol",
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors", "columnMapping"],
            "writerFeatures": ["deletionVectors", "columnMapping", "domainMetadata"],
        },
    ),
    (
        "metaData",
        {
            "id": "tbl-\u00e9",
            "name": None,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": '{"type":"struct","fields":[]}',
            "partitionColumns": ["p", "q"],
            "configuration": {"delta.checkpointInterval": "3", "a.b": "x\ny", "empty": ""},
            "createdTime": 1_700_000_000_000,
            "unknownField": {"nested": [1, 2]},
        },
    ),
    ("txn", {"appId": "app", "version": 2**40, "lastUpdated": None}),
    ("txn", {"appId": "other", "version": 0}),
    ("domainMetadata", {"domain": "delta.clustering", "configuration": "{}", "removed": False}),
    ("someFutureAction", {"x": 1}),
    (
        "metaData",
        {
            "id": "m2",
            "format": {"provider": "parquet", "options": {"k": "v"}},
            "partitionColumns": [],
            "configuration": {},
        },
    ),
]


def _by_pa_array(actions: list[tuple[str, dict[str, Any]]]) -> pa.Table:
    schema = classic_schema()
    columns = [
        pa.array([body if name == f.name else None for name, body in actions], type=f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


@pytest.mark.parametrize("count", [0, 1, 3, len(ACTIONS)])
def test_action_rows_equal_pa_array(count: int) -> None:
    actions = ACTIONS[:count]
    got = action_rows(classic_schema(), actions)
    got.validate(full=True)
    assert got.schema == classic_schema()
    assert got.equals(_by_pa_array(actions))
    assert got.to_pylist() == _by_pa_array(actions).to_pylist()


def test_checkpoint_sections_start_with_the_actions() -> None:
    first = next(checkpoint_sections(CheckpointContent(version=5, actions=ACTIONS)))
    assert first.equals(_by_pa_array(ACTIONS))


@pytest.mark.parametrize(
    "bad",
    [
        ("protocol", {"minReaderVersion": "three"}),
        ("txn", {"appId": "a", "version": 2**70}),
        ("metaData", {"id": "x", "configuration": {"k": 1}}),
    ],
)
def test_invalid_action_is_a_checkpoint_format_error(bad: tuple[str, dict[str, Any]]) -> None:
    with pytest.raises(CheckpointFormatError):
        next(checkpoint_sections(CheckpointContent(version=1, actions=[bad])))
