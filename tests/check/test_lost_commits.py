"""Lost commits: a missing commit below the oldest checkpoint, and a 0-byte commit file.

Readers refuse the versions that need them (``VersionGapError``, ``EmptyCommitError``) and
``deltalog check`` reports both as errors, where it used to stay silent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import log_names, write_parquet

from deltalog import DeltaTable, check_table
from deltalog.check import CODES
from deltalog.cli import main
from deltalog.errors import CorruptLogError, EmptyCommitError, VersionGapError


def _commit(root: Path, version: int) -> Path:
    return root / "_delta_log" / f"{version:020d}.json"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Versions 0 (create) to 10 (one-file appends), a checkpoint at 10."""
    root = tmp_path_factory.mktemp("lost") / "t"
    table = DeltaTable.create(str(root), pa.schema([("a", pa.int64())]))
    for i in range(10):
        table.append_files([write_parquet(root, f"f{i}.parquet", pa.table({"a": [i]}))])
    assert table.wait_for_checkpoints(timeout=60)
    assert "00000000000000000010.checkpoint.parquet" in log_names(root)
    return root


@pytest.fixture
def table(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(template, root)
    report = check_table(str(root))
    assert report.clean, report.findings
    return root


def _only_error(root: Path, code: str, version: int) -> str:
    report = check_table(str(root))
    assert [(f.code, f.version) for f in report.findings] == [(code, version)], report.findings
    assert CODES[code][0] == "error" and not report.ok
    assert report.findings[0].path == str(_commit(root, version))
    assert main(["check", str(root)]) == 3
    return report.findings[0].message


def test_missing_commit_below_the_checkpoint(table: Path) -> None:
    _commit(table, 5).unlink()
    message = _only_error(table, "version-gap", 5)
    assert "version 5 missing before checkpoint 10" in message
    assert DeltaTable(str(table)).version() == 10  # the latest comes from the checkpoint
    for version in (5, 9):
        with pytest.raises(VersionGapError) as info:
            DeltaTable(str(table), version=version)
        assert info.value.version == 5
    assert DeltaTable(str(table), version=4).version() == 4


def test_missing_commits_below_the_checkpoint_are_one_finding(table: Path) -> None:
    for version in (3, 4, 5):
        _commit(table, version).unlink()
    message = _only_error(table, "version-gap", 3)
    assert "versions 3-5 missing" in message


def test_commits_cleaned_up_from_the_oldest_are_no_gap(table: Path) -> None:
    for version in range(6):  # what log cleanup leaves: a suffix of the commits
        _commit(table, version).unlink()
    report = check_table(str(table))
    assert report.clean, report.findings


@pytest.mark.parametrize("content", [b"", b"\n", b"  \n\n"])
def test_empty_commit_file(table: Path, content: bytes) -> None:
    _commit(table, 5).write_bytes(content)
    message = _only_error(table, "empty-commit", 5)
    assert f"({len(content)} bytes)" in message
    for version in (5, 7):
        with pytest.raises(EmptyCommitError) as info:
            DeltaTable(str(table), version=version)
        assert isinstance(info.value, CorruptLogError)
        assert (info.value.version, info.value.path) == (5, str(_commit(table, 5)))
    assert DeltaTable(str(table), version=4).version() == 4


def test_empty_latest_commit(table: Path) -> None:
    _commit(table, 11).write_bytes(b"")
    with pytest.raises(EmptyCommitError):
        DeltaTable(str(table))
    _only_error(table, "empty-commit", 11)
