"""The README.md's main-job command runs as written: ``bash scripts/main.sh``.

The README's other set-up command, ``bash scripts/test.sh``, is what ``.ci/run`` runs; this
checks that ``.ci/run`` still runs exactly that block.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from docsnippets import ROOT, blocks


def _block(tested_by: str) -> str:
    (found,) = [b for b in blocks(ROOT / "README.md") if b.tested_by == tested_by]
    return found.code.split("#")[0].strip()


def test_ci_runs_the_readme_test_command() -> None:
    command = _block(".ci/run")
    assert command == "bash scripts/test.sh"
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert lines[-1] == f"exec {command}"


@pytest.mark.spark
@pytest.mark.one_spark_line  # the README's main job runs on the default line (.venv)
def test_readme_main_job_runs(tmp_path: Path) -> None:
    command = _block("tests/docs/test_readme_commands.py")
    assert command == "bash scripts/main.sh"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-6000:]}"
