"""The table's column constraints, checked on every batch the data writer writes.

As delta-spark's invariant checker does: a non-nullable column (at any depth, wherever its
parent struct is not null; partition columns included) must hold no null, a ``varchar(n)``
column no string longer than ``n`` characters, and a ``char(n)`` column is padded with spaces to
``n`` characters and must not be longer. Spark records char/varchar types as the field metadata
``__CHAR_VARCHAR_TYPE_STRING``.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import ConstraintViolationError, UnsupportedFeatureError
from deltalog.protocol.schema import DataType, StructType

CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"
_CHAR_VARCHAR = re.compile(r"^\s*(char|varchar)\s*\(\s*(\d+)\s*\)\s*$", re.IGNORECASE)


def refuse_unenforced_constraints(schema: StructType, *, uri: str) -> None:
    """Refuse a table whose constraints the tasks cannot enforce.

    That is CHAR/VARCHAR inside a struct, array or map (Spark marks the top-level field
    ``struct<c:varchar(3)>``).

    Raises:
        UnsupportedFeatureError: Naming the column.
    """
    for f in schema.fields:
        marker = f.metadata.get(CHAR_VARCHAR_KEY)
        if isinstance(marker, str) and not _CHAR_VARCHAR.match(marker):
            raise UnsupportedFeatureError(
                f"column {f.name!r} of the table at {uri} holds nested CHAR/VARCHAR types "
                f"({marker}); deltalog cannot enforce their lengths, so it does not write it",
                feature="nestedCharVarchar",
                operation="write",
            )


def has_constraints(schema: StructType) -> bool:
    """Whether any column is non-nullable or char/varchar (else checking is skipped)."""
    return any(
        not f.nullable or CHAR_VARCHAR_KEY in f.metadata or _nested(f.type) for f in schema.fields
    )


def _nested(t: DataType) -> bool:
    return isinstance(t, StructType) and has_constraints(t)


def enforce(batch: pa.RecordBatch, schema: StructType) -> pa.RecordBatch:
    """Check ``batch`` against the constraints of ``schema``'s columns it holds; pad chars.

    Raises:
        ConstraintViolationError: Naming the column and the rule.
    """
    arrays = []
    for name, array in zip(batch.schema.names, batch.columns, strict=True):
        try:
            f = schema.field(name)
        except KeyError:
            arrays.append(array)
            continue
        arrays.append(_column(array, f.type, f.nullable, f.metadata.get(CHAR_VARCHAR_KEY), name))
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def _column(
    array: pa.Array, t: DataType, nullable: bool, char_varchar: object, path: str
) -> pa.Array:
    if not nullable and array.null_count:
        raise ConstraintViolationError(
            f"NOT NULL constraint violated for column {path!r}: {array.null_count} null value(s)"
        )
    if isinstance(char_varchar, str) and (match := _CHAR_VARCHAR.match(char_varchar)):
        kind, limit = match.group(1).lower(), int(match.group(2))
        longest = pc.max(pc.utf8_length(array)).as_py()
        if longest is not None and longest > limit:
            raise ConstraintViolationError(
                f"column {path!r} is {kind}({limit}) but a value has {longest} characters"
            )
        if kind == "char":
            array = pc.utf8_rpad(array, width=limit, padding=" ")
    if isinstance(t, StructType) and has_constraints(t) and pa.types.is_struct(array.type):
        parent_valid = pc.is_valid(array)
        for i, child in enumerate(t.fields):
            values = array.field(i)
            if not child.nullable:
                hidden = pc.sum(pc.and_(parent_valid, pc.is_null(values))).as_py() or 0
                if hidden:
                    raise ConstraintViolationError(
                        f"NOT NULL constraint violated for column {path}.{child.name!r}: "
                        f"{hidden} null value(s)"
                    )
            _column(
                values,
                child.type,
                True,
                child.metadata.get(CHAR_VARCHAR_KEY),
                f"{path}.{child.name}",
            )
    return array
