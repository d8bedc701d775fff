"""The columnar fast path on logs other writers wrote: spacing, key order, explicit nulls.

Every case is checked two ways: the fast path must be *taken* (``parse_commits`` does not give
up), and its result must equal the exact parser's (replay with the fast path disabled).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_columnar_replay import GOLDEN, _partitions, _snapshot, _tables, map_every_commit

import deltalog.log.commit_parser as commit_parser
from deltalog.log.commit_parser import parse_commits

Encoder = Callable[[dict[str, Any]], bytes]


def _same(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """(fast, exact) snapshots; partition values as dicts, a map's key order carries nothing
    (the fast path gives every row the key order of the first line)."""

    def unordered(snap: object) -> object:
        if isinstance(snap, type):
            return snap
        assert isinstance(snap, tuple)
        rows = [
            [{**r, "partition_values": dict(r["partition_values"] or [])} for r in part]
            for part in snap[3:5]
        ]
        return (*snap[:3], *rows, *snap[5:])

    fast = _snapshot(root, True, monkeypatch)
    exact = _snapshot(root, False, monkeypatch)
    return unordered(fast), unordered(exact)


def _reverse(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _reverse(obj[k]) for k in reversed(list(obj))}
    if isinstance(obj, list):
        return [_reverse(v) for v in obj]
    return obj


_NULLS = ("tags", "deletionVector", "baseRowId", "defaultRowCommitVersion", "stats")


def _with_nulls(action: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, body in action.items():
        if name in ("add", "remove") and isinstance(body, dict):
            body = {**dict.fromkeys(_NULLS), **body}
        out[name] = body
    return out


ENCODERS: dict[str, Encoder] = {
    "compact": orjson.dumps,
    "spaced": lambda a: json.dumps(a).encode(),
    "indent_ws": lambda a: b"  " + json.dumps(a, separators=(" , ", " : ")).encode() + b" \t",
    "reversed": lambda a: orjson.dumps(_reverse(a)),
    "nulls": lambda a: orjson.dumps(_with_nulls(a)),
    "spaced_reversed_nulls": lambda a: json.dumps(_reverse(_with_nulls(a))).encode(),
}


def _reencode(data: bytes, encode: Encoder) -> bytes:
    lines = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    return b"".join(encode(a) + b"\n" for a in lines)


def _protocol_metadata(partitions: list[str]) -> list[dict[str, Any]]:
    schema = {
        "type": "struct",
        "fields": [
            {"name": c, "type": "string", "nullable": True, "metadata": {}}
            for c in ["id", *partitions]
        ],
    }
    return [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": partitions,
                "configuration": {},
                "createdTime": 1,
            }
        },
    ]


def _add(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "add": {
            "path": f"a=x/b={i}/f{i}.parquet",
            "partitionValues": {"a": "x", "b": str(i) if i % 3 else None},
            "size": 100 + i,
            "modificationTime": 1000 + i,
            "dataChange": True,
            "stats": json.dumps({"numRecords": i, "minValues": {"id": str(i)}}),
            **extra,
        }
    }


def _commits() -> list[list[dict[str, Any]]]:
    info = {"commitInfo": {"timestamp": 5, "operation": "WRITE", "isBlindAppend": True}}
    return [
        [info, *_protocol_metadata(["a", "b"]), *(_add(i) for i in range(20))],
        [*(_add(i) for i in range(20, 30)), info],  # commitInfo last, as some writers do
        [
            {
                "remove": {
                    "path": "a=x/b=3/f3.parquet",
                    "deletionTimestamp": 7,
                    "dataChange": True,
                    "partitionValues": {"b": "3", "a": "x"},  # another key order
                    "size": 103,
                }
            },
            _add(40, tags={"k": "v"}),
            {"add": {**_add(41)["add"], "partitionValues": {"b": "41", "a": "x"}}},
        ],
        [_add(50)],  # no commitInfo at all
    ]


def _write(root: Path, encode: Encoder) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    for v, actions in enumerate(_commits()):
        (log / f"{v:020d}.json").write_bytes(b"".join(encode(a) + b"\n" for a in actions))


@pytest.mark.parametrize("mapped", [False, True], ids=["read", "mapped"])
@pytest.mark.parametrize("fmt", sorted(ENCODERS))
def test_fast_path_taken_and_exact_on_every_format(
    fmt: str, mapped: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mapped:  # every commit memory-mapped, as big local commits are
        map_every_commit(monkeypatch)
    _write(tmp_path, ENCODERS[fmt])
    contents = [
        (int(p.name[:20]), p.read_bytes()) for p in sorted((tmp_path / "_delta_log").iterdir())
    ]
    parsed = parse_commits(contents, None)
    assert parsed is not None, f"{fmt}: the fast path gave up"
    assert parsed.adds.num_rows == 33 and parsed.removes.num_rows == 1
    fast, exact = _same(tmp_path, monkeypatch)
    assert not isinstance(fast, type)
    assert fast == exact
    compact = tmp_path / "compact"
    _write(compact, ENCODERS["compact"])
    assert _same(compact, monkeypatch)[1] == exact  # the format changes nothing


def test_space_inside_a_key_in_the_head_still_matches_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, ENCODERS["compact"])
    path = tmp_path / "_delta_log" / f"{3:020d}.json"
    path.write_bytes(path.read_bytes() + b'{"ad d":{"x":1}}\n')  # an unknown action
    fast, exact = _same(tmp_path, monkeypatch)
    assert fast == exact


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
@pytest.mark.parametrize("fmt", ["spaced", "spaced_reversed_nulls"])
def test_golden_tables_reformatted(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every golden table's commits rewritten in ``fmt``: the fast path equals the exact one
    and is taken as often as on the original files."""
    taken = {"original": 0, fmt: 0}
    for i, name in enumerate(_tables()):
        src = GOLDEN / name
        commits = sorted(p for p in (src / "_delta_log").glob("*.json") if p.name[:20].isdigit())
        try:
            originals = [(int(p.name[:20]), p.read_bytes()) for p in commits]
            recoded = [(v, _reencode(d, ENCODERS[fmt])) for v, d in originals]
        except orjson.JSONDecodeError:
            continue  # a deliberately malformed log: nothing to reformat
        dst = tmp_path / str(i)
        shutil.copytree(src, dst)
        for (_v, data), p in zip(recoded, commits, strict=True):
            (dst / "_delta_log" / p.name).write_bytes(data)
        for label, contents in (("original", originals), (fmt, recoded)):
            if contents and (
                parse_commits(contents, []) is not None
                or parse_commits(contents, _partitions(contents)) is not None
            ):
                taken[label] += 1
        fast, exact = _same(dst, monkeypatch)
        assert fast == exact, name
    assert taken[fmt] == taken["original"], taken


def _remove(i: int) -> dict[str, Any]:
    return {
        "remove": {
            "path": f"a=x/b={i}/f{i}.parquet",
            "deletionTimestamp": 7,
            "dataChange": True,
            "partitionValues": {"a": "x", "b": str(i) if i % 3 else None},
            "size": 100 + i,
        }
    }


@pytest.mark.parametrize("group_bytes", [None, 1])
@pytest.mark.parametrize("fmt", ["compact", "spaced"])
def test_removes_inside_a_block_and_alone(
    fmt: str, group_bytes: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adds are read alone unless a block starts or ends with a remove: a remove between adds
    (read again with both kinds) and commits of removes only give the exact result."""
    commits = [
        [*_protocol_metadata(["a", "b"]), *(_add(i) for i in range(10))],
        [_add(10), _remove(2), _add(11), _remove(4), _add(12)],  # removes in the middle
        [_remove(5), _remove(6)],  # removes only
        [_add(13), _add(2)],  # re-add of a removed file
    ]
    log = tmp_path / "_delta_log"
    log.mkdir()
    for v, actions in enumerate(commits):
        (log / f"{v:020d}.json").write_bytes(b"".join(ENCODERS[fmt](a) + b"\n" for a in actions))
    contents = [(int(p.name[:20]), p.read_bytes()) for p in sorted(log.iterdir())]
    if group_bytes is not None:  # one commit per group: commit 1 is read twice
        monkeypatch.setattr(commit_parser, "GROUP_BYTES", group_bytes)
    reads: list[list[str]] = []
    read_rows = commit_parser._read_rows

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(list(args[2]))
        return read_rows(*args, **kwargs)

    monkeypatch.setattr(commit_parser, "_read_rows", counted)
    parsed = parse_commits(contents, None)
    assert parsed is not None
    if group_bytes is not None:
        assert reads[1:3] == [["add"], ["add", "remove"]]
    assert (parsed.adds.num_rows, parsed.removes.num_rows) == (15, 4)
    assert parsed.order[10:15] == [True, False, True, False, True]
    fast, exact = _same(tmp_path, monkeypatch)
    assert not isinstance(fast, type)
    assert fast == exact
    files = sorted(r["path"] for r in fast[3])  # type: ignore[index]
    assert len(files) == 11 and "a=x/b=2/f2.parquet" in files and "a=x/b=5/f5.parquet" not in files
