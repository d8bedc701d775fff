"""Copy-on-write rewrites in parallel: one new file per rewritten file, as Spark's tasks write.

A DELETE, UPDATE or MERGE without deletion vectors writes each touched file again without the
rows it takes out (and, for an update, with their new values). :class:`FileRewrites` runs each
rewrite as a job on a small pool, with its own :class:`~deltalog.write.data_writer.DataWriter`
encoding on one thread, so that several files are encoded at once while the caller scans the
next ones (one shared writer would encode its file's row groups one after the other). At most
``window`` rewrites wait, so memory stays bounded by a few files.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile
from deltalog.protocol.paths import decode_path
from deltalog.write.data_writer import DataWriter

__all__ = ["REWRITE_WORKERS", "FileRewrites"]

#: Files rewritten at once.
REWRITE_WORKERS = 2


class FileRewrites:
    """Rewrite jobs: :meth:`submit` the rows of one new file, :meth:`close` for the adds.

    Args:
        storage: The table's storage (to delete what a failed job wrote).
        make_writer: A fresh data writer for one job.
        workers: Jobs run at once.
        window: Jobs submitted and not finished before :meth:`submit` waits for the oldest.
    """

    def __init__(
        self,
        storage: TableStorage,
        make_writer: Callable[[], DataWriter],
        *,
        workers: int = REWRITE_WORKERS,
        window: int = 2 * REWRITE_WORKERS,
    ) -> None:
        self._storage = storage
        self._make_writer = make_writer
        self._pool: ThreadPoolExecutor | None = None
        self._workers = workers
        self._window = window
        self._pending: deque[Future[list[AddFile]]] = deque()
        self._writers: list[DataWriter] = []
        self._lock = threading.Lock()
        self.adds: list[AddFile] = []

    def submit(self, tables: list[pa.Table]) -> None:
        """Write ``tables`` (conformed to the table) as one new file, in the background.

        Raises:
            Whatever a finished job raised (the caller aborts).
        """
        tables = [t for t in tables if t.num_rows]
        if not tables:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="deltalog-rewrite")
        self._pending.append(self._pool.submit(self._job, tables))
        while len(self._pending) > self._window:
            self.adds += self._pending.popleft().result()

    def _job(self, tables: list[pa.Table]) -> list[AddFile]:
        writer = self._make_writer()
        with self._lock:
            self._writers.append(writer)
        try:
            for table in tables:
                writer.write(table)
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def close(self) -> list[AddFile]:
        """Wait for every job; the adds of every new file, in submission order.

        Raises:
            Whatever a job raised (the caller aborts).
        """
        while self._pending:
            self.adds += self._pending.popleft().result()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        return self.adds

    @property
    def locations(self) -> list[str]:
        """Files the jobs created so far."""
        with self._lock:
            return [location for w in self._writers for location in w.locations]

    def abort(self) -> None:
        """Stop: cancel waiting jobs, wait for running ones, delete every file written."""
        for future in self._pending:
            future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        for future in self._pending:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.adds += future.result()
        self._pending.clear()
        with self._lock:
            writers = list(self._writers)
        for writer in writers:
            writer.abort()  # deletes the files of a writer that did not close
        for add in self.adds:  # closed writers' files
            with contextlib.suppress(Exception):
                self._storage.store.delete(self._storage.data_file(decode_path(add.path)))
        self.adds = []
