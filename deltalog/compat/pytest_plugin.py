"""The ``delta_compat`` pytest fixture: check engine agreement from another project's tests.

Enable it with ``pytest_plugins = ["deltalog.compat.pytest_plugin"]`` in a ``conftest.py``
(it is not loaded automatically, so installing deltalog changes no one's test run). The
fixture is a function with :func:`deltalog.compat.compare`'s arguments that runs the
comparison and fails the test, with the report's text, unless all engines agree::

    def test_my_writer_is_readable_everywhere(delta_compat, tmp_path):
        write_my_table(tmp_path / "t")
        report = delta_compat(tmp_path / "t", require=["delta-rs"])
        assert report.agree

``--delta-compat-require ENGINE`` (repeatable) adds required engines to every call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from deltalog.compat.api import compare
from deltalog.compat.report import CompatReport

CompatFixture = Callable[..., CompatReport]


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--delta-compat-require ENGINE``."""
    parser.addoption(
        "--delta-compat-require",
        action="append",
        default=[],
        metavar="ENGINE",
        help="deltalog compat: fail unless this engine runs (repeatable)",
    )


@pytest.fixture
def delta_compat(request: pytest.FixtureRequest) -> CompatFixture:
    """Run :func:`deltalog.compat.compare` and fail the test unless the engines agree."""
    always: list[str] = list(request.config.getoption("--delta-compat-require") or [])

    def check(
        uri: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        require: Iterable[str] = (),
        **kwargs: Any,
    ) -> CompatReport:
        uris: str | list[str] = (
            os.fspath(uri) if isinstance(uri, str | os.PathLike) else [os.fspath(u) for u in uri]
        )
        report = compare(uris, require=[*always, *require], **kwargs)
        if not report.agree:
            pytest.fail("deltalog compat: engines disagree\n" + report.render(), pytrace=False)
        return report

    return check
