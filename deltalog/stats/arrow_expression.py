"""A pyarrow compute expression as a predicate: ``filter=(pc.field("x") > 3)``, as delta-rs takes.

:class:`ArrowExpression` wraps a ``pyarrow.compute.Expression`` so that every API taking a
predicate accepts one (:func:`deltalog.stats.predicate_input.as_predicate`). Arrow evaluates it
(through Acero, one thread, rows in order), with Arrow's semantics; a null result does not match.
The columns it names are read from Arrow's own serialisation of the expression (the
``field_ref`` entries of its schema metadata), so an unknown column is refused before anything
is read. Statistics cannot prune files for it (a file is kept); partition values can.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc

from deltalog.errors import InvalidPredicateError
from deltalog.stats.predicates import Predicate

__all__ = ["ArrowExpression", "referenced_columns"]


@dataclass(frozen=True, eq=False)
class ArrowExpression(Predicate):
    """A ``pyarrow.compute.Expression`` that evaluates to a boolean per row."""

    expression: pc.Expression

    def __post_init__(self) -> None:
        object.__setattr__(self, "_names", referenced_columns(self.expression))

    def _columns(self) -> set[str]:
        return set(self._names)  # type: ignore[attr-defined]

    def _mask(self, table: pa.Table) -> pa.Array:
        plan = acero.Declaration.from_sequence(
            [
                acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
                acero.Declaration("project", acero.ProjectNodeOptions([self.expression], ["m"])),
            ]
        )
        try:
            result = plan.to_table(use_threads=False).column("m")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidPredicateError(f"cannot evaluate {self.expression}: {exc}") from exc
        if not pa.types.is_boolean(result.type):
            raise InvalidPredicateError(
                f"{self.expression} gives {result.type}, not a boolean per row"
            )
        return result.combine_chunks() if result.num_chunks != 1 else result.chunk(0)

    def __str__(self) -> str:
        return str(self.expression)


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ``struct ArrowSchema``."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))


def _metadata_items(schema: pa.Schema) -> list[tuple[bytes, bytes]]:
    """Every key-value pair of ``schema``'s metadata, repeated keys kept.

    ``Schema.metadata`` is a dict and drops them; the C data interface has them all.
    """
    c_schema = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c_schema))
    try:
        if not c_schema.metadata:
            return []
        address = c_schema.metadata

        def int32(at: int) -> int:
            return int.from_bytes(ctypes.string_at(at, 4), "little", signed=True)

        count, at, out = int32(address), address + 4, []
        for _ in range(count):
            size = int32(at)
            key = ctypes.string_at(at + 4, size)
            at += 4 + size
            size = int32(at)
            value = ctypes.string_at(at + 4, size)
            at += 4 + size
            out.append((key, value))
        return out
    finally:
        if c_schema.release:
            _RELEASE(c_schema.release)(ctypes.byref(c_schema))


def referenced_columns(expression: Any) -> set[str]:
    """The top-level columns ``expression`` reads.

    Raises:
        InvalidPredicateError: Not an expression, or one whose columns cannot be told (a field
            referenced by position).
    """
    if not isinstance(expression, pc.Expression):
        raise InvalidPredicateError(f"not a pyarrow expression: {expression!r}")
    serialized = expression.__reduce__()[1][0]
    schema = pa.ipc.open_file(pa.py_buffer(serialized)).schema
    items = _metadata_items(schema)
    out: set[str] = set()
    i = 0
    while i < len(items):
        key, value = items[i]
        if key == b"nested_field_ref":
            depth = int(value)
            first = items[i + 1] if depth and i + 1 < len(items) else None
            if first is None or first[0] != b"field_ref":
                raise InvalidPredicateError(f"cannot tell the columns of {expression}")
            out.add(first[1].decode())
            i += 1 + depth
            continue
        if key == b"field_ref":
            out.add(value.decode())
        i += 1
    return out
