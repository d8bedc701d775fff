"""Bad input to ``write_table``, ``delete``, ``update`` and ``merge`` leaves the table as it was.

Issue 31's acceptance list, one case per row: a schema mismatch, nanosecond timestamps that
would lose digits, unsigned and other types Delta has no type for, a predicate (or expression)
on a missing column, and a merge whose target row two source rows match. Each case runs on a
partitioned table with and without deletion vectors and asserts three things: the named error,
the same version, and the same files on disk (the whole tree, ``_delta_log`` included, so no
commit, no temporary log file, no data or deletion-vector file is left behind). Where the
data arrives as a stream, the bad batch comes last, after files for the good ones are written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from dmlutil import make_table

from deltalog import (
    DeltaTable,
    InvalidExpressionError,
    InvalidInputError,
    InvalidPredicateError,
    InvalidSchemaError,
    LossyConversionError,
    MultipleSourceRowMatchError,
    SchemaMismatchError,
    UnsupportedParquetTypeError,
    write_table,
)

Call = Callable[[str], object]

NS_LOSSY = pa.array([1_000_000_001], pa.timestamp("ns", tz="UTC"))  # 1 s + 1 ns
TOO_BIG = pa.array([2**64 - 1], pa.uint64())


def _rows(**extra: pa.Array) -> pa.Table:
    """One row of the table's columns (``id``, ``p``, ``v``), some replaced or added."""
    columns = {"id": pa.array([100], pa.int64()), "p": ["a"], "v": [1.0], **extra}
    return pa.table(columns)


def _stream_ending_with(bad: pa.Table) -> pa.RecordBatchReader:
    """Four good batches in both partitions, then ``bad``: files exist when it is read."""

    def batches() -> Iterator[pa.RecordBatch]:
        for i in range(4):
            good = bad.set_column(0, "id", pa.array([200 + i], bad.schema.field("id").type))
            good = good.set_column(1, "p", pa.array(["ab"[i % 2]]))
            if "ts" in good.column_names:  # whole microseconds convert
                at = good.schema.get_field_index("ts")
                good = good.set_column(at, "ts", pa.array([1_000_000_000], NS_LOSSY.type))
            yield good.to_batches()[0]
        yield bad.to_batches()[0]

    return pa.RecordBatchReader.from_batches(bad.schema, batches())


def _append(data: Callable[[], object], **kwargs: Any) -> Call:
    return lambda root: write_table(root, data(), mode="append", **kwargs)


def _merge_upsert(source: Callable[[], pa.Table], **kwargs: Any) -> Call:
    def run(root: str) -> object:
        merger = DeltaTable(root).merge(source(), "t.id = s.id", "s", "t", **kwargs)
        return merger.when_matched_update_all().when_not_matched_insert_all().execute()

    return run


def _duplicate_match(root: str) -> object:
    # rows 1 and 2 updated, 500 inserted, then two source rows for target row 3
    source = pa.table(
        {"id": [1, 2, 500, 3, 3], "p": ["a", "b", "a", "b", "b"], "v": [9.0, 9.0, 9.0, 1.0, 2.0]}
    )
    merger = DeltaTable(root).merge(source, "t.id = s.id", "s", "t")
    return merger.when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()


def _duplicate_match_by_source_too(root: str) -> object:
    source = pa.table({"id": [7, 7], "p": ["b", "b"], "v": [1.0, 2.0]})
    merger = DeltaTable(root).merge(source, "t.id = s.id", "s", "t")
    return (
        merger.when_matched_delete("s.v > 1")
        .when_matched_update({"v": "s.v"})
        .when_not_matched_by_source_update({"v": "t.v + 1"})
        .execute()
    )


def _merge_on(condition: str) -> Call:
    return lambda root: (
        DeltaTable(root).merge(_rows(), condition, "s", "t").when_matched_update_all().execute()
    )


CASES: dict[str, tuple[type[Exception], Call]] = {
    # a schema mismatch
    "write-wrong-type": (SchemaMismatchError, _append(lambda: _rows(v=pa.array(["x"])))),
    "write-extra-column": (SchemaMismatchError, _append(lambda: _rows(extra=pa.array([1])))),
    "write-wrong-type-streamed": (
        SchemaMismatchError,
        _append(lambda: _stream_ending_with(_rows(v=pa.array(["x"])))),
    ),
    "overwrite-wrong-type": (
        SchemaMismatchError,
        lambda root: write_table(
            root, _rows(v=pa.array(["x"])), mode="overwrite", predicate="p = 'a'"
        ),
    ),
    # (a merge source's values reach the table through its clauses' expressions: a value that
    # does not fit its column is an InvalidExpressionError there, not write_table's class)
    "merge-source-wrong-type": (
        InvalidExpressionError,
        _merge_upsert(lambda: _rows(id=pa.array([1], pa.int64()), v=pa.array(["x"]))),
    ),
    # nanosecond timestamps that would lose data
    "write-ns-new-column": (
        LossyConversionError,
        _append(lambda: _rows(ts=NS_LOSSY), schema_mode="merge"),
    ),
    "write-ns-streamed": (
        LossyConversionError,
        _append(lambda: _stream_ending_with(_rows(ts=NS_LOSSY)), schema_mode="merge"),
    ),
    "merge-source-ns": (
        InvalidExpressionError,
        _merge_upsert(lambda: _rows(ts=NS_LOSSY), schema_mode="merge"),
    ),
    # unsigned and other types Delta has no type for
    "write-uint64-overflow": (
        LossyConversionError,
        _append(lambda: _rows(id=TOO_BIG)),
    ),
    "write-uint64-overflow-streamed": (
        LossyConversionError,
        _append(lambda: _stream_ending_with(_rows(id=TOO_BIG))),
    ),
    "write-new-uint8-column": (
        UnsupportedParquetTypeError,
        _append(lambda: _rows(u=pa.array([1], pa.uint8())), schema_mode="merge"),
    ),
    "write-new-time-column": (
        UnsupportedParquetTypeError,
        _append(lambda: _rows(t=pa.array([1], pa.time64("us"))), schema_mode="merge"),
    ),
    "write-new-float16-column": (
        UnsupportedParquetTypeError,
        _append(lambda: _rows(h=pa.array(np.array([1.5], np.float16))), schema_mode="merge"),
    ),
    "write-new-duration-column": (
        UnsupportedParquetTypeError,
        _append(lambda: _rows(d=pa.array([1], pa.duration("us"))), schema_mode="merge"),
    ),
    "write-new-list-of-uint64": (
        UnsupportedParquetTypeError,
        _append(lambda: _rows(l=pa.array([[1]], pa.list_(pa.uint64()))), schema_mode="merge"),
    ),
    "write-new-union-column": (
        InvalidSchemaError,
        _append(
            lambda: _rows(
                u=pa.UnionArray.from_dense(
                    pa.array([0], pa.int8()), pa.array([0], pa.int32()), [pa.array([1])]
                )
            ),
            schema_mode="merge",
        ),
    ),
    "merge-source-uint64-overflow-in-key": (  # was Arrow's ArrowInvalid, unnamed
        InvalidPredicateError,
        _merge_upsert(lambda: _rows(id=TOO_BIG)),
    ),
    "merge-source-uint64-overflow-in-value": (
        InvalidExpressionError,
        lambda root: (
            DeltaTable(root)
            .merge(_rows(id=TOO_BIG, p=["b"], v=[3.0]), "t.v = s.v", "s", "t")
            .when_matched_update_all()
            .execute()
        ),
    ),
    "merge-source-new-uint8-column": (
        UnsupportedParquetTypeError,
        _merge_upsert(lambda: _rows(u=pa.array([1], pa.uint8())), schema_mode="merge"),
    ),
    # a predicate (or expression) on a missing column
    "overwrite-predicate-missing-column": (
        InvalidPredicateError,
        lambda root: write_table(root, _rows(), mode="overwrite", predicate="nope = 1"),
    ),
    "overwrite-dnf-missing-column": (
        InvalidPredicateError,
        lambda root: write_table(root, _rows(), mode="overwrite", predicate=[("nope", "=", 1)]),
    ),
    "delete-missing-column": (
        InvalidPredicateError,
        lambda root: DeltaTable(root).delete("nope > 3"),
    ),
    "delete-missing-column-in-or": (
        InvalidPredicateError,
        lambda root: DeltaTable(root).delete("id = 1 OR nope > 3"),
    ),
    "update-predicate-missing-column": (
        InvalidPredicateError,
        lambda root: DeltaTable(root).update("nope = 1", set={"v": "v + 1"}),
    ),
    "update-set-missing-column": (
        InvalidExpressionError,
        lambda root: DeltaTable(root).update("id = 1", set={"nope": "v + 1"}),
    ),
    "update-value-missing-column": (
        InvalidExpressionError,
        lambda root: DeltaTable(root).update("id = 1", set={"v": "nope + 1"}),
    ),
    "merge-condition-missing-target-column": (InvalidPredicateError, _merge_on("t.nope = s.id")),
    "merge-condition-missing-source-column": (InvalidPredicateError, _merge_on("t.id = s.nope")),
    "merge-clause-predicate-missing-column": (
        InvalidPredicateError,
        lambda root: (
            DeltaTable(root)
            .merge(_rows(id=pa.array([1], pa.int64())), "t.id = s.id", "s", "t")
            .when_matched_update_all("t.nope > 0")
            .execute()
        ),
    ),
    "merge-set-missing-column": (
        InvalidExpressionError,
        lambda root: (
            DeltaTable(root)
            .merge(_rows(id=pa.array([1], pa.int64())), "t.id = s.id", "s", "t")
            .when_matched_update({"v": "s.nope"})
            .execute()
        ),
    ),
    # a merge with duplicate matches
    "merge-duplicate-match": (MultipleSourceRowMatchError, _duplicate_match),
    "merge-duplicate-match-with-by-source": (
        MultipleSourceRowMatchError,
        _duplicate_match_by_source_too,
    ),
}


def _tree(root: Path) -> dict[str, int]:
    """Every file under the table directory, with its size (``_delta_log`` included)."""
    out: dict[str, int] = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = os.path.getsize(path)
    return out


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_raises_a_named_error_and_leaves_nothing(
    tmp_path: Path, case: str, dv: bool
) -> None:
    error, call = CASES[case]
    assert issubclass(error, InvalidInputError)
    root = tmp_path / "t"
    make_table(root, dv=dv, partitioned=True, files=2, rows=10)
    if dv:  # a live deletion vector too, so DV files are part of the listing
        DeltaTable(str(root)).delete("id = 0")
    version, before = DeltaTable(str(root)).version(), _tree(root)

    with pytest.raises(error):
        call(str(root))

    assert DeltaTable(str(root)).version() == version
    assert _tree(root) == before
    assert DeltaTable(str(root)).check().ok


@pytest.mark.parametrize(
    ("error", "data"),
    [
        (LossyConversionError, pa.table({"ts": NS_LOSSY})),
        (LossyConversionError, _stream_ending_with(_rows(ts=NS_LOSSY))),
        (UnsupportedParquetTypeError, pa.table({"u": pa.array([1], pa.uint8())})),
        (UnsupportedParquetTypeError, _stream_ending_with(_rows(id=TOO_BIG))),
        (UnsupportedParquetTypeError, pa.table({"t": pa.array([1], pa.time32("s"))})),
    ],
    ids=["ns", "ns-streamed", "uint8", "uint64-streamed", "time"],
)
def test_a_refused_first_write_leaves_no_table(
    tmp_path: Path, error: type[Exception], data: object
) -> None:
    root = tmp_path / "new"
    with pytest.raises(error):
        write_table(str(root), data, partition_by=["p"] if "p" in _schema(data).names else None)
    assert not root.exists() or _tree(root) == {}


def _schema(data: object) -> pa.Schema:
    return data.schema  # type: ignore[attr-defined]
