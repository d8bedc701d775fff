"""``deltalog compat`` on the tables the interop tests made (issue 34).

``conftest.py`` collects, after each interop test, every Delta table it made (see
``table_registry``); this module runs last (``conftest.LAST_MODULE``) and asks the engines about
them at once, up to ``PER_TEST`` distinct tables per making test function (its parametrized cases
count as one; first and last kept), which keeps every kind of table and CI's time: deltalog,
delta-rs and Kernel in one process each for all tables (one JVM for Kernel), delta-spark in the
tests' own Spark session (``SessionSparkEngine``). Each table version must agree, or differ only
by a known engine limitation (listed in ``deltalog.compat.limits.KNOWN`` and docs/compat.md, the
same classification as the golden tables' sweep in ``test_compat.py``); otherwise the test fails
naming the table, the test that made it, the engine and the field.

Run alone (no interop test before it) it compares nothing and says so.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from table_registry import MadeTable, TableRegistry

from deltalog.compat import compare
from deltalog.compat.model import TableResult
from deltalog.compat.spark_session_engine import SessionSparkEngine

ENGINES = ["deltalog", "delta-rs", "kernel", "delta-spark"]
#: Distinct tables compared per making test function (parametrized cases together).
PER_TEST = 2


def _sample(tables: list[MadeTable]) -> list[MadeTable]:
    """Per making test function, its first ``PER_TEST - 1`` tables and its last, in made order."""
    by_test: dict[str, list[MadeTable]] = {}
    for made in tables:
        by_test.setdefault(made.made_by[0].split("[", 1)[0], []).append(made)
    keep: set[int] = set()
    for group in by_test.values():
        chosen = group if len(group) <= PER_TEST else [*group[: PER_TEST - 1], group[-1]]
        keep.update(id(m) for m in chosen)
    return [m for m in tables if id(m) in keep]


def _known(result: TableResult) -> bool:
    """Whether a table version agrees only thanks to a listed limitation."""
    return any(d.known for d in result.differences) or any(
        o.state == "known" for o in result.outcomes.values()
    )


def _problems(result: TableResult, made: MadeTable) -> list[str]:
    """What is wrong with one table version, naming the table, its maker, engine and field."""
    where = f"{made.source.name} ({result.label}), made by {', '.join(made.made_by)}"
    lines = [f"{where}: {result.problem}"] if result.problem else []
    ok = any(o.state == "ok" for o in result.outcomes.values())
    for engine, outcome in result.outcomes.items():
        if outcome.state == "crashed" or (outcome.state == "refused" and ok):
            lines.append(f"{where}: {engine} {outcome.state}: {outcome.detail}")
    for diff in result.differences:
        if diff.known is None:
            seen = "; ".join(f"{', '.join(names)}: {what}" for names, what in diff.groups)
            lines.append(f"{where}: field {diff.field} differs: {seen}")
    return lines


# On the default line (delta-spark 4.4); the 3.5 pass checks delta-spark 3.3's probe in
# test_compat.py's tables_made_here, for CI's time.
@pytest.mark.one_spark_line
def test_every_table_the_interop_tests_made_agrees_or_is_a_known_limitation(
    made_tables: TableRegistry, delta_spark: Any
) -> None:
    made = made_tables.distinct()
    tables = _sample(made)
    if not tables:
        print("no interop test ran before this one: no tables to compare")
        return
    start = time.monotonic()
    engines = [*ENGINES[:3], SessionSparkEngine(delta_spark)]  # the tests' own Spark session
    report = compare([str(t.copy) for t in tables], engines=engines, require=ENGINES)
    took = time.monotonic() - start
    assert [e.state for e in report.engines] == ["ran"] * len(ENGINES), report.render()
    by_copy = {str(t.copy): t for t in tables}
    problems = [
        line
        for result in report.tables
        if not result.agree
        for line in _problems(result, by_copy[result.table])
    ]
    known = [r for r in report.tables if r.agree and _known(r)]
    print(
        f"compat: {len(made_tables.tables)} tables made, {len(made)} distinct, {len(tables)} "
        f"compared (at most {PER_TEST} per test), "
        f"{len(report.tables)} versions compared in {took:.0f} s: "
        f"{len(report.tables) - len(known) - len(problems)} agree, {len(known)} known limitations"
    )
    if problems:
        pytest.fail("engines disagree:\n" + "\n".join(problems), pytrace=False)
