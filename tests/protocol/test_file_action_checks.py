"""``check_file_action``'s fast path for plain ``AddFile`` actions agrees with the JSON round trip.

Adds a caller builds skip the JSON round trip when every field already has the exact type the
round trip would give it; everything else still takes it. Each case below is checked both ways:
through ``check_file_action`` and through the round trip alone.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import orjson
import pytest

from deltalog import AddFile, InvalidInputError
from deltalog.errors import MalformedCommitError
from deltalog.protocol import user_input
from deltalog.protocol.user_input import check_file_action


class _Size(enum.IntEnum):
    ONE = 1


class _Str(str):
    pass


BASE: dict[str, Any] = {
    "path": "p=1/a.parquet",
    "partition_values": {"p": "1"},
    "size": 10,
    "modification_time": 0,
    "data_change": True,
    "stats": '{"numRecords":1}',
}

CASES: dict[str, dict[str, Any]] = {
    "plain": {},
    "tags and row tracking": {"tags": {"a": "b", "c": None}, "base_row_id": 4,
                              "default_row_commit_version": 2, "clustering_provider": "liquid"},
    "null partition": {"partition_values": {"p": None}},
    "non-ascii path": {"path": "p=1/é.parquet"},
    "lone surrogate path": {"path": "p=1/\ud800.parquet"},
    "surrogate partition": {"partition_values": {"p": "\udc00"}},
    "surrogate key": {"partition_values": {"\ud800": "1"}},
    "bool size": {"size": True},
    "size above long": {"size": 2**63},
    "mtime below long": {"modification_time": -(2**63) - 1},
    "float size": {"size": 1.0},
    "int enum size": {"size": _Size.ONE},
    "str subclass path": {"path": _Str("p=1/s.parquet")},
    "int partition value": {"partition_values": {"p": 1}},
    "int partition key": {"partition_values": {1: "1"}},
    "tuple partitions": {"partition_values": (("p", "1"),)},
    "int data_change": {"data_change": 1},
    "bool row id": {"base_row_id": False},
    "huge row version": {"default_row_commit_version": 2**64},
    "tags not a map": {"tags": ["a"]},
    "unknown field": {"extra": {"x": 1}},
    "unknown field not JSON": {"extra": {"x": {1, 2}}},
    "deletion vector": {"deletion_vector": {"storageType": "u", "pathOrInlineDv": "ab",
                                            "sizeInBytes": 1, "cardinality": 1}},
    "bad deletion vector": {"deletion_vector": {"storageType": "u"}},
    "path not a str": {"path": 5},
    "stats not a str": {"stats": 5},
}  # fmt: skip


def _round_trip_ok(action: AddFile) -> bool:
    """The check before the fast path existed: the action survives a JSON round trip."""
    try:
        AddFile.from_json_dict(orjson.loads(orjson.dumps(action.to_json_dict())))
    except (MalformedCommitError, TypeError, orjson.JSONEncodeError):
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_agrees_with_the_round_trip(name: str) -> None:
    action = AddFile(**{**BASE, **CASES[name]})
    expected = _round_trip_ok(action)
    if user_input._plain_add(action):
        assert expected, f"{name}: the fast path accepted what the round trip refuses"
    try:
        check_file_action(action)
    except InvalidInputError:
        accepted = False
    else:
        accepted = True
    assert accepted == expected, name


def test_plain_adds_take_the_fast_path() -> None:
    assert user_input._plain_add(AddFile(**BASE))
    assert user_input._plain_add(AddFile(**{**BASE, **CASES["tags and row tracking"]}))
    assert not user_input._plain_add(AddFile(**{**BASE, **CASES["non-ascii path"]}))


def test_a_new_add_field_turns_the_fast_path_off() -> None:
    # the fast path checks the fields it knows; a field added to AddFile must be added there
    assert tuple(f.name for f in dataclasses.fields(AddFile)) == user_input._ADD_FIELDS
    assert user_input._ADD_FAST
