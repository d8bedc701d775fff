"""Shared setup for the interoperability tests against delta-rs (the ``deltalake`` package).

The repository root is put on ``sys.path`` so that ``deltalog`` is importable when pytest is run
as ``pytest`` (not only as ``python -m pytest`` from the root) without an installed package.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
TESTS_DIR = ROOT / "tests"
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# The object-store test servers (moto, Azurite, our GCS server), shared with tests/.
from testpaths import share_test_modules  # noqa: E402

share_test_modules()

# Delta Kernel (Java): its jars from Maven and the compiled probe, once per session.
from kernelutil import kernel, old_kernel  # noqa: E402

# Per-module counts and times, printed at the end of the run (CI logs keep nothing else).
from module_tally import ModuleTally  # noqa: E402

# The object-store servers' fixtures.
from servers.fixtures import (  # noqa: E402
    azurite_server,
    cloud_table,
    gcs_server,
    moto_server,
    moto_tls_server,
)

# PySpark sessions: plain, and with delta-spark's jars where they can be had.
from sparkutil import delta_spark, mark_spark_items, spark  # noqa: E402
from table_registry import KEEP_DIR, TableRegistry  # noqa: E402

__all__ = [
    "azurite_server",
    "cloud_table",
    "delta_spark",
    "gcs_server",
    "kernel",
    "moto_server",
    "moto_tls_server",
    "old_kernel",
    "spark",
]


#: The module that compares every engine on every table made here: it runs last.
LAST_MODULE = "test_zz_compat_every_table.py"


_TALLY = ModuleTally("interop_tests, per module (tests by outcome; seconds):")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _TALLY.add(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _TALLY.lines():
        terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_spark_items(items)
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.interop)
    items.sort(key=lambda item: item.path.name == LAST_MODULE)  # stable: the rest keep order


@pytest.fixture(scope="session")
def made_tables(tmp_path_factory: pytest.TempPathFactory) -> TableRegistry:
    """Every Delta table the interop tests made so far (see ``table_registry``)."""
    root = tmp_path_factory.getbasetemp()
    registry = TableRegistry.under(root, root / KEEP_DIR)
    registry.keep.mkdir()
    return registry


@pytest.fixture(autouse=True)
def _collect_made_tables(
    request: pytest.FixtureRequest, made_tables: TableRegistry
) -> Iterator[None]:
    """After each test, copy the tables it made (or changed) into ``made_tables``."""
    yield
    made_tables.collect_after(request.node.nodeid)
