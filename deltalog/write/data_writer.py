"""The data writer: Arrow record batches in, Parquet data files and their ``add`` actions out.

:class:`DataWriter` is what every writer without Spark uses (``deltalog.write_table``; row-level
operations rewrite files through it too), and what each Spark task runs. Rows arrive with the
table's logical column names and types (see :mod:`deltalog.write.input_data`); the writer

1. checks the table's column constraints (:mod:`deltalog.write.constraints`: NOT NULL,
   CHAR/VARCHAR) and CHECK constraints (:mod:`deltalog.write.check_constraints`), and raises
   :class:`~deltalog.errors.ConstraintViolationError` on a bad row;
2. groups the rows by partition value (:mod:`deltalog.write.partition_split`) and keeps one
   open file per partition, under Hive-style directories named with the protocol's escaping
   (a batch is split in pieces of :data:`SPLIT_ROWS` rows; a large batch's pieces are checked
   and split on a splitter thread while the caller places the rows of earlier ones, in order);
3. renames columns to their physical names (and stamps field ids) on a column-mapped table;
4. buffers each file's rows and encodes them as row groups on a small thread pool (each file's
   row groups in order, different files in parallel; a file's last row group and its footer
   are one job), gathering the file's statistics from the same rows
   (:mod:`deltalog.write.batch_stats`), so no footer is read back.

Memory stays bounded however large the input: rows buffered for all files together are capped
(:attr:`ParquetOptions.buffer_bytes`; past it the largest buffer becomes a row group), so are
row groups waiting to be encoded, and at most ``max_open_files`` files are open. Local files
stream to disk; files for object stores are assembled in memory and uploaded with one
create-if-absent write when finished (the cap counts them too); their ``add`` takes the size of
the bytes uploaded and the time the upload returned, so nothing is read back from the store.

Nothing a writer writes is visible until a commit names it. :meth:`DataWriter.abort` (and any
failure inside :meth:`DataWriter.close`) deletes every file the writer created.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.errors import TransactionClosedError
from deltalog.log.clock import now_ms
from deltalog.logstores import LogStore
from deltalog.protocol.actions import AddFile
from deltalog.protocol.column_mapping import mapping_mode, physical_name, to_physical_batch
from deltalog.protocol.partitions import hive_partition_dir
from deltalog.protocol.paths import encode_path
from deltalog.protocol.schema import StructType
from deltalog.write.batch_stats import StatsCollector
from deltalog.write.check_constraints import check_constraints, enforce_checks
from deltalog.write.constraints import enforce, has_constraints
from deltalog.write.parquet_options import CODECS, ParquetOptions, writer_arguments
from deltalog.write.partition_split import PartitionKey, split_by_partition, utc_timestamps

__all__ = ["DataWriter"]


class DataWriter:
    """Writes rows of one table into new data files; :meth:`close` gives their ``add`` actions.

    Use it as a context manager (leaving with an exception aborts), or call :meth:`close` /
    :meth:`abort` yourself::

        with DataWriter(store, root, schema, ["day"], config) as writer:
            for batch in batches:
                writer.write(batch)
        adds = writer.adds

    Args:
        store: The table's store.
        root: The table root, in the store's notation.
        schema: The table schema (logical names).
        partition_columns: The table's partition columns (logical names).
        configuration: The table properties (column mapping, statistics columns).
        options: File layout (codec, sizes, memory).
        data_change: ``dataChange`` of the actions.
        file_prefix: File names start ``<file_prefix>.c<n>`` instead of ``part-<n>-<uuid>``.
    """

    def __init__(
        self,
        store: LogStore,
        root: str,
        schema: StructType,
        partition_columns: Sequence[str],
        configuration: Mapping[str, str | None],
        *,
        options: ParquetOptions | None = None,
        data_change: bool = True,
        file_prefix: str | None = None,
    ) -> None:
        self._store = store
        self._root = root.rstrip("/")
        self._schema = schema
        self._configuration = dict(configuration)
        self._options = options or ParquetOptions()
        self._data_change = data_change
        self._prefix = file_prefix
        self._partition_columns = list(partition_columns)
        self._partition_schema = StructType(tuple(schema.field(c) for c in partition_columns))
        self._partition_keys = [physical_name(schema.field(c)) for c in partition_columns]
        self._data_names = [f.name for f in schema.fields if f.name not in partition_columns]
        mode = mapping_mode(configuration)
        self._mapped = mode != "none"
        self._field_ids = mode == "id"
        self._checked = has_constraints(schema)
        self._checks = check_constraints(configuration, schema)
        self._pool = ThreadPoolExecutor(self._options.threads, thread_name_prefix="deltalog-write")
        # splits a large batch's pieces while the caller places earlier ones and the pool encodes
        self._splitter = ThreadPoolExecutor(1, thread_name_prefix="deltalog-split")
        self._open: OrderedDict[PartitionKey, _File] = OrderedDict()
        self._finished: list[Future[AddFile]] = []
        self._created: list[str] = []
        self._files: list[_File] = []
        self._lock = threading.Lock()
        self._in_flight = 0  # bytes of row groups submitted, not yet encoded
        self._flights: list[Future[Any]] = []
        self._counter = 0
        self._values: dict[Any, str | None] = {}  # serialised partition values
        self._stats = StatsCollector(schema, partition_columns, configuration)
        self._state = "open"
        self.adds: list[AddFile] = []

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> DataWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None:
            self.abort()
        elif self._state == "open":
            self.close()

    # ------------------------------------------------------------------ writing
    @property
    def locations(self) -> list[str]:
        """Every file this writer created so far, in the store's notation."""
        return list(self._created)

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Write rows (every table column, logical names, the table's Arrow types).

        Raises:
            ConstraintViolationError: A row breaks a NOT NULL, CHAR/VARCHAR or CHECK
                constraint (nothing of this batch is written).
            PartitionValueError: A partition value cannot be serialised.
            StorageError, OSError: Writing a file failed (raised here or by a later call).
        """
        self._check_open()
        batches = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
        pieces = [piece for b in batches for piece in _pieces(b) if piece.num_rows]
        if len(pieces) == 1:
            self._place(self._split(pieces[0]))
            return
        # Several pieces: the splitter splits ahead (at most SPLIT_AHEAD pieces) while this
        # thread places the rows of earlier pieces, in order; every piece is placed (or its
        # error raised) before this call returns.
        waiting: deque[Future[list[tuple[PartitionKey, pa.RecordBatch]]]] = deque()
        try:
            for piece in pieces:
                waiting.append(self._splitter.submit(self._split, piece))
                if len(waiting) > SPLIT_AHEAD:
                    self._place(waiting.popleft().result())
            while waiting:
                self._place(waiting.popleft().result())
        finally:
            for left in waiting:
                left.cancel()

    def _split(self, piece: pa.RecordBatch) -> list[tuple[PartitionKey, pa.RecordBatch]]:
        """A piece's rows checked and grouped by partition: the data columns of each group.

        Runs on the caller or the splitter thread; it touches no state but the cache of
        serialised partition values.
        """
        if self._checked:
            piece = enforce(piece, self._schema)
        if self._checks:
            enforce_checks(piece, self._checks)
        piece = utc_timestamps(piece)
        out = []
        for key, data in split_by_partition(
            piece, self._partition_columns, self._partition_schema, self._values, self._data_names
        ):
            if self._mapped:
                data = to_physical_batch(data, self._schema, field_ids=self._field_ids)
            out.append((key, data))
        return out

    def _place(self, groups: list[tuple[PartitionKey, pa.RecordBatch]]) -> None:
        """Append a piece's groups to their files, then keep memory under the budget."""
        for key, data in groups:
            self._append(key, data)
        self._bound_memory()

    def _append(self, key: PartitionKey, data: pa.RecordBatch) -> None:
        start = 0
        limit = self._options.max_rows_per_file
        target = self._options.target_file_size
        step = data.num_rows
        if target and data.nbytes > target:  # a batch larger than a file: in file-sized slices
            step = max(1, int(target * data.num_rows / data.nbytes))
        while start < data.num_rows:
            current = self._open.get(key)
            if current is None:
                current = self._new_file(key)
            else:
                self._open.move_to_end(key)
            take = min(data.num_rows - start, step)
            if limit > 0:
                take = min(take, limit - current.rows)
            current.add(data.slice(start, take) if take < data.num_rows else data)
            start += take
            if limit > 0 and current.rows >= limit:
                self._finish(key)
                continue
            if current.pending_rows >= self._options.row_group_rows or (
                current.pending_bytes >= self._row_group_bytes()
            ):
                self._flush(current)
            if target and current.estimate() >= target:
                self._flush(current)
                current.wait()  # its real size, and a better ratio for the next estimate
                if current.encoded >= target:
                    self._finish(key)

    def _row_group_bytes(self) -> int:
        """Buffered bytes that make a row group.

        Up to ``row_group_bytes`` (parquet-mr's 128 MiB) with one open file, less with many, so
        that the encoding threads start early instead of waiting for the whole buffer to fill
        (never below :data:`MIN_ROW_GROUP_BYTES`).
        """
        share = self._options.buffer_bytes // (2 * max(1, len(self._open)))
        return min(self._options.row_group_bytes, max(MIN_ROW_GROUP_BYTES, share))

    def _new_file(self, key: PartitionKey) -> _File:
        if len(self._open) >= self._options.max_open_files:
            self._finish(next(iter(self._open)))
        codec, infix = CODECS[self._options.codec]
        if self._prefix is not None:
            stem = f"{self._prefix}.c{self._counter:03d}"
        else:
            stem = f"part-{self._counter:05d}-{uuid.uuid4()}-c000"
        self._counter += 1
        values = dict(zip(self._partition_keys, key, strict=True))
        directory = hive_partition_dir(values)
        name = f"{stem}{infix}.parquet"
        relative = f"{directory}/{name}" if directory else name
        location = f"{self._root}/{relative}"
        local = self._store.local_path(location)
        if local is not None:
            os.makedirs(os.path.dirname(local), exist_ok=True)
            sink: BinaryIO = open(local, "xb")  # noqa: SIM115 - closed by _File.finish
        else:
            sink = io.BytesIO()
        self._created.append(location)
        current = _File(relative, location, values, sink, local is None, self._stats.fresh(), codec)
        self._open[key] = current
        self._files.append(current)
        return current

    # ------------------------------------------------------------------ row groups
    def _flush(self, current: _File) -> None:
        """Encode ``current``'s buffered rows as a row group, on the pool."""
        if current.pending:
            self._submit(current, None)

    def _finish(self, key: PartitionKey) -> None:
        """Close the file of ``key``: its last row group, footer, upload and action."""
        current = self._open.pop(key)
        metadata = dict(self._options.file_metadata)
        data_change = self._data_change
        store = self._store

        def last() -> AddFile:
            return current.finish(store, metadata, data_change)

        self._finished.append(self._submit(current, last))

    def _submit(self, current: _File, last: Callable[[], AddFile] | None) -> Future[Any]:
        """One pool job for ``current``: its buffered rows as a row group, then ``last``.

        The footer is written in the job of the last row group: a job queued behind its own
        file's job would hold a pool thread idle while that one runs.
        """
        table = current.take_pending()
        size = 0 if table is None else table.nbytes
        with self._lock:
            self._in_flight += size
        options = self._options

        def run() -> AddFile | None:
            try:
                if table is not None:
                    current.encode(table, options)
            finally:
                with self._lock:
                    self._in_flight -= size
            return None if last is None else last()

        flight = current.chain(self._pool, run)
        if table is not None:
            self._flights.append(flight)
        return flight

    def _bound_memory(self) -> None:
        """Keep buffered rows, waiting row groups and in-memory files under the budget."""
        budget = self._options.buffer_bytes
        held = sum(f.held() for f in self._open.values())
        while held > budget and self._open:
            key, largest = max(self._open.items(), key=lambda item: item[1].held())
            if largest.in_memory and largest.encoded > largest.pending_bytes:
                self._finish(key)  # an object-store file assembled in memory: upload it
            else:
                self._flush(largest)
            held = sum(f.held() for f in self._open.values())
        running = []
        for flight in self._flights:
            if not flight.done():
                running.append(flight)
            elif flight.exception() is not None:
                flight.result()  # a row group failed: stop writing now (close would raise it)
        self._flights = running
        while self._in_flight > budget and self._flights:
            self._flights.pop(0).result()
        for finished in self._finished:
            if finished.done() and finished.exception() is not None:
                finished.result()

    # ------------------------------------------------------------------ the end
    def close(self) -> list[AddFile]:
        """Finish every file and return the ``add`` actions, in the order files were closed.

        Raises:
            StorageError, OSError: Writing a file failed; every file is deleted first.
        """
        self._check_open()
        try:
            for key in list(self._open):
                self._finish(key)
            self.adds = [f.result() for f in self._finished]
        except BaseException:
            self.abort()  # still open: deletes every file
            raise
        self._state = "closed"
        self._pool.shutdown(wait=True)
        self._splitter.shutdown(wait=True)
        return self.adds

    def abort(self) -> None:
        """Give up: stop writing and delete every file this writer created (best effort).

        After :meth:`close` the files are the caller's (a commit may name them): then this
        does nothing.
        """
        if self._state != "open":
            return
        self._state = "aborted"
        self._splitter.shutdown(wait=True, cancel_futures=True)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for current in self._files:
            current.discard()
        self._open.clear()
        for location in self._created:
            with contextlib.suppress(Exception):  # an orphan file is harmless: VACUUM removes it
                self._store.delete(location)

    def _check_open(self) -> None:
        if self._state != "open":
            raise TransactionClosedError(f"this data writer is {self._state}")


#: The smallest row group the writer makes while more rows of its file are coming.
MIN_ROW_GROUP_BYTES = 4 << 20
#: Rows split at a time: a partition split's random access stays within the CPU caches.
SPLIT_ROWS = 1 << 16
#: Pieces of a batch the splitter thread may have split (or be splitting) beyond the one placed.
SPLIT_AHEAD = 4


def _pieces(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """``batch`` in slices of at most :data:`SPLIT_ROWS` rows (zero-copy)."""
    if batch.num_rows <= SPLIT_ROWS:
        yield batch
        return
    for start in range(0, batch.num_rows, SPLIT_ROWS):
        yield batch.slice(start, SPLIT_ROWS)


class _File:
    """One data file being written: buffered rows, a Parquet writer, statistics."""

    def __init__(
        self,
        relative: str,
        location: str,
        values: dict[str, str | None],
        sink: BinaryIO,
        in_memory: bool,
        stats: StatsCollector,
        codec: str,
    ) -> None:
        self.relative = relative
        self.location = location
        self.values = values
        self.sink = sink
        self.in_memory = in_memory
        self.stats = stats
        self.codec = codec
        self.rows = 0
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.encoded = 0  # bytes in the sink (updated by the pool)
        self.encoded_from = 0  # Arrow bytes those came from
        self.submitted = 0  # Arrow bytes handed to the pool
        self.writer: pq.ParquetWriter | None = None
        self.tail: Future[Any] | None = None

    def add(self, rows: pa.RecordBatch) -> None:
        self.pending.append(rows)
        self.pending_rows += rows.num_rows
        self.pending_bytes += rows.nbytes
        self.rows += rows.num_rows

    def held(self) -> int:
        """Bytes this file holds in memory: buffered rows, and the file itself if in memory."""
        return self.pending_bytes + (self.encoded if self.in_memory else 0)

    def estimate(self) -> int:
        """Expected size of the file if it were finished now."""
        ratio = self.encoded / self.encoded_from if self.encoded_from else 1.0
        waiting = self.pending_bytes + self.submitted - self.encoded_from
        return self.encoded + int(waiting * ratio)

    def take_pending(self) -> pa.Table | None:
        if not self.pending:
            return None
        table = pa.Table.from_batches(self.pending)
        self.submitted += table.nbytes
        self.pending = []
        self.pending_rows = 0
        self.pending_bytes = 0
        return table

    def chain(self, pool: ThreadPoolExecutor, job: Callable[[], Any]) -> Future[Any]:
        """Run ``job`` on the pool after this file's previous job (each file in order)."""
        previous = self.tail

        def run() -> Any:
            if previous is not None:
                previous.result()  # submitted earlier: running or done, never queued behind
            return job()

        self.tail = pool.submit(run)
        return self.tail

    def wait(self) -> None:
        if self.tail is not None:
            self.tail.result()

    def encode(self, table: pa.Table, options: ParquetOptions) -> None:
        """Write ``table`` as one row group (runs on the pool)."""
        self.stats.update(table)
        if self.writer is None:
            self.writer = pq.ParquetWriter(
                self.sink, table.schema, **writer_arguments(table, self.codec)
            )
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.encoded_from += table.nbytes
        self.encoded = self.sink.tell()

    def finish(self, store: LogStore, metadata: dict[str, str], data_change: bool) -> AddFile:
        """Write the footer, upload an in-memory file, describe it (runs on the pool)."""
        assert self.writer is not None  # a file exists only once it has rows
        if metadata:
            self.writer.add_key_value_metadata(metadata)
        self.writer.close()
        if isinstance(self.sink, io.BytesIO):
            # Everything an ``add`` needs is known here: no request reads the upload back.
            data = self.sink.getvalue()
            store.write(self.location, data, overwrite=False)
            self.sink = io.BytesIO()
            size, modified = len(data), now_ms()
        else:
            self.sink.close()
            status = store.stat(self.location)
            size, modified = status.size, status.modification_time
        return AddFile(
            path=encode_path(self.relative),
            partition_values=dict(self.values),
            size=size,
            modification_time=modified,
            data_change=data_change,
            stats=self.stats.to_json(),
        )

    def discard(self) -> None:
        """Close the writer and the sink (the file is deleted after)."""
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
        with contextlib.suppress(Exception):
            self.sink.close()


def write_batches(
    writer: DataWriter,
    batches: Iterable[pa.RecordBatch],
    *,
    check: Callable[[], None] | None = None,
) -> list[AddFile]:
    """Write every batch and close the writer; abort it (files deleted) on any failure."""
    try:
        for batch in batches:
            if check is not None:
                check()
            writer.write(batch)
        return writer.close()
    except BaseException:
        writer.abort()
        raise
