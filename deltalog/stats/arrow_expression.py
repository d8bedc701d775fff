"""A pyarrow compute expression as a predicate: ``filter=(pc.field("x") > 3)``, as delta-rs takes.

:class:`ArrowExpression` wraps a ``pyarrow.compute.Expression`` so that every API taking a
predicate accepts one (:func:`deltalog.stats.predicate_input.as_predicate`). Arrow evaluates it
(through Acero, one thread, rows in order), with Arrow's semantics; a null result does not match.
The columns it names are read from Arrow's own serialisation of the expression (the
``field_ref`` entries of its schema metadata), so an unknown column is refused before anything
is read. Partition values prune files for it exactly. For statistics,
:meth:`ArrowExpression.implied` reads the expression's tree from the same serialisation and
gives the plain predicate it implies (comparisons of a column with a literal,
``is_null``/``is_valid``, ``is_in``, joined by ``and``/``or``/``invert``), so files and row
groups are skipped as for SQL text; what it cannot read is left out (an ``and`` keeps its other
side), which only keeps more files.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc

from deltalog.errors import InvalidPredicateError
from deltalog.protocol.schema import StructType
from deltalog.stats.predicates import (
    COMPARE_KERNELS,
    And,
    Comparison,
    In,
    IsNull,
    Not,
    Or,
    Predicate,
    literal_for,
)

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

    def implied(self, schema: StructType) -> tuple[Predicate, bool] | None:
        """A plain predicate true wherever this expression is, for skipping by statistics.

        Returns ``(predicate, exact)`` (``exact``: it is also false wherever the expression
        is, so its negation may be used too), or ``None`` when nothing can be told.
        """
        try:
            tree = _tree(self.expression)
        except (IndexError, ValueError, pa.ArrowException):
            return None
        arrow = schema.to_arrow()
        return _implied(tree, {f.name: f.type for f in arrow})


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


_KERNEL_OPS = {kernel: op for op, kernel in COMPARE_KERNELS.items()}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _tree(expression: pc.Expression) -> Any:
    """The expression as nested tuples.

    ``("field", name)``, ``("nested",)``, ``("literal", scalar)``, or
    ``("call", function, [arguments], options or None)``.
    """
    serialized = expression.__reduce__()[1][0]
    table = pa.ipc.open_file(pa.py_buffer(serialized)).read_all()
    items = _metadata_items(table.schema)

    def node(i: int) -> tuple[Any, int]:
        key, value = items[i]
        if key == b"field_ref":
            return ("field", value.decode()), i + 1
        if key == b"nested_field_ref":
            return ("nested",), i + 1 + int(value)
        if key == b"literal":
            return ("literal", table.column(int(value))[0]), i + 1
        if key != b"call":
            raise ValueError(f"unexpected {key!r}")
        arguments, options, i = [], None, i + 1
        while items[i][0] != b"end":
            if items[i][0] == b"options":
                options = table.column(int(items[i][1]))[0].as_py()
                i += 1
                continue
            argument, i = node(i)
            arguments.append(argument)
        return ("call", value.decode(), arguments, options), i + 1

    tree, end = node(0)
    if end != len(items):
        raise ValueError("trailing items")
    return tree


def _implied(tree: Any, types: dict[str, pa.DataType]) -> tuple[Predicate, bool] | None:
    if tree[0] != "call":
        return None
    _, function, arguments, options = tree
    if function in ("and", "and_kleene") and len(arguments) == 2:
        left, right = (_implied(a, types) for a in arguments)
        if left is None or right is None:
            side = left or right
            return None if side is None else (side[0], False)
        return And(left[0], right[0]), left[1] and right[1]
    if function in ("or", "or_kleene") and len(arguments) == 2:
        left, right = (_implied(a, types) for a in arguments)
        if left is None or right is None:
            return None
        return Or(left[0], right[0]), left[1] and right[1]
    if function == "invert" and len(arguments) == 1:
        inner = _implied(arguments[0], types)
        return None if inner is None or not inner[1] else (Not(inner[0]), True)
    if function in _KERNEL_OPS and len(arguments) == 2:
        op = _KERNEL_OPS[function]
        first, second = arguments
        if first[0] == "literal" and second[0] == "field":
            first, second, op = second, first, _FLIPPED[op]
        if first[0] != "field" or second[0] != "literal":
            return None
        value = _value(first[1], second[1], types)
        return None if value is None else (Comparison(first[1], op, value[0]), True)
    if function in ("is_null", "is_valid") and len(arguments) == 1 and arguments[0][0] == "field":
        if function == "is_null" and (options or {}).get("nan_is_null"):
            return None
        if arguments[0][1] not in types:
            return None
        return IsNull(arguments[0][1], negated=function == "is_valid"), True
    if function == "is_in" and len(arguments) == 1 and arguments[0][0] == "field" and options:
        name = arguments[0][1]
        listed = options.get("value_set") or []
        values = [_value(name, pa.scalar(v), types) for v in listed]
        if not listed or any(v is None for v in values):
            return None
        # a null never matches (Arrow's is_in is false for it): not exact under a negation
        return In(name, tuple(v[0] for v in values if v is not None)), False
    return None


def _value(column: str, scalar: pa.Scalar, types: dict[str, pa.DataType]) -> tuple[Any] | None:
    """``(value,)`` of a literal that converts exactly to ``column``'s type, else ``None``."""
    t = types.get(column)
    if t is None or not scalar.is_valid:
        return None
    value = scalar.as_py()
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, bool) != pa.types.is_boolean(t):
        return None
    try:
        literal_for(value, t, column)
    except InvalidPredicateError:
        return None
    return (value,)


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
