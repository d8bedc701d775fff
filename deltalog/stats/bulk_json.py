"""Parse a column of JSON objects (``stats`` strings) into an Arrow table, pieces side by side.

``pyarrow.json`` parses the strings themselves: when a piece has no null, its values are read
where they lie, as one run of concatenated objects (the reader takes ``{...}{...}`` as readily
as one object per line), so the text is never copied. A piece with nulls is joined with line
breaks, ``{}`` standing for each null. Pieces of about :data:`PIECE_ROWS` rows are parsed on a
small thread pool, each by one thread, since the reader's own threads only split one piece into
4 MiB blocks and merge them again. The caller compares the row count with the input's: a string
that is not exactly one object (empty, two objects, broken) makes them differ.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from deltalog.arrow import values as arrow_values
from deltalog.checkpoints.arrow_pool import decode_pool
from deltalog.checkpoints.nulls import null_array
from deltalog.logstores.thread_pool import shared_pool

__all__ = ["PARSERS", "PIECE_ROWS", "parse_objects"]

#: Rows per piece at most: bounds the text a piece with nulls copies (~50 MiB of statistics
#: of a 7-column table) and the parser's working memory per thread.
PIECE_ROWS = 128 * 1024

#: Rows per piece at least, when a column is split to give every parser a share.
MIN_PIECE_ROWS = 16 * 1024

#: Chunks of fewer rows are joined with their neighbours rather than parsed one by one.
SMALL_CHUNK = 4 * 1024

#: Threads parsing pieces side by side.
PARSERS = max(1, min(4, os.cpu_count() or 1))

#: The reader's block size is an int32: a longer run of text goes through the joined form.
_MAX_BLOCK = (1 << 31) - 1


def parse_objects(column: pa.ChunkedArray | pa.Array, schema: pa.Schema) -> pa.Table | None:
    """Every string of ``column`` parsed against ``schema``, a null parsed as ``{}``.

    Returns:
        The parsed rows, or ``None`` when ``pyarrow.json`` refuses some row or the row count
        differs from ``len(column)``.
    """
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column], type=column.type)
    pieces = list(_pieces(column))
    if not pieces:
        return _parse(null_array(pa.string(), 0), schema, threads=False)
    parts: list[pa.Table | None] | None = None
    if len(pieces) > 1 and PARSERS > 1:
        try:
            pool = shared_pool("stats-parse", PARSERS)
            futures = [pool.submit(_parse, piece, schema, threads=False) for piece in pieces]
        except RuntimeError:  # no new threads at interpreter exit: parse them in this one
            pass
        else:
            parts = [future.result() for future in futures]
    if parts is None:
        parts = [_parse(piece, schema, threads=True) for piece in pieces]
    if any(part is None for part in parts):
        return None
    table = pa.concat_tables([part for part in parts if part is not None])
    return table if table.num_rows == len(column) else None


def _pieces(column: pa.ChunkedArray) -> Iterator[pa.Array]:
    """``column`` in pieces of at most ``step`` rows, cut where it lies.

    Runs of chunks under :data:`SMALL_CHUNK` rows (a commit's few adds each) are joined.
    """
    n = len(column)
    step = max(MIN_PIECE_ROWS, min(PIECE_ROWS, -(-n // PARSERS)))
    pending: list[pa.Array] = []
    held = 0
    for chunk in column.chunks:
        if len(chunk) >= SMALL_CHUNK:
            if pending:
                yield _joined(pending)
                pending, held = [], 0
            for start in range(0, len(chunk), step):
                yield chunk.slice(start, step)
            continue
        pending.append(chunk)
        held += len(chunk)
        if held >= step:
            yield _joined(pending)
            pending, held = [], 0
    if pending:
        yield _joined(pending)


def _joined(chunks: list[pa.Array]) -> pa.Array:
    """One array of ``chunks`` (no copy for one)."""
    if len(chunks) == 1:
        return chunks[0]
    return pa.concat_arrays(chunks, memory_pool=decode_pool())


def _parse(strings: pa.Array, schema: pa.Schema, *, threads: bool) -> pa.Table | None:
    """One piece parsed; ``None`` when the reader refuses it or its row count is off.

    The text in place is tried first; when that fails, the joined lines (a string with a line
    break of its own, or an empty one, is read as it was before the in-place read).
    """
    text = _in_place(strings)
    if text is not None:
        # Concatenated objects cannot be cut into blocks: one block, one thread.
        table = _read(text, schema, block=max(text.size, 1), threads=False)
        if table is not None and table.num_rows == len(strings):
            return table
    table = _read(_lines(strings), schema, block=1 << 22, threads=threads)
    return table if table is not None and table.num_rows == len(strings) else None


def _read(text: pa.Buffer, schema: pa.Schema, *, block: int, threads: bool) -> pa.Table | None:
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(
            pa.BufferReader(text),
            read_options=pj.ReadOptions(block_size=block, use_threads=threads),
            parse_options=options,
            memory_pool=decode_pool(),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return table


def _in_place(strings: pa.Array) -> pa.Buffer | None:
    """The values' text as it lies in the array's data buffer, when it has no null."""
    if strings.null_count or not len(strings):
        return None
    if strings.type == pa.string():
        offset_type = pa.int32()
    elif strings.type == pa.large_string():
        offset_type = pa.int64()
    else:
        return None
    _, offsets, data = strings.buffers()
    if offsets is None or data is None:
        return None
    bounds = pa.Array.from_buffers(
        offset_type, len(strings) + 1, [None, offsets], null_count=0, offset=strings.offset
    )
    start, end = bounds[0].as_py(), bounds[-1].as_py()
    if end - start > _MAX_BLOCK - 1:
        return None
    return data.slice(start, end - start)


def _lines(stats: pa.Array) -> pa.Buffer:
    """The strings as newline-delimited JSON, ``{}`` for nulls (a copy of the text)."""
    text = pa.large_string()
    pool = decode_pool()
    # Scalars from arrays: pa.scalar of a Python string imports pandas.
    filled = pc.coalesce(
        stats.cast(text, memory_pool=pool), arrow_values.string("{}").cast(text), memory_pool=pool
    )
    joined = pc.binary_join_element_wise(
        filled,
        arrow_values.string("").cast(text),
        arrow_values.string("\n").cast(text),
        memory_pool=pool,
    )
    offsets = joined.buffers()[1]
    data = joined.buffers()[2]
    starts = pa.Array.from_buffers(
        pa.int64(), len(joined) + 1, [None, offsets], null_count=0, offset=joined.offset
    )
    return data.slice(starts[0].as_py(), starts[-1].as_py() - starts[0].as_py())
