"""The per-module table the interop tests print at the end of a run (``module_tally``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from module_tally import ModuleTally


def _report(nodeid: str, when: str, outcome: str, duration: float, **extra: Any) -> Any:
    return SimpleNamespace(
        nodeid=nodeid,
        when=when,
        outcome=outcome,
        duration=duration,
        skipped=outcome == "skipped",
        failed=outcome == "failed",
        **extra,
    )


def test_each_test_is_counted_once_by_its_deciding_phase() -> None:
    tally = ModuleTally("t")
    a = "interop_tests/test_a.py::test_one"
    for when, outcome, duration in [
        ("setup", "passed", 1.0),
        ("call", "passed", 2.0),
        ("teardown", "passed", 0.5),
    ]:
        tally.add(_report(a, when, outcome, duration))
    tally.add(_report("interop_tests/test_a.py::test_two", "setup", "skipped", 0.25))
    tally.add(_report("interop_tests/test_b.py::test_x", "setup", "failed", 0.0))
    tally.add(_report("interop_tests/test_b.py::test_y", "call", "skipped", 0.0, wasxfail=""))
    tally.add(_report("interop_tests/test_b.py::test_z", "call", "failed", 0.0))

    assert tally.counts["test_a.py"] == {"passed": 1, "skipped": 1}
    assert tally.counts["test_b.py"] == {"error": 1, "xfailed": 1, "failed": 1}
    assert tally.seconds["test_a.py"] == 3.75
    tally.add(_report("tests/write/test_a.py::test_w", "call", "passed", 1.0))
    assert tally.counts["write/test_a.py"] == {"passed": 1}  # not test_a.py of another folder
    lines = tally.lines()
    assert lines[0] == "t"
    assert lines[-1].split() == ["total", "2", "1", "1", "1", "1", "4.8"]
