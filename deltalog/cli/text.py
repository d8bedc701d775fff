"""Text the commands print: timestamps, sizes a person reads at a glance, aligned tables.

Each formatter has a Python form for a few values and, where a command formats a column of a
million files, an Arrow form that gives the same text without a Python object per value. The
Arrow forms build their constants from buffers (:mod:`deltalog.arrow.values`): a Python value
handed to a kernel would make pyarrow import pandas, a fifth of a command's time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from deltalog.lazy import lazy_module
from deltalog.units import UNITS as UNITS  # the Python forms, beside the Arrow ones below
from deltalog.units import human_size as human_size
from deltalog.units import timestamp as timestamp

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

    from deltalog.arrow import values as av
else:  # describe and history print Python values: pyarrow only for the Arrow columns below
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")
    av = lazy_module("deltalog.arrow.values")

#: Width of :func:`human_size`'s longest text ("1023.9 KiB").
SIZE_WIDTH = 10
#: Width of :func:`timestamp`'s text ("2023-11-14 22:13:20.123Z").
STAMP_WIDTH = 24
_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: Arrow and datetime format alike


#: Sizes above this use :func:`human_size` value by value (``n * 10`` must fit an int64).
_MAX_ARROW_SIZE = 2**59


def human_sizes(sizes: pa.Array) -> pa.Array:
    """:func:`human_size` of each value, right-aligned to :data:`SIZE_WIDTH`, by Arrow kernels."""
    values = sizes.cast(pa.int64())
    in_range = pc.and_(
        pc.greater_equal(values, av.int64(0)), pc.less(values, av.int64(_MAX_ARROW_SIZE))
    )
    if values.null_count or (len(values) and not pc.all(in_range).as_py()):
        texts = [human_size(n) for n in sizes.to_pylist()]
        return pc.utf8_lpad(av.strings(texts), width=SIZE_WIDTH, padding=" ")
    text = pc.binary_join_element_wise(values.cast(pa.string()), av.string(" B"), av.string(""))
    ten = av.int64(10)
    for k in range(1, len(UNITS)):
        unit = 1024**k
        tenths = pc.divide(pc.add(pc.multiply(values, ten), av.int64(unit // 2)), av.int64(unit))
        whole = pc.divide(tenths, ten).cast(pa.string())
        fraction = pc.subtract(tenths, pc.multiply(pc.divide(tenths, ten), ten)).cast(pa.string())
        shown = pc.binary_join_element_wise(
            whole, av.string("."), fraction, av.string(f" {UNITS[k]}"), av.string("")
        )
        text = pc.if_else(pc.greater_equal(tenths, ten), shown, text)
    return pc.utf8_lpad(text, width=SIZE_WIDTH, padding=" ")


_GROUP = 1000
_MAX_GROUPED = 10**12  # four groups of digits: enough for any file size in practice


def grouped_sizes(sizes: pa.Array, width: int = 13) -> pa.Array:
    """``f"{n:>{width},}"`` of each size (exact bytes), by Arrow kernels when in range."""
    values = sizes.cast(pa.int64())
    if values.null_count or (
        len(values)
        and not pc.all(
            pc.and_(pc.greater_equal(values, av.int64(0)), pc.less(values, av.int64(_MAX_GROUPED)))
        ).as_py()
    ):
        return av.strings([f"{n:>{width},}" for n in sizes.to_pylist()])
    group = av.int64(_GROUP)
    groups = []  # least significant first: n % 1000, n // 1000 % 1000, ...
    rest = values
    for _ in range(4):
        groups.append(pc.subtract(rest, pc.multiply(pc.divide(rest, group), group)))
        rest = pc.divide(rest, group)
    plain = [g.cast(pa.string()) for g in groups]
    padded = [pc.utf8_lpad(t, width=3, padding="0") for t in plain]
    text = plain[0]
    for k in range(1, 4):  # with k+1 groups: the top one unpadded, the others padded
        joined = pc.binary_join_element_wise(plain[k], *reversed(padded[:k]), av.string(","))
        text = pc.if_else(pc.greater_equal(values, av.int64(_GROUP**k)), joined, text)
    return pc.utf8_lpad(text, width=width, padding=" ")


def timestamps(ms: pa.Array) -> pa.Array:
    """:func:`timestamp` of each value, padded to :data:`STAMP_WIDTH`.

    Formatted by Arrow where every value is in its range: Arrow's text form of a timestamp is
    :func:`timestamp`'s without the zone (a zone-aware cast would give the Z too, but looks
    the zone up row by row: 20x slower).
    """
    in_range = pc.and_(pc.greater_equal(ms, av.int64(0)), pc.less_equal(ms, av.int64(_MAX_MS)))
    if len(ms) and pc.all(in_range).as_py():
        text = ms.cast(pa.timestamp("ms")).cast(pa.string())
        joined = pc.binary_join_element_wise(text, av.string("Z"), av.string(""))
        stamps = pc.fill_null(joined, av.string("-"))
    else:
        stamps = av.strings([timestamp(m) for m in ms.to_pylist()])
    return pc.utf8_rpad(stamps, width=STAMP_WIDTH, padding=" ")


def texts(values: pa.Array) -> pa.Array:
    """Each value as text (``-`` for null): Arrow's cast to string, JSON for nested values."""
    t = values.type
    if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return av.strings(["-" if v is None else str(v) for v in values.to_pylist()])
    text = values.cast(pa.string())
    if pa.types.is_boolean(t):
        text = pc.utf8_lower(text)
    return pc.fill_null(text, av.string("-"))


def width(column: pa.Array | pa.ChunkedArray, minimum: int = 0) -> int:
    """The widest text in a string column (at least ``minimum``)."""
    if not len(column):
        return minimum
    longest = pc.max(pc.utf8_length(column)).as_py()
    return max(minimum, longest or 0)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] = ()
) -> list[str]:
    """An aligned text table: a header line then one line per row (few rows: Python).

    The last column is not padded (it may be long: a path, parameters). ``right`` flags the
    columns aligned to the right (numbers).
    """
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    flags = list(right) + [False] * (len(headers) - len(right))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            if i == len(cells) - 1 and not flags[i]:
                out.append(cell)
            else:
                out.append(cell.rjust(widths[i]) if flags[i] else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return [line(headers), *(line(row) for row in rows)]
