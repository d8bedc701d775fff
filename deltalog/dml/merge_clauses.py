"""The clauses of a MERGE, as the builder collects them and as the commit records them.

A clause is one of ``WHEN MATCHED [AND cond] THEN UPDATE SET ... | UPDATE SET * | DELETE``,
``WHEN NOT MATCHED [AND cond] THEN INSERT (...) | INSERT *`` and
``WHEN NOT MATCHED BY SOURCE [AND cond] THEN UPDATE SET ... | DELETE``; clauses of each kind
apply in the order given, the first whose condition holds taking a row (as in delta-spark).
:func:`check_clauses` refuses what delta-spark refuses: no clause, or a clause without a
condition before another of its kind (no row would reach the later one).
:func:`merge_parameters` gives the commit's ``operationParameters`` as delta-spark's
``DeltaOperations.Merge`` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from deltalog.errors import InvalidExpressionError, InvalidMergeClausesError, InvalidPredicateError
from deltalog.stats.sql_expression import Expr, parse_expression

__all__ = [
    "MATCHED",
    "NOT_MATCHED",
    "NOT_MATCHED_BY_SOURCE",
    "Clause",
    "check_clauses",
    "merge_parameters",
]

MATCHED = "matched"
NOT_MATCHED = "not_matched"
NOT_MATCHED_BY_SOURCE = "not_matched_by_source"

#: Each kind as a MERGE statement spells it (in error messages).
_SPELLED = {
    MATCHED: "WHEN MATCHED",
    NOT_MATCHED: "WHEN NOT MATCHED",
    NOT_MATCHED_BY_SOURCE: "WHEN NOT MATCHED BY SOURCE",
}


@dataclass(frozen=True)
class Clause:
    """One WHEN clause.

    Attributes:
        kind: :data:`MATCHED`, :data:`NOT_MATCHED` or :data:`NOT_MATCHED_BY_SOURCE`.
        action: ``update``, ``delete`` or ``insert``.
        condition: The clause's condition, parsed (``None``: always).
        condition_text: The condition as given.
        assignments: Column -> value (SQL text or a Python literal) for update and insert.
        star: ``UPDATE SET *`` / ``INSERT *``: every target column from the source column of
            the same name.
        except_cols: Columns a star clause leaves out.
    """

    kind: str
    action: str
    condition: Expr | None = None
    condition_text: str | None = None
    assignments: Mapping[str, Any] | None = None
    star: bool = False
    except_cols: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        kind: str,
        action: str,
        predicate: str | None,
        assignments: Mapping[str, Any] | None = None,
        *,
        star: bool = False,
        except_cols: Sequence[str] | None = None,
    ) -> Clause:
        """Check and parse a clause as the builder receives it.

        Raises:
            InvalidPredicateError: The condition does not parse.
            InvalidExpressionError: Bad assignments or ``except_cols``.
        """
        condition = None
        if predicate is not None:
            if not isinstance(predicate, str):
                raise InvalidPredicateError(
                    f"a clause condition is SQL text, not {type(predicate).__name__}"
                )
            condition = parse_expression(predicate, error=InvalidPredicateError)
        if assignments is not None:
            if not isinstance(assignments, Mapping):
                raise InvalidExpressionError(
                    f"the columns to set are a mapping, not {type(assignments).__name__}"
                )
            if not assignments:
                raise InvalidExpressionError(f"{action} needs at least one column to set")
            assignments = dict(assignments)
        excluded: tuple[str, ...] = ()
        if except_cols is not None:
            if isinstance(except_cols, str) or not all(isinstance(c, str) for c in except_cols):
                raise InvalidExpressionError("except_cols is a list of column names")
            excluded = tuple(except_cols)
        return cls(kind, action, condition, predicate, assignments, star, excluded)

    def parameter(self) -> dict[str, str]:
        """The clause in ``matchedPredicates`` & co. (``predicate`` left out when none)."""
        out: dict[str, str] = {}
        if self.condition is not None:
            out["predicate"] = self.condition_text or str(self.condition)
        out["actionType"] = self.action
        return out


def check_clauses(clauses: Sequence[Clause]) -> None:
    """Refuse the clause lists delta-spark refuses, before anything is read or written.

    Raises:
        InvalidMergeClausesError: No clause, or a clause without a condition followed by
            another clause of its kind (delta-spark's
            ``DELTA_NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION`` and its ``NOT MATCHED`` and
            ``NOT MATCHED BY SOURCE`` twins): only the last clause of a kind may omit it.
    """
    if not clauses:
        raise InvalidMergeClausesError("a merge needs at least one when_... clause")
    for kind, spelled in _SPELLED.items():
        of_kind = [c for c in clauses if c.kind == kind]
        for position, clause in enumerate(of_kind[:-1], start=1):
            if clause.condition is None:
                raise InvalidMergeClausesError(
                    f"{spelled} clause {position} of {len(of_kind)} ({spelled} THEN "
                    f"{clause.action.upper()}) has no condition, so no row would reach the "
                    f"{spelled} clauses after it: only the last {spelled} clause may omit its "
                    "condition (delta-spark refuses it too)"
                )


def merge_parameters(condition_text: str, clauses: Sequence[Clause]) -> dict[str, Any]:
    """``operationParameters`` of the MERGE commit, as delta-spark records them."""

    def listed(kind: str) -> str:
        return orjson.dumps([c.parameter() for c in clauses if c.kind == kind]).decode()

    return {
        "predicate": orjson.dumps([condition_text]).decode(),
        "matchedPredicates": listed(MATCHED),
        "notMatchedPredicates": listed(NOT_MATCHED),
        "notMatchedBySourcePredicates": listed(NOT_MATCHED_BY_SOURCE),
    }
