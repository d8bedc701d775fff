"""``deltalog files``: the live data files of a table, as an aligned table or JSON.

The text table has a header, sizes a person reads (``--bytes``: exact counts), the
modification time, the partition values and the path (last, as ``ls -l`` puts the name);
``--stats`` adds the row count and each column's minimum, maximum and null count. The text is
built column by column by Arrow kernels and written in batches, so a million-file table
streams with bounded memory and no Python object per file; statistics are read only for
``--stats`` and ``--json``.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
import pyarrow as pa
import pyarrow.compute as pc

import deltalog.cli.text as text
from deltalog.arrow import values as av
from deltalog.arrow.maps import chunked_map_texts
from deltalog.table import DeltaTable
from deltalog.worker_pool import worker_pool

#: Rows converted and written at a time: output streams, memory stays bounded.
BATCH = 50_000
#: Batches built ahead of the one being written.
AHEAD = 2
#: Columns of each file in ``--json``.
JSON_COLUMNS = ["path", "size", "partition_values", "modification_time", "data_change", "stats"]
_SEP = "  "


@dataclass
class Layout:
    """How ``files`` lays out its table: the widths known before the first line is written.

    Attributes:
        exact: Sizes in bytes (``--bytes``) instead of human units.
        size_width: Width of the size column.
        partitioned: Whether the table has a partition column.
        partition_width: Width of the partition column.
        extra: Names of the text columns added to the files (statistics) and their widths.
    """

    exact: bool = False
    size_width: int = text.SIZE_WIDTH
    partitioned: bool = False
    partition_width: int = 0
    extra: list[tuple[str, str, int]] = field(default_factory=list)

    def header(self) -> str:
        """The header line (newline included)."""
        cells = ["SIZE".rjust(self.size_width), "MODIFIED (UTC)".ljust(text.STAMP_WIDTH)]
        if self.partitioned:
            cells.append("PARTITION".ljust(self.partition_width))
        cells.extend(title.rjust(w) for _, title, w in self.extra)
        cells.append("PATH")
        return _SEP.join(cells) + "\n"


def _stats_columns(flat: pa.Table) -> list[str]:
    """The flattened statistics ``--stats`` shows: rows, then min, max, nulls per column."""
    names = flat.column_names
    columns: list[str] = []
    for name in names:
        for prefix in ("null_count.", "min.", "max."):
            if name.startswith(prefix) and name[len(prefix) :] not in columns:
                columns.append(name[len(prefix) :])
    shown = ["num_records"] if "num_records" in names else []
    for column in columns:
        shown.extend(
            n for n in (f"min.{column}", f"max.{column}", f"null_count.{column}") if n in names
        )
    return shown


def prepare(table: DeltaTable, *, stats: bool, exact: bool) -> tuple[pa.Table, Layout]:
    """The files to list, with their text columns where widths depend on all files."""
    files = table.files(with_stats=False, flatten_stats=stats)
    layout = Layout(exact=exact, partitioned=bool(table.snapshot.partition_columns))
    if exact:
        biggest = pc.max(files.column("size")).as_py() if files.num_rows else 0
        layout.size_width = max(4, len(f"{biggest or 0:,}"))
    if layout.partitioned:
        parts = chunked_map_texts(files.column("partition_values"))
        files = files.append_column("_partition", parts)
        layout.partition_width = text.width(parts, len("PARTITION"))
    if stats:
        for i, name in enumerate(_stats_columns(files)):
            shown = text.texts(files.column(name).combine_chunks())
            title = "RECORDS" if name == "num_records" else name
            files = files.append_column(f"_stat{i}", shown)
            layout.extra.append((f"_stat{i}", title, text.width(shown, len(title))))
    return files, layout


def line_array(batch: pa.RecordBatch, layout: Layout) -> pa.Array:
    """The text line of each file of a batch (newline included), built column by column."""
    sizes = batch.column("size")
    cells = [
        text.grouped_sizes(sizes, layout.size_width) if layout.exact else text.human_sizes(sizes),
        text.timestamps(batch.column("modification_time")),
    ]
    if layout.partitioned:
        cells.append(
            pc.utf8_rpad(batch.column("_partition"), width=layout.partition_width, padding=" ")
        )
    for name, _, w in layout.extra:
        cells.append(pc.utf8_lpad(batch.column(name), width=w, padding=" "))
    path = pc.binary_join_element_wise(batch.column("path"), av.string("\n"), av.string(""))
    return pc.binary_join_element_wise(*cells, path, av.string(_SEP))


def joined(lines: pa.Array) -> pa.Buffer:
    """The lines as one buffer (one copy, no Python object per line)."""
    if not len(lines):
        return pa.py_buffer(b"")
    whole = pc.binary_join(
        pa.ListArray.from_arrays(av.int32s([0, len(lines)]), lines), av.string("")
    )
    scalar = whole[0]
    assert isinstance(scalar, pa.StringScalar)
    buffer = scalar.as_buffer()
    return buffer if buffer is not None else pa.py_buffer(b"")


def file_lines(batch: pa.RecordBatch, layout: Layout) -> str:
    """The text lines of a batch."""
    return joined(line_array(batch, layout)).to_pybytes().decode() if batch.num_rows else ""


T = TypeVar("T")


def _ahead(make: Callable[[pa.RecordBatch], T], batches: Iterator[pa.RecordBatch]) -> Iterator[T]:
    """``make`` of each batch, in order, built by the worker pool a few batches ahead.

    Arrow's kernels release the GIL, so lines are built on other cores while the previous
    ones are written; at most :data:`AHEAD` batches wait, so memory stays bounded.
    """
    pending: deque[Future[T]] = deque()
    for batch in batches:
        pending.append(worker_pool().submit(make, batch))
        if len(pending) > AHEAD:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _utf8(stream: Any) -> bool:
    """Whether ``stream`` encodes text as UTF-8 (then its bytes may be written directly)."""
    encoding = getattr(stream, "encoding", None)
    try:
        return isinstance(encoding, str) and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _batches(files: pa.Table) -> Iterator[pa.RecordBatch]:
    return (b for b in files.to_batches(max_chunksize=BATCH) if b.num_rows)


def json_row(row: dict[str, Any]) -> dict[str, Any]:
    """A file as ``--json`` gives it: partition values as an object, statistics parsed."""
    row["partition_values"] = dict(row["partition_values"] or [])
    stats = row.get("stats")
    if isinstance(stats, str):
        # A malformed statistics string is kept as logged: it is check's to report.
        with contextlib.suppress(orjson.JSONDecodeError):
            row["stats"] = orjson.loads(stats)
    return row


def write_json(table: DeltaTable) -> None:
    """The files as one JSON document, streamed: ``{"table", "version", "files": [...]}``."""
    out = sys.stdout
    head = orjson.dumps({"table": table.uri, "version": table.version()})[:-1]
    out.write(head.decode() + ',"files":[')
    sep = "\n"
    for batch in _batches(table.files()):
        for row in batch.select(JSON_COLUMNS).to_pylist():
            out.write(sep + orjson.dumps(json_row(row)).decode())
            sep = ",\n"
    out.write("\n]}\n")


def write_text(table: DeltaTable, *, stats: bool, exact: bool) -> None:
    """The files as an aligned table, then a line with their count and total size."""
    files, layout = prepare(table, stats=stats, exact=exact)
    out = sys.stdout
    out.write(layout.header())
    binary = getattr(out, "buffer", None) if _utf8(out) else None
    if binary is None:
        for lines in _ahead(lambda b: file_lines(b, layout), _batches(files)):
            out.write(lines)
    else:
        for buffer in _ahead(lambda b: joined(line_array(b, layout)), _batches(files)):
            out.flush()
            binary.write(buffer)
    n = files.num_rows
    total = pc.sum(files.column("size")).as_py() if n else 0
    shown = f"{total:,} bytes" if exact else text.human_size(total)
    out.write(f"{n} file{'' if n == 1 else 's'} at version {table.version()} ({shown})\n")


def run(table: DeltaTable, args: argparse.Namespace) -> None:
    """``deltalog files``."""
    if args.json:
        write_json(table)
    else:
        write_text(table, stats=args.stats, exact=args.bytes)
