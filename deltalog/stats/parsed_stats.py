"""Statistics a checkpoint holds typed, in ``add.stats_parsed``.

delta-spark writes every checkpoint's file statistics twice by default: as the JSON ``stats``
string and, typed, as the ``stats_parsed`` struct (``delta.checkpoint.writeStatsAsStruct``,
default true); a table with ``delta.checkpoint.writeStatsAsJson=false`` has only the struct.
The struct is what typed statistics (:func:`deltalog.stats.file_stats.flatten_stats`, data skipping)
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

from deltalog.arrow import columns as arrow_columns
from deltalog.checkpoints.arrow_pool import decode_pool
from deltalog.checkpoints.errors import CheckpointError
from deltalog.checkpoints.nulls import null_array
from deltalog.checkpoints.reader import CheckpointData, read_checkpoint
from deltalog.checkpoints.schema import STATS_PARSED
from deltalog.errors import InvalidSchemaError
from deltalog.logstores import LogStore, LogStoreError
from deltalog.protocol.schema import PrimitiveType, StructType
from deltalog.stats.file_stats import UnusableParsedStats, stat_leaves, typed_from_json

#: The non-file actions a statistics read wants from a checkpoint it has read before: the
#: sidecars that hold its file actions (protocol, metaData... were read with the snapshot).
SIDECARS = ("sidecar",)

__all__ = [
    "aligned",
    "checkpoint_rows_first",
    "fill_json",
    "json_typed_loader",
    "parsed_stats_loader",
    "stats_json",
]


def parsed_stats_loader(
    store: LogStore,
    paths: Sequence[str],
    rows: int,
    schema_string: str | None,
    *,
    read_already: Sequence[pa.ChunkedArray] | None = None,
) -> Callable[[], pa.ChunkedArray | None]:
    """Reads ``add.stats_parsed`` of a checkpoint, in the order the replay read its adds.

    The loader returns ``None`` when a file of the checkpoint has no such column (rows inline
    in a JSON checkpoint never do), when its type differs between files (parts, sidecars), or
    when it cannot be read or cast: statistics then come from the JSON, which is always correct.
    Timestamps are cast to the table's (``schema_string``, the checkpoint's schema): delta-spark
    writes them as INT96, which pyarrow reads as zone-less nanoseconds. An answer is read once
    and kept; a storage error is not kept, so a later call tries again. ``read_already``: the
    column of each file, when the replay read them with the rest of a small checkpoint.
    """
    loaded: list[pa.ChunkedArray | None] = []
    lock = threading.Lock()

    def load() -> pa.ChunkedArray | None:
        with lock:
            if not loaded:
                try:
                    found = (
                        _read(store, paths, rows)
                        if read_already is None
                        else _combined(read_already, rows)
                    )
                except (LogStoreError, OSError):
                    return None
                loaded.append(None if found is None else _as_table_types(found, schema_string))
            return loaded[0]

    return load


def json_typed_loader(
    store: LogStore,
    paths: Sequence[str],
    rows: int,
    *,
    read_already: pa.ChunkedArray | None = None,
) -> Callable[[str, tuple[str, ...], bool], pa.ChunkedArray | None]:
    """Typed statistics of a checkpoint without ``stats_parsed``, parsed from its JSON.

    The loader takes the schema string and partition columns the statistics are typed by, and
    whether to build them (else only an answer already kept is returned); it keeps the answer
    for the latest schema asked for. Each batch of the checkpoint's ``add.stats`` is parsed as
    soon as it is read and its JSON dropped, so a million files' statistics (~180 MiB of JSON)
    never sit in memory beside their typed form (~80 MiB), and later calls reuse them. It
    returns ``None`` when the checkpoint cannot be read or some statistics need a lossy
    fallback (:func:`deltalog.stats.file_stats.typed_from_json`): the caller then parses the JSON of
    the columns it needs itself.
    """
    kept: dict[tuple[str, tuple[str, ...]], pa.ChunkedArray | None] = {}
    lock = threading.Lock()

    def load(
        schema_string: str, partition_columns: tuple[str, ...], build: bool
    ) -> pa.ChunkedArray | None:
        key = (schema_string, partition_columns)
        with lock:
            if key in kept or not build:
                return kept.get(key)
            try:
                leaves = stat_leaves(StructType.from_json_string(schema_string), partition_columns)
            except (InvalidSchemaError, ValueError):
                return None

            def typed(table: pa.Table) -> pa.Table:
                return pa.table({"typed": typed_from_json(table.column("stats"), leaves)})

            try:
                if read_already is not None:  # a small checkpoint's, read with its actions
                    data = CheckpointData(adds=[typed(pa.table({"stats": read_already}))])
                else:
                    data = read_checkpoint(
                        store, paths, add_fields=("stats",), add_transform=typed, actions=SIDECARS
                    )
            except (LogStoreError, OSError):
                return None  # not kept: a later call tries again
            except (
                UnusableParsedStats,
                CheckpointError,
                ArithmeticError,
                ValueError,
                KeyError,
                TypeError,
                pa.ArrowException,
            ):
                found = None
            else:
                chunks = [c for t in data.adds for c in t.column("typed").chunks]
                found = pa.chunked_array(chunks) if chunks else None
                found = found if found is not None and len(found) == rows else None
            kept.clear()  # one schema's answer at a time: a writer's chain may change schemas
            kept[key] = found
            return found

    return load


def _read(store: LogStore, paths: Sequence[str], rows: int) -> pa.ChunkedArray | None:
    try:
        data = read_checkpoint(store, paths, add_fields=(STATS_PARSED,), actions=SIDECARS)
    except (CheckpointError, KeyError, ValueError, TypeError, pa.ArrowException):
        return None
    return _combined([t.column(STATS_PARSED) for t in data.adds], rows)


def _combined(columns: Sequence[pa.ChunkedArray], rows: int) -> pa.ChunkedArray | None:
    """The files' ``stats_parsed`` columns as one, ``None`` unless every file has it alike."""
    types = {c.type for c in columns if not pa.types.is_null(c.type)}
    if len(types) != 1:
        return None
    (t,) = types
    if not pa.types.is_struct(t) or any(pa.types.is_null(c.type) for c in columns):
        return None  # a part without it: typed statistics for some rows only are not worth it
    chunks = [chunk for c in columns for chunk in c.chunks]
    parsed = pa.chunked_array(chunks, type=t)
    return parsed if len(parsed) == rows else None


def _as_table_types(parsed: pa.ChunkedArray, schema_string: str | None) -> pa.ChunkedArray | None:
    """``parsed`` with the bounds of timestamp columns in the table's types.

    Microseconds, UTC or zone-less as the column is (``timestamp`` / ``timestamp_ntz``);
    ``None`` if that cast fails.
    """
    ntz: set[tuple[str, ...]] = set()
    if schema_string:
        try:
            schema = StructType.from_json_string(schema_string)
        except (InvalidSchemaError, ValueError):
            return None
        ntz = {
            leaf.physical
            for leaf in stat_leaves(schema, ())
            if leaf.type == PrimitiveType("timestamp_ntz")
        }

    def fixed(t: pa.DataType, path: tuple[str, ...]) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct(
                [pa.field(f.name, fixed(f.type, (*path, f.name)), f.nullable) for f in t]
            )
        if pa.types.is_timestamp(t):
            return pa.timestamp("us", tz=None if path in ntz else "UTC")
        return t

    bounds = ("minValues", "maxValues")
    target = pa.struct(
        [
            pa.field(f.name, fixed(f.type, ()) if f.name in bounds else f.type, f.nullable)
            for f in parsed.type
        ]
    )
    if target == parsed.type:
        return parsed
    try:
        # Truncation to microseconds stays within the millisecond delta-spark's bounds have.
        return pc.cast(parsed, target, safe=False, memory_pool=decode_pool())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


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
    quoted ``"NaN"``/``"Infinity"`` Spark's JSON writer uses. Values statistics never hold
    (binaries, lists) are left out.
    """
    # Timestamps go to Python as integers: pyarrow imports pandas to convert zoned ones.
    plain = pc.cast(parsed, _timestamps_as_int(parsed.type))
    texts = [None if row is None else _text(row, parsed.type) for row in plain.to_pylist()]
    return arrow_columns.column(texts, pa.string())


def _timestamps_as_int(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _timestamps_as_int(f.type), f.nullable) for f in t])
    return pa.int64() if pa.types.is_timestamp(t) else t


_EPOCH = dt.datetime(1970, 1, 1)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _text(value: Any, t: pa.DataType) -> str | None:
    if pa.types.is_struct(t):
        fields = []
        for f in t:
            text = None if value.get(f.name) is None else _text(value[f.name], f.type)
            if text is not None:
                fields.append(f"{orjson.dumps(f.name).decode()}:{text}")
        return "{" + ",".join(fields) + "}"
    if pa.types.is_timestamp(t):
        seconds, fraction = divmod(int(value), _PER_SECOND[t.unit])
        when = _EPOCH + dt.timedelta(
            seconds=seconds, microseconds=fraction * 1_000_000 // _PER_SECOND[t.unit]
        )
        return f'"{when.isoformat(timespec="milliseconds")}{"Z" if t.tz else ""}"'
    if isinstance(value, bool | int | str):
        return orjson.dumps(value).decode()
    if isinstance(value, float):
        if math.isnan(value):
            return '"NaN"'
        if math.isinf(value):
            return '"Infinity"' if value > 0 else '"-Infinity"'
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.date):
        return f'"{value.isoformat()}"'
    return None  # binaries, lists: statistics never hold them


def checkpoint_rows_first(cp_row: pa.ChunkedArray, rows: int) -> bool:
    """Whether all ``rows`` checkpoint rows are live and come first, in checkpoint order.

    ``cp_row`` numbers each live file's row in the checkpoint (null for files added since).
    Then a column read from the checkpoint lines up with the live files as it is.
    """
    m = len(cp_row) - cp_row.null_count
    head = cp_row.slice(0, m)
    return bool(
        m == rows
        and head.null_count == 0
        and (m == 0 or (pc.min(head).as_py() == 0 and pc.max(head).as_py() == m - 1))
    )


def aligned(parsed: pa.ChunkedArray, cp_row: pa.ChunkedArray) -> pa.ChunkedArray:
    """``parsed`` in the order of the live files, null for rows not from the checkpoint.

    When the checkpoint's rows are all live and come first, in order (the usual layout), the
    column is reused without a copy.
    """
    if checkpoint_rows_first(cp_row, len(parsed)):
        tail = cp_row.null_count
        chunks = [*parsed.chunks, *([null_array(parsed.type, tail)] if tail else [])]
        return pa.chunked_array(chunks, type=parsed.type)
    return parsed.take(cp_row)
