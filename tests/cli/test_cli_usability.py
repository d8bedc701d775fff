"""The command line a new user meets: --version, python -m, help, tables a person reads."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from tableutil import write_parquet

import deltalog
from deltalog import DeltaTable
from deltalog.cli import EXIT_CODES, build_parser, main
from deltalog.cli import text as cli_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def table_uri(tmp_path: Path) -> str:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])
    t = DeltaTable.create(str(tmp_path), schema, partition_by=["day"])
    for i, day in enumerate(["2026-11-20", "2026-11-21", "2026-11-21"]):
        rows = pa.table({"id": [i * 10, i * 10 + 7, None], "name": ["a", f"z{i}", "m"]})
        t.append_files([write_parquet(tmp_path, f"day={day}/part-{i}.parquet", rows)])
    t.overwrite_files(
        [write_parquet(tmp_path, "day=2026-11-20/c.parquet", pa.table({"id": [1], "name": ["q"]}))],
        predicate="day = '2026-11-20'",
    )
    return str(tmp_path)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False, cwd=ROOT
    )


@pytest.mark.parametrize("module", ["deltalog", "deltalog.cli"])
def test_version_and_python_m(module: str) -> None:
    proc = _run("-m", module, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"deltalog {deltalog.__version__}"


def test_python_m_deltalog_runs_a_command(table_uri: str) -> None:
    proc = _run("-m", "deltalog", "history", table_uri, "--limit", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["history"][0]["version"] == 4


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_command_has_a_description_and_every_option_help() -> None:
    commands = _subcommands()
    assert set(commands) >= {"describe", "files", "history", "check", "vacuum", "checkpoint"}
    missing = []
    for name, parser in commands.items():
        if not parser.description:
            missing.append(f"{name}: no description")
        for action in parser._actions:
            if not action.help:
                missing.append(f"{name} {action.option_strings or action.dest}: no help")
    assert not missing


def test_help_lists_the_exit_codes() -> None:
    proc = _run("-m", "deltalog", "--help")
    assert proc.returncode == 0
    for code in EXIT_CODES:
        assert re.search(rf"^\s+{code}\s+\S", proc.stdout, re.M), code
    for name in _subcommands():
        assert name in proc.stdout


def test_files_has_a_header_human_sizes_and_a_total(
    table_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["files", table_uri]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["SIZE", "MODIFIED", "(UTC)", "PARTITION", "PATH"]
    files = DeltaTable(table_uri).files().sort_by("path").to_pylist()
    body = sorted(lines[1:-1], key=lambda line: line.split()[-1])
    assert len(body) == len(files) == 3
    path_at = lines[0].index("PATH")
    for line, f in zip(body, files, strict=True):
        assert line[path_at:] == f["path"]  # aligned under the header
        assert line.split()[:2] == cli_text.human_size(f["size"]).split()
        assert line.split()[-2] == f"day={dict(f['partition_values'])['day']}"
    total = cli_text.human_size(sum(f["size"] for f in files))
    assert lines[-1] == f"3 files at version 4 ({total})"


def test_files_bytes_are_exact(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["files", table_uri, "--bytes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    sizes = {int(line.split()[0].replace(",", "")) for line in lines[1:-1]}
    assert sizes == set(DeltaTable(table_uri).files().column("size").to_pylist())
    assert lines[-1].endswith(" bytes)")


def test_files_stats_columns_equal_flatten_stats(
    table_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["files", table_uri, "--stats"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[4:-1] == [
        "RECORDS",
        "min.id",
        "max.id",
        "null_count.id",
        "min.name",
        "max.name",
        "null_count.name",
    ]
    flat = DeltaTable(table_uri).files(flatten_stats=True).to_pylist()
    by_path = {f["path"]: f for f in flat}
    for line in lines[1:-1]:
        cells = line.split()
        f = by_path[cells[-1]]
        expected = [f["num_records"], f["min.id"], f["max.id"], f["null_count.id"]]
        expected += [f["min.name"], f["max.name"], f["null_count.name"]]
        assert cells[5:-1] == [str(v) for v in expected]


def test_files_json_has_parsed_stats(table_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["files", table_uri, "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    stats = {f["path"]: f["stats"] for f in doc["files"]}
    for f in DeltaTable(table_uri).files().to_pylist():
        assert stats[f["path"]] == orjson.loads(f["stats"])
        assert isinstance(stats[f["path"]], dict)


def test_history_is_an_aligned_table_with_metrics(
    table_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", table_uri]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0]
    titles = ["VERSION", "TIMESTAMP (UTC)", "OPERATION", "+FILES", "-FILES", "ROWS", "BYTES"]
    starts = [head.index(t) for t in titles]
    assert starts == sorted(starts) and head.endswith("PARAMETERS")
    history = DeltaTable(table_uri).history()
    assert len(lines) == 1 + len(history)
    ends = {t: head.index(t) + len(t) for t in ("VERSION", "+FILES", "-FILES", "ROWS")}
    for line, entry in zip(lines[1:], history, strict=True):
        assert line[: ends["VERSION"]].strip() == str(entry["version"])  # right-aligned
        assert line[head.index("OPERATION") :].startswith(entry["operation"])
        metrics = entry.get("operationMetrics") or {}
        added = metrics.get("numAddedFiles", metrics.get("numFiles", "-"))
        removed = metrics.get("numRemovedFiles", "-")
        assert line[: ends["+FILES"]].split()[-1] == str(added)
        assert line[: ends["-FILES"]].split()[-1] == str(removed)
        assert line[: ends["ROWS"]].split()[-1] == str(metrics.get("numOutputRows", "-"))
    overwrite = lines[1]
    assert "WRITE" in overwrite and "mode=Overwrite" in overwrite


@pytest.mark.parametrize(
    "n",
    [
        *(0, 1, 972, 973, 1023, 1024, 1075, 1076, 10 * 1024 - 1, 1024**2 - 52, 1024**2 - 51),
        *(5 << 30, 1_234_567, 2**59 - 1, 2**59, 2**62, 2**63 - 1),
    ],
)
def test_human_sizes_equal_in_arrow_and_python(n: int) -> None:
    shown = cli_text.human_sizes(pa.array([n], pa.int64()))[0].as_py()
    assert shown == cli_text.human_size(n).rjust(cli_text.SIZE_WIDTH)


def test_human_size_units() -> None:
    assert cli_text.human_size(512) == "512 B"
    assert cli_text.human_size(1023) == "1.0 KiB"
    assert cli_text.human_size(1536) == "1.5 KiB"
    assert cli_text.human_size(5 << 30) == "5.0 GiB"
    assert cli_text.human_size(None) == "-"


def test_docs_cli_page_names_every_command_option_and_exit_code() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    for name, parser in _subcommands().items():
        assert f"## `deltalog {name}`" in page or f"### `deltalog {name}`" in page, name
        for action in parser._actions:
            for option in action.option_strings:
                if option != "-h":
                    assert option in page, (name, option)
    for code in EXIT_CODES:
        assert re.search(rf"^\| {code} \|", page, re.M), code
