from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import dv_json, write_parquet
from testpaths import GOLDEN_DIR

from deltalog import DeltaTable, VersionNotFoundError
from deltalog.checkpoints.checksum import canonical_json, json_checksum
from deltalog.checkpoints.errors import CheckpointFormatError
from deltalog.checkpoints.last_checkpoint import parse_last_checkpoint
from deltalog.log.replay import replay
from deltalog.log.segment import list_log
from deltalog.log.storage import TableStorage
from deltalog.protocol.schema import type_from_arrow

GOLDEN = GOLDEN_DIR
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _appended(root: Path, n: int, **create: object) -> DeltaTable:
    DeltaTable.create(str(root), SCHEMA, partition_by=["p"], **create)  # type: ignore[arg-type]
    # Inline checkpoints: a background worker that has not yet taken version 3 when version 6
    # is due writes only 6 (by design), which made the exact lists below depend on scheduling.
    table = DeltaTable(str(root), background_checkpoints=False)
    for i in range(n):
        table.append_files([write_parquet(root, f"p={i % 3}/f{i}.parquet", pa.table({"id": [i]}))])
    assert table.wait_for_checkpoints(timeout=60)
    return table


def _log(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(root / "_delta_log") if not n.endswith(".crc"))


def test_checkpoint_every_interval(tmp_path: Path) -> None:
    table = _appended(tmp_path, 25)
    names = _log(tmp_path)
    assert [n for n in names if "checkpoint." in n] == [
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000020.checkpoint.parquet",
    ]
    last = orjson.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_bytes())
    assert last["version"] == 20 and last["numOfAddFiles"] == 20 and last["size"] == 22
    assert last["checksum"] == json_checksum(last)
    fresh = DeltaTable(str(tmp_path))
    assert fresh.snapshot.checkpoint_version == 20
    assert fresh.files().to_pylist() == table.files().to_pylist()


def test_checkpoint_interval_property_and_on_demand(tmp_path: Path) -> None:
    table = _appended(tmp_path, 7, configuration={"delta.checkpointInterval": "3"})
    assert [n for n in _log(tmp_path) if "checkpoint." in n] == [
        "00000000000000000003.checkpoint.parquet",
        "00000000000000000006.checkpoint.parquet",
    ]
    assert table.checkpoint().version == 7
    assert DeltaTable(str(tmp_path)).snapshot.checkpoint_version == 7


def test_checkpoint_keeps_unexpired_tombstones_only(tmp_path: Path) -> None:
    table = _appended(
        tmp_path, 3, configuration={"delta.deletedFileRetentionDuration": "interval 1 day"}
    )
    table.overwrite_files([write_parquet(tmp_path, "p=9/o.parquet", pa.table({"id": [9]}))])
    table.checkpoint()
    cp = pq.read_table(tmp_path / "_delta_log" / f"{table.version():020d}.checkpoint.parquet")
    removes = [r for r in cp.column("remove").to_pylist() if r is not None]
    assert len(removes) == 3
    # Age the tombstones beyond the retention and checkpoint again at a new version.
    from deltalog.maintenance.checkpointing import checkpoint_content

    content = checkpoint_content(
        table.snapshot, now_ms=removes[0]["deletionTimestamp"] + 2 * 86_400_000
    )
    assert content.removes is not None and content.removes.num_rows == 0
    assert content.adds is not None and content.adds.num_rows == 1
    assert all(name != "commitInfo" for name, _ in content.actions)


def test_inline_checkpoints_are_written_before_commit_returns(tmp_path: Path) -> None:
    table = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["p"])
    table = DeltaTable(str(tmp_path), background_checkpoints=False)
    for i in range(10):
        table.append_files([write_parquet(tmp_path, f"p=0/f{i}.parquet", pa.table({"id": [i]}))])
    assert "00000000000000000010.checkpoint.parquet" in _log(tmp_path)


def test_background_checkpoint_finishes_before_a_child_process_exits(tmp_path: Path) -> None:
    """The checkpoint thread is not a daemon: a process that commits and exits keeps it."""
    DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["p"])
    for i in range(9):
        DeltaTable(str(tmp_path)).append_files(
            [write_parquet(tmp_path, f"p=0/f{i}.parquet", pa.table({"id": [i]}))]
        )
    write_parquet(tmp_path, "p=0/last.parquet", pa.table({"id": [9]}))
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=_append_one, args=(str(tmp_path), "p=0/last.parquet"))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    names = _log(tmp_path)
    assert "00000000000000000010.checkpoint.parquet" in names
    assert not [n for n in names if n.startswith(".")], names  # nothing half-written


def _append_one(root: str, path: str) -> None:
    DeltaTable(root).append_files([path])


def test_checkpoint_failure_does_not_fail_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deltalog.maintenance.after_commit as maintenance_module

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    table = _appended(tmp_path, 9)
    monkeypatch.setattr(maintenance_module, "write_snapshot_checkpoint", boom)
    assert (
        table.append_files([write_parquet(tmp_path, "p=1/x.parquet", pa.table({"id": [1]}))]) == 10
    )
    assert table.wait_for_checkpoints(timeout=60)
    assert DeltaTable(str(tmp_path)).version() == 10
    assert not any("checkpoint." in n for n in _log(tmp_path))


def test_checksum_matches_protocol_example() -> None:
    doc = orjson.loads(
        b'{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", '
        b'[1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert canonical_json(doc).startswith('"k0"="%27v%200%27","k1"+"k2"=2,')
    assert json_checksum(doc) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


@pytest.mark.parametrize(
    "data", [b"", b"{", b"[]", b'{"version":-1}', b'{"size":3}', b'{"version":3,"checksum":"0000"}']
)
def test_bad_last_checkpoint_is_named(data: bytes) -> None:
    with pytest.raises(CheckpointFormatError):
        parse_last_checkpoint(data)


# ------------------------------------------------------------------------ fallbacks


def _cp(root: Path, v: int) -> Path:
    return root / "_delta_log" / f"{v:020d}.checkpoint.parquet"


@pytest.mark.parametrize(
    "damage",
    [
        lambda root: (root / "_delta_log" / "_last_checkpoint").write_bytes(b"{garbage"),
        lambda root: (root / "_delta_log" / "_last_checkpoint").write_bytes(b'{"version":99}'),
        lambda root: _cp(root, 20).unlink(),
        lambda root: _cp(root, 20).write_bytes(_cp(root, 20).read_bytes()[:100]),
        lambda root: _cp(root, 20).write_bytes(b"PAR1 junk PAR1"),
    ],
    ids=["garbage-pointer", "pointer-to-missing", "missing-checkpoint", "truncated", "junk"],
)
def test_damaged_checkpoints_fall_back(tmp_path: Path, damage: object) -> None:
    expected = _appended(tmp_path, 25).files().to_pylist()
    damage(tmp_path)  # type: ignore[operator]
    table = DeltaTable(str(tmp_path))
    assert table.version() == 25
    assert table.snapshot.checkpoint_version in (10, 20)
    assert sorted(f["path"] for f in table.files().to_pylist()) == sorted(
        f["path"] for f in expected
    )


def test_no_complete_path_is_a_named_error(tmp_path: Path) -> None:
    _appended(tmp_path, 25)
    _cp(tmp_path, 20).write_bytes(b"junk")
    _cp(tmp_path, 10).unlink()
    for v in range(0, 12):
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()
    with pytest.raises(VersionNotFoundError):
        DeltaTable(str(tmp_path))


# -------------------------------------------------------------------- golden tables

GOLDEN_CHECKPOINTS = {
    "checkpoint": "00000000000000000010.checkpoint.parquet",
    "basic-with-inserts-deletes-checkpoint": "00000000000000000010.checkpoint.parquet",
    "multi-part-checkpoint": "00000000000000000001.checkpoint.0000000001.0000000002.parquet",
    "corrupted-last-checkpoint": "00000000000000000010.checkpoint.parquet",
    "corrupted-last-checkpoint-kernel": "00000000000000000010.checkpoint.parquet",
    "v2-checkpoint-parquet": None,
    "v2-checkpoint-json": None,
}


def _assert_superset(ours: pa.DataType, theirs: pa.DataType, where: str) -> None:
    if pa.types.is_struct(theirs):
        assert pa.types.is_struct(ours), where
        for f in theirs:
            if f"{where}.{f.name}".endswith(("remove.tags", "remove.stats")):
                continue  # the protocol leaves these out of tombstones; V2 sidecars keep tags
            assert ours.get_field_index(f.name) >= 0, f"{where}.{f.name} missing in ours"
            _assert_superset(ours.field(f.name).type, f.type, f"{where}.{f.name}")
    else:
        assert type_from_arrow(ours) == type_from_arrow(theirs), where


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
@pytest.mark.parametrize("name", sorted(GOLDEN_CHECKPOINTS))
def test_our_checkpoint_schema_covers_delta_spark(name: str, tmp_path: Path) -> None:
    log = GOLDEN / name / "_delta_log"
    file = GOLDEN_CHECKPOINTS[name]
    if file is None:  # V2: compare the sidecar file actions and the top-level actions
        theirs_files = [
            log / "_sidecars" / n for n in os.listdir(log / "_sidecars") if n.endswith(".parquet")
        ]
        theirs_files += [
            log / n for n in os.listdir(log) if ".checkpoint." in n and n.endswith(".parquet")
        ]
    else:
        theirs_files = [log / file]
    _appended(tmp_path, 10)
    ours = pq.read_schema(_cp(tmp_path, 10))
    for path in theirs_files:
        theirs = pq.read_schema(path)
        for f in theirs:
            if f.name in ("checkpointMetadata", "sidecar", "commitInfo"):
                # V2-only actions (we write classic V1 checkpoints), and the all-null commitInfo
                # column very old writers left in (checkpoints must not hold commitInfo).
                continue
            assert f.name in ours.names, f"{name}: column {f.name} missing"
            _assert_superset(ours.field(f.name).type, f.type, f"{name}:{f.name}")


def _golden_with_checkpoints() -> list[str]:
    if not GOLDEN.is_dir():
        return []
    out = []
    for log in sorted(GOLDEN.rglob("_delta_log")):
        if any(".checkpoint." in n for n in os.listdir(log)):
            out.append(str(log.parent.relative_to(GOLDEN)))
    return out


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared/delta-golden is absent")
@pytest.mark.parametrize("name", _golden_with_checkpoints())
def test_checkpoint_replay_equals_json_replay(name: str) -> None:
    storage = TableStorage.open(str(GOLDEN / name))
    listing = list_log(storage, use_hint=False)
    try:
        with_cp = replay(storage, listing)
    except Exception as exc:  # tables meant to be invalid
        pytest.skip(f"table is invalid by design: {type(exc).__name__}")
    if 0 not in listing.commits or any(
        v not in listing.commits for v in range(with_cp.version + 1)
    ):
        pytest.skip("JSON commits from version 0 are not all present")
    json_only = replay(storage, type(listing)(listing.commits, {}))
    # A checkpoint without its protocol or metaData row is not used (issue 15 item 12).
    assert with_cp.checkpoint_version is not None or "checkpoint-missing" in name
    assert json_only.version == with_cp.version
    assert sorted(json_only.files.column("path").to_pylist()) == sorted(
        with_cp.files.column("path").to_pylist()
    )
    # Statistics read lazily from the checkpoint line up with their files.
    by_path = dict(
        zip(*json_only.files.select(["path", "stats"]).to_pydict().values(), strict=True)
    )
    for path, stats in zip(
        *with_cp.files.select(["path", "stats"]).to_pydict().values(), strict=True
    ):
        assert stats == by_path[path], path


# ------------------------------------------------------------------------ retention

DAY = 86_400


def _age(root: Path, names: list[str], days: float) -> None:
    old = __import__("time").time() - days * DAY
    for name in names:
        os.utime(root / "_delta_log" / name, (old, old))


def test_cleanup_log_keeps_everything_needed(tmp_path: Path) -> None:
    table = _appended(tmp_path, 25)
    names = _log(tmp_path)
    old = [f"{v:020d}.json" for v in range(0, 15)] + ["00000000000000000010.checkpoint.parquet"]
    _age(tmp_path, old, 40)
    deleted = table.cleanup_log()
    assert sorted(deleted) == [f"{v:020d}.json" for v in range(0, 10)]
    assert set(_log(tmp_path)) == set(names) - set(deleted)
    assert DeltaTable(str(tmp_path)).files().num_rows == 25
    assert DeltaTable(str(tmp_path), version=10).files().num_rows == 10
    assert DeltaTable(str(tmp_path), version=12).files().num_rows == 12
    with pytest.raises(VersionNotFoundError):
        DeltaTable(str(tmp_path), version=9)


def test_cleanup_log_without_old_checkpoint_deletes_nothing(tmp_path: Path) -> None:
    table = _appended(tmp_path, 25)
    _age(tmp_path, [f"{v:020d}.json" for v in range(0, 26)], 40)  # checkpoints stay young
    assert table.cleanup_log() == []
    assert DeltaTable(str(tmp_path), version=0).version() == 0


def test_cleanup_log_skips_unreadable_checkpoint(tmp_path: Path) -> None:
    table = _appended(tmp_path, 25)
    _age(tmp_path, _log(tmp_path), 40)
    _cp(tmp_path, 20).write_bytes(b"junk")
    _age(tmp_path, ["00000000000000000020.checkpoint.parquet"], 40)
    deleted = table.cleanup_log()
    assert max(deleted) == "00000000000000000009.json"
    assert DeltaTable(str(tmp_path)).version() == 25


def test_cleanup_runs_after_checkpoints_when_enabled(tmp_path: Path) -> None:
    table = _appended(tmp_path, 19, configuration={"delta.logRetentionDuration": "interval 1 day"})
    _age(tmp_path, _log(tmp_path), 2)
    # A new writer: a long-lived one remembers when cleanup can next delete anything, and
    # aging files by hand does not move that moment.
    table = DeltaTable(str(tmp_path))
    table.append_files([write_parquet(tmp_path, "p=0/last.parquet", pa.table({"id": [0]}))])
    assert table.wait_for_checkpoints(timeout=60)
    names = _log(tmp_path)
    assert "00000000000000000000.json" not in names and "00000000000000000009.json" not in names
    assert "00000000000000000010.checkpoint.parquet" in names
    assert DeltaTable(str(tmp_path)).files().num_rows == 20


def test_lazy_stats_after_removes_following_a_checkpoint(tmp_path: Path) -> None:
    table = _appended(tmp_path, 10)  # checkpoint at 10
    table.overwrite_files([write_parquet(tmp_path, "p=x/o.parquet", pa.table({"id": [1, 2]}))])
    for i in range(3):
        table.append_files([write_parquet(tmp_path, f"p=y/n{i}.parquet", pa.table({"id": [i]}))])
    fresh = DeltaTable(str(tmp_path))
    assert fresh.snapshot.checkpoint_version == 10
    got = {r["path"]: orjson.loads(r["stats"])["numRecords"] for r in fresh.files().to_pylist()}
    assert got == {
        "p=x/o.parquet": 2,
        "p=y/n0.parquet": 1,
        "p=y/n1.parquet": 1,
        "p=y/n2.parquet": 1,
    }


def test_checkpoint_row_groups_separate_actions(tmp_path: Path) -> None:
    from deltalog.checkpoints.reader import _row_groups_with

    table = _appended(tmp_path, 3)
    table.overwrite_files([write_parquet(tmp_path, "p=9/o.parquet", pa.table({"id": [9]}))])
    table.checkpoint()
    pf = pq.ParquetFile(_cp(tmp_path, 4))
    assert pf.metadata.num_row_groups == 3  # non-file actions, adds, removes
    assert _row_groups_with(pf, "metaData") == [0]
    assert _row_groups_with(pf, "protocol") == [0]
    assert _row_groups_with(pf, "add") == [1]
    assert _row_groups_with(pf, "remove") == [2]


@pytest.mark.parametrize("with_dv", [None, 0, 7])
def test_fields_null_everywhere_are_filled_not_read(tmp_path: Path, with_dv: int | None) -> None:
    """A field the statistics show null in every row group comes back null; any value is kept."""
    from deltalog.checkpoints.reader import _leaves, _never_set, _row_groups_with, read_checkpoint
    from deltalog.checkpoints.schema import ADD
    from deltalog.logstores.local import LocalLogStore

    rows: list[dict[str, Any]] = [
        {
            "path": f"f{i}.parquet",
            "partitionValues": [],
            "size": i,
            "modificationTime": 1,
            "dataChange": True,
            "deletionVector": dv_json(i) if i == with_dv else None,
            "baseRowId": i if i == with_dv else None,
        }
        for i in range(8)
    ]
    column = pa.array(rows, ADD)
    path = tmp_path / "00000000000000000001.checkpoint.parquet"
    pq.write_table(pa.table({"add": column}), path, row_group_size=3)
    pf = pq.ParquetFile(path)
    leaves = _leaves(pf, "add", {f.name: f.type for f in ADD})
    never = _never_set(pf, _row_groups_with(pf, "add"), leaves["deletionVector"])
    assert never == (with_dv is None)
    data = read_checkpoint(
        LocalLogStore(), [str(path)], add_fields=("path", "deletionVector", "baseRowId")
    )
    (got,) = data.adds
    assert got.column("path").to_pylist() == [r["path"] for r in rows]
    assert got.column("baseRowId").to_pylist() == [r["baseRowId"] for r in rows]
    dvs = got.column("deletionVector").to_pylist()
    assert [d is not None for d in dvs] == [i == with_dv for i in range(8)]
    if with_dv is not None:
        assert dvs[with_dv] == {**dv_json(with_dv), "maxRowIndex": None}


def test_written_checkpoints_let_readers_skip_unset_optional_fields(tmp_path: Path) -> None:
    """deltalog's checkpoints keep null counts for the optional fields of adds and removes, so
    a reader fills fields no file sets with nulls instead of decoding a null per row."""
    from deltalog.checkpoints.reader import _leaves, _never_set, _row_groups_with
    from deltalog.checkpoints.schema import ADD, OPTIONAL_FILE_FIELDS, REMOVE

    table = _appended(tmp_path, 3)
    table.overwrite_files([write_parquet(tmp_path, "p=9/o.parquet", pa.table({"id": [9]}))])
    table.checkpoint()
    pf = pq.ParquetFile(_cp(tmp_path, 4))
    for action, fields in (("add", ADD), ("remove", REMOVE)):
        leaves = _leaves(pf, action, {f.name: f.type for f in fields})
        groups = _row_groups_with(pf, action)
        assert groups
        optional = [n for n in OPTIONAL_FILE_FIELDS if n in leaves]
        assert "deletionVector" in optional and "baseRowId" in optional
        for name in optional:
            assert _never_set(pf, groups, leaves[name]), f"{action}.{name}"
        assert not _never_set(pf, groups, leaves["size"])  # no statistics: read as before
    assert DeltaTable(str(tmp_path)).files().column("path").to_pylist() == ["p=9/o.parquet"]


def test_row_groups_read_side_by_side_keep_log_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a local file's row groups in parallel gives what one reader gives, in order."""
    from deltalog.checkpoints import reader
    from deltalog.checkpoints.schema import ADD, REMOVE
    from deltalog.logstores.local import LocalLogStore

    n = 50
    adds = [
        None if i % 7 == 3 else {"path": f"a{i}", "size": i, "stats": f'{{"n":{i}}}'}
        for i in range(n)
    ]
    removes = [
        {"path": f"r{i}", "deletionTimestamp": i} if a is None else None for i, a in enumerate(adds)
    ]
    path = tmp_path / "00000000000000000009.checkpoint.parquet"
    pq.write_table(
        pa.table({"add": pa.array(adds, ADD), "remove": pa.array(removes, REMOVE)}),
        path,
        row_group_size=4,
    )
    fields = ("path", "size", "stats")
    store = LocalLogStore()
    spread = reader.read_checkpoint(store, [str(path)], add_fields=fields, remove_fields=("path",))

    class Closed:  # the pool at interpreter exit: no new threads
        def map(self, *args: object) -> object:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    with monkeypatch.context() as m:
        m.setattr(reader, "shared_pool", lambda name, workers: Closed())
        exiting = reader.read_checkpoint(
            store, [str(path)], add_fields=fields, remove_fields=("path",)
        )
    monkeypatch.setattr(reader, "READERS", 1)
    single = reader.read_checkpoint(store, [str(path)], add_fields=fields, remove_fields=("path",))
    assert pq.ParquetFile(path).metadata.num_row_groups == 13
    for got in (spread, exiting, single):
        (add_rows,) = got.adds
        (remove_rows,) = got.removes
        assert add_rows.column("path").to_pylist() == [a["path"] for a in adds if a]
        assert add_rows.column("stats").to_pylist() == [a["stats"] for a in adds if a]
        assert remove_rows.column("path").to_pylist() == [r["path"] for r in removes if r]
    assert spread.adds[0].equals(single.adds[0])
