"""A table's CHECK constraints (``delta.constraints.<name>``), evaluated on the rows written.

delta-spark stores ``ALTER TABLE ... ADD CONSTRAINT name CHECK (expr)`` as the table property
``delta.constraints.<name> = expr`` and refuses a write with a row for which ``expr`` is not
true (false or null). deltalog evaluates the expressions its predicate grammar covers
(:mod:`deltalog.stats.predicate_sql`: comparisons with literals, ``IN``, ``BETWEEN``,
``LIKE``, ``IS [NOT] NULL``, ``AND``/``OR``/``NOT`` on top-level columns); a table with a
constraint outside it is refused for writing (``UnsupportedFeatureError``), never written
unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import ConstraintViolationError, InvalidPredicateError, UnsupportedFeatureError
from deltalog.protocol.property_keys import CONSTRAINT_PREFIX
from deltalog.protocol.schema import StructType
from deltalog.stats.predicate_sql import parse_predicate
from deltalog.stats.predicates import Predicate, matches

__all__ = ["CheckConstraint", "check_constraints", "enforce_checks"]


@dataclass(frozen=True)
class CheckConstraint:
    """One CHECK constraint: its name, its SQL and the predicate it parses to."""

    name: str
    sql: str
    predicate: Predicate


def check_constraints(
    configuration: Mapping[str, str | None], schema: StructType
) -> list[CheckConstraint]:
    """The table's CHECK constraints, parsed.

    Raises:
        UnsupportedFeatureError: A constraint deltalog cannot evaluate (naming it).
    """
    out: list[CheckConstraint] = []
    empty: pa.Table | None = None
    for key, sql in configuration.items():
        if not key.lower().startswith(CONSTRAINT_PREFIX) or sql is None:
            continue
        name = key[len(CONSTRAINT_PREFIX) :]
        try:
            predicate = parse_predicate(sql)
        except InvalidPredicateError as exc:
            raise _unsupported(name, sql, str(exc)) from exc
        unknown = sorted(predicate.columns() - set(schema.names))
        if unknown:
            raise _unsupported(name, sql, f"it names {unknown}, not top-level columns")
        if empty is None:
            arrow = pa.schema([f.remove_metadata() for f in schema.to_arrow()])
            empty = pa.Table.from_batches([], schema=arrow)  # empty_table() imports pandas
        try:
            matches(predicate, empty)  # a literal that does not fit its column
        except InvalidPredicateError as exc:
            raise _unsupported(name, sql, str(exc)) from exc
        out.append(CheckConstraint(name, sql, predicate))
    return out


def _unsupported(name: str, sql: str, why: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"CHECK constraint {name!r} ({sql}) is not an expression deltalog can evaluate ({why}); "
        "deltalog does not write the table rather than write it unchecked",
        feature="checkConstraints",
        operation="write",
    )


def enforce_checks(batch: pa.RecordBatch, checks: list[CheckConstraint]) -> None:
    """Refuse ``batch`` when a row makes a constraint false or null.

    Raises:
        ConstraintViolationError: Naming the constraint, how many rows and one of them.
    """
    table = pa.Table.from_batches([batch])
    for check in checks:
        ok = matches(check.predicate, table)
        bad = table.num_rows - (pc.sum(ok).as_py() or 0)
        if bad:
            row = table.filter(pc.invert(ok)).slice(0, 1).to_pylist()[0]
            raise ConstraintViolationError(
                f"CHECK constraint {check.name} ({check.sql}) violated by {bad} row(s), e.g. "
                f"{orjson.dumps(row, default=str).decode()}"
            )
