"""history() finds commitInfo lines without decoding file actions, equal to the exact parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from tableutil import write_commit

import deltalog
from deltalog.log.history import find_commit_info, table_history
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import CommitInfo, parse_actions

_PROTOCOL = b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}'
_METADATA = (
    b'{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":'
    b'"{\\"type\\":\\"struct\\",\\"fields\\":[{\\"name\\":\\"id\\",\\"type\\":\\"long\\",'
    b'\\"nullable\\":true,\\"metadata\\":{}}]}","partitionColumns":[],"configuration":{}}}'
)


def _add(i: int, tags: dict[str, str] | None = None) -> bytes:
    body: dict[str, Any] = {
        "path": f"f{i}.parquet",
        "partitionValues": {},
        "size": 1,
        "modificationTime": 1,
        "dataChange": True,
    }
    if tags:
        body["tags"] = tags
    return orjson.dumps({"add": body})


def _info(v: int, spaced: bool = False) -> bytes:
    obj = {"commitInfo": {"timestamp": 1000 + v, "operation": f"OP{v}", "readVersion": v - 1}}
    return json.dumps(obj).encode() if spaced else orjson.dumps(obj)


def _build(root: Path) -> None:
    write_commit(root, 0, [_info(0), _PROTOCOL, _METADATA])
    write_commit(root, 1, [_add(1), _add(2), _info(1)])  # commitInfo last
    write_commit(root, 2, [_add(3), b"  " + _info(2, spaced=True), _add(4)])  # middle, spaced
    # "commitInfo" as a nested key in a tag before the real line
    write_commit(root, 3, [_add(5, {"commitInfo": "x"}), _info(3)])
    write_commit(root, 4, [_add(6)])  # no commitInfo at all
    write_commit(root, 5, [b'{"commitInfo" : {"operation":"OP5"}}', _add(7)])


def _exact(root: Path, v: int) -> CommitInfo | None:
    path = root / "_delta_log" / f"{v:020d}.json"
    actions = parse_actions(path.read_bytes(), version=v, path=str(path))
    return next((a for a in actions if isinstance(a, CommitInfo)), None)


def test_find_commit_info_equals_exact_parser(tmp_path: Path) -> None:
    _build(tmp_path)
    for v in range(6):
        data = (tmp_path / "_delta_log" / f"{v:020d}.json").read_bytes()
        assert find_commit_info(data) == _exact(tmp_path, v), v


def test_history_entries(tmp_path: Path) -> None:
    _build(tmp_path)
    entries = deltalog.DeltaTable(str(tmp_path)).history()
    assert [e["version"] for e in entries] == [5, 4, 3, 2, 1, 0]
    assert [e.get("operation") for e in entries] == ["OP5", None, "OP3", "OP2", "OP1", "OP0"]
    assert entries[1].keys() == {"version", "timestamp"}
    assert entries[2]["commitTimestamp"] == 1003
    assert table_history(str(tmp_path)) == entries
    assert table_history(str(tmp_path), limit=2) == entries[:2]


def test_limit_reads_only_that_many_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(tmp_path)
    table = deltalog.DeltaTable(str(tmp_path))
    read: list[str] = []
    original = TableStorage.read_log_file

    def counting(self: TableStorage, name: str) -> bytes:
        if name.endswith(".json"):  # commits (the listing also reads _last_checkpoint)
            read.append(name)
        return original(self, name)

    monkeypatch.setattr(TableStorage, "read_log_file", counting)
    assert len(table.history(limit=2)) == 2
    assert len(read) == 2
    read.clear()
    assert len(table_history(str(tmp_path), limit=3)) == 3
    assert len(read) == 3  # and no checkpoint or earlier commit


def test_malformed_commit_info_line_is_reported(tmp_path: Path) -> None:
    _build(tmp_path)
    write_commit(tmp_path, 6, [b'{"commitInfo":{"operation":1'])
    with pytest.raises(deltalog.DeltaLogError):
        table_history(str(tmp_path), limit=1)


@pytest.mark.parametrize("where", ["first", "last", "across_the_head", "none"])
def test_big_commits_read_their_head_first(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big commit's commitInfo is taken from its first complete lines when it is there;
    otherwise (later, cut by the head's end, or absent) the whole file is read."""
    from deltalog.log import history

    monkeypatch.setattr(history, "HEAD_BYTES", 1000)
    write_commit(tmp_path, 0, [_info(0), _PROTOCOL, _METADATA])
    adds = [_add(i) for i in range(40)]  # ~100 bytes each: the file is well over the head
    k = max(i for i in range(40) if sum(len(a) + 1 for a in adds[:i]) < 1000)
    lines = {
        "first": [_info(1), *adds],
        "last": [*adds, _info(1)],
        "across_the_head": [*adds[:k], _info(1), *adds[k:]],  # starts before byte 1000
        "none": adds,
    }[where]
    write_commit(tmp_path, 1, lines)
    data = (tmp_path / "_delta_log" / f"{1:020d}.json").read_bytes()
    if where == "across_the_head":
        start = data.find(b'{"commitInfo"')
        assert start < 1000 < data.find(b"\n", start)
    full_reads: list[str] = []
    original = TableStorage.read_log_file

    def counting(self: TableStorage, name: str) -> bytes:
        full_reads.append(name)
        return original(self, name)

    monkeypatch.setattr(TableStorage, "read_log_file", counting)
    entry = table_history(str(tmp_path), limit=1)[0]
    assert entry.get("operation") == (None if where == "none" else "OP1")
    assert (f"{1:020d}.json" in full_reads) == (where != "first")
