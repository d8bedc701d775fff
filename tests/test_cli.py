from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from tableutil import write_commit, write_parquet

from deltalog import DeltaTable
from deltalog.cli import main


@pytest.fixture
def table_uri(tmp_path: Path) -> str:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = DeltaTable.create(str(tmp_path), schema, partition_by=["p"])
    t.append_files([write_parquet(tmp_path, "p=x y/f.parquet", pa.table({"id": [1, 2]}))])
    t.append_files([write_parquet(tmp_path, "p=z/g.parquet", pa.table({"id": [3]}))])
    return str(tmp_path)


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert main(argv) == 0
    out = capsys.readouterr().out
    doc = orjson.loads(out)
    assert isinstance(doc, dict)
    return doc


def test_describe_json(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, ["describe", table_uri, "--json"])
    assert doc["version"] == 2
    assert doc["numFiles"] == 2
    assert doc["protocol"] == {
        "minReaderVersion": 1,
        "minWriterVersion": 2,
        "readerFeatures": None,
        "writerFeatures": None,
    }
    meta = doc["metadata"]
    assert isinstance(meta, dict) and meta["partitionColumns"] == ["p"]
    assert [f["name"] for f in meta["schema"]["fields"]] == ["id", "p"]
    assert doc["sizeInBytes"] == sum(
        (Path(table_uri) / p).stat().st_size for p in ("p=x y/f.parquet", "p=z/g.parquet")
    )


def test_describe_old_version(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _json(capsys, ["describe", table_uri, "--version", "1", "--json"])["numFiles"] == 1


def test_files_and_history_json(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = _json(capsys, ["files", table_uri, "--json"])["files"]
    assert isinstance(files, list)
    assert sorted(f["path"] for f in files) == ["p=x%20y/f.parquet", "p=z/g.parquet"]
    assert {f["partition_values"]["p"] for f in files} == {"x y", "z"}
    history = _json(capsys, ["history", table_uri, "--limit", "2", "--json"])["history"]
    assert isinstance(history, list) and [h["version"] for h in history] == [2, 1]


def test_human_output(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", table_uri]) == 0
    out = capsys.readouterr().out
    assert "version:     2" in out and "files:       2" in out and "p: string" in out
    assert main(["files", table_uri]) == 0
    assert "2 files at version 2" in capsys.readouterr().out
    assert main(["history", table_uri]) == 0
    assert "CREATE TABLE" in capsys.readouterr().out


def test_errors_are_one_line_and_nonzero(tmp_path: Path) -> None:
    write_commit(tmp_path, 0, [b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}'])
    for args in (
        ["describe", str(tmp_path)],
        ["files", str(tmp_path / "nope")],
        ["describe", str(tmp_path), "--version", "9"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "deltalog.cli", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1
        assert proc.stderr.startswith("deltalog: error: ")


def test_checkpoint_command(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, ["checkpoint", table_uri, "--json"])
    assert doc["version"] == 2 and doc["numOfAddFiles"] == 2
    assert (Path(table_uri) / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()
    assert DeltaTable(table_uri).snapshot.checkpoint_version == 2
    assert main(["checkpoint", table_uri]) == 0
    assert "checkpoint of version 2: 2 files" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command", ["describe", "files", "history", "check", "vacuum", "checkpoint"]
)
@pytest.mark.parametrize(
    ("option", "named"),
    [
        ("foo=bar", "foo"),  # no store reads it
        ("s3.endpoint=http://localhost:1", "s3.endpoint"),  # another store's option
        ("local.fsynk=false", "local.fsynk"),  # a misspelt option of this store
    ],
)
def test_an_option_the_store_does_not_read_is_an_error(
    table_uri: str, capsys: pytest.CaptureFixture[str], command: str, option: str, named: str
) -> None:
    log = sorted(p.name for p in (Path(table_uri) / "_delta_log").iterdir())
    assert main([command, table_uri, "-o", option]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("deltalog: error: StorageConfigurationError: ")
    assert named in captured.err and "bar" not in captured.err
    assert sorted(p.name for p in (Path(table_uri) / "_delta_log").iterdir()) == log  # no write


def test_an_option_the_store_reads_is_taken(
    table_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["describe", table_uri, "-o", "local.fsync=false", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["version"] == 2
