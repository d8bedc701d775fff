"""The ``delta_compat`` fixture, as another project uses it: a pytest run in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import pyarrow as pa
import deltalog
from deltalog.compat.engines import CommandEngine


def test_agreeing(delta_compat, tmp_path):
    deltalog.write_table(tmp_path / "t", pa.table({"x": [1, 2]}))
    report = delta_compat(tmp_path / "t", engines=["deltalog", "delta-rs"])
    assert report.agree


def test_disagreeing(delta_compat, tmp_path):
    deltalog.write_table(tmp_path / "t", pa.table({"x": [1, 2]}))
    crash = CommandEngine("crashy", ["python", "-c", "raise SystemExit(9)"])
    delta_compat(tmp_path / "t", engines=["deltalog", crash])
"""


def test_the_fixture_passes_agreement_and_fails_with_the_report(tmp_path: Path) -> None:
    (tmp_path / "test_theirs.py").write_text(textwrap.dedent(TESTS))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "deltalog.compat.pytest_plugin",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_theirs.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    out = done.stdout
    assert done.returncode == 1, out
    assert "1 failed, 1 passed" in out
    assert "deltalog compat: engines disagree" in out
    assert "crashy    CRASHED  exit status 9" in out
