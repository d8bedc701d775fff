"""deltalog.spark's table operations on a real standalone cluster, and in local mode without it.

On the cluster (:func:`cluster.standalone_cluster`: a master and a worker on 127.0.0.1) the
executors are their own JVMs with their own Python workers, which import deltalog from this
checkout (``spark.executorEnv.PYTHONPATH``, as an image with deltalog installed would); the
commits run in the driver. One application (``cluster_ops_driver.py``) runs every step of
:data:`CLUSTER_STEPS` in order on one table, and each test checks one step's result.

In local mode, with workers whose Python lacks deltalog (:func:`cluster.bare_python`), a write
and a ``replace_where`` overwrite both fail before writing anything, with an error naming
``PYSPARK_PYTHON`` and this Python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
from cluster import Cluster, bare_python, clean_env, standalone_cluster

# The executors run the same deltalog code as in local mode, which the 3.5 pass covers; the
# standalone cluster's applications run on the default line only, for CI's time.
pytestmark = [pytest.mark.spark, pytest.mark.one_spark_line]
ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("cluster_ops_driver.py")


def _run_driver(
    master: str, tmp_path: Path, steps: list[str], python: Path | str, conf: dict[str, str]
) -> dict[str, Any]:
    spec = {
        "master": master,
        "table": str(tmp_path / "table"),
        "steps": steps,
        "conf": conf,
        "driver_path": str(ROOT),
    }
    env = clean_env(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, str(DRIVER), json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=500,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-5000:])
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in result, result["error"]
    return result


def _check_write(result: dict[str, Any]) -> None:
    assert _ok(result)["versions"] == [0, 1]
    assert result["ids"] == list(range(100))
    assert result["partition_columns"] == ["p"]
    assert result["files"] >= 6  # each append: 3 partitions x 2 tasks at most, at least 3


def _check_read(result: dict[str, Any]) -> None:
    assert _ok(result)["columns"] == ["id"]
    assert result["filtered"] == [i for i in range(30) if i % 3 == 1]
    assert result["version_0"] == 60


def _check_optimize(result: dict[str, Any]) -> None:
    assert _ok(result)["files_removed"] == result["files_before"]
    assert result["files_added"] == result["files_after"] == 3  # one file per partition
    assert result["ids"] == list(range(100))
    assert result["read_after"] == 100


def _check_merge(result: dict[str, Any]) -> None:
    assert (_ok(result)["deleted"], result["inserted"]) == (10, 10)
    assert result["ids"] == [*range(90), *range(100, 110)]
    assert result["read_after"] == 100


def _check_delete_update(result: dict[str, Any]) -> None:
    assert (_ok(result)["deleted"], result["updated"]) == (5, 5)
    assert result["ids"] == [*range(5, 90), *range(100, 105), *range(1000, 1005)]


def _check_executors_import(result: dict[str, Any]) -> None:
    assert _ok(result)["file"] == str(ROOT / "deltalog" / "__init__.py")


#: (step of cluster_ops_driver.py, its check), run in this order on one table.
CLUSTER_STEPS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("write", _check_write),
    ("read", _check_read),
    ("optimize", _check_optimize),
    ("merge", _check_merge),
    ("delete_update", _check_delete_update),
    ("executors_import", _check_executors_import),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("java") is None:
        if os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1":
            pytest.fail("no java for the Spark standalone cluster")
        pytest.skip("no java for the Spark standalone cluster")
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def cluster_results(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every step's result from one application on the cluster."""
    return _run_driver(
        cluster.url,
        tmp_path_factory.mktemp("ops"),
        [name for name, _ in CLUSTER_STEPS],
        python=sys.executable,
        conf={"spark.executorEnv.PYTHONPATH": str(ROOT)},
    )


@pytest.mark.parametrize(("step", "check"), CLUSTER_STEPS, ids=[s for s, _ in CLUSTER_STEPS])
def test_on_the_cluster(
    cluster_results: dict[str, Any], step: str, check: Callable[[dict[str, Any]], None]
) -> None:
    check(cluster_results[step])


def test_local_mode_without_deltalog_says_set_pyspark_python(tmp_path: Path) -> None:
    result = _run_driver(
        "local[2]",
        tmp_path,
        ["seed_driver_side", "write_without_deltalog", "replace_where_without_deltalog"],
        python=bare_python(tmp_path),
        conf={},
    )
    assert _ok(result["seed_driver_side"])["version"] == 0
    for step in ("replace_where_without_deltalog", "write_without_deltalog"):
        error = result[step]["error"]
        assert error.startswith("SparkWriteError: Spark's Python workers cannot import deltalog")
        assert f"set PYSPARK_PYTHON={sys.executable}" in error, error
        assert "addPyFile(str(deltalog.spark.package_zip()))" in error
    assert not (tmp_path / "table" / "_delta_log" / f"{1:020d}.json").exists()  # nothing written
