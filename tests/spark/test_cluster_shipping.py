"""Shipping deltalog to executors, on a real standalone cluster (master + worker on 127.0.0.1).

Each test runs one Spark application (``cluster_driver.py``) whose executors start a Python
without deltalog (:func:`cluster.bare_python`) unless the way under test gives it to them:

- ``addPyFile(package_zip())`` after a write that failed with the advice to do so;
- ``--py-files deltalog.zip`` (the zip ``deltalog package-zip`` writes) works; the same bytes
  named ``.whl`` (the old advice) are not put on the workers' path, and the error says so;
- deltalog installed in the executors' Python (a cluster image);
- a virtualenv packed with venv-pack and shipped with ``spark.archives``.

Every successful write is checked where it matters: the executors imported deltalog from the
place shipped (the zip, the archive), and the table holds the rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from cluster import Cluster, bare_python, clean_env, standalone_cluster

# Shipping Python code to executors (addPyFile, --py-files, spark.archives) works the same on
# both Spark lines; the 3.5 pass leaves these four cluster applications out for CI's time.
pytestmark = [pytest.mark.spark, pytest.mark.one_spark_line]
ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("cluster_driver.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("java") is None:
        if os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1":
            pytest.fail("no java for the Spark standalone cluster")
        pytest.skip("no java for the Spark standalone cluster")
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def _run(
    cluster: Cluster,
    tmp_path: Path,
    how: str,
    *,
    python: Path | str,
    conf: dict[str, str] | None = None,
    submit_args: str | None = None,
) -> dict[str, object]:
    table = tmp_path / "table"
    env = clean_env(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=sys.executable)
    if submit_args:
        env["PYSPARK_SUBMIT_ARGS"] = submit_args
    spec = {
        "master": cluster.url,
        "table": str(table),
        "how": how,
        "conf": conf or {},
        "driver_path": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, str(DRIVER), json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=400,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-5000:])
    result: dict[str, object] = json.loads(lines[-1][len("RESULT ") :])
    return result


def _written(result: dict[str, object], shipped_in: str) -> None:
    assert "error" not in result, result.get("error")
    assert result["version"] == 0 and result["rows"] == 100
    assert shipped_in in str(result["executors_import"]), result["executors_import"]


def test_add_py_file_with_the_package_zip(cluster: Cluster, tmp_path: Path) -> None:
    result = _run(cluster, tmp_path, "addPyFile", python=bare_python(tmp_path))
    before = str(result["before"])
    assert "workers cannot import deltalog" in before
    assert "package_zip()" in before and "--py-files" in before and "spark.archives" in before
    _written(result, ".zip")
    assert not (tmp_path / "table" / "_delta_log" / f"{1:020d}.json").exists()  # one commit


def test_py_files_zip_works_and_a_wheel_does_not(cluster: Cluster, tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "deltalog", "package-zip", "-o", str(tmp_path / "deltalog.zip")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    assert f"wrote {tmp_path / 'deltalog.zip'}" in made.stdout
    python = bare_python(tmp_path)
    wheel = tmp_path / "wheel" / "deltalog-0.1.0-py3-none-any.whl"  # the same bytes, as a wheel
    wheel.parent.mkdir()
    shutil.copy(tmp_path / "deltalog.zip", wheel)
    refused = _run(
        cluster,
        tmp_path / "wheel",
        "py-files-wheel",
        python=python,
        submit_args=f"--py-files {wheel} pyspark-shell",
    )
    error = str(refused["error"])
    assert "workers cannot import deltalog" in error
    assert "spark.submit.pyFiles names" in error and ".whl" in error
    assert "only .zip, .egg and .jar" in error
    (tmp_path / "zip").mkdir()
    shipped = _run(
        cluster,
        tmp_path / "zip",
        "py-files-zip",
        python=python,
        submit_args=f"--py-files {tmp_path / 'deltalog.zip'} pyspark-shell",
    )
    _written(shipped, "deltalog.zip")


def test_installed_in_the_executors_python(cluster: Cluster, tmp_path: Path) -> None:
    """As in a cluster image with deltalog installed: the executors' Python imports it."""
    result = _run(
        cluster,
        tmp_path,
        "installed",
        python=sys.executable,
        conf={"spark.executorEnv.PYTHONPATH": str(ROOT)},
    )
    _written(result, str(ROOT / "deltalog"))


def _packed_venv(tmp_path: Path) -> Path:
    """A virtualenv with deltalog (this checkout), pyarrow, orjson, pandas, packed by venv-pack.

    The dependencies are installed once into ``.tools/executor-venv`` (pinned to this
    environment's versions); deltalog is reinstalled from the checkout on every run.
    """
    import numpy
    import orjson
    import pandas
    import pyarrow

    venv = ROOT / ".tools" / "executor-venv"
    py = venv / "bin" / "python"
    pins = [
        f"pyarrow=={pyarrow.__version__}",
        f"orjson=={orjson.__version__}",
        f"pandas=={pandas.__version__}",
        f"numpy=={numpy.__version__}",
        "venv-pack==0.2.0",
    ]
    stamp = venv / "pins.txt"

    def pip(*args: str) -> None:
        proc = subprocess.run(
            [str(py), "-m", "pip", "install", "-q", *args], capture_output=True, text=True
        )
        if proc.returncode:
            why = f"pip install {' '.join(args)} failed: {proc.stderr[-2000:]}"
            if os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1":
                pytest.fail(why)
            pytest.skip(why)

    def packer_runs() -> bool:  # a venv moved from elsewhere keeps scripts with dead shebangs
        check = [str(py), "-c", "import venv_pack"]
        return py.exists() and subprocess.run(check, capture_output=True).returncode == 0

    if not stamp.exists() or stamp.read_text() != "\n".join(pins) or not packer_runs():
        shutil.rmtree(venv, ignore_errors=True)
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
        pip(*pins)
        stamp.write_text("\n".join(pins))
    pip("--no-deps", "--force-reinstall", str(ROOT))
    archive = tmp_path / "executor-env.tar.gz"
    subprocess.run(
        [str(py), "-m", "venv_pack", "-p", str(venv), "-o", str(archive), "-q", "-f"],
        check=True,
        capture_output=True,
    )
    return archive


def test_spark_archives_with_a_packed_virtualenv(cluster: Cluster, tmp_path: Path) -> None:
    archive = _packed_venv(tmp_path)
    result = _run(
        cluster,
        tmp_path,
        "archives",
        python="./environment/bin/python",
        conf={
            "spark.archives": f"{archive}#environment",
            "spark.pyspark.python": "./environment/bin/python",
            "spark.pyspark.driver.python": sys.executable,
        },
    )
    _written(result, "/environment/lib/")
