"""The main job (``bash scripts/main.sh``): a lean set-up, quiet Spark, and where to look next."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bash(script: str) -> str:
    return subprocess.run(
        ["bash", "-c", f"source {ROOT}/scripts/env.sh\n{script}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_main_job_installs_only_what_it_needs() -> None:
    spec = _bash('printf "%s\\n" "${MAIN_SPEC[@]}"').split()
    assert spec == ["-e", f"{ROOT}[spark]", "deltalake==1.6.6"]
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    spark = " ".join(project["optional-dependencies"]["spark"]).lower()
    for heavy in ("delta-spark", "moto", "boto3", "google", "azure", "mypy", "ruff", "pytest"):
        assert heavy not in spark
    assert "deltalake==1.6.6" in project["optional-dependencies"]["test"]  # the same pin
    # The tests' environment is still complete, and main.sh uses the lean one.
    assert _bash('printf "%s\\n" "${DEV_SPEC[@]}"').split() == ["-e", f"{ROOT}[dev]"]
    main_sh = (ROOT / "scripts" / "main.sh").read_text()
    assert "main_env" in main_sh and "dev_env" not in main_sh
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    for step in ("dev_env", "ensure_azurite", "ensure_chromium"):
        assert step in test_sh


@pytest.mark.spark
@pytest.mark.one_spark_line  # the main job is the default line's (PySpark 4.2)
def test_the_main_job_says_what_matters(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    table = tmp_path / "events"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "main_job.py"), "--table", str(table)],
        capture_output=True,
        text=True,
        check=False,
        timeout=540,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    noise = [
        line
        for line in out.splitlines()
        if re.search(r"\bWARN\b|WARNING|Warning\b|\[Stage \d|log4j|setLogLevel", line)
    ]
    assert not noise, noise
    assert f"The table is at {table} (version 16)." in out
    report = table.with_name("events-report.html")
    assert f"Its report (open it in a browser): {report}" in out and report.is_file()
    where = re.escape(str(table))
    for verb in ("describe", "history", "files", "check", "report"):
        assert re.search(rf"^  \S*(deltalog| -m deltalog) {verb} {where}", out, re.M), verb
    assert "VERSION  TIMESTAMP (UTC)" in out  # the history, as the CLI prints it
    assert "deltalog reads version 16: 122,500 rows" in out
