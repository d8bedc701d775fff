"""Statistics a checkpoint holds typed, in ``add.stats_parsed``.

delta-spark writes every checkpoint's file statistics twice by default: as the JSON ``stats``
string and, typed, as the ``stats_parsed`` struct (``delta.checkpoint.writeStatsAsStruct``,
default true); a table with ``delta.checkpoint.writeStatsAsJson=false`` has only the struct.
The struct is what typed statistics (:func:`deltalog.file_stats.flatten_stats`, data skipping)
need, so reading it spares parsing the JSON of a million files; and where a checkpoint row has
no JSON, :func:`fill_json` writes it from the struct, so ``files()`` never loses statistics.

The struct uses the names the JSON would (column mapping's physical names) and the table's
types (``int``, ``timestamp``, ``decimal``...), which the flattened columns are cast to.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.checkpoints.errors import CheckpointError
from deltalog.checkpoints.nulls import null_array
from deltalog.checkpoints.reader import read_checkpoint
from deltalog.logstores import LogStore, LogStoreError

__all__ = ["aligned", "fill_json", "parsed_stats_loader", "stats_json"]

#: The add field delta-spark writes typed statistics to.
FIELD = "stats_parsed"


def parsed_stats_loader(
    store: LogStore, paths: Sequence[str], rows: int
) -> Callable[[], pa.ChunkedArray | None]:
    """Reads ``add.stats_parsed`` of a checkpoint, in the order the replay read its adds.

    The loader returns ``None`` when a file of the checkpoint has no such column, when its type
    differs between files (parts, sidecars), or when it cannot be read: statistics then come
    from the JSON, which is always correct. The answer is read once and kept.
    """
    loaded: list[pa.ChunkedArray | None] = []
    lock = threading.Lock()

    def load() -> pa.ChunkedArray | None:
        with lock:
            if not loaded:
                loaded.append(_read(store, paths, rows))
            return loaded[0]

    return load


def _read(store: LogStore, paths: Sequence[str], rows: int) -> pa.ChunkedArray | None:
    try:
        data = read_checkpoint(store, paths, add_fields=(FIELD,))
    except (CheckpointError, LogStoreError, OSError):
        return None
    columns = [t.column(FIELD) for t in data.adds]
    types = {c.type for c in columns if not pa.types.is_null(c.type)}
    if len(types) != 1:
        return None
    (t,) = types
    if not pa.types.is_struct(t) or any(pa.types.is_null(c.type) for c in columns):
        return None  # a part without it: typed statistics for some rows only are not worth it
    chunks = [chunk for c in columns for chunk in c.chunks]
    parsed = pa.chunked_array(chunks, type=t)
    return parsed if len(parsed) == rows else None


def fill_json(stats: pa.ChunkedArray, parsed: pa.ChunkedArray | None) -> pa.ChunkedArray:
    """``stats`` with each null that ``parsed`` has a value for written from ``parsed``.

    Both are in checkpoint row order. Rows with JSON keep it as it is.
    """
    if parsed is None or not stats.null_count:
        return stats
    need = pc.and_(pc.is_null(stats), pc.is_valid(parsed))
    if not pc.any(need).as_py():
        return stats
    rows = pc.indices_nonzero(need)
    written = stats_json(parsed.take(rows).combine_chunks())
    filled = pc.replace_with_mask(stats.combine_chunks(), need.combine_chunks(), written)
    return pa.chunked_array([filled], type=pa.string())


def stats_json(parsed: pa.Array) -> pa.Array:
    """The JSON ``stats`` string of each ``stats_parsed`` row (null fields left out).

    Dates are written ``YYYY-MM-DD``, timestamps as delta-spark writes them (UTC, milliseconds,
    ``Z``; without a zone for ``timestamp_ntz``), decimals exactly, non-finite doubles as the
    ``NaN``/``Infinity`` tokens delta-spark's JSON uses.
    """
    texts = [None if row is None else _text(row) for row in parsed.to_pylist()]
    return pa.array(texts, pa.string())


def _text(value: Any) -> str:
    if isinstance(value, dict):
        items = [f"{_key(k)}:{_text(v)}" for k, v in value.items() if v is not None]
        return "{" + ",".join(items) + "}"
    if isinstance(value, bool | int | str):
        return orjson.dumps(value).decode()
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
            return f'"{value.isoformat(timespec="milliseconds")}Z"'
        return f'"{value.isoformat(timespec="milliseconds")}"'
    if isinstance(value, dt.date):
        return f'"{value.isoformat()}"'
    return "null"  # bytes, lists: statistics never hold them


def _key(name: str) -> str:
    return orjson.dumps(name).decode()


def aligned(parsed: pa.ChunkedArray, cp_row: pa.ChunkedArray) -> pa.ChunkedArray:
    """``parsed`` in the order of the live files, null for rows not from the checkpoint.

    When the checkpoint's rows are all live and come first, in order (the usual layout), the
    column is reused without a copy.
    """
    m = len(cp_row) - cp_row.null_count
    head = cp_row.slice(0, m)
    if (
        m == len(parsed)
        and head.null_count == 0
        and (m == 0 or (pc.min(head).as_py() == 0 and pc.max(head).as_py() == m - 1))
    ):
        tail = len(cp_row) - m
        chunks = [*parsed.chunks, *([null_array(parsed.type, tail)] if tail else [])]
        return pa.chunked_array(chunks, type=parsed.type)
    return parsed.take(cp_row)
