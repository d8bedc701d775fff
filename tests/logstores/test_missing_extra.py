"""A store whose SDK is missing names the pip package and the extra, not a Python module."""

from __future__ import annotations

import subprocess
import sys

import pytest

_CODE = """
import sys
for name in [m for m in sys.modules if m == {top!r} or m.startswith({top!r} + '.')]:
    del sys.modules[name]
sys.modules[{top!r}] = None  # as if not installed: 'import {top}' fails, naming {top!r}
from deltalog.logstores.registry import open_store
try:
    open_store({uri!r}, {{}})
except ImportError as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize(
    ("uri", "top", "package", "extra"),
    [
        ("gs://bucket/t", "google", "google-cloud-storage", "gcs"),
        ("az://container/t", "azure", "azure-storage-blob", "azure"),
        ("s3://bucket/t", "boto3", "boto3", "s3"),
    ],
)
def test_missing_sdk_names_the_pip_package(uri: str, top: str, package: str, extra: str) -> None:
    code = _CODE.format(top=top, uri=uri)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("MissingDependencyError "), out
    assert f"needs {package}," in out
    assert f"pip install 'deltalog[{extra}]'" in out
    assert f"needs the package {top!r}" not in out
