"""The engines ``compat`` knows, by name, in report order."""

from __future__ import annotations

from deltalog.compat.engines import Engine, PythonEngine
from deltalog.compat.kernel import KernelEngine
from deltalog.compat.spark_engine import SparkEngine

#: The names ``--engine`` and ``--require`` take.
NAMES = ("deltalog", "delta-rs", "delta-spark", "kernel")


def builtin_engines() -> dict[str, Engine]:
    """A fresh engine object per name (see :data:`NAMES`)."""
    engines: list[Engine] = [
        PythonEngine("deltalog", "deltalog", "deltalog", "pip install deltalog"),
        PythonEngine("delta-rs", "deltalake", "deltalake", "pip install deltalake"),
        SparkEngine(),
        KernelEngine(),
    ]
    return {e.name: e for e in engines}
