"""Shared fixtures: the golden-table location, the test servers, and one log store per backend.

``log_store`` yields a :class:`StoreUnderTest` for every backend in ``STORE_BACKENDS``: memory,
local, and the object stores against real servers on 127.0.0.1 started once per session (moto
for S3 and DynamoDB, our GCS server, Azurite). ``cloud_table`` yields a fresh table location
(URI + storage options) on each object store, for tests that go through ``DeltaTable``.

A server that cannot start skips its tests with the reason, unless ``DELTALOG_REQUIRE_SERVERS=1``
(set by ``scripts/test.sh``), which turns that into a failure.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from deltalog.logstores import LocalLogStore, LogStore, MemoryLogStore, open_store

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
GOLDEN_DIR = REPO_ROOT.parent / "shared" / "delta-golden"

# Helper modules in tests/ (golden_manifest, ...) import by bare name; child processes started
# with "spawn" inherit this sys.path, so they can import the test modules too.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from testpaths import share_test_modules  # noqa: E402

share_test_modules()

from servers.fixtures import (  # noqa: E402
    BUCKET,
    CLOUD_BACKENDS,
    DYNAMO_TABLE,
    CloudTable,
    azure_options,
    azurite_server,
    cloud_location,
    cloud_table,
    gcs_options,
    gcs_server,
    moto_server,
    s3_options,
)

__all__ = [
    "BUCKET",
    "DYNAMO_TABLE",
    "CloudTable",
    "azure_options",
    "azurite_server",
    "cloud_table",
    "gcs_options",
    "gcs_server",
    "moto_server",
    "s3_options",
]


class StoreUnderTest(NamedTuple):
    """A store and a fresh, empty location on it that the test owns.

    Attributes:
        store: The log store.
        base: A location in the store's notation under which nothing exists yet.
        uri: ``base`` as a URI that ``open_store``/``DeltaTable`` accept.
        options: The storage options that open it.
    """

    store: LogStore
    base: str
    uri: str = ""
    options: dict[str, str] = {}  # noqa: RUF012 - NamedTuple default, never mutated

    def path(self, *parts: str) -> str:
        """Location of ``parts`` under ``base``."""
        return LogStore.join(self.base, *parts)


# --------------------------------------------------------------------------- log_store


def _memory_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    uri = f"memory://contract-{uuid.uuid4().hex}/table"
    return StoreUnderTest(MemoryLogStore(), uri, uri)


def _local_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    base = str(tmp_path / "table")
    return StoreUnderTest(LocalLogStore(), base, base)


def _cloud_store(backend: str) -> Callable[[pytest.FixtureRequest, Path], StoreUnderTest]:
    def factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
        location = cloud_location(request, backend)
        store, root = open_store(location.uri, location.options)
        return StoreUnderTest(store, root, location.uri, location.options)

    return factory


#: backend id -> factory; the id shows up in the test names.
STORE_BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], StoreUnderTest]] = {
    "memory": _memory_store,
    "local": _local_store,
    **{backend: _cloud_store(backend) for backend in CLOUD_BACKENDS},
}


@pytest.fixture(params=list(STORE_BACKENDS), ids=list(STORE_BACKENDS))
def log_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    """One log store per backend, with an empty base location."""
    return STORE_BACKENDS[request.param](request, tmp_path)


# PySpark sessions (plain and delta-spark), shared with interop_tests/.
from sparkutil import delta_spark, mark_spark_items, spark  # noqa: E402, F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_spark_items(items)


# Per-module outcomes and seconds at the end of a run (a passing CI keeps only its log).
from module_tally import ModuleTally  # noqa: E402

_TALLY = ModuleTally("tests, per module (tests by outcome; seconds):")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _TALLY.add(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _TALLY.lines():
        terminalreporter.write_line(line)
