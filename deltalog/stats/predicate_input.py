"""Predicates from the forms callers pass: a :class:`Predicate`, SQL text, a dict, or tuples.

:func:`as_predicate` is the one entry point every API that takes ``predicate=``/``filter=`` uses,
so the accepted forms are the same everywhere: SQL text (:mod:`deltalog.stats.predicate_sql`),
``{"date": "2024-01-01"}`` (AND of equalities, ``None`` meaning IS NULL), a list of
``(column, op, value)`` tuples (AND), or a list of such lists (OR of ANDs), as in pyarrow's and
delta-rs's filters, or a ``pyarrow.compute.Expression`` (:mod:`deltalog.stats.arrow_expression`).
It sits above both :mod:`deltalog.stats.predicates` (the expression tree) and
:mod:`deltalog.stats.predicate_sql` (the parser that builds it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from deltalog.errors import InvalidPredicateError
from deltalog.stats.predicate_sql import parse_predicate
from deltalog.stats.predicates import (
    COMPARE_KERNELS,
    OPERATOR_ALIASES,
    TRUE,
    And,
    Column,
    Comparison,
    In,
    Or,
    Predicate,
    col,
)

__all__ = ["Filters", "PredicateLike", "as_predicate"]


Filters: TypeAlias = Sequence[tuple[str, str, Any]] | Sequence[Sequence[tuple[str, str, Any]]]
PredicateLike: TypeAlias = Predicate | str | Mapping[str, Any] | Filters | Any


def as_predicate(given: PredicateLike) -> Predicate:
    """Turn any accepted predicate form into a :class:`Predicate`.

    Raises:
        InvalidPredicateError: The form or an operator is not recognised, or SQL text does not
            parse.
    """
    if isinstance(given, Predicate):
        return given
    if type(given).__name__ == "Expression" and type(given).__module__.startswith("pyarrow"):
        from deltalog.stats.arrow_expression import ArrowExpression  # loads pyarrow.acero

        return ArrowExpression(given)
    if isinstance(given, Column):
        raise InvalidPredicateError(f"{given.name!r} is a column, not a predicate")
    if isinstance(given, str):
        return parse_predicate(given)
    if isinstance(given, Mapping):
        terms: list[Predicate] = [col(str(k)) == v for k, v in given.items()]
        return _fold(terms, And) if terms else TRUE
    if isinstance(given, bytes) or not isinstance(given, Sequence):
        raise InvalidPredicateError(f"not a predicate: {given!r}")
    if not given:
        return TRUE
    if all(_is_term(t) for t in given):
        return _fold([_term(t) for t in given], And)
    groups = []
    for group in given:
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or not group:
            raise InvalidPredicateError(f"not a list of (column, op, value) tuples: {group!r}")
        if not all(_is_term(t) for t in group):
            raise InvalidPredicateError(f"not a list of (column, op, value) tuples: {group!r}")
        groups.append(_fold([_term(t) for t in group], And))
    return _fold(groups, Or)


def _is_term(t: object) -> bool:
    return isinstance(t, tuple) and len(t) == 3 and isinstance(t[0], str) and isinstance(t[1], str)


def _term(t: Any) -> Predicate:
    name, op, value = t
    op = OPERATOR_ALIASES.get(op.strip().lower(), op.strip().lower())
    column = col(name)
    if op in COMPARE_KERNELS:
        if value is None and op in ("=", "!="):
            return column == None if op == "=" else column != None  # noqa: E711
        return Comparison(name, op, value)
    if op in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidPredicateError(f"{op!r} needs a list of values, got {value!r}")
        return In(name, tuple(value), negated=op == "not in")
    raise InvalidPredicateError(f"unknown operator {t[1]!r} in {t!r}")


def _fold(terms: list[Predicate], cls: type[And] | type[Or]) -> Predicate:
    out = terms[0]
    for term in terms[1:]:
        out = cls(out, term)
    return out
