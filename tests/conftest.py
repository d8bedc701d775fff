"""Shared fixtures: the golden-table location and one log store per backend.

``log_store`` yields a :class:`StoreUnderTest` for every backend in ``STORE_BACKENDS``. To run
the behaviour suite against another store (s3, gcs, azure, ...), write a factory below that
returns a ``StoreUnderTest`` (it may start a server through a session fixture, with
``request.getfixturevalue``) and add it to ``STORE_BACKENDS``; each entry becomes one
parametrization id.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from logstores import LocalLogStore, LogStore, MemoryLogStore

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
GOLDEN_DIR = REPO_ROOT.parent / "shared" / "delta-golden"

# Helper modules in tests/ (golden_manifest, ...) import by bare name; child processes started
# with "spawn" inherit this sys.path, so they can import the test modules too.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


class StoreUnderTest(NamedTuple):
    """A store and a fresh, empty location on it that the test owns (unpacks as a pair).

    Attributes:
        store: The log store.
        base: A location in the store's notation under which nothing exists yet.
    """

    store: LogStore
    base: str

    def path(self, *parts: str) -> str:
        """Location of ``parts`` under ``base``."""
        return LogStore.join(self.base, *parts)


def _memory_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    return StoreUnderTest(MemoryLogStore(), f"memory://contract-{uuid.uuid4().hex}/table")


def _local_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    return StoreUnderTest(LocalLogStore(), str(tmp_path / "table"))


#: backend id -> factory. Add s3/gcs/azure here; the id shows up in the test names.
STORE_BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], StoreUnderTest]] = {
    "memory": _memory_store,
    "local": _local_store,
}


@pytest.fixture(params=list(STORE_BACKENDS), ids=list(STORE_BACKENDS))
def log_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    """One log store per backend, with an empty base location."""
    return STORE_BACKENDS[request.param](request, tmp_path)
