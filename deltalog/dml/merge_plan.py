"""How a MERGE will run, worked out before any file is read.

:class:`MergePlan` resolves every column the merge names to the target or the source (by the
aliases, else by which side has it: a name both sides have must be qualified), and splits the
merge condition's top-level ``AND`` into

* **join keys**: ``target expression = source expression`` (hash-joined in Arrow);
* **target-only** conjuncts: they prune the candidate files (partition values, statistics)
  and, on partition columns, are what the transaction records as read;
* **source-only** conjuncts: a source row failing one matches nothing;
* the **rest**, evaluated on each joined pair.

It refuses a clause list delta-spark refuses (no clause, or a clause without a condition
before another of its kind: :func:`~deltalog.dml.merge_clauses.check_clauses`), resolves the
clauses' assignments (``UPDATE SET *`` / ``INSERT *`` become one assignment per target column
from the source column of the same name), evolves the schema with
``schema_mode="merge"`` (the source's new columns are added when a ``*`` clause exists, as
delta-spark's ``autoMerge``), and lists the target columns the scan must read. Every
expression is then evaluated once on empty tables, so unknown columns and type errors are
refused before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from deltalog.errors import InvalidExpressionError, InvalidInputError, InvalidPredicateError
from deltalog.log.snapshot import Snapshot
from deltalog.protocol.schema import StructType
from deltalog.stats.expression_eval import Scope, evaluate, evaluate_condition, widest_type
from deltalog.stats.expression_predicate import to_predicate
from deltalog.stats.predicates import Predicate
from deltalog.stats.sql_expression import (
    Binary,
    Column,
    Expr,
    column_refs,
    conjuncts,
    map_columns,
)
from deltalog.write.assignments import Assignment, parse_assignments

from .merge_clauses import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, Clause, check_clauses

__all__ = ["MergePlan", "ResolvedClause"]

TARGET, SOURCE = "t", "s"


@dataclass(frozen=True)
class ResolvedClause:
    """A clause with its assignments resolved against the output schema."""

    clause: Clause
    assignments: list[Assignment] = field(default_factory=list)

    @property
    def action(self) -> str:
        """``update``, ``delete`` or ``insert``."""
        return self.clause.action

    @property
    def condition(self) -> Expr | None:
        """The clause's condition."""
        return self.clause.condition


class MergePlan:
    """The analysed merge (see the module docstring).

    Args:
        snapshot: The target's snapshot.
        source: The source rows.
        condition: The merge condition, parsed.
        clauses: The WHEN clauses, in the order given.
        target_alias: The target's alias (``target`` when none was given).
        source_alias: The source's alias (``source`` when none was given).
        output_schema: The schema rows are written with (the target's, or the evolved one).

    Raises:
        InvalidMergeClausesError: No clause, or a clause without a condition before another
            of its kind.
        InvalidPredicateError: The condition or a clause condition names an unknown or
            ambiguous column, or is not boolean.
        InvalidExpressionError: An assignment is refused (unknown column, type mismatch, a
            ``*`` clause without the source column and without schema evolution).
    """

    def __init__(
        self,
        snapshot: Snapshot,
        source: pa.Table,
        condition: Expr,
        clauses: Sequence[Clause],
        *,
        target_alias: str,
        source_alias: str,
        output_schema: StructType,
        evolve: bool,
    ) -> None:
        check_clauses(clauses)
        self.snapshot = snapshot
        self.source = source
        self.target_alias = target_alias
        self.source_alias = source_alias
        self.target_schema = snapshot.schema
        self.output_schema = output_schema
        self._target_names = snapshot.schema.names
        self._source_names = source.column_names
        self.condition = condition
        self.keys: list[tuple[Expr, Expr]] = []
        self.target_only: list[Expr] = []
        self.source_only: list[Expr] = []
        self.residual: list[Expr] = []
        for part in conjuncts(condition):
            self._classify(part)
        self.matched = [self._resolve(c, evolve) for c in clauses if c.kind == MATCHED]
        self.not_matched = [self._resolve(c, evolve) for c in clauses if c.kind == NOT_MATCHED]
        self.by_source = [
            self._resolve(c, evolve) for c in clauses if c.kind == NOT_MATCHED_BY_SOURCE
        ]
        self.needed = self._needed_columns()
        self._check()

    # ------------------------------------------------------------------ sides
    def side(self, ref: Column, error: type[InvalidInputError]) -> str:
        """``TARGET`` or ``SOURCE``: where the column ``ref`` names lives."""
        qualifier = ref.qualifier
        if qualifier is not None:
            for alias, names, side in (
                (self.target_alias, self._target_names, TARGET),
                (self.source_alias, self._source_names, SOURCE),
            ):
                if qualifier.lower() == alias.lower():
                    if not _has(names, ref.name):
                        raise error(f"{alias!r} has no column {ref.name!r} (columns: {names})")
                    return side
            return self.side(Column(qualifier), error)  # a struct column and its field
        in_target = _has(self._target_names, ref.name)
        in_source = _has(self._source_names, ref.name)
        if in_target and in_source:
            raise error(
                f"column {ref.name!r} is in both the target and the source: qualify it "
                f"({self.target_alias}.{ref.name} or {self.source_alias}.{ref.name})"
            )
        if in_target:
            return TARGET
        if in_source:
            return SOURCE
        raise error(
            f"unknown column {ref.name!r} (target columns: {self._target_names}, source "
            f"columns: {self._source_names})"
        )

    def sides(self, expr: Expr, error: type[InvalidInputError]) -> set[str]:
        """The sides ``expr`` names."""
        return {self.side(ref, error) for ref in column_refs(expr)}

    def _classify(self, part: Expr) -> None:
        sides = self.sides(part, InvalidPredicateError)
        if isinstance(part, Binary) and part.op == "=":
            left = self.sides(part.left, InvalidPredicateError)
            right = self.sides(part.right, InvalidPredicateError)
            if left == {TARGET} and right == {SOURCE}:
                self.keys.append((part.left, part.right))
                return
            if left == {SOURCE} and right == {TARGET}:
                self.keys.append((part.right, part.left))
                return
        if sides == {TARGET}:
            self.target_only.append(part)
        elif sides == {SOURCE}:
            self.source_only.append(part)
        else:
            self.residual.append(part)

    def _top(self, ref: Column) -> str:
        """The top-level column a reference to the target names (a struct's, for a field)."""
        if ref.qualifier is None or ref.qualifier.lower() == self.target_alias.lower():
            return ref.name
        return ref.qualifier

    def target_predicate(self) -> Predicate | None:
        """The target-only conjuncts as a predicate on the target's (unqualified) columns."""
        if not self.target_only:
            return None
        joined = self.target_only[0]
        for part in self.target_only[1:]:
            joined = Binary("AND", joined, part)
        return to_predicate(map_columns(joined, self._unqualified))

    def _unqualified(self, ref: Column) -> Expr:
        if ref.qualifier is not None and ref.qualifier.lower() == self.target_alias.lower():
            return Column(_name(self._target_names, ref.name))
        return ref

    # ------------------------------------------------------------------ clauses
    def _resolve(self, clause: Clause, evolve: bool) -> ResolvedClause:
        if clause.action == "delete":
            return ResolvedClause(clause)
        if not clause.star:
            assert clause.assignments is not None
            sets = parse_assignments(
                clause.assignments, self.output_schema, alias=self.target_alias
            )
            return ResolvedClause(clause, sets)
        excluded = {c.lower() for c in clause.except_cols}
        sets = []
        for name in self.output_schema.names:
            if name.lower() in excluded:
                continue
            source = _name_or_none(self._source_names, name)
            if source is None:
                if evolve:
                    continue  # kept (update) or null (insert), as delta-spark with autoMerge
                raise InvalidExpressionError(
                    f"{'UPDATE SET' if clause.action == 'update' else 'INSERT'} * needs a "
                    f"source column {name!r} (source columns: {self._source_names}); merge with "
                    "schema_mode='merge', list the columns, or use except_cols"
                )
            expression = Column(source, self.source_alias)
            sets.append(Assignment(name, expression, None, f"{self.source_alias}.{source}"))
        return ResolvedClause(clause, sets)

    def _needed_columns(self) -> list[str]:
        """Target columns the scan reads: those expressions name, and those updates keep."""
        wanted: set[str] = set()

        def add(expr: Expr | None, error: type[InvalidInputError]) -> None:
            if expr is None:
                return
            for ref in column_refs(expr):
                if self.side(ref, error) == TARGET:
                    name = _name_or_none(self._target_names, self._top(ref))
                    if name is not None:
                        wanted.add(name)

        add(self.condition, InvalidPredicateError)
        for resolved in (*self.matched, *self.by_source, *self.not_matched):
            add(resolved.condition, InvalidPredicateError)
            for assignment in resolved.assignments:
                add(assignment.expression, InvalidExpressionError)
            if resolved.action == "update":
                assigned = {a.column for a in resolved.assignments}
                wanted |= {n for n in self._target_names if n not in assigned}
        return [n for n in self._target_names if n in wanted]

    # ------------------------------------------------------------------ checks
    def empty_scope(
        self,
        *,
        target: bool = True,
        source: bool = True,
        error: type[InvalidInputError] = InvalidExpressionError,
    ) -> Scope:
        """A scope of zero rows with the target's needed columns and the source's."""
        arrow = pa.schema([f.remove_metadata() for f in self.target_schema.to_arrow()])
        tables = {}
        if target:
            tables[self.target_alias] = pa.Table.from_batches([], schema=arrow).select(self.needed)
        if source:
            tables[self.source_alias] = self.source.slice(0, 0)
        return Scope(tables)

    def _check(self) -> None:
        on = self.empty_scope(error=InvalidPredicateError)
        for part in (*self.target_only, *self.source_only, *self.residual):
            _condition(part, on)
        for target_key, source_key in self.keys:
            _keys(evaluate(target_key, on), evaluate(source_key, on), target_key, source_key)
        both = self.empty_scope()
        arrow = self.output_schema.to_arrow()
        for resolved, scope in (
            *((r, both) for r in self.matched),
            *((r, self.empty_scope(source=False)) for r in self.by_source),
            *((r, self.empty_scope(target=False)) for r in self.not_matched),
        ):
            if resolved.condition is not None:
                _condition(resolved.condition, scope)
            for assignment in resolved.assignments:
                assignment.values(scope, arrow.field(assignment.column).type)


def _keys(left: pa.Array, right: pa.Array, left_expr: Expr, right_expr: Expr) -> None:
    """Refuse join keys whose types cannot be compared."""
    types = [t for t in (left.type, right.type) if not pa.types.is_null(t)]
    if types and widest_type(types) is None:
        raise InvalidPredicateError(
            f"cannot compare {left_expr} ({left.type}) with {right_expr} ({right.type})"
        )


def _condition(expr: Expr, scope: Scope) -> None:
    try:
        evaluate_condition(expr, scope)
    except InvalidExpressionError as exc:
        raise InvalidPredicateError(str(exc)) from exc


def _has(names: list[str], wanted: str) -> bool:
    return _name_or_none(names, wanted) is not None


def _name_or_none(names: list[str], wanted: str) -> str | None:
    if wanted in names:
        return wanted
    folded = [n for n in names if n.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None


def _name(names: list[str], wanted: str) -> str:
    return _name_or_none(names, wanted) or wanted
