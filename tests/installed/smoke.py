"""Smoke test of an installed deltalog wheel, run by tests/test_packaging.py in a clean venv.

Run from a directory outside the source tree with the venv's python:
``python smoke.py EXTRA[,EXTRA...]`` (``none`` for no extras). Exits non-zero on the first
failed check; prints one line per check. The tables it makes are in temporary directories
removed when it exits, passed or failed.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile

extras = set(sys.argv[1].split(",")) - {"none"}


def scratch(prefix: str) -> str:
    """A new temporary directory, removed when the script exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# The package comes from site-packages, not from a source checkout.
import deltalog  # noqa: E402

assert "site-packages" in (deltalog.__file__ or ""), deltalog.__file__
heavy = ("pandas", "pyspark", "boto3", "botocore", "azure", "google", "numpy", "pyarrow")
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(heavy))
assert not loaded, f"import deltalog loaded {loaded}"
print("ok import deltalog is light")

# One version: the installed metadata says what deltalog.__version__ says.
from importlib.metadata import version as installed_version  # noqa: E402

assert installed_version("deltalog") == deltalog.__version__, (
    installed_version("deltalog"),
    deltalog.__version__,
)
print(f"ok version {deltalog.__version__} (metadata and __version__ agree)")

# Every module imports, except those whose extra is not installed: they name it.
needs = {
    "deltalog.logstores.s3": "s3",
    "deltalog.logstores.s3_open": "s3",
    "deltalog.logstores.dynamodb": "s3",
    "deltalog.logstores.gcs": "gcs",
    "deltalog.logstores.azure": "azure",
    # A pytest plugin: imported by the pytest of a project that enables it, never by deltalog.
    "deltalog.compat.pytest_plugin": "pytest",
}
count = 0
for info in pkgutil.walk_packages(deltalog.__path__, "deltalog."):
    extra = "spark" if info.name.startswith("deltalog.spark") else needs.get(info.name)
    try:
        importlib.import_module(info.name)
        count += 1
    except ImportError as exc:
        assert extra is not None and extra not in extras, (info.name, exc)
        if info.name == "deltalog.spark":
            from deltalog.errors import MissingExtraError

            assert isinstance(exc, MissingExtraError), exc
            assert "deltalog[spark]" in str(exc) and exc.extra == "spark", exc
assert "deltalog.checkpoints.reader" in sys.modules and "deltalog.logstores.local" in sys.modules
print(f"ok {count} modules import")

# Generic names are not installed at the top level (another 'checkpoints' may be there).
for name in ("logstores",):
    assert importlib.util.find_spec(name) is None, f"top-level {name!r} installed"
print("ok no top-level logstores")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from deltalog import DeltaTable, MissingExtraError, StorageConfigurationError  # noqa: E402

root = scratch("deltalog-smoke-")
table = DeltaTable.create(
    root, pa.schema([("id", pa.int64()), ("day", pa.string())]), partition_by=["day"]
)
os.makedirs(os.path.join(root, "day=a"))
pq.write_table(pa.table({"id": [1, 2, 3]}), os.path.join(root, "day=a", "part-0.parquet"))
assert table.append_files(["day=a/part-0.parquet"]) == 1
assert DeltaTable(root).files().num_rows == 1
assert not DeltaTable(root).check().findings
print("ok create, append, read, check")

# Typed statistics in the table's checkpoints when it asks, and filters pruned by them.
typed_root = scratch("deltalog-smoke-typed-")
typed = DeltaTable.create(
    typed_root,
    pa.schema([("id", pa.int64())]),
    configuration={"delta.checkpoint.writeStatsAsStruct": "true"},
)
for k in range(2):
    pq.write_table(pa.table({"id": [10 * k, 10 * k + 1]}), os.path.join(typed_root, f"{k}.parquet"))
    typed.append_files([f"{k}.parquet"])
typed.checkpoint()
(checkpoint,) = [
    n
    for n in os.listdir(os.path.join(typed_root, "_delta_log"))
    if n.endswith(".checkpoint.parquet")
]
add_type = pq.read_schema(os.path.join(typed_root, "_delta_log", checkpoint)).field("add").type
assert add_type.get_field_index("stats_parsed") >= 0, add_type
reopened = DeltaTable(typed_root)
assert reopened.snapshot.parsed_stats() is not None
assert reopened.files(filter="id >= 10").column("path").to_pylist() == ["1.parquet"]
print("ok stats_parsed written, read back and pruned by")

for uri, extra in (("s3://bucket/t", "s3"), ("gs://bucket/t", "gcs"), ("az://c/t", "azure")):
    if extra in extras:
        continue
    try:
        DeltaTable(uri, storage_options={"s3.commit_protocol": "conditional-put"})
    except StorageConfigurationError as exc:
        assert f"deltalog[{extra}]" in str(exc), exc
    else:
        raise AssertionError(f"{uri} opened without its SDK")
print("ok missing store SDKs name their extra")

cli = os.path.join(os.path.dirname(sys.executable), "deltalog")
for argv in (["--help"], ["describe", root], ["history", root], ["files", root], ["check", root]):
    done = subprocess.run([cli, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    assert done.stdout.strip(), argv
print("ok deltalog CLI: --help, describe, history, files, check")

if "spark" in extras:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this venv's python

    import deltalog.spark

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    frame = spark.createDataFrame([(4, "b"), (5, "b")], "id long, day string")
    result = deltalog.spark.write(frame, root, mode="append")
    assert result.version == 2, result
    assert sorted(DeltaTable(root).files().column("path").to_pylist())[-1].startswith("day=b/")
    print(f"ok deltalog.spark.write on PySpark {spark.version}")
    spark.stop()
_ = MissingExtraError
print("smoke passed")
