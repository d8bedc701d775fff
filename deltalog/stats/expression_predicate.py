"""SQL conditions beyond the partition-predicate grammar, as :class:`Predicate` trees.

A DELETE or UPDATE condition such as ``"price * qty > 100 AND day = '2024-01-01'"`` compares
columns with each other or with computed values, which the grammar of
:mod:`deltalog.stats.predicate_sql` does not take. :func:`row_predicate` parses such text with
the expression parser (:mod:`deltalog.stats.sql_expression`) and turns it into a predicate tree
whose ``AND``/``OR``/``NOT`` and ``column <op> literal`` nodes are the ordinary ones (so
statistics and partition values prune files for them as usual), and whose other nodes are
:class:`ExpressionPredicate` leaves, evaluated row by row (a file is kept for them, unless they
name partition columns only, which are evaluated exactly per file).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from deltalog.errors import InvalidExpressionError, InvalidPredicateError
from deltalog.stats.expression_eval import Scope, evaluate_condition
from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicate_sql import parse_predicate
from deltalog.stats.predicates import (
    And,
    Comparison,
    In,
    Like,
    Not,
    Or,
    Predicate,
)
from deltalog.stats.predicates import IsNull as IsNullPredicate
from deltalog.stats.sql_expression import (
    Binary,
    Column,
    Expr,
    InList,
    IsNull,
    Literal,
    Unary,
    column_refs,
    parse_expression,
)
from deltalog.stats.sql_expression import Like as LikeExpr

__all__ = ["ExpressionPredicate", "row_predicate", "to_predicate"]

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True, eq=False)
class ExpressionPredicate(Predicate):
    """A boolean SQL expression over a table's columns, evaluated row by row."""

    expression: Expr

    def _columns(self) -> set[str]:
        return {ref.qualifier or ref.name for ref in column_refs(self.expression)}

    def _mask(self, table: pa.Table) -> pa.Array:
        try:
            return evaluate_condition(self.expression, Scope.of(table, error=InvalidPredicateError))
        except InvalidExpressionError as exc:  # raised by a nested literal check
            raise InvalidPredicateError(str(exc)) from exc

    def __str__(self) -> str:
        return str(self.expression)


def row_predicate(given: PredicateLike) -> Predicate:
    """``given`` (any predicate form, or SQL condition text) as a predicate on rows.

    SQL text is parsed with the partition-predicate grammar when it fits (exactly what the rest
    of the API does with it), else as an expression (:func:`to_predicate`).

    Raises:
        InvalidPredicateError: It does not parse.
    """
    if not isinstance(given, str):
        return as_predicate(given)
    try:
        return parse_predicate(given)
    except InvalidPredicateError:
        expr = parse_expression(given, error=InvalidPredicateError)
    return to_predicate(expr)


def to_predicate(expr: Expr) -> Predicate:
    """A predicate tree for a boolean expression (see the module docstring)."""
    if isinstance(expr, Binary) and expr.op in ("AND", "OR"):
        joined = And if expr.op == "AND" else Or
        return joined(to_predicate(expr.left), to_predicate(expr.right))
    if isinstance(expr, Unary) and expr.op == "NOT":
        return Not(to_predicate(expr.operand))
    simple = _simple(expr)
    return simple if simple is not None else ExpressionPredicate(expr)


def _simple(expr: Expr) -> Predicate | None:
    """The ordinary predicate node for ``column <op> literal`` and the like, if it is one."""
    if isinstance(expr, Binary) and expr.op in _FLIP:
        left, right = _plain_column(expr.left), _literal(expr.right)
        if left is not None and right is not None:
            return Comparison(left, expr.op, right[0])
        left, right = _plain_column(expr.right), _literal(expr.left)
        if left is not None and right is not None:
            return Comparison(left, _FLIP[expr.op], right[0])
        return None
    if isinstance(expr, IsNull):
        name = _plain_column(expr.operand)
        return None if name is None else IsNullPredicate(name, negated=expr.negated)
    if isinstance(expr, InList):
        name = _plain_column(expr.operand)
        values = [_literal(i) for i in expr.items]
        if name is None or any(v is None for v in values):
            return None
        return In(name, tuple(v[0] for v in values if v is not None), negated=expr.negated)
    if isinstance(expr, LikeExpr):
        name = _plain_column(expr.operand)
        pattern = _literal(expr.pattern)
        if name is None or pattern is None or not isinstance(pattern[0], str):
            return None
        if not (isinstance(expr.pattern, Literal) and expr.pattern.kind == "string"):
            return None
        return Like(name, pattern[0], negated=expr.negated)
    return None


def _plain_column(expr: Expr) -> str | None:
    return expr.name if isinstance(expr, Column) and expr.qualifier is None else None


def _literal(expr: Expr) -> tuple[object] | None:
    """``(value,)`` of a literal as the predicate grammar keeps it (text), else ``None``."""
    if not isinstance(expr, Literal):
        return None
    if expr.kind == "null":
        return (None,)
    if expr.kind == "boolean":
        return ("true" if expr.value else "false",)
    return (str(expr.value),)
