"""docs/python.md and examples/python_quickstart.py run as written.

The page's ``python`` blocks run in order, in one namespace, in an empty directory; every
``print`` whose line ends with a ``# expected`` comment must print that text.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


def test_the_python_guide_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    blocks = _blocks(ROOT / "docs" / "python.md")
    assert len(blocks) >= 8
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "docs/python.md", "exec"), namespace)
        printed = out.getvalue().splitlines()
        expected = [
            m.group(1).strip()
            for line in block.splitlines()
            if line.lstrip().startswith("print(") and (m := re.search(r"#\s*(.+)$", line))
        ]
        assert printed[: len(expected)] == expected, block


def test_the_quickstart_example_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python_quickstart.py"), str(tmp_path / "t")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "quickstart done" in done.stdout
