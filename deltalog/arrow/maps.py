"""Arrow maps as text, without a Python object per row."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av


def map_texts(maps: pa.Array, separator: str = ",") -> pa.Array:
    """``k=v,k2=v2`` of each ``map<string, string>``, as partition values are shown.

    A null value shows as ``None``; an empty or null map gives ``""``.
    """
    # A slice's offsets index the whole child arrays: pair them with the unsliced keys/items.
    pairs = pc.binary_join_element_wise(
        maps.keys, pc.fill_null(maps.items, av.string("None")), av.string("=")
    )
    joined = pc.binary_join(pa.ListArray.from_arrays(maps.offsets, pairs), av.string(separator))
    return pc.fill_null(joined, av.string(""))


def chunked_map_texts(maps: pa.ChunkedArray, separator: str = ",") -> pa.ChunkedArray:
    """:func:`map_texts` of every chunk."""
    return pa.chunked_array([map_texts(c, separator) for c in maps.chunks], pa.string())
