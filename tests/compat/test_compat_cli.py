"""``deltalog compat`` end to end with deltalog and delta-rs, and fake engines for the bad
cases: a crash, a refusal, a wrong answer. Every case ends in a report, never a traceback."""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

import deltalog
from deltalog.cli import main
from deltalog.compat import compare
from deltalog.compat.engines import CommandEngine

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def table(tmp_path: Path) -> str:
    uri = str(tmp_path / "t")
    data = pa.table({"p": ["a", "b", None], "x": [1, 2, 3], "s": ["x", None, "z"]})
    deltalog.write_table(uri, data, partition_by="p")
    deltalog.write_table(uri, pa.table({"p": ["a"], "x": [4], "s": ["w"]}), mode="append")
    return uri


def _fake(tmp_path: Path, body: str, name: str = "fake") -> str:
    """``NAME=python script {request} {output}`` for --engine-command."""
    script = tmp_path / f"{name}.py"
    script.write_text(
        "import sys, orjson\n"
        "req = orjson.loads(open(sys.argv[1], 'rb').read())\n" + textwrap.dedent(body)
    )
    return f"{name}={shlex.quote(sys.executable)} {shlex.quote(str(script))} {{request}} {{output}}"


def test_deltalog_and_delta_rs_agree_on_a_table_and_its_versions(
    table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["compat", table, "--engine", "deltalog", "--engine", "delta-rs", "--versions", "all"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{table}@v0: AGREE" in out and f"{table}: AGREE" in out
    assert "2 of 2 table versions agree; all engines agree" in out


def test_json_output_is_one_document(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "compat",
            table,
            "--engine",
            "deltalog",
            "--engine",
            "delta-rs",
            "--json",
            "--observations",
        ]
    )
    doc = orjson.loads(capsys.readouterr().out)
    assert code == 0 and doc["agree"] is True
    seen = doc["tables"][0]["observations"]
    assert seen["deltalog"]["rows"] == seen["delta-rs"]["rows"] == 4
    assert seen["deltalog"]["columns"] == seen["delta-rs"]["columns"]


def test_a_path_that_is_no_table_exits_2_with_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compat", str(tmp_path), "--engine", "deltalog"])
    out = capsys.readouterr().out
    assert code == 2
    assert f"{tmp_path}: PROBLEM" in out and "not a Delta table" in out


def test_a_crashing_engine_is_named_and_fails(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _fake(tmp_path, "import os\nos.abort()\n", "crashy")
    code = main(["compat", table, "--engine", "deltalog", "--engine-command", spec])
    out = capsys.readouterr().out
    assert code == 3
    assert "crashy    CRASHED  exit status" in out
    assert "crashy: crashed" in out and "Traceback" not in out


def test_a_refusing_engine_is_named_with_its_message(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = """
    results = [{"table": t["uri"], "version": v, "error": {"type": "Nope", "message": "no way"}}
               for t in req["tables"] for v in t["versions"]]
    open(sys.argv[2], "wb").write(orjson.dumps({"results": results}))
    """
    code = main(
        ["compat", table, "--engine", "deltalog", "--engine-command", _fake(tmp_path, body)]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert f"{table}: DISAGREE" in out and "fake: refused: Nope: no way" in out


def test_a_wrong_answer_is_a_named_difference(table: str, tmp_path: Path) -> None:
    body = """
    from deltalog.compat.probe_main import run
    out = run({**req, "engine": "deltalog"})
    for r in out["results"]:
        r["observation"]["rows"] += 1
        r["observation"]["files"].pop()
    open(sys.argv[2], "wb").write(orjson.dumps(out))
    """
    engine = CommandEngine.parse(_fake(tmp_path, body, "liar"))
    engine.env["PYTHONPATH"] = str(ROOT)
    report = compare(table, engines=["deltalog", engine])
    assert not report.agree
    diffs = {d.field: d.groups for d in report.tables[0].differences}
    assert set(diffs) == {"files", "rows"}
    assert diffs["rows"] == [(["deltalog"], "4"), (["liar"], "5")]


def test_require_turns_a_skip_into_a_failure(table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.compat import engines

    monkeypatch.setattr(engines.PythonEngine, "unavailable", lambda self: "pip install it")
    skipped = compare(table, engines=["delta-rs"])
    assert skipped.engines[0].state == "skipped" and skipped.agree
    required = compare(table, engines=["delta-rs"], require=["delta-rs"])
    assert not required.agree and required.exit_code == 3
    assert "SKIPPED (required)  pip install it" in required.render()


def test_the_console_script_runs_it_in_a_fresh_process(table: str, tmp_path: Path) -> None:
    junit = tmp_path / "compat.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deltalog",
            "compat",
            table,
            "--engine",
            "deltalog",
            "--junit",
            str(junit),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'failures="0"' in junit.read_text()


def test_bad_arguments_are_named(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", table, "--versions", "x"]) == 2
    assert "InvalidInputError: --versions expects" in capsys.readouterr().err
    assert main(["compat", table, "--engine-command", "nocommand"]) == 2
