"""The columnar commit parser must give exactly what the exact parser gives."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from testpaths import GOLDEN_DIR

import deltalog.log.commit_parser as commit_parser
import deltalog.log.replay as replay_module
import deltalog.logstores.local as local_store
from deltalog import DeltaLogError
from deltalog.log.commit_parser import parse_commits
from deltalog.log.replay import replay
from deltalog.log.segment import list_log
from deltalog.log.storage import TableStorage

GOLDEN = GOLDEN_DIR


def _tables() -> list[str]:
    if not GOLDEN.is_dir():
        return []
    return sorted(str(p.parent.relative_to(GOLDEN)) for p in GOLDEN.rglob("_delta_log"))


def map_every_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the local store memory-map every commit (as it maps big local ones)."""
    monkeypatch.setattr(local_store, "_MAP_MIN_BYTES", 1)
    monkeypatch.setattr(local_store, "_mappable_device", lambda dev: True)


def _snapshot(root: Path, columnar: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as m:
        if not columnar:
            m.setattr(replay_module, "parse_commits", lambda commits, columns: None)
        else:  # also on logs small enough for the exact parser (see replay._EXACT_MAX_BYTES)
            m.setattr(replay_module, "_EXACT_MAX_BYTES", -1)
        storage = TableStorage.open(str(root))
        try:
            snap = replay(storage, list_log(storage, use_hint=False))
        except DeltaLogError as exc:
            return type(exc)
        return (
            snap.version,
            snap.protocol,
            snap.metadata,
            sorted(snap.files.to_pylist(), key=lambda r: (r["path"], str(r["deletion_vector"]))),
            sorted(
                snap.tombstones.to_pylist(), key=lambda r: (r["path"], str(r["deletion_vector"]))
            ),
            snap.txns,
            snap.domains,
        )


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
@pytest.mark.parametrize("mapped", [False, True], ids=["read", "mapped"])
@pytest.mark.parametrize("name", _tables())
def test_columnar_equals_exact_on_golden_tables(
    name: str, mapped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also with every commit memory-mapped (as big local commits are)."""
    if mapped:
        map_every_commit(monkeypatch)
    fast = _snapshot(GOLDEN / name, True, monkeypatch)
    exact = _snapshot(GOLDEN / name, False, monkeypatch)
    assert fast == exact


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
@pytest.mark.parametrize("name", _tables())
def test_commit_groups_of_one_commit_equal_exact(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsed a commit at a time (every group boundary crossed), the result is the same."""
    log = GOLDEN / name / "_delta_log"
    contents = [
        (int(p.name[:20]), p.read_bytes())
        for p in sorted(log.glob("*.json"))
        if p.name[:20].isdigit() and len(p.name) == 25
    ]
    taken = parse_commits(contents, None) is not None
    monkeypatch.setattr(commit_parser, "GROUP_BYTES", 1)
    assert (parse_commits(contents, None) is not None) == taken  # still columnar if it was
    fast = _snapshot(GOLDEN / name, True, monkeypatch)
    exact = _snapshot(GOLDEN / name, False, monkeypatch)
    assert fast == exact


def test_small_blocks_are_joined_into_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit_parser, "UNIT_BYTES", 10)
    blocks = [memoryview(b) for b in (b"aa", b"bbb", b"cc", b"x" * 12, b"d", b"eeeeeeee", b"f")]
    units = [bytes(u) for u in commit_parser._units(blocks)]
    assert units == [b"aa\nbbb\ncc", b"x" * 12, b"d\neeeeeeee", b"f"]
    assert commit_parser._units(blocks)[1].obj is blocks[3].obj  # a big block is not copied


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
@pytest.mark.parametrize("name", _tables())
def test_every_commit_read_on_its_own_equals_exact(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Units of one commit each (side by side on the pool) give what joined units give."""
    monkeypatch.setattr(commit_parser, "UNIT_BYTES", 1)
    fast = _snapshot(GOLDEN / name, True, monkeypatch)
    exact = _snapshot(GOLDEN / name, False, monkeypatch)
    assert fast == exact


def test_commit_groups_are_bounded() -> None:
    commits = [(v, b"x" * size) for v, size in enumerate([5, 5, 20, 1, 1, 1])]
    groups = [[v for v, _ in g] for g in commit_parser.commit_groups(commits, limit=10)]
    assert groups == [[0, 1], [2], [3, 4, 5]]


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
def test_columnar_path_is_taken_for_most_golden_tables() -> None:
    taken = total = 0
    for name in _tables():
        log = GOLDEN / name / "_delta_log"
        commits = sorted(
            p for p in log.glob("*.json") if p.name[:20].isdigit() and len(p.name) == 25
        )
        if not commits:
            continue
        total += 1
        contents = [(int(p.name[:20]), p.read_bytes()) for p in commits]
        if parse_commits(contents, []) is not None or parse_commits(
            contents, _partitions(contents)
        ):
            taken += 1
    assert taken >= 0.8 * total, (taken, total)


def _partitions(contents: list[tuple[int, bytes]]) -> list[str]:
    import orjson

    for _, data in contents:
        for line in data.splitlines():
            if line.startswith(b'{"metaData"'):
                cols = orjson.loads(line)["metaData"].get("partitionColumns") or []
                return [c for c in cols if isinstance(c, str)]
    return []


def test_fallback_reports_the_exact_error(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / f"{0:020d}.json").write_bytes(
        b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\n'
        b'{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}",'
        b'"partitionColumns":[],"configuration":{}}}\n'
        b'{"add":{"path":"a","partitionValues":{},"size":"big","modificationTime":1,'
        b'"dataChange":true}}\n'
    )
    storage = TableStorage.open(str(tmp_path))
    with pytest.raises(DeltaLogError, match="line 3: add: field 'size'"):
        replay(storage, list_log(storage))


def test_unexpected_partition_key_falls_back() -> None:
    line = (
        b'{"add":{"path":"a","partitionValues":{"p":"1","zz":"2"},"size":1,'
        b'"modificationTime":1,"dataChange":true}}'
    )
    assert parse_commits([(1, line)], ["p"]) is None
    parsed = parse_commits([(1, line)], ["p", "zz"])
    assert parsed is not None
    assert parsed.adds.column("partition_values").to_pylist() == [[("p", "1"), ("zz", "2")]]
    assert parsed.adds.schema.field("partition_values").type == pa.map_(pa.string(), pa.string())


@pytest.mark.parametrize("mapped", [False, True], ids=["read", "mapped"])
def test_invalid_utf8_gets_the_exact_error(
    mapped: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Invalid UTF-8 in a string the JSON reader would keep: the exact parser names the line."""
    if mapped:
        map_every_commit(monkeypatch)
    log = tmp_path / "_delta_log"
    log.mkdir()
    head = (
        b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\n'
        b'{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}",'
        b'"partitionColumns":[],"configuration":{}}}\n'
    )
    add = (
        b'{"add":{"path":"%s","partitionValues":{},"size":1,"modificationTime":1,'
        b'"dataChange":true}}\n'
    )
    (log / f"{0:020d}.json").write_bytes(head + add % "caf\u00e9".encode() + add % b"b\xff")
    storage = TableStorage.open(str(tmp_path))
    with pytest.raises(DeltaLogError, match="line 4"):
        replay(storage, list_log(storage))
    (log / f"{0:020d}.json").write_bytes(head + add % "caf\u00e9".encode())
    snap = replay(storage, list_log(storage))
    assert snap.files.column("path").to_pylist() == ["caf\u00e9"]
