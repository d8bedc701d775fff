"""CLI ``files`` streams batches with the same output as row by row; ``check`` progress."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import write_parquet

import deltalog.cli.commands as cli
from deltalog import DeltaTable
from deltalog.arrow.maps import map_texts
from deltalog.check import check_table
from deltalog.cli import files as cli_files
from deltalog.cli import text


def _row_by_row(files: pa.Table, *, exact: bool = False) -> str:
    """The ``files`` text lines formatted one row at a time, in Python."""
    rows = files.to_pylist()
    parts = [
        ",".join(f"{k}={v}" for k, v in dict(row["partition_values"] or []).items()) for row in rows
    ]
    part_width = max([len("PARTITION"), *(len(p) for p in parts)])
    size_width = max([4, *(len(f"{row['size']:,}") for row in rows)])
    out = []
    for row, part in zip(rows, parts, strict=True):
        stamp = text.timestamp(row["modification_time"]).ljust(24)
        size = f"{row['size']:>{size_width},}" if exact else f"{text.human_size(row['size']):>10}"
        out.append(f"{size}  {stamp}  {part:<{part_width}}  {row['path']}\n")
    return "".join(out)


@pytest.mark.parametrize(
    "mtimes",
    [[1_700_000_000_123, 0, 5], [1_700_000_000_123, -5, 253_402_300_800_000], [None, 1, 2]],
)
def test_file_lines_equal_row_by_row(mtimes: list[int | None]) -> None:
    files = pa.table(
        {
            "path": ["a", "p=x%20y/b", "c"],
            "size": [1, 1_234_567, 0],
            "partition_values": pa.array(
                [[], [("p", "x y"), ("q", None)], [("p", "z")]],
                pa.map_(pa.string(), pa.string()),
            ),
            "modification_time": pa.array(mtimes, pa.int64()),
        }
    )
    for exact in (False, True):
        layout = cli_files.Layout(
            exact=exact,
            size_width=len("1,234,567"),
            partitioned=True,
            partition_width=len("p=x y,q=None"),
        )
        with_parts = files.append_column(
            "_partition", map_texts(files.column("partition_values").chunks[0])
        )
        batch = with_parts.to_batches()[0]
        assert cli_files.file_lines(batch, layout) == _row_by_row(files, exact=exact)


@pytest.fixture
def table_uri(tmp_path: Path) -> str:
    t = DeltaTable.create(
        str(tmp_path), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"]
    )
    for i in range(7):
        t.append_files([write_parquet(tmp_path, f"p={i % 2}/f{i}.parquet", pa.table({"id": [i]}))])
    return str(tmp_path)


def test_files_streams_in_batches(
    table_uri: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_files, "BATCH", 3)
    assert cli.main(["files", table_uri]) == 0
    out = capsys.readouterr().out
    files = DeltaTable(table_uri).files()
    total = text.human_size(sum(files.column("size").to_pylist()))
    header = f"{'SIZE':>10}  {'MODIFIED (UTC)':<24}  PARTITION  PATH\n"
    assert out == header + _row_by_row(files) + f"7 files at version 7 ({total})\n"
    assert cli.main(["files", table_uri, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == 7 and doc["table"] == table_uri
    assert [f["path"] for f in doc["files"]] == files.column("path").to_pylist()
    assert doc["files"][0]["stats"] == json.loads(files.column("stats")[0].as_py())
    assert doc["files"][0]["partition_values"] == {"p": "0"}


def test_check_reports_progress(table_uri: str) -> None:
    calls: list[tuple[str, int, int]] = []
    check_table(table_uri, progress=lambda *a: calls.append(a))
    assert calls[-1] == ("versions", 8, 8)
    assert [c[1] for c in calls] == list(range(1, 9))


def test_check_progress_off_when_not_a_tty(
    table_uri: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    cli.main(["check", table_uri, "--no-data-files"])
    assert "checking" not in capsys.readouterr().err


def test_check_progress_drawn_on_a_tty(capsys: pytest.CaptureFixture[str]) -> None:
    progress = cli._CheckProgress()
    progress("versions", 3, 10)
    progress._start -= 5  # as if the check had been running for a while
    import time

    time.sleep(1.2)
    progress.close()
    err = capsys.readouterr().err
    assert "checking: 3 of 10 versions" in err and err.endswith("\r\033[K")


def test_open_list_and_cli_files_never_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas on its first conversion of a Python value (~0.15 s): opening a
    table (checkpoint and commits), listing its files and the ``files`` command build every
    Arrow constant from buffers instead."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("pandas") is None:
        pytest.skip("pandas is not installed: nothing to avoid")
    t = DeltaTable.create(
        str(tmp_path), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"]
    )
    for i in range(13):  # a checkpoint at 10, then commits
        t.append_files([write_parquet(tmp_path, f"p={i % 2}/f{i}.parquet", pa.table({"id": [i]}))])
    assert t.wait_for_checkpoints(timeout=60)
    new = write_parquet(tmp_path, "p=0/new.parquet", pa.table({"id": [99]}))
    code = (
        "import sys\n"
        "import deltalog\n"
        "from deltalog.cli import main\n"
        f"t = deltalog.DeltaTable({str(tmp_path)!r})\n"
        "assert t.files().num_rows == 13 and t.version() == 13\n"
        f"assert main(['files', {str(tmp_path)!r}]) == 0\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
        # A writer's first blind appends (its duplicate-path checks scan the file list).
        "tx = t.transaction()\n"
        "tx.add([deltalog.AddFile(path='p=1/blind.parquet', partition_values={'p': '1'},"
        " size=1, modification_time=1, data_change=True)])\n"
        "tx.commit()\n"
        f"t.append_files([{str(new)!r}])\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported by a commit'\n"
        # A remove, then commits up to version 20: its checkpoint merges the writer's own
        # actions (Arrow tables of the action objects) on the background thread.
        "tx = t.transaction()\n"
        "tx.remove(['p=1/blind.parquet'])\n"
        "tx.commit()\n"
        "for i in range(4):\n"
        "    tx = t.transaction()\n"
        "    tx.add([deltalog.AddFile(path=f'p=1/b{i}.parquet', partition_values={'p': '1'},"
        " size=1, modification_time=1, data_change=True)])\n"
        "    tx.commit()\n"
        "assert t.version() == 20 and t.wait_for_checkpoints(timeout=60)\n"
        "assert t.files().num_rows == 18\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported by a checkpoint'\n"
        # Tags, an absolute path and its remove after the checkpoint; a fresh open of that
        # log, its file URIs and a vacuum dry run; the key of a file with a deletion vector.
        "def add(path, **extra):\n"
        "    return deltalog.AddFile(path=path, partition_values={'p': '1'}, size=1,"
        " modification_time=1, data_change=True, **extra)\n"
        "tx = t.transaction()\n"
        "tx.add([add('p=1/tagged.parquet', tags={'k': 'v'})])\n"
        "tx.commit()\n"
        f"absolute = 'file://' + {str(tmp_path)!r} + '/p=1/abs.parquet'\n"
        "tx = t.transaction()\n"
        "tx.add([add(absolute)])\n"
        "tx.commit()\n"
        "tx = t.transaction()\n"
        "tx.remove([absolute])\n"
        "tx.commit()\n"
        f"u = deltalog.DeltaTable({str(tmp_path)!r})\n"
        "assert u.version() == 23 and u.files().num_rows == 19\n"
        "assert len(u.file_uris()) == 19\n"
        "u.vacuum()\n"
        "from deltalog.log.file_actions import adds_to_table, arrow_keys\n"
        "dv = {'storageType': 'u', 'pathOrInlineDv': 'ab', 'offset': 1, 'sizeInBytes': 3,"
        " 'cardinality': 1}\n"
        "keys = arrow_keys(adds_to_table([add('p=1/d.parquet', deletion_vector=dv)]), 'file:')\n"
        "assert keys.to_pylist() == ['p=1/d.parquet\\x00uab@1'], keys\n"
        "assert 'pandas' not in sys.modules, 'pandas imported: tags, removes, vacuum or DVs'\n"
        # Typed statistics (partition values typed, JSON statistics parsed).
        "flat = u.files(with_stats=False, flatten_stats=True)\n"
        "assert flat.num_rows == 19 and flat.column('min.id').null_count == 5  # added bare\n"
        "assert sorted(set(flat.column('partition.p').to_pylist())) == ['0', '1']\n"
        "assert 'pandas' not in sys.modules, 'pandas imported: typed statistics'\n"
        # Filters: their literals are built from buffers too (the 5 bare files are kept).
        "def count(f):\n"
        "    return u.files(filter=f, with_stats=False).num_rows\n"
        "assert count('id >= 5') == 14\n"
        "assert count(\"p = '1' AND id < 3\") == 6\n"
        "assert count('id IN (1, 2, NULL)') == 7\n"
        "assert count('NOT (id < 3) OR id IS NULL') == 16\n"
        "assert count(\"p IN ('0')\") == 8\n"
        "assert 'pandas' not in sys.modules, 'pandas imported: filters'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "13 files at version 13" in proc.stdout
    assert (tmp_path / "_delta_log" / f"{20:020d}.checkpoint.parquet").exists()
