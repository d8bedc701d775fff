"""All-null Arrow arrays that take no memory.

``pa.nulls`` allocates and zeroes a buffer for every call: for a column no row sets (deletion
vectors, row ids, tags on most tables) that is megabytes per million rows, written once and
never read. The arrays made here instead view one anonymous memory map that is never written:
its pages are zero, and reading them maps the kernel's shared zero page, so a null column costs
neither an allocation nor resident memory. Arrow arrays are immutable, so sharing is safe.
"""

from __future__ import annotations

import mmap
import os
import threading

import pyarrow as pa

_lock = threading.Lock()
_zeros: pa.Buffer | None = None
#: Smallest map made; one map serves many columns.
_MIN_MAP = 64 << 20


def _zero(size: int) -> pa.Buffer:
    """``size`` zero bytes, viewing the shared map (grown, never written, when too small)."""
    global _zeros
    with _lock:
        if _zeros is None or _zeros.size < size:
            # Arrays made earlier keep the older map alive through their buffers.
            zeros_map = mmap.mmap(
                -1, max(size, _MIN_MAP), flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ
            )
            _zeros = pa.py_buffer(zeros_map)  # read-only: nothing can write the shared zeros
        zeros = _zeros
    return zeros.slice(0, size)


def _forget_lock() -> None:
    global _lock
    _lock = threading.Lock()  # a fork while another thread held it must not leave it held


os.register_at_fork(after_in_child=_forget_lock)


def null_array(t: pa.DataType, n: int) -> pa.Array:
    """An array of ``n`` nulls of type ``t`` (``pa.nulls`` for types without a layout here)."""
    validity = _zero((n + 7) // 8)
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        return pa.Array.from_buffers(t, n, [validity, _zero((n + 7) // 8)], null_count=n)
    if pa.types.is_struct(t):
        children = [null_array(t.field(i).type, n) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, n, [validity], null_count=n, children=children)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return pa.Array.from_buffers(t, n, [validity, _zero(4 * (n + 1)), _zero(0)], null_count=n)
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return pa.Array.from_buffers(t, n, [validity, _zero(8 * (n + 1)), _zero(0)], null_count=n)
    if pa.types.is_map(t) or pa.types.is_list(t):
        child_type = pa.struct([t.key_field, t.item_field]) if pa.types.is_map(t) else t.value_type
        child = null_array(child_type, 0)
        return pa.Array.from_buffers(
            t, n, [validity, _zero(4 * (n + 1))], null_count=n, children=[child]
        )
    try:
        width = t.bit_width
    except ValueError:  # no fixed width (views, extension types...)
        width = 0
    if width and width % 8 == 0 and not pa.types.is_dictionary(t) and not pa.types.is_nested(t):
        return pa.Array.from_buffers(t, n, [validity, _zero(n * (width // 8))], null_count=n)
    return pa.nulls(n, t)


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()`` without converting Python values (which imports pandas)."""
    return pa.Table.from_arrays([null_array(f.type, 0) for f in schema], schema=schema)
