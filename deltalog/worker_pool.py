"""The thread pool for log work that releases the GIL: reading commits, parsing them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltalog.logstores.thread_pool import shared_pool

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

#: Threads of the pool: enough to overlap reads with parsing on a small machine.
WORKERS = 4


def worker_pool() -> ThreadPoolExecutor:
    """The process's pool for reading and parsing commits (a forked child gets its own)."""
    return shared_pool("deltalog-log", WORKERS)
