"""Running a MERGE: scan, join, apply the clauses, write, commit (delta-spark's semantics).

1. **Source**: read whole into Arrow (``materializeSourceTimeMs``), as delta-spark
   materializes it.
2. **Scan**: the candidate target files (every file when a ``NOT MATCHED BY SOURCE`` clause
   exists, else those the condition's target-only part may match, by partition values and
   statistics) are recorded as read, as delta-spark's MERGE reads them, and the columns the
   merge needs (:attr:`MergePlan.needed`: join keys, the columns conditions and assignments
   name, the columns updates keep) are read with each row's position in its file.
3. **Join**: the condition's ``target = source`` conjuncts are hash-joined (Arrow's join; SQL
   equality, so null keys match nothing), the rest evaluated on the joined pairs. A target
   row matched by two source rows is refused (:class:`MultipleSourceRowMatchError`) unless
   the only matched clause is an unconditional delete.
4. **Clauses**, in order within each kind, the first whose condition holds taking the row:
   matched pairs update or delete the target row; target rows no source row matched meet the
   ``NOT MATCHED BY SOURCE`` clauses; source rows that matched nothing the ``NOT MATCHED``
   (insert) ones.
5. **Write**: updated and inserted rows go to new files; the target rows updated or deleted
   are taken out of their files with deletion vectors, or by rewriting the files
   (:mod:`deltalog.dml.rewrite`). One ``MERGE`` commit with delta-spark's parameters and
   metrics; nothing when no row changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import columns as arrow_columns
from deltalog.arrow import values as av
from deltalog.errors import InvalidPredicateError, MultipleSourceRowMatchError
from deltalog.read import FileRows
from deltalog.stats.expression_eval import (
    Scope,
    evaluate_chunked,
    evaluate_condition,
    widest_type,
)
from deltalog.stats.predicates import TRUE
from deltalog.stats.sql_expression import Binary, Expr
from deltalog.write.rewrite_plan import candidate_files, partition_part
from deltalog.write.transaction import Transaction

from .handle import TableHandle
from .merge_plan import MergePlan, ResolvedClause
from .rewrite import RowRewrite, Timer
from .scan import scan_files

__all__ = ["MergeCounts", "execute_merge"]


@dataclass
class MergeCounts:
    """Row counts of a merge, for its metrics."""

    source_rows: int = 0
    inserted: int = 0
    matched_updated: int = 0
    matched_deleted: int = 0
    by_source_updated: int = 0
    by_source_deleted: int = 0
    scan_ms: int = 0
    changed: dict[int, list[pa.Array]] = field(default_factory=dict)


@dataclass
class _Target:
    """What the scan read.

    The needed columns of every candidate's live rows, and where each sits (candidate number
    and position in its file).
    """

    files: pa.Table
    rows: pa.Table
    file_index: pa.ChunkedArray
    positions: pa.ChunkedArray
    found: list[FileRows]


def execute_merge(
    table: TableHandle,
    tx: Transaction,
    plan: MergePlan,
    rewrite: RowRewrite,
    timer: Timer,
) -> MergeCounts:
    """Run steps 2 to 5 (but the commit); the counts for the metrics."""
    counts = MergeCounts(source_rows=plan.source.num_rows)
    target = _scan(table, tx, plan)
    pairs = _join(plan, target)
    counts.scan_ms = timer.lap_ms()
    _check_multiple_matches(plan, target, pairs)
    matched_rows = pairs.column("r")
    arrow = pa.schema([f.remove_metadata() for f in plan.output_schema.to_arrow()])
    for resolved, (rows, sources) in _apply(plan, plan.matched, target, pairs):
        if resolved.action == "delete":
            rows = pc.unique(rows)  # an unconditional delete may have several matches
            counts.matched_deleted += len(rows)
        else:
            scope = _scope(plan, target.rows.take(rows), plan.source.take(sources))
            rewrite.write(_new_rows(resolved, scope, target.rows.take(rows), arrow))
            counts.matched_updated += len(rows)
        _changed(counts, target, rows)
    if plan.by_source:
        alone = _unmatched(target.rows.num_rows, matched_rows)
        for resolved, rows in _apply_one_side(plan, plan.by_source, target, alone):
            if resolved.action == "delete":
                counts.by_source_deleted += len(rows)
            else:
                scope = _scope(plan, target.rows.take(rows), None)
                rewrite.write(_new_rows(resolved, scope, target.rows.take(rows), arrow))
                counts.by_source_updated += len(rows)
            _changed(counts, target, rows)
    if plan.not_matched:
        lonely = _unmatched(plan.source.num_rows, pairs.column("s"))
        for resolved, rows in _apply_source(plan, lonely):
            scope = _scope(plan, None, plan.source.take(rows))
            rewrite.write(_new_rows(resolved, scope, None, arrow))
            counts.inserted += len(rows)
    _take_out(table, plan, rewrite, target, counts)
    return counts


# ---------------------------------------------------------------------- scan and join
def _scan(table: TableHandle, tx: Transaction, plan: MergePlan) -> _Target:
    snapshot = tx.snapshot
    if plan.by_source:
        files = tx.read_whole_table()
    else:
        predicate = plan.target_predicate()
        files = snapshot.files if predicate is None else candidate_files(snapshot, predicate)
        read = TRUE if predicate is None else partition_part(predicate, snapshot.partition_columns)
        tx.track_files_read(files, predicate=read)
    pieces: list[pa.Table] = []
    indexes: list[pa.Array] = []
    positions: list[pa.Array] = []
    found_all: list[FileRows] = []
    for number, (_file, found) in enumerate(
        scan_files(table._storage, snapshot, files, columns=plan.needed)
    ):
        found_all.append(found)
        pieces.append(found.rows)
        indexes.append(pa.repeat(av.int64(number), found.rows.num_rows).cast(pa.int32()))
        positions.append(found.positions)
    empty = plan.empty_scope(source=False).tables[plan.target_alias]
    # Chunked, not concatenated: copying 10M rows' columns costs more than the kernels that
    # take the few rows they need from the chunks.
    rows = pa.concat_tables(pieces) if pieces else empty
    file_index = pa.chunked_array(indexes, pa.int32())
    where = pa.chunked_array(positions, pa.int64())
    return _Target(files, rows, file_index, where, found_all)


def _join(plan: MergePlan, target: _Target) -> pa.Table:
    """The matched pairs: ``r`` (a row of ``target.rows``) and ``s`` (a source row)."""
    source = plan.source
    kept = av.int_range(0, source.num_rows)
    if plan.source_only:
        scope = Scope({plan.source_alias: source})
        mask = pc.fill_null(evaluate_condition(_all(plan.source_only), scope), False)
        kept = kept.filter(mask)
    rows = av.int_range(0, target.rows.num_rows)
    if plan.target_only:  # pruned the files; a row of a kept file may still fail them
        scope = Scope({plan.target_alias: target.rows})
        mask = pc.fill_null(evaluate_condition(_all(plan.target_only), scope), False)
        rows = rows.filter(mask)
    # (every row kept: no copy of the 10M-row scan)
    target_rows = target.rows.take(rows) if plan.target_only else target.rows
    source_rows = source.take(kept) if plan.source_only else source
    target_scope = Scope({plan.target_alias: target_rows}, error=InvalidPredicateError)
    source_scope = Scope({plan.source_alias: source_rows}, error=InvalidPredicateError)
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for i, (target_key, source_key) in enumerate(plan.keys):
        tk = evaluate_chunked(target_key, target_scope)
        sk = evaluate_chunked(source_key, source_scope)
        tk, sk = _same_type(tk, sk, target_key, source_key)
        left[f"k{i}"], right[f"k{i}"] = tk, sk
    if not left:  # no equality: every pair meets the rest of the condition
        left["k0"] = pa.repeat(pa.scalar(0, pa.int8()), len(rows))
        right["k0"] = pa.repeat(pa.scalar(0, pa.int8()), len(kept))
    left["r"] = rows
    right["s"] = kept
    keys = [k for k in left if k != "r"]
    joined = pa.table(left).join(pa.table(right), keys=keys, join_type="inner", use_threads=True)
    pairs = joined.select(["r", "s"])
    if plan.residual and pairs.num_rows:
        scope = _scope(plan, target.rows.take(pairs["r"]), source.take(pairs["s"]))
        try:
            mask = evaluate_condition(_all(plan.residual), scope)
        except Exception as exc:
            if isinstance(exc, InvalidPredicateError):
                raise
            raise InvalidPredicateError(str(exc)) from exc
        pairs = pairs.filter(pc.fill_null(mask, False))
    return pairs.combine_chunks()


def _same_type(
    left: pa.Array | pa.ChunkedArray,
    right: pa.Array | pa.ChunkedArray,
    left_expr: Expr,
    right_expr: Expr,
) -> tuple[pa.Array | pa.ChunkedArray, pa.Array | pa.ChunkedArray]:
    if left.type == right.type:
        return left, right
    if pa.types.is_null(left.type):
        return left.cast(right.type), right
    if pa.types.is_null(right.type):
        return left, right.cast(left.type)
    common = widest_type([left.type, right.type])
    if common is None:
        raise InvalidPredicateError(
            f"cannot compare {left_expr} ({left.type}) with {right_expr} ({right.type})"
        )
    try:
        return left.cast(common), right.cast(common)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        # a uint64 beyond the longs, say: named, as the caller's input, not Arrow's
        raise InvalidPredicateError(
            f"cannot compare {left_expr} ({left.type}) with {right_expr} ({right.type}): "
            f"a value does not fit {common}: {exc}"
        ) from exc


def _check_multiple_matches(plan: MergePlan, target: _Target, pairs: pa.Table) -> None:
    if not plan.matched or not pairs.num_rows:
        return
    only = plan.matched[0]
    if len(plan.matched) == 1 and only.action == "delete" and only.condition is None:
        return  # delta-spark: the one unconditional delete takes every match
    rows = pairs.column("r")
    if len(pc.unique(rows)) == len(rows):
        return
    counted = pairs.group_by("r").aggregate([("s", "count")])
    many = counted.filter(pc.greater(counted.column("s_count"), 1))
    row = many.column("r")[0].as_py()
    values = target.rows.slice(row, 1).to_pylist()[0]
    number = target.file_index[row].as_py()
    path = target.files.column("path")[number].as_py()
    matches = many.column("s_count")[0].as_py()
    raise MultipleSourceRowMatchError(
        f"the target row {values} (in {path}) is matched by {matches} source rows (and "
        f"{many.num_rows - 1} more target rows by several): which one updates it is ambiguous, "
        "as delta-spark refuses it. Deduplicate the source, or make the merge condition "
        "match at most one source row per target row. Nothing was written.",
        target_row=values,
        matches=matches,
    )


# ---------------------------------------------------------------------- clauses
def _apply(
    plan: MergePlan, clauses: Sequence[ResolvedClause], target: _Target, pairs: pa.Table
) -> list[tuple[ResolvedClause, tuple[pa.Array, pa.Array]]]:
    """Each clause with the pairs it takes (first true condition wins)."""
    out = []
    rows, sources = pairs.column("r").combine_chunks(), pairs.column("s").combine_chunks()
    for resolved in clauses:
        if not len(rows):
            break
        if resolved.condition is None:
            out.append((resolved, (rows, sources)))
            rows, sources = rows.slice(0, 0), sources.slice(0, 0)
            break
        scope = _scope(plan, target.rows.take(rows), plan.source.take(sources))
        mask = pc.fill_null(_condition(resolved.condition, scope), False)
        out.append((resolved, (rows.filter(mask), sources.filter(mask))))
        rest = pc.invert(mask)
        rows, sources = rows.filter(rest), sources.filter(rest)
    return [(c, taken) for c, taken in out if len(taken[0])]


def _apply_one_side(
    plan: MergePlan, clauses: Sequence[ResolvedClause], target: _Target, rows: pa.Array
) -> list[tuple[ResolvedClause, pa.Array]]:
    out = []
    for resolved in clauses:
        if not len(rows):
            break
        if resolved.condition is None:
            out.append((resolved, rows))
            rows = rows.slice(0, 0)
            break
        scope = _scope(plan, target.rows.take(rows), None)
        mask = pc.fill_null(_condition(resolved.condition, scope), False)
        out.append((resolved, rows.filter(mask)))
        rows = rows.filter(pc.invert(mask))
    return [(c, taken) for c, taken in out if len(taken)]


def _apply_source(plan: MergePlan, rows: pa.Array) -> list[tuple[ResolvedClause, pa.Array]]:
    out = []
    for resolved in plan.not_matched:
        if not len(rows):
            break
        if resolved.condition is None:
            out.append((resolved, rows))
            rows = rows.slice(0, 0)
            break
        scope = _scope(plan, None, plan.source.take(rows))
        mask = pc.fill_null(_condition(resolved.condition, scope), False)
        out.append((resolved, rows.filter(mask)))
        rows = rows.filter(pc.invert(mask))
    return [(c, taken) for c, taken in out if len(taken)]


def _condition(expr: Expr, scope: Scope) -> pa.Array:
    return evaluate_condition(expr, scope)


def _scope(plan: MergePlan, target: pa.Table | None, source: pa.Table | None) -> Scope:
    tables = {}
    if target is not None:
        tables[plan.target_alias] = target
    if source is not None:
        tables[plan.source_alias] = source
    return Scope(tables)


def _new_rows(
    resolved: ResolvedClause, scope: Scope, current: pa.Table | None, arrow: pa.Schema
) -> pa.Table:
    """The rows a clause writes: assigned columns evaluated, the others kept (or null)."""
    by_column = {a.column: a for a in resolved.assignments}
    columns = []
    for f in arrow:
        assignment = by_column.get(f.name)
        if assignment is not None:
            columns.append(assignment.values(scope, f.type))
        elif current is not None and f.name in current.column_names:
            columns.append(current.column(f.name))
        else:
            columns.append(pa.nulls(scope.num_rows, f.type))
    return pa.Table.from_arrays(
        columns,
        schema=pa.schema([pa.field(f.name, c.type) for f, c in zip(arrow, columns, strict=True)]),
    )


def _unmatched(count: int, matched: pa.Array | pa.ChunkedArray) -> pa.Array:
    everything = av.int_range(0, count)
    if not len(matched):
        return everything
    return everything.filter(pc.invert(pc.is_in(everything, value_set=pc.unique(matched))))


def _all(parts: Sequence[Expr]) -> Expr:
    joined = parts[0]
    for part in parts[1:]:
        joined = Binary("AND", joined, part)
    return joined


# ---------------------------------------------------------------------- taking rows out
def _changed(counts: MergeCounts, target: _Target, rows: pa.Array) -> None:
    """Note that target rows ``rows`` (of ``target.rows``) leave their files."""
    if not len(rows):
        return
    files = pc.take(target.file_index, rows).combine_chunks()
    where = pc.take(target.positions, rows).combine_chunks()
    order = pc.sort_indices(files)
    files, where = pc.take(files, order), pc.take(where, order)
    encoded = pc.run_end_encode(files, run_end_type=pa.int64())
    start = 0
    for number, end in zip(encoded.values.to_pylist(), encoded.run_ends.to_pylist(), strict=True):
        counts.changed.setdefault(number, []).append(where.slice(start, end - start))
        start = end


def _take_out(
    table: TableHandle, plan: MergePlan, rewrite: RowRewrite, target: _Target, counts: MergeCounts
) -> None:
    if not counts.changed:
        return
    numbers = sorted(counts.changed)
    if rewrite.use_deletion_vectors:
        rows = target.files.take(arrow_columns.column(numbers, pa.int64())).to_pylist()
        for number, file in zip(numbers, rows, strict=True):
            changed = counts.changed[number]
            taken = pc.unique(pa.concat_arrays([c.cast(pa.int64()) for c in changed]))
            rewrite.change_positions(file, target.found[number], taken)
        return
    touched = target.files.take(pa.array(numbers, pa.int64()))
    snapshot = plan.snapshot
    for number, (file, found) in zip(
        numbers, scan_files(table._storage, snapshot, touched), strict=True
    ):
        rewrite.change(file, found, _positions_mask(found, counts.changed[number]))


def _positions_mask(found: FileRows, changed: list[pa.Array]) -> pa.Array:
    positions = pa.concat_arrays([c.cast(pa.int64()) for c in changed])
    return pc.is_in(found.positions, value_set=pc.unique(positions))
