"""deltalog.spark.package_zip and the advice a write gives when executors cannot import deltalog.

The cluster itself is in test_cluster_shipping.py; here: the zip's contents and that a Python
without deltalog imports it from the zip, the advice for local mode and for a cluster, and a
real local-mode write whose workers lack deltalog.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pyspark")
from cluster import bare_python, clean_env

import deltalog
from deltalog.spark import package_zip
from deltalog.spark.shipping import executor_import_hint, missing_on_executors

ROOT = Path(__file__).resolve().parents[2]


def test_package_zip_holds_the_package_and_is_reproducible(tmp_path: Path) -> None:
    first = package_zip(tmp_path / "a.zip")
    second = package_zip(tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes()  # same package, same bytes
    names = zipfile.ZipFile(first).namelist()
    assert "deltalog/__init__.py" in names and "deltalog/py.typed" in names
    assert "deltalog/logstores/local.py" in names  # symlinked folders of a checkout included
    assert "deltalog/checkpoints/writer.py" in names and "deltalog/spark/task.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    package = Path(deltalog.__file__).parent
    modules = [f for _, _, files in os.walk(package, followlinks=True) for f in files]
    assert len([n for n in names if n.endswith(".py")]) == len(
        [f for f in modules if f.endswith(".py")]
    )
    default = package_zip()
    assert default.name == f"deltalog-{deltalog.__version__}.zip"


def test_the_default_zip_is_removed_when_the_interpreter_exits(tmp_path: Path) -> None:
    """It outlives the call (Spark fetches it later) and a fork's exit, not the process."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code = (
        "import os, sys\n"
        "from deltalog.spark import package_zip\n"
        "zipped = package_zip()\n"
        "if os.fork() == 0:\n"
        "    sys.exit(0)  # a forked child's exit runs the inherited atexit handlers\n"
        "os.wait()\n"
        "assert zipped.is_file(), zipped\n"
        "print(zipped)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent.parent == scratch  # it was made there
    assert not list(scratch.iterdir())  # and is gone


def test_a_python_without_deltalog_imports_it_from_the_zip(tmp_path: Path) -> None:
    shipped = package_zip(tmp_path / "deltalog.zip")
    python = bare_python(tmp_path)
    code = (
        "import sys\n"
        "try:\n"
        "    import deltalog\n"
        "except ImportError:\n"
        "    print('not installed')\n"
        f"sys.path.insert(1, {str(shipped)!r})\n"
        "import deltalog.spark.task, deltalog.logstores.local\n"
        "print(deltalog.__file__)\n"
    )
    out = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=clean_env(),
    ).stdout.splitlines()
    assert out == ["not installed", f"{shipped}/deltalog/__init__.py"]


@pytest.mark.parametrize(
    ("error", "module"),
    [
        ("ModuleNotFoundError: No module named 'deltalog'", "deltalog"),
        ("No module named 'deltalog.spark'", "deltalog"),
        ("No module named 'orjson'", "orjson"),
        ("No module named 'pyarrow.compute'", "pyarrow"),
        ("No module named 'deltalogx'", None),
        ("ValueError: something else", None),
    ],
)
def test_what_the_executors_lack(error: str, module: str | None) -> None:
    assert missing_on_executors(error) == module


def _spark(master: str, py_files: str = "") -> SimpleNamespace:
    conf = SimpleNamespace(get=lambda key, default=None: py_files or default)
    return SimpleNamespace(sparkContext=SimpleNamespace(master=master), conf=conf)


def test_advice_in_local_mode_names_pyspark_python() -> None:
    hint = executor_import_hint(_spark("local[2]"), "deltalog", "/t")
    assert "workers cannot import deltalog" in hint
    assert f"PYSPARK_PYTHON={sys.executable}" in hint


def test_advice_on_a_cluster_names_the_ways_that_work() -> None:
    hint = executor_import_hint(_spark("spark://h:7077"), "deltalog", "/t")
    for way in ("deltalog[spark]", "addPyFile", "package_zip()", "--py-files", "spark.archives"):
        assert way in hint
    assert ".whl" not in hint
    wheel = executor_import_hint(
        _spark("yarn", "/x/deltalog-0.1.0-py3-none-any.whl"), "deltalog", "/t"
    )
    assert "spark.submit.pyFiles names /x/deltalog-0.1.0-py3-none-any.whl" in wheel
    assert "only .zip, .egg and .jar" in wheel
    orjson_missing = executor_import_hint(_spark("spark://h:7077"), "orjson", "/t")
    assert orjson_missing.startswith("Spark's Python workers cannot import orjson")


@pytest.mark.spark
def test_local_mode_write_without_deltalog_on_the_workers(tmp_path: Path) -> None:
    """Workers started with a Python that lacks deltalog: the error says what to set."""
    spec = {
        "master": "local[1]",
        "table": str(tmp_path / "t"),
        "how": "local",
        "conf": {},
        "driver_path": str(ROOT),
    }
    env = clean_env(PYSPARK_PYTHON=str(bare_python(tmp_path)))
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("cluster_driver.py")), json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    error = json.loads(lines[-1][len("RESULT ") :])["error"]
    assert "workers cannot import deltalog" in error
    assert f"PYSPARK_PYTHON={sys.executable}" in error
    assert not (tmp_path / "t" / "_delta_log").exists()  # nothing committed


@pytest.mark.spark
def test_the_docs_example_runs(tmp_path: Path) -> None:
    script = ROOT / "examples" / "spark_ship_zip.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "events")],
        capture_output=True,
        text=True,
        env={**clean_env(PYSPARK_PYTHON=sys.executable), "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "version 0: 1000 rows in 7 files" in proc.stdout
    page = (ROOT / "docs" / "cluster.md").read_text()
    assert script.read_text().split('"""', 2)[2].strip() in page  # the page shows this script
