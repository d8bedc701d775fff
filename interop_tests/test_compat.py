"""``deltalog compat`` with the real engines on golden tables and on tables made here.

docs/compat.md's example run is the first test (the golden tables it names, every version).
Every engine must run (``require``): none is skipped in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deltalog.compat import compare

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT.parent / "shared" / "delta-golden"
if not GOLDEN.is_dir():
    GOLDEN = Path("/work/shared/delta-golden")
PYTHON_ENGINES = ["deltalog", "delta-rs"]


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    """A copy of the golden tables compat.md's example names (read-only originals)."""
    out = tmp_path / "golden"
    out.mkdir()
    for name in ("basic-decimal-table", "basic-with-vacuum-protocol-check-feature"):
        shutil.copytree(GOLDEN / name, out / name)
    return out


def test_the_docs_example_run(golden: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deltalog",
            "compat",
            "golden/basic-decimal-table",
            "golden/basic-with-vacuum-protocol-check-feature",
            "--versions",
            "all",
            *(f"--engine={e}" for e in PYTHON_ENGINES),
        ],
        cwd=golden.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "golden/basic-with-vacuum-protocol-check-feature: AGREE (known limitations)" in done.stdout
    )
    assert "delta-rs does not support the vacuumProtocolCheck feature" in done.stdout
    assert done.stdout.rstrip().endswith("3 of 3 table versions agree; all engines agree")


def _golden_tables() -> list[Path]:
    return sorted(p for p in GOLDEN.iterdir() if (p / "_delta_log").is_dir())


def test_every_golden_table_agrees_or_is_a_known_limitation() -> None:
    tables = [str(p) for p in _golden_tables()]
    report = compare(tables, engines=PYTHON_ENGINES, require=PYTHON_ENGINES)
    assert all(e.state == "ran" for e in report.engines)
    assert report.agree, report.render()
