"""Arrow columns of Python values (file-action fields), built from raw buffers.

``pa.array`` of a Python list is the obvious way, but the first conversion of a Python value in
a process makes pyarrow import pandas when it is installed (about 0.2 s; see
:mod:`deltalog.arrow.values`). Every writer converts the file actions it commits: the snapshot
after a commit holds them as Arrow, and the first checkpoint merges them. That import then ran
on the checkpoint thread, holding the GIL against the next fifty commits. The types file
actions use (strings, 32/64-bit integers, booleans, string maps, structs of those) are built
here from buffers instead. For a one-add commit that is also faster (40 against 51-56 µs for
the table); for 100,000 adds it is about 40 ms slower, next to ~150 ms of reading the fields
off the action objects.

Values of the wrong kind raise ``TypeError``, ``ValueError`` or ``OverflowError``, as
``pa.array`` rejects them; callers that want pyarrow's own message convert again with it.
"""

from __future__ import annotations

import array
from itertools import accumulate
from typing import Any

import pyarrow as pa

#: Up to this many flags, a bitmap is packed in Python rather than by an Arrow cast.
_SMALL = 256


def column(values: list[Any], t: pa.DataType) -> pa.Array:
    """``values`` (``None`` for null) as an array of type ``t``.

    Args:
        values: Python values of the kind ``t`` holds: ``str``, ``int``, ``bool``, a ``dict``
            of strings for a map, a ``dict`` by field name for a struct.
        t: ``string``, ``int64``, ``int32``, ``bool``, ``map<string, string>``, or a struct
            of these.

    Raises:
        TypeError: ``t`` is none of those types, or a value is not of its kind.
        ValueError: A string cannot be encoded as UTF-8.
        OverflowError: An integer does not fit, or the strings exceed 2 GiB.
    """
    nulls = values.count(None)
    if nulls == len(values):
        return pa.nulls(len(values), t)
    validity = _bitmap([v is not None for v in values]) if nulls else None
    if pa.types.is_string(t):
        return _strings(values, validity)
    if pa.types.is_int64(t) or pa.types.is_int32(t):
        if any(type(v) is bool for v in values):  # array.array takes them as 1 and 0
            raise TypeError("not an integer: a bool")
        data = array.array("q" if pa.types.is_int64(t) else "i", _zero_nulls(values, nulls > 0, 0))
        return pa.Array.from_buffers(t, len(values), [validity, pa.py_buffer(data)])
    if pa.types.is_boolean(t):
        if any(v is not None and type(v) is not bool for v in values):
            raise TypeError("not a bool")
        return pa.Array.from_buffers(pa.bool_(), len(values), [validity, _bitmap(values)])
    if pa.types.is_map(t):
        return _map(values, t, validity)
    if pa.types.is_struct(t):
        return _struct(values, t, validity)
    raise TypeError(f"no buffer-built column of type {t}")


def bools(flags: list[bool]) -> pa.BooleanArray:
    """A ``bool`` array of ``flags`` (none null)."""
    result = pa.Array.from_buffers(pa.bool_(), len(flags), [None, _bitmap(flags)])
    assert isinstance(result, pa.BooleanArray)
    return result


def _zero_nulls(values: list[Any], nulls: bool, zero: Any) -> list[Any]:
    return [zero if v is None else v for v in values] if nulls else values


def _bitmap(flags: list[Any]) -> pa.Buffer:
    """Truth of ``flags`` packed into an Arrow bitmap (LSB first)."""
    if len(flags) <= _SMALL:
        bits = sum(1 << i for i, f in enumerate(flags) if f)
        return pa.py_buffer(bits.to_bytes((len(flags) + 7) // 8, "little"))
    # Bytes of 0/1, packed by Arrow's cast to bool.
    as_bytes = pa.py_buffer(bytes(map(bool, flags)))
    packed = pa.Array.from_buffers(pa.uint8(), len(flags), [None, as_bytes]).cast(pa.bool_())
    buffer = packed.buffers()[1]
    assert buffer is not None
    return buffer


def _strings(values: list[Any], validity: pa.Buffer | None) -> pa.Array:
    texts: list[str] = ["" if v is None else v for v in values] if validity is not None else values
    data = "".join(texts).encode()
    lengths = list(map(len, texts))
    if len(data) != sum(lengths):  # not all ASCII: byte lengths differ from lengths
        lengths = [len(t.encode()) for t in texts]
    try:
        ends = array.array("i", accumulate(lengths, initial=0))
    except OverflowError:
        raise OverflowError("strings over 2 GiB do not fit 32-bit offsets") from None
    return pa.Array.from_buffers(
        pa.string(), len(values), [validity, pa.py_buffer(ends), pa.py_buffer(data)]
    )


def _map(values: list[Any], t: pa.MapType, validity: pa.Buffer | None) -> pa.Array:
    maps: list[dict[str, Any]] = _zero_nulls(values, validity is not None, _EMPTY)
    if not all(isinstance(v, dict) for v in maps):
        raise TypeError("a map value is not a dict")
    ends = array.array("i", accumulate(map(len, maps), initial=0))
    keys = [k for v in maps for k in v]
    if None in keys:
        raise TypeError("a map key is null")
    items = [x for v in maps for x in v.values()]
    entries = pa.StructArray.from_arrays(
        [column(keys, t.key_type), column(items, t.item_type)], fields=[t.key_field, t.item_field]
    )
    return pa.Array.from_buffers(t, len(values), [validity, pa.py_buffer(ends)], children=[entries])


def _struct(values: list[Any], t: pa.StructType, validity: pa.Buffer | None) -> pa.Array:
    rows: list[dict[str, Any]] = _zero_nulls(values, validity is not None, _EMPTY)
    if not all(isinstance(v, dict) for v in rows):
        raise TypeError("a struct value is not a dict")
    children = [column([v.get(f.name) for v in rows], f.type) for f in t]
    return pa.Array.from_buffers(t, len(values), [validity], children=children)


_EMPTY: dict[str, Any] = {}
