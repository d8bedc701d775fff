"""Path spellings against the commands that delete (issue 29, items 3 and 4).

A foreign log may spell a file in many ways: ``a//f``, ``./a/f``, absolute paths, ``file:``
URIs of any case, through an alias of the root or a symlinked directory, percent-encoded. Each
spelling of a live file must be read, kept by full and lite VACUUM and found by ``check``; and
no spelling of anything (``..``, other directories, symlinked directories and files) may make
a vacuum or log cleanup delete a file outside the table root, or anything hidden inside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import BUCKET, cloud_location
from tableutil import write_commit, write_parquet

from deltalog import DeltaTable, check_table
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileStatus, LocalLogStore, open_store
from deltalog.maintenance.retention import cleanup_log

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
DAY_S = 86_400
LIVE = "part=a/f.parquet"


def _later(days: float = 8) -> int:
    """A clock ``days`` on: every file written now is then older than the week's retention."""
    return int((time.time() + days * DAY_S) * 1000)


def _add(path: str, size: int) -> dict[str, Any]:
    return {
        "add": {
            "path": path,
            "partitionValues": {"part": "a"},
            "size": size,
            "modificationTime": 0,
            "dataChange": True,
        }
    }


def _remove(path: str, **more: Any) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": 1, "dataChange": True, **more}}


def _lines(*actions: dict[str, Any]) -> list[bytes]:
    return [b'{"commitInfo":{"operation":"MANUAL"}}', *(orjson.dumps(a) for a in actions)]


def _files(directory: Path) -> set[str]:
    """Every file and symlink under ``directory`` (symlinked directories not entered)."""
    found: set[str] = set()
    for current, dirs, names in os.walk(directory):
        found.update(os.path.join(current, n) for n in names)
        found.update(
            os.path.join(current, d) for d in dirs if os.path.islink(os.path.join(current, d))
        )
    return found


# ------------------------------------------------------------------ local: a live file, spelled


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """``t`` (the table, ``part=a/f.parquet`` in it), ``alias -> t``, ``t/linkdir -> part=a``."""
    root = tmp_path / "t"
    DeltaTable.create(str(root), SCHEMA, partition_by=["part"])
    write_parquet(root, LIVE, pa.table({"id": [1]}))
    os.symlink(root, tmp_path / "alias")
    os.symlink(root / "part=a", root / "linkdir")
    return tmp_path


#: Spellings of ``<root>/part=a/f.parquet`` (``{root}``/``{alias}``: the root and its alias).
LIVE_SPELLINGS = [
    "part=a/f.parquet",
    "part=a//f.parquet",
    "./part=a/f.parquet",
    "part=a/./f.parquet",
    ".//part=a/.//f.parquet",
    "part=a/f.parquet/",
    "{root}/part=a/f.parquet",
    "{root}//part=a/f.parquet",
    "{root}/./part=a/f.parquet",
    "/{root}/part=a/f.parquet",
    "file:{root}/part=a/f.parquet",
    "file://{root}/part=a/f.parquet",
    "file://localhost{root}/part=a/f.parquet",
    "file:{root}//part=a/f.parquet",
    "FILE:{root}/part=a/f.parquet",
    "File://{root}/part=a/f.parquet",
    "{alias}/part=a/f.parquet",
    "file:{alias}/part=a/f.parquet",
    "file://{alias}/part=a/f.parquet",
    "file:///{alias}//part=a/f.parquet",
    "linkdir/f.parquet",
    "{root}/linkdir/f.parquet",
    "{alias}/linkdir/./f.parquet",
    "part%3Da/f.parquet",
    "part%3da/f%2eparquet",
    "part=a%2Ff.parquet",
    "%70%61%72%74%3D%61%2F%66%2E%70%61%72%71%75%65%74",
    "part=a%2F%2Ff.parquet",
    "%2E/part=a/f.parquet",
    "{root_encoded}/part%3Da/f.parquet",
    "file:{root_encoded}/part%3Da/f.parquet",
]


def _spell(template: str, base: Path) -> str:
    root = str(base / "t")
    return template.format(root=root, alias=str(base / "alias"), root_encoded=quote(root, safe="/"))


@pytest.mark.parametrize("template", LIVE_SPELLINGS)
def test_a_live_file_is_read_kept_and_found_however_it_is_spelled(
    base: Path, template: str
) -> None:
    root = base / "t"
    live = root / LIVE
    write_commit(root, 1, _lines(_add(_spell(template, base), live.stat().st_size)))
    table = DeltaTable(str(root))
    assert table.to_pyarrow_table().column("id").to_pylist() == [1]
    report = check_table(str(root))
    assert not {"missing-file", "size-mismatch", "orphan-file"} & report.codes(), report.findings
    for mode in ("full", "lite"):
        assert table.vacuum(mode=mode, now_ms=_later()).files == []
        table.vacuum(mode=mode, dry_run=False, now_ms=_later())
        assert live.exists()
    assert DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist() == [1]


def test_a_live_file_is_kept_when_the_table_is_opened_through_an_alias(base: Path) -> None:
    root = base / "t"
    live = root / LIVE
    write_commit(root, 1, _lines(_add(f"{root}//{LIVE}", live.stat().st_size)))
    for opened in (base / "alias", Path(f"{base}/alias/")):
        for mode in ("full", "lite"):
            DeltaTable(str(opened)).vacuum(mode=mode, dry_run=False, now_ms=_later())
            assert live.exists()
    assert check_table(str(base / "alias")).codes() <= {"external-path"}


def test_a_file_uri_is_decoded_once(base: Path) -> None:
    """``file:.../x%2541.parquet`` names ``x%41.parquet`` (not ``xA.parquet``), as delta-spark."""
    root = base / "t"
    literal = root / write_parquet(root, "part=a/x%41.parquet", pa.table({"id": [2]}))
    decoy = root / write_parquet(root, "part=a/xA.parquet", pa.table({"id": [3]}))
    (root / LIVE).unlink()
    write_commit(
        root, 1, _lines(_add(f"file:{root}/part=a/x%2541.parquet", literal.stat().st_size))
    )
    table = DeltaTable(str(root))
    assert table.to_pyarrow_table().column("id").to_pylist() == [2]
    assert table.vacuum(now_ms=_later()).files == [str(decoy)]
    assert "missing-file" not in check_table(str(root)).codes()


def test_full_vacuum_skips_a_directory_that_became_a_symlink_while_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "t", tmp_path / "outside"
    DeltaTable.create(str(root), SCHEMA, partition_by=["part"])
    write_parquet(root, "part=b/old.parquet", pa.table({"id": [1]}))
    victim = outside / write_parquet(outside, "old.parquet", pa.table({"id": [9]}))
    listed = LocalLogStore.list_tree_where

    def swap_after_listing(
        self: LocalLogStore, path: str, keep: Callable[[str], bool]
    ) -> Iterator[FileStatus]:
        found = list(listed(self, path, keep))
        (root / "part=b").rename(tmp_path / "moved")
        os.symlink(outside, root / "part=b")  # the listed part=b/old.parquet is now the victim
        return iter(found)

    monkeypatch.setattr(LocalLogStore, "list_tree_where", swap_after_listing)
    assert DeltaTable(str(root)).vacuum(dry_run=False, now_ms=_later()).files == []
    assert victim.exists()


def test_a_raw_uri_fragment_keeps_both_readings(base: Path) -> None:
    """``f.parquet#x``: delta-spark reads ``f.parquet``, deltalog (as delta-rs) the whole name."""
    root = base / "t"
    literal = write_parquet(root, "part=a/f.parquet#x", pa.table({"id": [2]}))
    write_commit(root, 1, _lines(_add(literal, (root / literal).stat().st_size)))
    table = DeltaTable(str(root))
    assert table.to_pyarrow_table().column("id").to_pylist() == [2]
    for mode in ("full", "lite"):
        table.vacuum(mode=mode, dry_run=False, now_ms=_later())
    assert (root / LIVE).exists() and (root / literal).exists()


# ------------------------------------------------------------------ local: nothing outside goes


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[Path, set[str]]]:
    """A table whose log removes files outside the root (and hidden ones) in every spelling.

    ``t/archive -> outside`` (a symlinked directory, issue 29 item 3), ``t/linkfile.parquet ->
    outside/victim.parquet``, ``t/p=x -> t/_delta_log``, ``alias -> t``.
    """
    root, outside = tmp_path / "t", tmp_path / "outside"
    DeltaTable.create(str(root), SCHEMA, partition_by=["part"])
    live = write_parquet(root, LIVE, pa.table({"id": [1]}))
    for name in ("victim.parquet", "sub/victim.parquet", "live.parquet", "victim.bin"):
        write_parquet(outside, name, pa.table({"id": [9]}))
    os.symlink(outside, root / "archive")
    os.symlink(outside / "victim.parquet", root / "linkfile.parquet")
    os.symlink(root / "_delta_log", root / "p=x")
    os.symlink(root, tmp_path / "alias")
    commit0 = f"{0:020d}.json"
    named = [
        "archive/victim.parquet",
        "archive//victim.parquet",
        "./archive/victim.parquet",
        "archive/sub/victim.parquet",
        "archive%2Fvictim.parquet",
        "%61rchive/victim.parquet",
        f"{root}/archive/victim.parquet",
        f"{root}//archive/./victim.parquet",
        f"file:{root}/archive/victim.parquet",
        f"file://{root}/archive/sub/victim.parquet",
        f"FILE:{root}/archive/victim.parquet",
        f"{tmp_path}/alias/archive/victim.parquet",
        f"{outside}/victim.parquet",
        f"file:{outside}/victim.parquet",
        f"{tmp_path}/alias/../outside/victim.parquet",
        "../outside/victim.parquet",
        "%2E%2E/outside/victim.parquet",
        "part=a/../../outside/victim.parquet",
        f"p=x/{commit0}",
        f"{root}/p=x/{commit0}",
        "archive",
        "archive/",
        "p=x",
        "part=a",
        "part=a/",
        ".",
        "./",
        str(root),
        f"file:{root}/",
        f"{tmp_path}/alias",
    ]
    dv = {
        "storageType": "p",
        "pathOrInlineDv": f"file:{root}/archive/victim.bin",
        "offset": 1,
        "sizeInBytes": 4,
        "cardinality": 1,
    }
    actions = [_remove(p) for p in named]
    actions.append(_remove("linkfile.parquet", deletionVector=dv))
    actions.append(
        {
            "cdc": {
                "path": "archive/sub/victim.parquet",
                "partitionValues": {},
                "size": 1,
                "dataChange": False,
            }
        }
    )
    actions.append(_add(live, (root / live).stat().st_size))
    actions.append(_add("archive/live.parquet", (outside / "live.parquet").stat().st_size))
    write_commit(root, 1, _lines(*actions))
    protected = _files(tmp_path) - {str(root / "linkfile.parquet")}
    yield root, protected


@pytest.mark.parametrize("mode", ["lite", "full"])
def test_vacuum_does_not_follow_a_symlinked_directory_out_of_the_root(
    tmp_path: Path, mode: str
) -> None:
    """Issue 29 item 3: ``<root>/archive -> elsewhere``, an old remove of ``archive/victim``."""
    root, outside = tmp_path / "t", tmp_path / "outside"
    DeltaTable.create(str(root), SCHEMA, partition_by=["part"])
    victim = outside / write_parquet(outside, "victim.parquet", pa.table({"id": [9]}))
    os.symlink(outside, root / "archive")
    write_commit(root, 1, _lines(_remove("archive/victim.parquet")))
    table = DeltaTable(str(root))
    assert table.vacuum(mode=mode, now_ms=_later()).files == []
    assert table.vacuum(mode=mode, dry_run=False, now_ms=_later()).files == []
    assert victim.exists()


def _survivors(root: Path, protected: set[str]) -> None:
    gone = sorted(p for p in protected if not os.path.lexists(p))
    assert gone == [], gone


@pytest.mark.parametrize("mode", ["lite", "full"])
def test_vacuum_never_deletes_outside_the_root_nor_hidden_files(
    hostile: tuple[Path, set[str]], mode: str
) -> None:
    root, protected = hostile
    table = DeltaTable(str(root))
    dry = table.vacuum(mode=mode, now_ms=_later())
    allowed = {str(root / "linkfile.parquet")}  # the link itself: its target stays
    assert set(dry.files) <= allowed, dry.files
    result = table.vacuum(mode=mode, dry_run=False, now_ms=_later())
    assert set(result.files) <= allowed, result.files
    _survivors(root, protected)
    assert DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist() == [1, 9]


def test_check_finds_live_files_under_a_symlinked_directory(hostile: tuple[Path, set[str]]) -> None:
    root, _ = hostile
    report = check_table(str(root))
    assert "missing-file" not in report.codes(), report.findings
    assert "size-mismatch" not in report.codes(), report.findings


def test_log_cleanup_never_deletes_outside_the_root(hostile: tuple[Path, set[str]]) -> None:
    root, protected = hostile
    DeltaTable(str(root)).checkpoint()
    write_commit(root, 2, _lines())
    DeltaTable(str(root)).checkpoint()
    storage = TableStorage.open(str(root))
    deleted = cleanup_log(storage, {}, now_ms=_later(400))
    assert f"{0:020d}.json" in deleted  # the cleanup did run
    assert all("/" not in name or name.startswith("_sidecars/") for name in deleted), deleted
    log = str(root / "_delta_log") + "/"
    _survivors(root, {p for p in protected if not p.startswith(log)})


def test_full_vacuum_deletes_an_old_symlink_not_its_target(tmp_path: Path) -> None:
    root, outside = tmp_path / "t", tmp_path / "outside"
    DeltaTable.create(str(root), SCHEMA, partition_by=["part"])
    target = outside / write_parquet(outside, "victim.parquet", pa.table({"id": [9]}))
    os.symlink(target, root / "orphan-link.parquet")
    os.symlink(outside, root / "archive")
    result = DeltaTable(str(root)).vacuum(dry_run=False, now_ms=_later())
    assert result.files == [str(root / "orphan-link.parquet")]
    assert target.exists() and (root / "archive").is_symlink()


# ------------------------------------------------------------------ S3 (no symlinks)


S3_SPELLINGS = [
    "part=a//f.parquet",
    "./part=a/f.parquet",
    "part=a/./f.parquet",
    "part=a/f.parquet/",
    "part%3Da/f.parquet",
    "part=a%2Ff.parquet",
    "{root}/part=a/f.parquet",
    "{root}//part=a/f.parquet",
    "{root}/./part=a/f.parquet",
    "s3a{root_tail}/part=a/f.parquet",
    "S3A{root_tail}//part=a/f.parquet",
    "s3://{bucket}//{key}/part=a/f.parquet",
    "{root}/part%3Da/f%2Eparquet",
]


@pytest.mark.parametrize("template", S3_SPELLINGS)
def test_s3_live_file_is_read_kept_and_found_however_it_is_spelled(
    request: pytest.FixtureRequest, template: str
) -> None:
    location = cloud_location(request, "s3")
    store, root = open_store(location.uri, location.options)
    DeltaTable.create(location.uri, SCHEMA, partition_by=["part"], storage_options=location.options)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [1]}), sink)
    data = sink.getvalue().to_pybytes()
    store.write(f"{root}/{LIVE}", data)
    store.write(f"{root}/part=b/old.parquet", data)  # an orphan: the vacuums do delete
    key = root.split("/", 3)[3]
    path = template.format(root=root, root_tail=root[2:], bucket=BUCKET, key=key)
    log = f"{root}/_delta_log/{1:020d}.json"
    store.write(log, b"\n".join(_lines(_add(path, len(data)), _remove("part=b/old.parquet"))))
    table = DeltaTable(location.uri, storage_options=location.options)
    assert table.to_pyarrow_table().column("id").to_pylist() == [1]
    report = check_table(location.uri, location.options)
    assert not {"missing-file", "size-mismatch"} & report.codes(), report.findings
    lite = table.vacuum(mode="lite", dry_run=False, now_ms=_later())
    assert lite.files == [f"{root}/part=b/old.parquet"]
    store.write(f"{root}/part=b/old.parquet", data)
    full = table.vacuum(dry_run=False, now_ms=_later())
    assert full.files == [f"{root}/part=b/old.parquet"]
    assert store.stat(f"{root}/{LIVE}").size == len(data)
