"""Read candidate files for a row-level change: a few at a time, in order, in parallel.

:func:`scan_files` yields each file's row of the files table with its
:class:`~deltalog.read.FileRows` (live rows, their positions in the file, its deletion vector),
reading up to :data:`READ_THREADS` files at once (Parquet decoding and object-store reads
release the GIL) and holding at most twice that many read ahead, so memory stays bounded by a
few files however many are scanned.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.read import FileRows, read_file_positions

__all__ = ["READ_THREADS", "scan_files"]

#: Files read at once.
READ_THREADS = 4


def scan_files(
    storage: TableStorage,
    snapshot: Snapshot,
    files: pa.Table,
    *,
    columns: Sequence[str] | None = None,
    threads: int = READ_THREADS,
) -> Iterator[tuple[dict[str, Any], FileRows]]:
    """``(file row, its rows)`` for every row of ``files``, in order.

    Args:
        storage: Where the table is.
        snapshot: The version the files belong to.
        files: Rows of ``snapshot.files`` (with every column the actions need).
        columns: Only these table columns (default all).
        threads: Files read at once.

    Raises:
        MissingDataFileError, DeletionVectorError, StorageError: As
            :func:`deltalog.read.read_file_positions`.
    """
    rows = files.to_pylist()
    if not rows:
        return

    def read(index: int) -> FileRows:
        one = files.slice(index, 1)
        return next(read_file_positions(storage, snapshot, one, columns=columns))

    if len(rows) == 1 or threads <= 1:
        for index, row in enumerate(rows):
            yield row, read(index)
        return
    pool = ThreadPoolExecutor(min(threads, len(rows)), thread_name_prefix="deltalog-scan")
    pending: deque[Future[FileRows]] = deque()
    try:
        upcoming = iter(range(len(rows)))
        for index in upcoming:
            pending.append(pool.submit(read, index))
            if len(pending) >= 2 * threads:
                break
        for row in rows:
            found = pending.popleft().result()
            following = next(upcoming, None)
            if following is not None:
                pending.append(pool.submit(read, following))
            yield row, found
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
